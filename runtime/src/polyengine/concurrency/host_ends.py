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
    outcome: list[CopyResult] = []
    fut: asyncio.Future[CopyResult] | None = None
    #: the reclaim of a copy that made progress while still offered
    later: list[ReclaimBuffer] = []

    def settle(result: CopyResult) -> None:
        if not outcome:
            outcome.append(result)
            if fut is not None and not fut.done():
                fut.set_result(result)

    def on_copy(reclaim: ReclaimBuffer) -> None:
        if fut is None:
            reclaim()  # progress inside ``start``: nothing is left offered
        elif not later:
            later.append(reclaim)
        settle(CopyResult.COMPLETED)

    def on_copy_done(result: CopyResult) -> None:
        later.clear()  # the buffer is no longer offered: nothing to reclaim
        settle(result)

    start(on_copy, on_copy_done)
    store.wake()
    if outcome:
        return outcome[0]
    fut = asyncio.get_running_loop().create_future()
    try:
        return await fut
    except asyncio.CancelledError:
        if not outcome:
            cancel()
        store.wake()
        raise
    finally:
        if later:
            later.pop()()


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
        buf = HostWritableBuffer(self.shared.t, max_count)
        self._busy = True
        try:
            shared = self.shared

            def start(on_copy: OnCopy, on_done: OnCopyDone) -> None:
                shared.read(None, buf, on_copy, on_done)

            result = await _copy(self.store, start, shared.cancel)
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
        buf = HostReadableBuffer(self.shared.t, vals)
        self._busy = True
        try:
            shared = self.shared

            def start(on_copy: OnCopy, on_done: OnCopyDone) -> None:
                shared.write(None, buf, on_copy, on_done)

            await _copy(self.store, start, shared.cancel)
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
