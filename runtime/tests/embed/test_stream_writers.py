"""Short reads and what a writer is told (CanonicalABI.md §"Stream State":
a copy moves ``min(reader room, writer rest)`` and the writer's count is what
was taken; embedder-api.md §"Streams and futures").

A host ``read(n)`` takes at most ``n`` elements of a parked write, and the
writer is told exactly that count. A writer that goes on writing the rest
loses nothing, whichever asyncio tasks the reads run in; a writer that
writes once and drops has ended its stream after what was taken (its own
count said so). Until the writer resumes, its buffer stays offered, so a
read in the same task may still take more of it (CanonicalABI.md: the
buffer is reclaimed when the writer receives its event).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import polyengine

from . import stream_components as sc
from .test_async import aio

Wat = Callable[[str], bytes]


async def in_task(aw: object) -> object:
    return await asyncio.ensure_future(aw)  # type: ignore[arg-type]


async def rest_in_tasks(stream: Any) -> bytes:
    out = b""
    while chunk := await asyncio.ensure_future(stream.read(100)):
        out += chunk
    return out


@aio
async def test_a_looping_guest_writer_loses_nothing_across_tasks(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        stream = await inst.exports.make_stream(11)
        assert await in_task(stream.read(3)) == b"hel"
        await asyncio.sleep(0)  # the guest writer resumes with its count (3)
        assert await rest_in_tasks(stream) == b"lo world"


@aio
async def test_a_write_once_guest_writer_is_told_what_was_taken(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        stream = await inst.exports.write_once(11)
        assert await in_task(stream.read(3)) == b"hel"
        # the writer took its count (3 of 11) and dropped: its stream ends there
        assert await in_task(stream.read(100)) == b""
        assert await inst.exports.last_count() == 3


@aio
async def test_a_write_once_guest_writer_offers_its_buffer_until_it_resumes(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        stream = await inst.exports.write_once(11)
        assert await stream.read(3) == b"hel"
        assert await stream.read(100) == b"lo world"  # before the writer resumed
        assert await stream.read(100) == b""
        assert await inst.exports.last_count() == 11


@aio
async def test_a_host_write_all_loses_nothing_across_tasks() -> None:
    stream, writer = polyengine.create_stream()

    async def produce() -> int:
        n = await writer.write_all(b"hello world")
        writer.close()
        return n

    producing = asyncio.ensure_future(produce())
    await asyncio.sleep(0)
    assert await in_task(stream.read(3)) == b"hel"
    assert await rest_in_tasks(stream) == b"lo world"
    assert await producing == 11


@aio
async def test_a_host_write_reports_the_short_read() -> None:
    stream, writer = polyengine.create_stream()
    writing = asyncio.ensure_future(writer.write(b"hello world"))
    await asyncio.sleep(0)
    assert await in_task(stream.read(3)) == b"hel"
    assert await writing == 3  # the writer decides whether to offer the rest
