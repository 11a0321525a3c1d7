"""How a host end's copy settles (CanonicalABI.md §"Stream State"): a copy that
completes at once costs no suspension, and a parked host copy stays offered
until its coroutine resumes, like a guest's buffer until it receives its event."""

from __future__ import annotations

import asyncio
from typing import Any

from polyengine.concurrency import SharedStreamImpl, Store
from polyengine.concurrency.buffers import HostReadableBuffer, HostWritableBuffer
from polyengine.concurrency.host_ends import HostStreamReader, HostStreamWriter
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.types import model as m


def peer_read(shared: SharedStreamImpl, n: int) -> tuple[HostWritableBuffer, list[Any]]:
    """A reader arriving at the shared stream (as a guest's read does), not parking."""
    buf = HostWritableBuffer(m.U8(), n)
    done: list[Any] = []
    shared.read(None, buf, lambda reclaim: done.append(("copy", reclaim)), done.append)
    return buf, done


def test_a_parked_write_stays_offered_until_the_writer_resumes() -> None:
    async def main() -> None:
        store = Store(SchedulePolicy(None))
        shared = SharedStreamImpl(m.U8())
        writer = HostStreamWriter(store, shared)
        writing = asyncio.ensure_future(writer.write(b"abcdefgh"))
        await asyncio.sleep(0)
        assert shared.pending_buffer is not None  # parked
        first, _ = peer_read(shared, 3)
        second, _ = peer_read(shared, 3)  # the writer has not resumed: still offered
        assert bytes(first.values) == b"abc" and bytes(second.values) == b"def"
        assert await writing == 6  # everything taken before it resumed
        assert shared.pending_buffer is None  # reclaimed on resuming
        third, done = peer_read(shared, 3)  # now the reader parks
        assert not third.values and not done and shared.pending_buffer is third
        writer.drop()

    asyncio.run(main())


def test_a_drained_write_hands_the_stream_to_the_next_reader() -> None:
    async def main() -> None:
        store = Store(SchedulePolicy(None))
        shared = SharedStreamImpl(m.U8())
        writer = HostStreamWriter(store, shared)
        writing = asyncio.ensure_future(writer.write(b"ab"))
        await asyncio.sleep(0)
        whole, _ = peer_read(shared, 10)
        assert bytes(whole.values) == b"ab"
        parked, _ = peer_read(shared, 10)  # the write is used up: this read parks
        assert shared.pending_buffer is parked
        assert await writing == 2
        assert shared.pending_buffer is parked  # resuming did not take the reader's place
        shared.cancel()
        writer.drop()

    asyncio.run(main())


def test_a_copy_that_completes_at_once_does_not_suspend() -> None:
    async def main() -> None:
        store = Store(SchedulePolicy(None))
        shared = SharedStreamImpl(m.U8())
        reader = HostStreamReader(store, shared)
        reading = asyncio.ensure_future(reader.read(10))
        await asyncio.sleep(0)
        writer = HostStreamWriter(store, shared)
        ran: list[str] = []
        asyncio.get_running_loop().call_soon(ran.append, "loop")
        assert await writer.write(b"xyz") == 3
        assert ran == []  # no turn of the loop happened
        assert await reading == b"xyz"
        writer.drop()
        reader.drop()

    asyncio.run(main())


def test_a_reader_takes_part_of_a_bytes_write_without_copying_twice() -> None:
    data = b"0123456789"
    buf = HostReadableBuffer(m.U8(), data)
    part = buf.read_bytes(4)
    assert isinstance(part, memoryview) and part.obj is data and bytes(part) == b"0123"
    rest = HostReadableBuffer(m.U8(), data)
    assert rest.read_bytes(10) is data
