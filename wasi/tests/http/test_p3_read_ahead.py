"""A 0.3 response the guest makes is read from the moment it is made.

``Begun`` steps an awaitable at once (the host's read is posted before the
guest goes on); ``Response.new`` begins reading the body and the trailers,
``host_body`` hands those reads to the server, ``consume_body`` gives a
guest reading its own response what was read first, ``close`` stops them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from polyengine_protocol import ComponentException
from polyengine_wasi._http._begun import Begun
from polyengine_wasi.hosthttp import Fields, Response


class _Stream:
    """A stand-in for a guest's body stream: each read waits for ``feed``."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.reads = 0
        self.cancelled = 0

    def feed(self, *chunks: bytes) -> None:
        for chunk in chunks:
            self.queue.put_nowait(chunk)

    async def read(self, max_count: int) -> bytes:
        self.reads += 1
        try:
            return await self.queue.get()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    async def _chunks(self) -> AsyncIterator[bytes]:
        while True:
            chunk = await self.read(65536)
            if not chunk:
                return
            yield chunk

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()


class _Trailers:
    """A stand-in for a guest's trailers future: awaiting it waits for ``settle``."""

    def __init__(self) -> None:
        self.fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.awaited = 0
        self.cancelled = 0

    def settle(self, value: Any) -> None:
        self.fut.set_result(value)

    async def _get(self) -> Any:
        self.awaited += 1
        try:
            return await self.fut
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    def __await__(self) -> Any:
        return self._get().__await__()


async def _drain(contents: Any) -> bytes:
    return b"".join([bytes(c) async for c in contents])


def test_begun_runs_to_its_first_wait_at_once_and_gives_the_value() -> None:
    steps: list[str] = []

    async def work(fut: asyncio.Future[int]) -> int:
        steps.append("posted")
        value = await fut
        steps.append("woken")
        return value + 1

    async def main() -> tuple[list[str], bool, int]:
        fut = asyncio.get_running_loop().create_future()
        begun = Begun(work(fut))
        before = list(steps)
        waiting = not begun.done()
        fut.set_result(41)
        return before, waiting, await begun

    before, waiting, value = asyncio.run(main())
    assert before == ["posted"]
    assert waiting
    assert value == 42
    assert steps == ["posted", "woken"]


def test_begun_that_finishes_or_fails_at_once() -> None:
    async def quick() -> str:
        return "now"

    async def broken() -> str:
        raise KeyError("bad")

    async def main() -> None:
        done = Begun(quick())
        assert done.done()
        assert done.result() == "now"
        assert await done == "now"
        failed = Begun(broken())
        assert failed.done()
        with pytest.raises(KeyError, match="bad"):
            await failed

    asyncio.run(main())


def test_begun_done_steps_past_a_future_settled_meanwhile() -> None:
    async def main() -> None:
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        begun = Begun(fut)
        assert not begun.done()
        fut.set_result("late")
        assert begun.done()
        assert begun.result() == "late"

    asyncio.run(main())


def test_begun_cancel_throws_cancelled_error_where_it_waits() -> None:
    seen: list[str] = []

    async def work(fut: asyncio.Future[int]) -> int:
        try:
            return await fut
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main() -> None:
        fut = asyncio.get_running_loop().create_future()
        begun = Begun(work(fut))
        begun.cancel()
        begun.cancel()  # a second time: nothing left to stop
        fut.set_result(1)

    asyncio.run(main())
    assert seen == ["cancelled"]


def test_a_task_awaiting_a_begun_passes_its_cancellation_on() -> None:
    seen: list[str] = []

    async def work() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main() -> None:
        begun = Begun(work())

        async def waiter() -> None:
            await begun

        task = asyncio.ensure_future(waiter())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == ["cancelled"]


def test_response_new_reads_body_and_trailers_at_once_and_hands_them_to_the_server() -> None:
    async def main() -> None:
        body, trailers = _Stream(), _Trailers()
        response, _sent = Response.new(Fields(), body, trailers)
        assert (body.reads, trailers.awaited) == (1, 1)  # posted before any loop turn
        body.feed(b"first", b"second", b"")
        trailers.settle({"kind": "ok", "value": None})
        first, contents, later = response.host_body()
        assert first is not None
        assert await first == b"first"
        assert contents is body
        assert await _drain(contents) == b"second"
        assert await later == {"kind": "ok", "value": None}
        assert body.cancelled == trailers.cancelled == 0

    asyncio.run(main())


def test_a_guest_consuming_its_own_response_reads_what_was_read_first() -> None:
    async def main() -> None:
        body, trailers = _Stream(), _Trailers()
        body.feed(b"taken ahead")
        response, _sent = Response.new(Fields(), body, trailers)
        trailers.settle({"kind": "ok", "value": None})
        body.feed(b", then the rest", b"")
        contents, again = Response.consume_body(response, None)
        assert await _drain(contents) == b"taken ahead, then the rest"
        assert await again == {"kind": "ok", "value": None}
        with pytest.raises(ComponentException):  # a body is consumed once
            Response.consume_body(response, None)

    asyncio.run(main())


def test_consuming_while_the_reads_wait_cancels_them_and_hands_the_same_ends_back() -> None:
    async def main() -> None:
        body, trailers = _Stream(), _Trailers()
        response, _sent = Response.new(Fields(), body, trailers)
        contents, again = Response.consume_body(response, None)
        assert contents is body
        assert again is trailers
        assert (body.cancelled, trailers.cancelled) == (1, 1)

    asyncio.run(main())


def test_a_dropped_response_stops_its_reads() -> None:
    async def main() -> None:
        body, trailers = _Stream(), _Trailers()
        response, _sent = Response.new(Fields(), body, trailers)
        response.close()
        assert (body.cancelled, trailers.cancelled) == (1, 1)
        response.close()  # idempotent

    asyncio.run(main())


def test_a_response_made_without_a_body_reads_only_its_trailers() -> None:
    async def main() -> None:
        trailers = _Trailers()
        response, _sent = Response.new(Fields(), None, trailers)
        trailers.settle({"kind": "ok", "value": None})
        first, contents, later = response.host_body()
        assert first is None
        assert contents is None
        assert await later == {"kind": "ok", "value": None}

    asyncio.run(main())
