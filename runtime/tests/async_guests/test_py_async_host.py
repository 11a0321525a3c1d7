"""A componentize-py async guest exchanging ``stream<u8>``, ``stream<string>``
and ``future<string>`` with Python host code in both directions, with
cancellation from each side (runtime/tests/guests/py-async-host)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

import polyengine
from polyengine_protocol import is_future, is_stream

from .test_async_guests import _builder

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]

HOST = "polyengine:async-host/host"
RUN = "polyengine:async-host/run"


@pytest.fixture(scope="module")
def guest() -> bytes:
    path = _builder().build_guest("py-async-host")
    data: bytes = path.read_bytes()
    return data


class Host:
    """The ``host`` interface, implemented by Python code."""

    def __init__(self) -> None:
        self.sunk: list[bytes] = []
        self.endless_closed = asyncio.Event()

    def fetch(self, n: int) -> Any:
        if n:
            return bytes(i % 251 for i in range(n))
        return self._endless()

    async def _endless(self) -> AsyncIterator[bytes]:
        try:
            while True:
                await asyncio.sleep(0)
                yield b"e" * 1000
        finally:
            self.endless_closed.set()

    async def sink(self, data: Any) -> int:
        assert is_stream(data)
        total = 0
        async for chunk in data:
            self.sunk.append(bytes(chunk))
            total += len(chunk)
        return total

    def words(self) -> Any:
        async def gen() -> AsyncIterator[str]:
            for w in ("streams", "of", "strings"):
                await asyncio.sleep(0)
                yield w

        return gen()

    def later(self, msg: str) -> Any:
        async def resolve() -> str:
            await asyncio.sleep(0.001)
            return f"later: {msg}"

        return resolve()  # A12: the future's source; the call completes at once


async def _run(data: bytes) -> None:
    host = Host()
    inst = await polyengine.instantiate(data, {HOST: host})
    with inst:
        run = inst.exports[RUN]
        # host -> guest: stream<u8>, stream<string>, future<string>
        assert await run.pull(10_000) == 10_000
        assert await run.join_words() == "streams of strings"
        assert await run.await_later("hi") == "later: hi"
        # guest -> host
        assert await run.push(5000) == 5000
        assert b"".join(host.sunk) == bytes(i % 256 for i in range(5000))
        stream = await run.give_bytes(3000)
        assert b"".join([c async for c in stream]) == bytes(i % 256 for i in range(3000))
        words = await run.give_words(["a", "bc", "def"])
        assert [w async for c in words for w in c] == ["a", "bc", "def"]
        fut = await run.give_later("loud")
        assert is_future(fut) and await fut == "LOUD"
        # the guest cancels: it drops the host's endless stream, the producer is cancelled
        assert await run.pull_some(2500) == 2500
        await asyncio.wait_for(host.endless_closed.wait(), 5)
        # the host cancels: it drops the guest's endless stream after a few chunks
        endless = await run.give_bytes(0)
        got = 0
        async for chunk in endless:
            got += len(chunk)
            if got >= 10_000:
                break
        endless.drop()
        for _ in range(50):
            await asyncio.sleep(0)
        assert await run.given() >= 8192
        # a cancelled read settles as the end of the stream (A8)
        other = await run.give_bytes(0)
        assert await other.read(100)
        other.cancel_read()
        other.drop()
        # a future the host drops unread is silent (A16)
        dropped = await run.give_later("unread")
        dropped.drop()
        assert await run.await_later("again") == "later: again"


def test_py_async_guest_exchanges_streams_and_futures_with_the_host(guest: bytes) -> None:
    asyncio.run(_run(guest))
