"""Host ends of ``stream<u8>`` that read and offer ahead (CanonicalABI.md
§"stream.read", §"stream.write", §Stream State; embedder-api.md A5, A8).

A host read that waits takes ahead from a guest writer (not from a host
writer, which is told exactly what the read took); what it took stays with
the reader even when the read is cancelled before it returns.

The pump of a host producer keeps up to ``WRITE_AHEAD`` bytes offered as one
growing offer (``QueuedBytes``): a reader takes bytes across its chunks; a
reader dropping loses what it did not take; withdrawing the offer (a guest
handing the stream back, A5) gives the rest back to the pipe, which offers
it to the host reader, in order; a producer that fails after some chunks
gets them taken first, then the failure reaches the reader (A8).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from polyengine.concurrency import CopyResult, SharedStreamImpl, Store
from polyengine.concurrency.buffers import (
    HostReadableBuffer,
    HostWritableBuffer,
    QueuedBytes,
    ReadAheadBuffer,
    transfer,
)
from polyengine.concurrency.host_ends import READ_AHEAD, WRITE_AHEAD, HostStreamReader
from polyengine.concurrency.pipe import HostFedStream, Pipe
from polyengine.concurrency.pumps import pump_stream
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.types import model as m
from polyengine_protocol import StreamProducerError


def test_queued_bytes_are_read_across_chunks() -> None:
    q = QueuedBytes(m.U8())
    for part in (b"abc", b"", b"defg", b"h"):
        q.push(part)
    assert q.remain() == 8 and not q.is_zero_length()
    dst = HostWritableBuffer(m.U8(), 5)
    transfer(q, dst, 5)
    assert bytes(dst.values) == b"abcde" and q.remain() == 3 and q.progress == 5
    assert q.read(1) == [ord("f")]
    assert q.rest() == b"gh"
    assert q.remain() == 0 and q.is_zero_length() and q.rest() == b""


async def _gen(items: list[bytes], fail: bool = False) -> AsyncIterator[bytes]:
    for item in items:
        yield item
    if fail:
        raise OSError("source broke")


def _bound() -> tuple[Store, Pipe, HostFedStream]:
    store = Store(SchedulePolicy(None))
    pipe = Pipe()
    shared = HostFedStream(m.U8(), pipe)
    pipe.bind(store, shared)
    return store, pipe, shared


def test_the_pump_offers_its_chunks_as_one_offer_up_to_the_bound() -> None:
    async def main() -> tuple[int, int, list[int]]:
        _store, pipe, shared = _bound()
        k = 4096
        items = [bytes([i % 251]) * k for i in range(3 * WRITE_AHEAD // k)]
        pump = asyncio.ensure_future(pump_stream(_gen(items), True, pipe, None, "test"))
        await asyncio.sleep(0)
        offered = shared.pending_buffer
        assert isinstance(offered, QueuedBytes)
        first = offered.remain()
        sizes = []
        got = b""
        while True:  # a host buffer in the guest's place: takes what is offered
            buf = HostWritableBuffer(m.U8(), 3 * k + 5)
            pending = shared.pending_buffer
            if pending is None:
                if pump.done():
                    break
                await asyncio.sleep(0)
                continue
            assert isinstance(pending, QueuedBytes)
            n = min(pending.remain(), buf.remain())
            transfer(pending, buf, n)
            on_copy = shared.pending_on_copy
            assert on_copy is not None
            on_copy(shared.reset_pending)
            sizes.append(n)
            got += bytes(buf.values)
            await asyncio.sleep(0)
        await pump
        assert got == b"".join(items)
        return first, len(got), sizes

    first, total, sizes = asyncio.run(main())
    assert first == WRITE_AHEAD  # filled up to the bound, then the pump waited
    assert total == 3 * WRITE_AHEAD
    assert max(sizes) == 3 * 4096 + 5  # a read takes bytes of several chunks


def test_a_withdrawn_offer_goes_to_the_host_reader_in_order() -> None:
    async def main() -> bytes:
        _store, pipe, shared = _bound()
        items = [bytes([65 + i]) * 1000 for i in range(5)]
        pump = asyncio.ensure_future(pump_stream(_gen(items), True, pipe, None, "test"))
        await asyncio.sleep(0)
        offered = shared.pending_buffer
        assert isinstance(offered, QueuedBytes) and offered.remain() == 5000
        pipe.unbind()  # a guest handed the stream back unread
        got = b""
        while (chunk := await pipe.read(1500)) is not None:
            got += bytes(chunk)
        await pump
        return got

    assert asyncio.run(main()) == b"".join(bytes([65 + i]) * 1000 for i in range(5))


def test_a_failing_producer_has_its_chunks_taken_before_the_failure() -> None:
    async def main() -> tuple[bytes, BaseException | None]:
        _store, pipe, shared = _bound()
        pump = asyncio.ensure_future(
            pump_stream(_gen([b"abc", b"de"], fail=True), True, pipe, None, "test")
        )
        await asyncio.sleep(0)
        assert shared.failure is None  # the failure waits for the chunks to be taken
        buf = HostWritableBuffer(m.U8(), 10)
        pending = shared.pending_buffer
        assert isinstance(pending, QueuedBytes)
        transfer(pending, buf, pending.remain())
        on_copy = shared.pending_on_copy
        assert on_copy is not None
        on_copy(shared.reset_pending)
        await pump
        return bytes(buf.values), shared.failure

    got, failure = asyncio.run(main())
    assert got == b"abcde"
    assert isinstance(failure, StreamProducerError)


def test_a_reader_dropping_ends_the_pump() -> None:
    async def main() -> int:
        _store, pipe, shared = _bound()
        pulled = 0

        async def endless() -> AsyncIterator[bytes]:
            nonlocal pulled
            while True:
                pulled += 1
                yield bytes(4096)

        pump = asyncio.ensure_future(pump_stream(endless(), True, pipe, None, "test"))
        await asyncio.sleep(0)
        shared.drop()
        await asyncio.wait_for(pump, 5)
        return pulled

    pulled = asyncio.run(main())
    assert pulled <= WRITE_AHEAD // 4096 + 1


@pytest.mark.parametrize("size", [1, 4096, WRITE_AHEAD, 3 * WRITE_AHEAD])
def test_one_chunk_of_any_size_is_offered_whole(size: int) -> None:
    async def main() -> int:
        _store, pipe, shared = _bound()
        pump = asyncio.ensure_future(pump_stream(_gen([bytes(size)]), True, pipe, None, "test"))
        await asyncio.sleep(0)
        pending = shared.pending_buffer
        assert isinstance(pending, QueuedBytes)
        n = pending.remain()
        shared.drop()
        await pump
        return n

    assert asyncio.run(main()) == size


def test_a_waiting_read_takes_ahead_from_a_guest_writer_only() -> None:
    async def main() -> tuple[int, int, bytes, bytes]:
        store = Store(SchedulePolicy(None))
        shared = SharedStreamImpl(m.U8())
        reader = HostStreamReader(store, shared)
        reading = asyncio.ensure_future(reader.read(3))
        await asyncio.sleep(0)
        assert isinstance(shared.pending_buffer, ReadAheadBuffer)
        guest = object()  # a writer with an instance: a guest
        src = HostReadableBuffer(m.U8(), b"hello world")
        done: list[CopyResult] = []
        shared.write(guest, src, lambda reclaim: None, done.append)  # type: ignore[arg-type]
        assert done == [CopyResult.COMPLETED]
        first = await reading
        rest = await reader.read(100)
        reader.drop()
        return src.progress, reader.stashed, first, rest

    progress, stashed, first, rest = asyncio.run(main())
    assert (progress, stashed) == (11, 0)
    assert (first, rest) == (b"hel", b"lo world")


def test_a_cancelled_read_keeps_what_it_took_ahead() -> None:
    async def main() -> bytes:
        store = Store(SchedulePolicy(None))
        shared = SharedStreamImpl(m.U8())
        reader = HostStreamReader(store, shared)
        reading = asyncio.ensure_future(reader.read(3))
        await asyncio.sleep(0)
        src = HostReadableBuffer(m.U8(), b"hello world")
        shared.write(object(), src, lambda reclaim: None, lambda result: None)  # type: ignore[arg-type]
        reading.cancel()  # before the read resumed with what it took
        with pytest.raises(asyncio.CancelledError):
            await reading
        out = await asyncio.wait_for(reader.read(100), 5)  # no writer left: it must not wait
        reader.drop()
        return out

    assert asyncio.run(main()) == b"hello world"


def test_read_ahead_is_the_larger_of_the_bound_and_the_count() -> None:
    async def main() -> tuple[int, int]:
        store = Store(SchedulePolicy(None))
        shared = SharedStreamImpl(m.U8())
        reader = HostStreamReader(store, shared)
        small = asyncio.ensure_future(reader.read(10))
        await asyncio.sleep(0)
        src = HostReadableBuffer(m.U8(), bytes(3 * READ_AHEAD))
        shared.write(object(), src, lambda reclaim: None, lambda result: None)  # type: ignore[arg-type]
        await small
        taken_small = src.progress
        while reader.stashed:
            await reader.read(READ_AHEAD)
        shared.reset_pending()
        big = asyncio.ensure_future(reader.read(2 * READ_AHEAD))
        await asyncio.sleep(0)
        src2 = HostReadableBuffer(m.U8(), bytes(3 * READ_AHEAD))
        shared.write(object(), src2, lambda reclaim: None, lambda result: None)  # type: ignore[arg-type]
        await big
        reader.drop()
        return taken_small, src2.progress

    assert asyncio.run(main()) == (READ_AHEAD, 2 * READ_AHEAD)
