"""Host-held ends of streams and futures (CanonicalABI.md §Stream State,
§Future State, with the host as the other party).

The embed layer builds its ``Stream``/``StreamWriter``/``Future`` objects on
these: each holds one end of a :class:`~.streams.SharedStreamImpl` or
:class:`~.streams.SharedFutureImpl` and copies through host buffers. While
a host end is open it counts as host work in flight (a guest waiting on the
other end is not deadlocked: the host may still act), and every operation
wakes the store, since it may have completed a guest's pending copy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from polyengine.types import model as m

from .buffers import HostReadableBuffer, HostWritableBuffer, QueuedBytes, ReadAheadBuffer
from .store import Store
from .streams import (
    CopyResult,
    OnCopy,
    OnCopyDone,
    ReclaimBuffer,
    SharedFutureImpl,
    SharedStreamImpl,
)

__all__ = [
    "READ_AHEAD",
    "WRITE_AHEAD",
    "HostFutureReader",
    "HostFutureWriter",
    "HostStreamReader",
    "HostStreamWriter",
]


class _HostEnd:
    """A host end of ``shared`` in ``store``; ``shared`` is typed by each subclass."""

    __slots__ = ("_busy", "_open", "shared", "store")

    shared: SharedStreamImpl | SharedFutureImpl

    def __init__(self, store: Store, shared: SharedStreamImpl | SharedFutureImpl) -> None:
        self.store = store
        self.shared = shared
        self._open = True
        self._busy = False
        store.host_pending += 1  # store.begin_host_work(), inline

    @property
    def closed(self) -> bool:
        return not self._open

    def _check_usable(self) -> None:
        if not self._open:
            raise ValueError("this end was dropped")
        if self._busy:
            raise RuntimeError("an operation is already in progress on this end")

    def _close(self) -> bool:
        if not self._open:
            return False
        self._open = False
        self.store.end_host_work()
        return True


class _Copy:
    """One host copy's callbacks and outcome (see :func:`_copy`).

    ``later`` is the reclaim of a copy that made progress while still
    offered; ``fut`` exists once the copy had to wait; ``held``: the copy
    stays offered past ``start`` (it waits, or runs the guest first:
    :meth:`run_guest`).
    """

    __slots__ = ("fut", "held", "later", "outcome")

    def __init__(self) -> None:
        self.outcome: CopyResult | None = None
        self.fut: asyncio.Future[CopyResult] | None = None
        self.later: ReclaimBuffer | None = None
        self.held = False

    def settle(self, result: CopyResult) -> None:
        if self.outcome is None:
            self.outcome = result
            fut = self.fut
            if fut is not None and not fut.done():
                fut.set_result(result)

    def on_copy(self, reclaim: ReclaimBuffer) -> None:
        if not self.held:
            reclaim()  # progress inside ``start``: nothing is left offered
        elif self.later is None:
            self.later = reclaim
        if self.outcome is None:  # (settle, without the call once settled)
            self.settle(CopyResult.COMPLETED)

    def on_copy_done(self, result: CopyResult) -> None:
        self.later = None  # the buffer is no longer offered: nothing to reclaim
        self.settle(result)

    def run_guest(self, store: Store) -> CopyResult | None:
        """Run ``store``'s next ready thread with the copy still offered (:func:`_run_here`).

        The outcome if they completed it (its buffer then reclaimed, as
        :meth:`wait` does when it resumes), else ``None``: the copy stays
        offered for :meth:`wait`.
        """
        self.held = True
        if not _run_here(store):
            store.wake()
            return None
        outcome = self.outcome
        if outcome is not None:
            self._reclaim()
        return outcome

    def _reclaim(self) -> None:
        """Give back the buffer of a copy that made progress while offered."""
        later = self.later  # (set only with the outcome)
        if later is not None:
            self.later = None
            later()

    def _cancelled(self, store: Store, cancel: Callable[[], None]) -> None:
        """The waiting task was cancelled: cancel a copy not settled yet, and wake the store."""
        if self.outcome is None:
            cancel()
        store.wake()

    async def turn(self, store: Store, cancel: Callable[[], None]) -> CopyResult | None:
        """Give the event loop one turn with the copy offered; its outcome if it came.

        The store is woken first, so its driver's runner, scheduled ahead of
        this task, runs the ready threads in that turn (as it would for
        :meth:`wait`); a copy they completed returns without a future and
        its second loop turn.
        """
        self.held = True
        store.wake()
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            self._cancelled(store, cancel)
            raise
        finally:
            self._reclaim()
        return self.outcome

    async def wait(self, store: Store, cancel: Callable[[], None]) -> CopyResult:
        """Wait for the outcome of a copy that did not complete when it started."""
        fut: asyncio.Future[CopyResult] = asyncio.get_running_loop().create_future()
        self.fut = fut
        self.held = True
        try:
            return await fut
        except asyncio.CancelledError:
            self._cancelled(store, cancel)
            raise
        finally:
            self._reclaim()


async def _copy(
    store: Store,
    start: Callable[[OnCopy, OnCopyDone], None],
    cancel: Callable[[], None],
) -> CopyResult:
    """Run one copy: ``start(on_copy, on_copy_done)``; ``cancel()`` if the caller is cancelled.

    A copy that completes inside ``start`` (the other side was parked)
    returns without suspending or allocating an asyncio future. A parked
    copy the other side made progress on stays offered until this coroutine
    resumes (the buffer is reclaimed then, as a guest's is when it receives
    its event, CanonicalABI.md §"stream.read"): the other side may take more
    of it meanwhile, and the result counts everything taken.
    """
    c = _Copy()
    start(c.on_copy, c.on_copy_done)
    store.wake()
    outcome = c.outcome
    if outcome is not None:
        return outcome
    return await c.wait(store, cancel)


#: the least a host reader of a ``stream<u8>`` accepts from a guest write at once
READ_AHEAD = 64 * 1024
#: how many bytes a host producer's pump keeps offered ahead of a ``stream<u8>`` reader
WRITE_AHEAD = 64 * 1024


#: how many reads (writes ahead) of one host end in a row may complete by running
#: the guest at once (:func:`_run_here`) before the end waits through the event loop
#: again: a task reading a guest's stream is often the one that must also see other
#: events promptly (a response body and its client's disconnect)
HERE_READS = 2
HERE_WRITES = 16


def _run_here(store: Store) -> bool:
    """Run ``store``'s next ready thread at once; whether it ran (the store was idle).

    A host operation that has to wait for a guest (a read with nothing
    offered, a write ahead with its bound full) runs it first: the guest
    thread its previous operation readied (a guest write it took, a guest
    read it fed) would run first in the driver one loop iteration later
    anyway, from the same ready queue (Concurrency.md §"Waiting and
    resumption": which ready thread runs when is the host's choice), and the
    operation then often completes without waiting. The end counts these
    (:data:`HERE_READS`, :data:`HERE_WRITES`), so the task using it still
    gives the event loop a turn now and then.
    """
    run = store.run_here
    return run is not None and run()


class HostStreamReader(_HostEnd):
    """The host's readable end of a stream.

    For ``stream<u8>`` a read that has to wait (nothing is offered) is a
    :class:`~.buffers.ReadAheadBuffer`: a guest writing into it is told it
    took up to the larger of :data:`READ_AHEAD` bytes and the read's count
    (the host is a reader that is always ready up to a bound, as a host
    stream consumer may be; CanonicalABI.md §"stream.write" completes a
    write with the count its reader took), so the guest goes on writing
    without waiting for the host. What the read does not return waits in
    ``stash`` for the next reads, which return it without waiting. A read
    that finds a write offered takes at most its own count of it, and a
    host writer is always told exactly what a read took. Other element
    types are read at most ``max_count`` at a time.
    """

    __slots__ = ("_here", "stash")

    shared: SharedStreamImpl

    def __init__(self, store: Store, shared: SharedStreamImpl) -> None:
        super().__init__(store, shared)
        #: reads completed by running the writer here since this end last waited
        self._here = 0
        #: bytes a guest's write delivered past a read's count (``stream<u8>`` only)
        self.stash: bytearray | None = bytearray() if isinstance(shared.t, m.U8) else None

    @property
    def t(self) -> m.ValType | None:
        return self.shared.t

    @property
    def stashed(self) -> int:
        """How many delivered bytes wait for the next read."""
        stash = self.stash
        return 0 if stash is None else len(stash)

    def ready_stash(self) -> bool:
        """Whether a read would return stashed bytes at once (open, idle, bytes stashed)."""
        return bool(self.stash) and self._open and not self._busy

    def take_stash(self, max_count: int) -> bytes:
        """Up to ``max_count`` of the stashed bytes (never waits)."""
        stash = self.stash
        assert stash is not None
        if len(stash) <= max_count:
            out = bytes(stash)
            stash.clear()
        else:
            out = bytes(memoryview(stash)[:max_count])
            del stash[:max_count]
        return out

    def unread(self, data: bytes) -> None:
        """Put ``data`` back in front of the stashed bytes (a direct session took less)."""
        stash = self.stash
        assert stash is not None
        stash[:0] = data

    async def read(self, max_count: int) -> list[Any] | bytes | None:
        """Up to ``max_count`` values (``bytes`` for ``stream<u8>``); ``None`` at the end."""
        if self._busy or not self._open:
            self._check_usable()  # raises
        if max_count < 1:
            raise ValueError("max_count must be at least 1")
        stash = self.stash
        if stash:
            return self.take_stash(max_count)
        shared = self.shared
        buf: HostWritableBuffer
        pending = shared.pending_buffer
        offered = pending is not None and pending.remain() > 0
        if offered and stash is not None and shared.__class__ is SharedStreamImpl:
            data = shared.read_offered_bytes(max_count)  # a guest's write: its bytes at once
            if data is not None:
                self.store.wake()
                return data
        if stash is not None and max_count < READ_AHEAD and not offered:
            # nothing offered: this read waits, and a guest's writes to come may fill it ahead
            buf = ReadAheadBuffer(shared.t, max_count, READ_AHEAD)
        else:
            buf = HostWritableBuffer(shared.t, max_count)
        self._busy = True
        try:
            # :func:`_copy` inline: this is the per-chunk path of a host reader
            c = _Copy()
            shared.read(None, buf, c.on_copy, c.on_copy_done)
            result = c.outcome
            if result is not None:
                self.store.wake()
            elif self._here < HERE_READS:
                result = c.run_guest(self.store)  # the guest writer first (see _run_here)
                self._here += 1
            else:
                self._here = 0
                result = await c.turn(self.store, shared.cancel)  # the loop's turn first
            if result is None:
                self._here = 0
                result = await c.wait(self.store, shared.cancel)
        except asyncio.CancelledError:
            if stash is not None and buf.values:
                self.stash = cast(bytearray, buf.values)  # the writer was told: keep them
            raise
        finally:
            self._busy = False
        values = buf.values
        if result is CopyResult.DROPPED and not values:
            return None
        if isinstance(values, bytearray):
            if len(values) <= max_count:
                return bytes(values)
            self.stash = values
            return self.take_stash(max_count)
        return values

    def drop(self) -> None:
        """Drop the end (idempotent); a pending guest write sees ``DROPPED``."""
        if self._close():
            if self.stash:
                self.stash.clear()
            self.shared.drop()
            self.store.wake()


class _Ahead:
    """A host writer's offer of queued chunks (see :meth:`HostStreamWriter.write_ahead`).

    The offer stays pending on the shared stream while it holds bytes;
    taken empty, it is reclaimed and ``outcome`` is ``COMPLETED``.
    ``limit``: the waiting producer is woken once fewer bytes are queued.
    """

    __slots__ = ("buf", "fut", "limit", "outcome")

    def __init__(self, buf: QueuedBytes) -> None:
        self.buf = buf
        self.limit = WRITE_AHEAD
        self.outcome: CopyResult | None = None
        self.fut: asyncio.Future[None] | None = None

    def on_copy(self, reclaim: ReclaimBuffer) -> None:
        if not self.buf.queued:
            reclaim()
            self.outcome = CopyResult.COMPLETED
        if self.fut is not None:  # (a producer waits: _wake, without the call otherwise)
            self._wake()

    def on_copy_done(self, result: CopyResult) -> None:
        self.outcome = result
        self._wake()

    def _wake(self) -> None:
        fut = self.fut
        ready = self.outcome is not None or self.buf.queued < self.limit
        if ready and fut is not None and not fut.done():
            fut.set_result(None)

    async def wait(self, store: Store, shared: SharedStreamImpl) -> None:
        """Until fewer than ``limit`` bytes are queued or the offer ended."""
        while self.outcome is None and self.buf.queued >= self.limit:
            fut = self.fut = asyncio.get_running_loop().create_future()
            try:
                await fut
            except asyncio.CancelledError:
                if self.outcome is None and shared.pending_buffer is self.buf:
                    shared.cancel()  # withdraw the offer
                store.wake()
                raise
            finally:
                self.fut = None


class HostStreamWriter(_HostEnd):
    """The host's writable end of a stream.

    :meth:`write` offers one chunk and returns what the reader took of it.
    :meth:`write_ahead` (``stream<u8>``, for a host producer's pump) keeps
    up to :data:`WRITE_AHEAD` bytes of chunks offered one behind another,
    so a guest reading on takes the next chunk at once (COMPLETED) instead
    of waiting for the producer (CanonicalABI.md §"stream.read": a read
    completes with what the writer offered).
    """

    __slots__ = ("_here", "ahead")

    shared: SharedStreamImpl

    def __init__(self, store: Store, shared: SharedStreamImpl) -> None:
        super().__init__(store, shared)
        self.ahead: _Ahead | None = None
        #: writes ahead that ran the reader here since this end last waited
        self._here = 0

    async def write_ahead(self, data: bytes | bytearray | memoryview) -> CopyResult | None:
        """Queue ``data`` behind the bytes still offered; wait while too many are.

        ``None`` while the stream takes more; ``DROPPED`` once the reader
        dropped (what it did not take is lost with it); ``CANCELLED`` when the
        offer was withdrawn (:meth:`take_rest` gives back what was not taken).
        """
        if self._busy or not self._open:
            self._check_usable()  # raises
        a = self.ahead
        if a is not None and a.outcome is None:
            a.buf.push(data)  # still offered: the reader takes it behind the rest
        else:
            buf = QueuedBytes(self.shared.t)
            buf.push(data)
            a = self._offer(buf)
        if a.outcome is None and a.buf.queued >= a.limit:
            # the guest reader first (see _run_here); then wait if it left too many
            if self._here < HERE_WRITES and _run_here(self.store):
                self._here += 1
            if a.outcome is None and a.buf.queued >= a.limit:
                self._here = 0
                await a.wait(self.store, self.shared)  # (it returns at once otherwise)
        return None if a.outcome is None or a.outcome is CopyResult.COMPLETED else a.outcome

    def _offer(self, buf: QueuedBytes) -> _Ahead:
        """Offer ``buf`` until it is pending, taken or the stream ended."""
        shared = self.shared
        while True:
            a = self.ahead = _Ahead(buf)
            shared.write(None, buf, a.on_copy, a.on_copy_done)
            self.store.wake()
            if a.outcome is not CopyResult.COMPLETED or not buf.queued:
                return a
            # a waiting reader took part of it and completed: offer the rest anew

    async def flush_ahead(self) -> CopyResult | None:
        """Wait until the queued bytes are taken; as :meth:`write_ahead` returns."""
        a = self.ahead
        if a is None:
            return None
        a.limit = 1
        await a.wait(self.store, self.shared)
        return None if a.outcome is CopyResult.COMPLETED else a.outcome

    def take_rest(self) -> bytes:
        """The queued bytes a withdrawn offer did not deliver."""
        a, self.ahead = self.ahead, None
        return b"" if a is None else a.buf.rest()

    async def write(self, values: list[Any] | bytes | bytearray | memoryview) -> int:
        """Offer ``values``; return how many the reader took (0 once it dropped).

        For ``stream<u8>`` a bytes-like object is copied into guest memory in bulk.
        """
        self._check_usable()
        vals: list[Any] | bytes | bytearray | memoryview = (
            values
            if isinstance(self.shared.t, m.U8) and not isinstance(values, list)
            else list(values)
        )
        if isinstance(vals, memoryview) and (vals.format != "B" or not vals.c_contiguous):
            vals = vals.tobytes()  # its bytes, as write_all takes them: one per element
        shared = self.shared
        buf = HostReadableBuffer(shared.t, vals)
        self._busy = True
        try:
            # :func:`_copy` inline: this is the per-chunk path of a host writer
            c = _Copy()
            shared.write(None, buf, c.on_copy, c.on_copy_done)
            self.store.wake()
            if c.outcome is None:
                await c.wait(self.store, shared.cancel)
        finally:
            self._busy = False
        return buf.progress

    async def write_all(self, values: list[Any] | bytes | bytearray | memoryview) -> bool:
        """Write every value; ``False`` if the reader dropped first."""
        rest = values if isinstance(values, list | bytes | bytearray) else bytes(values)
        while rest:
            n = await self.write(rest)
            if n == 0 and self.shared.dropped:
                return False
            rest = rest[n:]
        return True

    def drop(self) -> None:
        """Drop the end (idempotent): the reader sees the end of the stream."""
        if self._close():
            self.shared.drop()
            self.store.wake()


class HostFutureReader(_HostEnd):
    """The host's readable end of a future."""

    __slots__ = ()

    shared: SharedFutureImpl

    if TYPE_CHECKING:  # _HostEnd.__init__ runs (no call of its own), for its shared type

        def __init__(self, store: Store, shared: SharedFutureImpl) -> None: ...

    async def read(self) -> Any:
        """The value (the end is done afterwards)."""
        if self._busy or not self._open:
            self._check_usable()  # raises
        shared = self.shared
        buf = HostWritableBuffer(shared.t, 1)
        buf.values = []
        self._busy = True
        try:
            # :func:`_copy` inline: a future is read once, and the read usually waits
            c = _Copy()
            shared.read(None, buf, c.on_copy_done)
            store = self.store
            store.wake()
            if c.outcome is None:
                await c.wait(store, shared.cancel)
        finally:
            self._busy = False
        self._close()
        return buf.values[0]

    def drop(self) -> None:
        if self._close():
            self.shared.drop()
            self.store.wake()


class HostFutureWriter(_HostEnd):
    """The host's writable end of a future."""

    __slots__ = ()

    shared: SharedFutureImpl

    if TYPE_CHECKING:  # _HostEnd.__init__ runs (no call of its own), for its shared type

        def __init__(self, store: Store, shared: SharedFutureImpl) -> None: ...

    async def write(self, value: Any) -> bool:
        """Deliver ``value``; ``False`` if the reader dropped first."""
        self._check_usable()
        buf = HostReadableBuffer(self.shared.t, [value])
        self._busy = True
        try:
            shared = self.shared

            def start(_on_copy: OnCopy, on_done: OnCopyDone) -> None:
                shared.write(None, buf, on_done)

            result = await _copy(self.store, start, shared.cancel)
        finally:
            self._busy = False
        self._close()
        return result is CopyResult.COMPLETED

    def offer(self, value: Any, then: Callable[[CopyResult], None]) -> None:
        """:meth:`write` without a coroutine: ``value`` stays offered until the reader
        takes it or drops the future; the end then closes and ``then(result)`` runs,
        one loop callback later (never inside the guest's call that took it)."""
        self._check_usable()
        buf = HostReadableBuffer(self.shared.t, [value])
        self._busy = True
        loop = asyncio.get_running_loop()

        def done(result: CopyResult) -> None:
            loop.call_soon(self._offered, result, then)

        self.shared.write(None, buf, done)
        self.store.wake()

    def _offered(self, result: CopyResult, then: Callable[[CopyResult], None]) -> None:
        self._busy = False
        self._close()
        then(result)

    def drop(self) -> None:
        """Drop without writing (the host's choice; a guest writer would trap)."""
        if self._close():
            self.shared.drop()
            self.store.wake()
