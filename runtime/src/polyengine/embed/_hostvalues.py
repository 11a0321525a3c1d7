"""Streams, futures and error contexts crossing between the host and a guest
(python-mapping.md §6, embedder-api.md §"Streams and futures";
CanonicalABI.md §``lift_stream``/``lower_stream`` and siblings).

:class:`HostValues` is the canonical ABI's ``AsyncValueHooks`` for the host
side of a store: lifting hands the host a :class:`~._streams.Stream`,
:class:`~._streams.Future` or :class:`~._streams.ErrorContext` handle;
lowering accepts a handle (passed through without copying when it belongs
to the same store), or a natural Python producer: for a stream an async
iterable or a finite sync iterable (``bytes``, ``list``, a generator), for a
future any awaitable. A producer is pumped into a fresh stream or future by
a host operation of the store's :class:`~polyengine.concurrency.Driver`, so
a guest waiting on it is never declared deadlocked while the host may still
act. A trap in the instance holding the other end of a host handle fails
the handle's operations with ``PeerTrappedError`` (A7).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import weakref
from collections.abc import AsyncIterator, Awaitable, Iterable
from typing import Any

from polyengine.abi.errors import LowerTypeError
from polyengine.abi.options import LiftLowerContext
from polyengine.concurrency import (
    CopyResult,
    Driver,
    HostFutureReader,
    HostFutureWriter,
    HostStreamReader,
    HostStreamWriter,
    InstanceState,
    SharedFutureImpl,
    SharedStreamImpl,
    Store,
    TaskModelHooks,
)
from polyengine.concurrency import ErrorContext as ErrorContextValue
from polyengine.concurrency.traps import Trap
from polyengine.embed._streams import ErrorContext, Future, Stream, _FutureDropped
from polyengine.types import model as m
from polyengine_protocol import ERROR_CONTEXT, has_brand

__all__ = ["FutureSource", "HostValues"]


def _byte_chunk(item: Any) -> bytes:
    if isinstance(item, bytes | bytearray | memoryview):
        return bytes(item)
    if isinstance(item, int):
        return bytes((item,))
    return bytes(item)


async def _chunks(src: Any, elem: m.ValType | None) -> AsyncIterator[Any]:
    """The chunks a stream source produces (``bytes`` for ``stream<u8>``, else lists)."""
    u8 = isinstance(elem, m.U8)
    if isinstance(src, Stream):
        async for chunk in src:
            yield bytes(chunk) if u8 else list(chunk)
        return
    if isinstance(src, bytes | bytearray | memoryview):
        yield bytes(src) if u8 else list(src)
        return
    if hasattr(src, "__aiter__"):
        async for item in src:
            yield _byte_chunk(item) if u8 else [item]
        return
    if isinstance(src, Iterable) and not isinstance(src, str):
        items = list(src)
        if u8:
            yield b"".join(_byte_chunk(x) for x in items)
        else:
            yield items
        return
    raise LowerTypeError(
        f"expected a stream source (a Stream, an async iterable or a finite iterable), "
        f"got {type(src).__name__}"
    )


class FutureSource:
    """An awaitable that an import returned as its ``future`` result (A12), kept unawaited."""

    __slots__ = ("awaitable",)

    def __init__(self, awaitable: Awaitable[Any]) -> None:
        self.awaitable = awaitable


class HostValues:
    """The embed layer's :class:`~polyengine.abi.compile.AsyncValueHooks` (host side)."""

    __slots__ = ("driver", "held", "hooks", "store")

    def __init__(self, store: Store, driver: Driver) -> None:
        self.store = store
        self.driver = driver
        self.hooks = TaskModelHooks()
        #: the guest-backed handles the host holds (for the A7 peer-trap rule)
        self.held: weakref.WeakSet[Stream | Future] = weakref.WeakSet()

    def on_poison(self, inst: InstanceState, trap: BaseException) -> None:
        """A trap escaped ``inst``: host handles whose other end it holds fail (A7).

        A pending host read completes at once and raises
        ``PeerTrappedError``; later reads raise it too (never a hang, never a
        fake end of stream).
        """
        ends = [getattr(e, "shared", None) for e in inst.ci.handles]
        for handle in list(self.held):
            shared = _shared_of(handle)
            if shared is None or not (
                any(x is shared for x in ends) or shared.pending_inst is inst
            ):
                continue
            handle._peer_trap = trap
            if isinstance(shared, SharedStreamImpl):
                shared.drop()
            elif shared.pending_buffer is not None and shared.pending_inst is None:
                shared.reset_and_notify_pending(CopyResult.DROPPED)
        self.store.wake()

    # -- streams -----------------------------------------------------------------------

    def lift_stream(self, cx: LiftLowerContext, i: int, t: m.Stream) -> object:
        shared = self.hooks.lift_stream(cx, i, t)
        assert isinstance(shared, SharedStreamImpl)
        reader = HostStreamReader(self.store, shared)
        handle = Stream(t.t, reader, self.store)
        self.held.add(handle)
        _drop_when_collected(handle, reader)
        return handle

    def lower_stream(self, cx: LiftLowerContext, v: object, t: m.Stream) -> int:
        return self.hooks.lower_stream(cx, self.stream_of(v, t), t)

    def stream_of(self, v: object, t: m.Stream) -> SharedStreamImpl:
        """The shared stream to hand a guest for the host value ``v``."""
        if isinstance(v, SharedStreamImpl):
            return v
        if isinstance(v, Stream):
            shared = v._take_shared(self.store)
            if shared is not None:
                if shared.t != t.t:
                    raise LowerTypeError("the stream has another element type")
                return shared
            if v._source is None:
                raise LowerTypeError("the stream was dropped or passed to a guest already")
        elif isinstance(v, str) or not (
            hasattr(v, "__aiter__") or isinstance(v, Iterable | bytes | bytearray | memoryview)
        ):
            raise LowerTypeError(
                f"expected a stream source (a Stream, an async iterable or a finite "
                f"iterable), got {type(v).__name__}"
            )
        shared = SharedStreamImpl(t.t)
        writer = HostStreamWriter(self.store, shared)
        self._spawn(self._pump_stream(v, t.t, writer))
        return shared

    async def _pump_stream(self, src: Any, elem: m.ValType | None, w: HostStreamWriter) -> None:
        try:
            async for chunk in _chunks(src, elem):
                if chunk and not await w.write_all(chunk):
                    break
        finally:
            w.drop()
            close = getattr(src, "aclose", None)
            if isinstance(src, Stream):
                src.drop()
            elif close is not None:
                with contextlib.suppress(Exception):
                    await close()

    # -- futures -------------------------------------------------------------------------

    def lift_future(self, cx: LiftLowerContext, i: int, t: m.Future) -> object:
        shared = self.hooks.lift_future(cx, i, t)
        assert isinstance(shared, SharedFutureImpl)
        reader = _Reader(self.store, shared)
        handle = Future(reader, self.store)
        self.held.add(handle)
        _drop_when_collected(handle, reader)
        return handle

    def lower_future(self, cx: LiftLowerContext, v: object, t: m.Future) -> int:
        return self.hooks.lower_future(cx, self.future_of(v, t), t)

    def future_of(self, v: object, t: m.Future) -> SharedFutureImpl:
        """The shared future to hand a guest for the host value ``v``."""
        if isinstance(v, SharedFutureImpl):
            return v
        if isinstance(v, FutureSource):
            v = v.awaitable
        if isinstance(v, Future):
            shared = v._take_shared(self.store)
            if shared is not None:
                if shared.t != t.t:
                    raise LowerTypeError("the future has another value type")
                return shared
            if v._reader is None:
                raise LowerTypeError("the future was dropped or passed to a guest already")
        elif not inspect.isawaitable(v):
            raise LowerTypeError(
                f"expected a future source (a Future or an awaitable), got {type(v).__name__}"
            )
        shared = SharedFutureImpl(t.t)
        writer = HostFutureWriter(self.store, shared)
        self._spawn(self._pump_future(v, writer))
        return shared

    async def _pump_future(self, src: Awaitable[Any], w: HostFutureWriter) -> None:
        try:
            value = await src
        except BaseException:
            _abandon(self.store, w)
            raise
        await w.write(value)

    # -- error contexts --------------------------------------------------------------------

    def lift_error_context(self, cx: LiftLowerContext, i: int) -> object:
        value = self.hooks.lift_error_context(cx, i)
        assert isinstance(value, ErrorContextValue)
        return ErrorContext(value)

    def lower_error_context(self, cx: LiftLowerContext, v: object) -> int:
        if isinstance(v, ErrorContext):
            value = v._value
        elif has_brand(v, ERROR_CONTEXT) and isinstance(getattr(v, "message", None), str):
            value = ErrorContextValue(getattr(v, "message"))  # noqa: B009
        else:
            raise LowerTypeError(f"expected an error-context, got {type(v).__name__}")
        return self.hooks.lower_error_context(cx, value)

    # -- internals ----------------------------------------------------------------------------

    def _spawn(self, aw: Awaitable[None]) -> None:
        def done(task: asyncio.Future[None]) -> None:
            if not task.cancelled():
                task.exception()  # consumed: a producer failure is not an unhandled error

        self.driver.spawn_host(aw, done)


def _drop_when_collected(handle: object, end: HostStreamReader | HostFutureReader) -> None:
    """A handle the host lets go of drops its end (so it stops counting as host work).

    The drop runs on the event loop soon after collection, never inside
    whatever code the collection interrupted.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return

    def later() -> None:
        if not loop.is_closed():
            loop.call_soon(_drop_if_open, end)

    weakref.finalize(handle, later)


def _drop_if_open(end: HostStreamReader | HostFutureReader) -> None:
    if not end.closed:
        end.drop()


def _shared_of(handle: Stream | Future) -> SharedStreamImpl | SharedFutureImpl | None:
    if isinstance(handle, Stream):
        src = handle._source
        return src.shared if isinstance(src, HostStreamReader) and not src.closed else None
    reader = handle._reader
    return reader.shared if reader is not None and not reader.closed else None


class _Reader(HostFutureReader):
    """A host future reader that reports a value-less end as :class:`_FutureDropped`."""

    __slots__ = ()

    async def read(self) -> Any:
        if self.shared.dropped and self.shared.pending_buffer is None:
            self._close()
            raise _FutureDropped
        try:
            return await super().read()
        except IndexError:
            raise _FutureDropped from None


def _abandon(store: Store, w: HostFutureWriter) -> None:
    """The producer of a host future failed: the guest waiting on it traps (A8)."""
    shared = w.shared
    pending = shared.pending_inst
    if shared.pending_buffer is not None and pending is not None:
        store.poison(pending, Trap("the host abandoned a future without a value", code="host"))
    w._close()
