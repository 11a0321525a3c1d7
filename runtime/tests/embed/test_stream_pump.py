"""The host producer pump of a ``stream<u8>`` (python-mapping.md §6): ready
chunks of an async iterable are handed over without a task or a wait per
chunk, and a parked pull is still cancelled when the stream dies (A13)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import polyengine

from . import stream_components as sc
from .test_async import aio

Wat = Callable[[str], bytes]


def checksum(data: bytes) -> int:
    return len(data) * 1000 + sum(data)


@aio
async def test_ready_chunks_cost_no_task_each(wat: Wat) -> None:
    chunks = 200
    loop = asyncio.get_running_loop()
    created: list[object] = []

    def factory(lp: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        created.append(coro)
        return asyncio.Task(coro, loop=lp, **kw)

    async def source() -> AsyncIterator[bytes]:
        for _ in range(chunks):
            yield b"\x01"

    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        loop.set_task_factory(factory)  # type: ignore[arg-type]
        try:
            got = await inst.exports.consume(source())
        finally:
            loop.set_task_factory(None)
    assert got == checksum(b"\x01" * chunks)
    assert len(created) < 10, f"{len(created)} tasks for {chunks} chunks"


@aio
async def test_a_source_that_awaits_between_chunks_is_pumped_in_order(wat: Wat) -> None:
    async def source() -> AsyncIterator[bytes]:
        for k in range(20):
            await asyncio.sleep(0)
            yield bytes([k])

    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        assert await inst.exports.consume(source()) == checksum(bytes(range(20)))
