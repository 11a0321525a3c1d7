"""A host end about to wait for a guest runs the guest first (host_ends ``_run_here``).

A host read of a guest's ``stream<u8>`` that finds nothing offered, or a
producer's write ahead that finds its bound full, would wait for the guest
thread its previous operation readied, which the driver runs one event-loop
turn later; instead the end runs the store's ready threads at once (the
same ready queue and order, Concurrency.md §"Waiting and resumption": when a
ready thread runs is the host's choice), and the operation often completes
without waiting. Each end still gives the event loop a turn after
``HERE_READS`` (``HERE_WRITES``) such operations in a row, so a task reading
or feeding a fast guest cannot starve the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import polyengine
from polyengine.concurrency.host_ends import HERE_READS, HERE_WRITES, READ_AHEAD, WRITE_AHEAD

from .test_async import aio
from .test_stream_ahead import DRIP

Wat = Callable[[str], bytes]


class Turns:
    """Counts the event-loop turns the other tasks get (a task that only sleeps(0))."""

    def __init__(self) -> None:
        self.count = 0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            self.count += 1
            await asyncio.sleep(0)

    def __enter__(self) -> Turns:
        self._task = asyncio.get_running_loop().create_task(self._tick())
        return self

    def __exit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()


@aio
async def test_a_read_runs_the_guest_writer_instead_of_waiting(wat: Wat) -> None:
    k = 4096
    per_cycle = READ_AHEAD // k + 1  # the writes that fill the read-ahead, then one offered
    cycles = 8 * (HERE_READS + 1)
    n = cycles * per_cycle
    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        stream = await inst.exports.burst(n, k)
        await asyncio.sleep(0)
        with Turns() as turns:
            got = 0
            while chunk := await stream.read(k):
                assert chunk == bytes(k)
                got += len(chunk)
        assert got == n * k
        assert await inst.exports.written() == n
        # a read that waited for the guest each cycle gives the loop a turn or more a
        # cycle; running the writer at once, HERE_READS cycles of HERE_READS + 1
        # give none
        assert turns.count <= 2 * cycles // (HERE_READS + 1) + 2
        # ... and still the others
        assert turns.count >= cycles // (HERE_READS + 1) - 1


@aio
async def test_a_write_ahead_runs_the_guest_reader_instead_of_waiting(wat: Wat) -> None:
    cycles = 4 * HERE_WRITES
    pulled = 0

    async def source() -> AsyncIterator[bytes]:
        nonlocal pulled
        for i in range(cycles):
            pulled += 1
            yield bytes([i % 251]) * WRITE_AHEAD

    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        with Turns() as turns:
            total = await inst.exports.drain(source())
        assert pulled == cycles
        whole = cycles * WRITE_AHEAD * 1000 + WRITE_AHEAD * sum(i % 251 for i in range(cycles))
        assert total == whole % (1 << 32)  # (a u32: count * 1000 + the sum of the bytes)
        # each full write ahead ran the reader, which took it all: no wait for the pump
        assert turns.count < cycles // 2
        assert turns.count >= cycles // HERE_WRITES - 1


@aio
async def test_a_read_cancelled_in_its_loop_turn_keeps_what_the_guest_wrote(wat: Wat) -> None:
    # after HERE_READS inline runs a read gives the loop a turn, in which the driver's
    # runner goes first and runs the writer into the read's offered buffer; a
    # cancellation arriving then keeps those bytes (the writer was told they were taken)
    k = 4096
    per_cycle = READ_AHEAD // k + 1
    n = 4 * per_cycle
    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        stream = await inst.exports.burst(n, k)
        got = [0]
        for _ in range(per_cycle + 1):  # the offered write, then a whole read-ahead
            got[0] += len(await stream.read(k))
        src = stream._source
        assert src.stashed == 0 and src.shared.pending_buffer is not None

        async def two_reads() -> None:
            got[0] += len(await stream.read(k))  # the write offered: the writer is readied
            src._here = HERE_READS  # so this read gives the loop a turn
            got[0] += len(await stream.read(k))

        reader = asyncio.ensure_future(two_reads())
        await asyncio.sleep(0)  # the reader takes the offered write, offers a read, yields
        assert got[0] == (per_cycle + 2) * k and not reader.done()
        reader.cancel()
        await asyncio.sleep(0)  # the runner runs the writer, then the reader is cancelled
        assert reader.cancelled()
        assert src.stashed == READ_AHEAD  # what the writer was told was taken
        while chunk := await stream.read(k):
            got[0] += len(chunk)
        assert got[0] == n * k
        assert await inst.exports.written() == n
