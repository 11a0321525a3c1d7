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
from typing import Any

from polyengine.types import model as m

from .buffers import HostReadableBuffer, HostWritableBuffer
from .store import Store
from .streams import (
    CopyResult,
    OnCopy,
    OnCopyDone,
    ReclaimBuffer,
    SharedFutureImpl,
    SharedStreamImpl,
)

__all__ = ["HostFutureReader", "HostFutureWriter", "HostStreamReader", "HostStreamWriter"]


class _HostEnd:
    __slots__ = ("_busy", "_open", "store")

    def __init__(self, store: Store) -> None:
        self.store = store
        self._open = True
        self._busy = False
        store.begin_host_work()

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
    offered; ``fut`` exists once the copy had to wait.
    """

    __slots__ = ("fut", "later", "outcome")

    def __init__(self) -> None:
        self.outcome: CopyResult | None = None
        self.fut: asyncio.Future[CopyResult] | None = None
        self.later: ReclaimBuffer | None = None

    def settle(self, result: CopyResult) -> None:
        if self.outcome is None:
            self.outcome = result
            fut = self.fut
            if fut is not None and not fut.done():
                fut.set_result(result)

    def on_copy(self, reclaim: ReclaimBuffer) -> None:
        if self.fut is None:
            reclaim()  # progress inside ``start``: nothing is left offered
        elif self.later is None:
            self.later = reclaim
        self.settle(CopyResult.COMPLETED)

    def on_copy_done(self, result: CopyResult) -> None:
        self.later = None  # the buffer is no longer offered: nothing to reclaim
        self.settle(result)

    async def wait(self, store: Store, cancel: Callable[[], None]) -> CopyResult:
        """Wait for the outcome of a copy that did not complete when it started."""
        fut: asyncio.Future[CopyResult] = asyncio.get_running_loop().create_future()
        self.fut = fut
        try:
            return await fut
        except asyncio.CancelledError:
            if self.outcome is None:
                cancel()
            store.wake()
            raise
        finally:
            later = self.later
            if later is not None:
                self.later = None
                later()


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


class HostStreamReader(_HostEnd):
    """The host's readable end of a stream."""

    __slots__ = ("shared",)

    def __init__(self, store: Store, shared: SharedStreamImpl) -> None:
        super().__init__(store)
        self.shared = shared

    @property
    def t(self) -> m.ValType | None:
        return self.shared.t

    async def read(self, max_count: int) -> list[Any] | bytes | None:
        """Up to ``max_count`` values (``bytes`` for ``stream<u8>``); ``None`` at the end."""
        self._check_usable()
        if max_count < 1:
            raise ValueError("max_count must be at least 1")
        shared = self.shared
        buf = HostWritableBuffer(shared.t, max_count)
        self._busy = True
        try:
            # :func:`_copy` inline: this is the per-chunk path of a host reader
            c = _Copy()
            shared.read(None, buf, c.on_copy, c.on_copy_done)
            self.store.wake()
            result = c.outcome
            if result is None:
                result = await c.wait(self.store, shared.cancel)
        finally:
            self._busy = False
        if result is CopyResult.DROPPED and not buf.values:
            return None
        if isinstance(buf.values, bytearray):
            return bytes(buf.values)
        return buf.values

    def drop(self) -> None:
        """Drop the end (idempotent); a pending guest write sees ``DROPPED``."""
        if self._close():
            self.shared.drop()
            self.store.wake()


class HostStreamWriter(_HostEnd):
    """The host's writable end of a stream."""

    __slots__ = ("shared",)

    def __init__(self, store: Store, shared: SharedStreamImpl) -> None:
        super().__init__(store)
        self.shared = shared

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

    __slots__ = ("shared",)

    def __init__(self, store: Store, shared: SharedFutureImpl) -> None:
        super().__init__(store)
        self.shared = shared

    async def read(self) -> Any:
        """The value (the end is done afterwards)."""
        self._check_usable()
        buf = HostWritableBuffer(self.shared.t, 1)
        buf.values = []
        self._busy = True
        try:
            shared = self.shared

            def start(_on_copy: OnCopy, on_done: OnCopyDone) -> None:
                shared.read(None, buf, on_done)

            await _copy(self.store, start, shared.cancel)
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

    __slots__ = ("shared",)

    def __init__(self, store: Store, shared: SharedFutureImpl) -> None:
        super().__init__(store)
        self.shared = shared

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

    def drop(self) -> None:
        """Drop without writing (the host's choice; a guest writer would trap)."""
        if self._close():
            self.shared.drop()
            self.store.wake()
