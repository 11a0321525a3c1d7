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

A handle the host passed into a guest comes back as the same object when a
guest hands its stream or future back (A5). A producer whose stream or
future dies while it is parked is cancelled (A13); a failed producer is a
:class:`StreamProducerError` naming where it was passed
(:func:`lowering_site`). Elements holding ``own<R>`` lower through
:class:`~._pipe.ElementLowering`, which destroys the resources of elements
the reader never takes, and lift through :func:`~._pipe.element_lifting`
(the host receives live resource objects).

A guest stream or future handle belongs to the store it was lifted from:
lowering it into another store is refused with a ``TypeError`` naming the
remedy (pass its contents by value), never silently pumped.

Known limits: a producer nested inside a stream element is not site-named; a
resource element read from one store cannot be pumped into another (a
resource belongs to its store: the pump fails naming the element).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import weakref
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from typing import Any

from polyengine.abi.errors import LowerTypeError
from polyengine.abi.options import LiftLowerContext
from polyengine.concurrency import (
    CopyResult,
    Driver,
    HostFutureReader,
    HostFutureWriter,
    HostStreamReader,
    InstanceState,
    SharedFutureImpl,
    SharedStreamImpl,
    Store,
    TaskModelHooks,
)
from polyengine.concurrency import ErrorContext as ErrorContextValue
from polyengine.embed._pipe import (
    ElementLowering,
    Held,
    HostFedFuture,
    HostFedStream,
    _Pipe,
    element_lifting,
    producer_trap,
)
from polyengine.embed._streams import (
    ErrorContext,
    Future,
    Stream,
    StreamWriter,
    _FutureDropped,
    create_stream,
)
from polyengine.instance import FutureSource
from polyengine.types import model as m
from polyengine_protocol import (
    ERROR_CONTEXT,
    FUTURE,
    STREAM,
    PeerTrappedError,
    StreamProducerError,
    copy_census,
    has_brand,
)

__all__ = ["HostValues"]

def _foreign(v: object, what: str, by: str) -> str:
    """The refusal of a branded handle minted by another copy of the runtime (A9)."""
    cls = type(v)
    text = (
        f"the {what} was made by another copy of polyengine ({cls.__module__}."
        f"{cls.__qualname__} carries the {what} brand but is not this copy's class): "
        f"a handle works only in the copy that made it; pass its contents by value "
        f"instead, e.g. {by}"
    )
    census = copy_census()
    return text if census is None else f"{text}\n{census}"


#: a handle lowered into a store other than its own (embedder-api §"Streams and futures")
_CROSS_STORE = (
    "the {what} belongs to another store (another instantiation): a handle is used "
    "only in its own store; pass its contents by value instead, e.g. {by}"
)


def _byte_chunk(item: Any) -> bytes:
    if isinstance(item, bytes | bytearray | memoryview):
        return bytes(item)
    if isinstance(item, int):
        return bytes((item,))
    return bytes(item)


class HostValues:
    """The embed layer's :class:`~polyengine.abi.compile.AsyncValueHooks` (host side)."""

    __slots__ = (
        "_elements",
        "bound",
        "driver",
        "held",
        "hooks",
        "passed",
        "resources",
        "store",
    )

    def __init__(self, store: Store, driver: Driver) -> None:
        self.store = store
        self.driver = driver
        self.hooks = TaskModelHooks()
        #: the guest-backed handles the host holds (for the A7 peer-trap rule)
        self.held: weakref.WeakSet[Stream | Future] = weakref.WeakSet()
        #: host pipes lowered into this store's guests (for the A7 peer-trap rule)
        self.bound: weakref.WeakSet[_Pipe] = weakref.WeakSet()
        #: host handles whose guest end they passed into a guest, by id of that
        #: shared stream/future: lifting it again gives the same handle back (A5)
        self.passed: weakref.WeakValueDictionary[int, Stream | Future] = (
            weakref.WeakValueDictionary()
        )
        #: (resource type of an index, host resource table), for stream<own<R>> (A13)
        self.resources: Callable[[], tuple[Callable[[int], Any], Any]] | None = None
        #: the element conversions made so far, by (direction, id of the element type);
        #: the type is kept with them, so its id stays its own
        self._elements: dict[tuple[bool, int], tuple[m.ValType, Any]] = {}

    def on_poison(self, inst: InstanceState, trap: BaseException) -> None:
        """A trap escaped ``inst``: host operations whose peer end it holds fail (A7).

        A parked host read, write or direct session completes at once with
        ``PeerTrappedError`` (a write's ``progress`` counts what was
        delivered); later operations raise it too (never a hang, never a
        fake end of stream). A parked producer feeding the dead reader is
        cancelled.
        """
        ends = [getattr(e, "shared", None) for e in inst.ci.handles]

        def holds(shared: SharedStreamImpl | SharedFutureImpl) -> bool:
            return any(x is shared for x in ends) or shared.pending_inst is inst

        for handle in list(self.held):
            shared = _shared_of(handle)
            if shared is None or not holds(shared):
                continue
            handle._peer_trap = trap
            if isinstance(shared, SharedStreamImpl):
                shared.drop()
            elif shared.pending_buffer is not None and shared.pending_inst is None:
                shared.reset_and_notify_pending(CopyResult.DROPPED)
        for pipe in list(self.bound):
            w = pipe.bound
            if w is None or not holds(w.shared):
                continue
            pipe.trap = trap
            w.shared.drop()
        self.store.wake()

    # -- streams -----------------------------------------------------------------------

    def lift_stream(self, cx: LiftLowerContext, i: int, t: m.Stream) -> object:
        shared = self.hooks.lift_stream(cx, i, t)
        assert isinstance(shared, SharedStreamImpl)
        if isinstance(shared, HostFedStream) and shared.pipe is not None:
            return self._hand_back(shared.pipe, t)
        reader = HostStreamReader(self.store, shared)
        handle = self._returning(shared)
        if isinstance(handle, Stream):
            handle._revive_reader(reader)
        else:
            handle = Stream(t.t, reader, self.store)
        handle._lift = self._lifted_elements(t.t)
        self.held.add(handle)
        _drop_when_collected(handle, reader)
        return handle

    def _returning(self, shared: SharedStreamImpl | SharedFutureImpl) -> Stream | Future | None:
        """The host handle that passed ``shared`` into a guest, if any (the A5 identity)."""
        handle = self.passed.pop(id(shared), None)
        if handle is not None and handle._via is shared:
            return handle
        return None

    def _hand_back(self, pipe: _Pipe, t: m.Stream) -> Stream:
        """A host stream a guest passes back (A5): the host's own handle over the same pipe."""
        pipe.unbind()
        self.bound.discard(pipe)
        ref = pipe.stream
        handle = ref() if ref is not None else None
        if handle is None:
            handle = Stream(t.t, pipe, None)
        handle._revive(pipe, t.t)
        return handle

    def lower_stream(self, cx: LiftLowerContext, v: object, t: m.Stream) -> int:
        return self.hooks.lower_stream(cx, self.stream_of(v, t, cx), t)

    def stream_of(
        self, v: object, t: m.Stream, cx: LiftLowerContext | None = None
    ) -> SharedStreamImpl:
        """The shared stream to hand a guest for the host value ``v``.

        A guest stream of this store passes through as itself; a host pipe
        (from :func:`create_stream`, or one a guest handed back) is bound to
        a fresh shared stream; any other producer is pumped into a pipe.
        """
        if isinstance(v, SharedStreamImpl):
            return v
        pipe: _Pipe | None = None
        if isinstance(v, Stream):
            src = v._source
            if isinstance(src, HostStreamReader) and src.store is not self.store:
                raise LowerTypeError(_CROSS_STORE.format(what="stream", by="(c async for c in s)"))
            if isinstance(src, HostStreamReader) and src.shared.t != t.t:
                raise LowerTypeError("the stream has another element type")
            shared = v._take_shared(self.store)
            if shared is not None:
                self.passed[id(shared)] = v
                return shared
            if v._source is None:
                if v._passed:
                    raise LowerTypeError(
                        "the stream was passed to a guest already (its end was transferred)"
                    )
                raise LowerTypeError("the stream was dropped")
            pipe = v._take_pipe()
            if pipe is None:
                v._passed = True  # pumped from here on: the host no longer reads it (A15)
        elif has_brand(v, STREAM):
            raise LowerTypeError(_foreign(v, "stream", "(c async for c in s)"))
        elif isinstance(v, str) or not (
            hasattr(v, "__aiter__") or isinstance(v, Iterable | bytes | bytearray | memoryview)
        ):
            raise LowerTypeError(
                f"expected a stream source (a Stream, an async iterable or a finite "
                f"iterable), got {type(v).__name__}"
            )
        if pipe is None:
            inner, writer = create_stream()
            pipe = writer._pipe
            inner._source = None
            inner._passed = True
            site = lowering_site(cx, v) or f"a stream ({type(v).__name__})"
            self._spawn(self._pump_stream(v, t.t, writer, site))
        shared_fed = HostFedStream(t.t, pipe)
        pipe.bind(self.store, shared_fed)
        self.bound.add(pipe)
        return shared_fed

    async def _pump_stream(
        self, src: Any, elem: m.ValType | None, w: StreamWriter, site: str
    ) -> None:
        """Feed ``src`` into ``w``; a parked producer is cancelled when the reader dies (A13).

        A failure of ``src`` reaches the reader as :class:`StreamProducerError`
        naming ``site`` (where the producer was passed, :func:`lowering_site`).
        """
        pipe = w._pipe
        u8 = isinstance(elem, m.U8)
        try:
            if isinstance(src, Stream):
                own = self._own_elements(elem)
                while True:
                    chunk = await src._read(_PUMP_CHUNK, True)
                    if not chunk or not await self._send(w, chunk, own):
                        break
            elif isinstance(src, bytes | bytearray | memoryview):
                await w.write_all(src if u8 else list(src))
            elif hasattr(src, "__aiter__"):
                await self._pump_async(src, u8, w, pipe, self._own_elements(elem))
            else:
                items = list(src)
                chunk = b"".join(_byte_chunk(x) for x in items) if u8 else items
                if chunk:
                    await self._send(w, chunk, self._own_elements(elem))
        except PeerTrappedError:
            pass  # the reader's instance trapped: nothing left to feed
        except Exception as exc:
            pipe.fail(_producer_error(site, exc))
            return
        finally:
            if isinstance(src, Stream):
                src.drop()
        w.close()

    def _own_elements(self, elem: m.ValType | None) -> ElementLowering | None:
        """How elements holding ``own<R>`` are lowered (A13); ``None`` when ``elem`` holds none."""
        if elem is None or isinstance(elem, m.U8) or self.resources is None:
            return None
        found = self._elements.get((False, id(elem)))
        if found is None:
            rt_of, table = self.resources()
            found = self._elements[False, id(elem)] = (
                elem,
                ElementLowering.of(elem, rt_of, table),
            )
        lowering: ElementLowering | None = found[1]
        return lowering

    def _lifted_elements(self, elem: m.ValType | None) -> Callable[[Any], Any] | None:
        """How raw elements holding ``own<R>`` become host values (A13); ``None``: as they are.

        Made once per element type and store: a type's conversion is a walk of
        the type, which a large one (a wasi:http ``error-code``) makes costly.
        """
        if elem is None or isinstance(elem, m.U8) or self.resources is None:
            return None
        found = self._elements.get((True, id(elem)))
        if found is None:
            rt_of, table = self.resources()
            found = self._elements[True, id(elem)] = (elem, element_lifting(elem, rt_of, table))
        lifting: Callable[[Any], Any] | None = found[1]
        return lifting

    async def _send(self, w: StreamWriter, chunk: Any, own: ElementLowering | None) -> bool:
        """Write ``chunk``; whether all of it was taken.

        Resources inside elements are registered (host objects) or taken
        (guest wrappers) as they are offered; those of elements the reader
        never takes (it dropped the stream, or its instance trapped) are
        destroyed, exactly as if it had taken and dropped them (A13).
        """
        if own is None:
            return bool(await w.write_all(chunk) == len(chunk))
        raws: list[Any] = []
        helds: list[list[Held]] = []
        try:
            for v in chunk:
                raw, held = own.lower(v)
                raws.append(raw)
                helds.append(held)
        except BaseException:
            for held in helds:
                own.release(held)
            raise
        taken = 0
        try:
            taken = await w.write_all(raws)
        except PeerTrappedError as exc:
            taken = exc.progress or 0
            raise
        finally:
            for held in helds[taken:]:
                own.release(held)
        return taken == len(raws)

    async def _pump_async(
        self, src: Any, u8: bool, w: StreamWriter, pipe: _Pipe, own: ElementLowering | None
    ) -> None:
        """Pull ``src`` chunk by chunk into ``w`` inside this one task.

        A pull that is ready costs one ``__anext__`` step (no task or wait
        per chunk). A pull that parks is interrupted when the stream dies
        (A13): a source with a ``cancel()`` method is asked to stop and its
        pending pull drained (a straggler element goes to the un-taken
        release path); otherwise this task is cancelled at the pull, so an
        async generator sees ``CancelledError`` at its await.
        """
        it = src.__aiter__()
        anext = it.__anext__
        dead = pipe.dead_future()
        task = asyncio.current_task()
        assert task is not None
        pull = _Pull()

        def reader_gone(_: object) -> None:
            if not pull.parked or pull.stopped:
                return
            pull.stopped = True
            cancel = getattr(src, "cancel", None)
            if callable(cancel) and not isinstance(src, asyncio.Future):
                with contextlib.suppress(Exception):
                    cancel()
            else:
                pull.interrupted = True
                task.cancel()

        dead.add_done_callback(reader_gone)
        try:
            while not dead.done():
                pull.parked = True
                try:
                    item = await anext()
                except StopAsyncIteration:
                    return
                except asyncio.CancelledError:
                    if pull.interrupted:
                        task.uncancel()
                        return
                    raise
                except Exception:
                    if pull.stopped:
                        return  # a cancelled source's last pull failed: nothing left to feed
                    raise
                finally:
                    pull.parked = False
                if pull.stopped:
                    if pull.interrupted:
                        task.uncancel()  # the source swallowed the cancellation
                    if own is not None:
                        # an element never offered: its resources are destroyed (A13)
                        with contextlib.suppress(Exception):
                            own.release(own.lower(item)[1])
                    return
                chunk = _byte_chunk(item) if u8 else [item]
                if not await self._send(w, chunk, own):
                    return
        finally:
            dead.remove_done_callback(reader_gone)
            close = getattr(it, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    # -- futures -------------------------------------------------------------------------

    def lift_future(self, cx: LiftLowerContext, i: int, t: m.Future) -> object:
        shared = self.hooks.lift_future(cx, i, t)
        assert isinstance(shared, SharedFutureImpl)
        reader = _Reader(self.store, shared)
        handle = self._returning(shared)
        if isinstance(handle, Future):
            handle._revive_reader(reader)
        else:
            handle = Future(reader, self.store)
        handle._lift = self._lifted_elements(t.t)
        self.held.add(handle)
        _drop_when_collected(handle, reader)
        return handle

    def lower_future(self, cx: LiftLowerContext, v: object, t: m.Future) -> int:
        return self.hooks.lower_future(cx, self.future_of(v, t, cx), t)

    def future_of(
        self, v: object, t: m.Future, cx: LiftLowerContext | None = None
    ) -> SharedFutureImpl:
        """The shared future to hand a guest for the host value ``v``."""
        if isinstance(v, SharedFutureImpl):
            return v
        if isinstance(v, FutureSource):
            v = v.awaitable
        given = v
        if isinstance(v, Future):
            reader = v._source
            if reader is not None and reader.store is not self.store:
                raise LowerTypeError(
                    _CROSS_STORE.format(what="future", by="asyncio.ensure_future(f)")
                )
            if reader is not None and reader.shared.t != t.t:
                raise LowerTypeError("the future has another value type")
            shared = v._take_shared(self.store)
            if shared is not None:
                self.passed[id(shared)] = v
                return shared
            if v._source is None or v._passed:
                raise LowerTypeError("the future was dropped or passed to a guest already")
            v._passed = True  # pumped from here on: the host no longer awaits it (A15)
            v = _FutureRead(v)
        elif has_brand(v, FUTURE):
            raise LowerTypeError(_foreign(v, "future", "asyncio.ensure_future(f)"))
        elif not inspect.isawaitable(v):
            raise LowerTypeError(
                f"expected a future source (a Future or an awaitable), got {type(v).__name__}"
            )
        site = lowering_site(cx, given) or f"a future ({type(given).__name__})"
        shared = HostFedFuture(t.t)
        writer = HostFutureWriter(self.store, shared)
        self._spawn(self._pump_future(v, writer, shared, site))
        return shared

    async def _pump_future(
        self, src: Awaitable[Any], w: HostFutureWriter, shared: HostFedFuture, site: str
    ) -> None:
        """Await ``src`` and write its value into ``shared``.

        When the future dies before the value arrives (its reader dropped it
        unread) the producer is cancelled (A13): the await is interrupted,
        which cancels an ``asyncio.Future`` or ``Task`` being awaited and
        throws ``CancelledError`` into a coroutine; an awaitable with a
        ``cancel()`` method is also asked to stop, and a coroutine that never
        started is closed.
        """
        task = asyncio.current_task()
        assert task is not None
        pull = _Pull()

        def reader_gone() -> None:
            pull.stopped = True
            if pull.parked:
                pull.interrupted = True
                task.cancel()

        shared.on_drop = reader_gone
        try:
            if pull.stopped or shared.dropped:
                pull.stopped = True  # the future died before its producer was awaited
                _cancel_source(src)
                return
            pull.parked = True
            try:
                value = await src
            finally:
                pull.parked = False
        except asyncio.CancelledError:
            if pull.interrupted:
                task.uncancel()
                _cancel_source(src)
                return
            # A8: abandonment, never DROPPED: the guest reader traps at its rendezvous
            shared.on_drop = None
            _abandon(
                self.store,
                w,
                _Abandoned("the host dropped the writable end of a future without writing a value"),
            )
            return
        except Exception as exc:
            shared.on_drop = None
            if pull.stopped:
                return  # the future died meanwhile: nobody is left to tell
            _abandon(self.store, w, _producer_error(site, exc))
            return
        finally:
            if pull.stopped:
                if not w.closed:
                    w.drop()  # let go of the dead future: no host work left (A15)
                if isinstance(src, _FutureRead):
                    src.handle.drop()
        shared.on_drop = None
        if pull.interrupted:
            task.uncancel()  # the source swallowed the cancellation and produced anyway
        if not w.closed:
            await w.write(value)  # a future that died meanwhile takes nothing (DROPPED)

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
        elif has_brand(v, ERROR_CONTEXT):
            # A20: a branded carrier of a string message is honoured; one without is a
            # stateful handle of another copy (A9)
            raise LowerTypeError(_foreign(v, "error-context", "an ErrorContext of its message"))
        else:
            raise LowerTypeError(f"expected an error-context, got {type(v).__name__}")
        return self.hooks.lower_error_context(cx, value)

    # -- internals ----------------------------------------------------------------------------

    def _spawn(self, aw: Awaitable[None]) -> None:
        def done(task: asyncio.Future[None]) -> None:
            if not task.cancelled():
                task.exception()  # consumed: a producer failure is not an unhandled error

        self.driver.spawn_host(aw, done)


def _producer_error(site: str, exc: BaseException) -> StreamProducerError:
    """The failure of a host producer, naming where it was passed (its cause is ``exc``)."""
    return StreamProducerError(f"producer for {site} raised {type(exc).__name__}: {exc}", exc)


def lowering_site(cx: LiftLowerContext | None, v: object) -> str | None:
    """Where the host value ``v`` is being lowered, e.g. ``parameter `data` of consume``.

    Lowering labels its values only on the way out of a failure
    (:class:`~polyengine.abi.errors.LowerError` paths), while a producer
    fails later, after the lowering succeeded; so the site is taken now
    from the lowering context: the value being lowered (``cx.at``: its
    label and the whole value, set by the compiled lowering before a value
    that may hold a stream or future), the path of ``v`` inside it (found by
    identity: ``.field``, ``[i]``), and the function (``cx.where``: the
    export's or the import's name). ``None`` when the context does not say
    (``v`` is then named by its type).
    """
    at = None if cx is None else cx.at
    if at is None:
        return None
    label, top = at
    path = _path_to(top, v, [_SITE_NODES])
    root = f"{label}{path or ''}"
    where = cx.where if cx is not None else None
    return root if where is None else f"{root} of {where}"


def _path_to(node: object, v: object, budget: list[int]) -> str | None:
    """The path of ``v`` inside the plain value ``node`` (``""`` for ``node`` itself)."""
    if node is v:
        return ""
    budget[0] -= 1
    if budget[0] < 0 or isinstance(node, str | bytes | bytearray | memoryview):
        return None
    if isinstance(node, Mapping):
        for key, item in node.items():
            sub = _path_to(item, v, budget)
            if sub is not None:
                return f".{key}{sub}"
    elif isinstance(node, list | tuple):
        for i, item in enumerate(node):
            sub = _path_to(item, v, budget)
            if sub is not None:
                return f"[{i}]{sub}"
    return None


#: how many value nodes the search for a producer inside its value visits
_SITE_NODES = 10_000


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
    reader = handle._source
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


class _Abandoned(Exception):
    """A host future source was cancelled before it produced a value (A8)."""


def _abandon(store: Store, w: HostFutureWriter, failure: BaseException) -> None:
    """The producer of a host future failed or was abandoned: its guest reader traps."""
    shared = w.shared
    if isinstance(shared, HostFedFuture):
        shared.failure = failure
    pending = shared.pending_inst
    if shared.pending_buffer is not None:
        if pending is not None:
            store.poison(pending, producer_trap(failure))  # type: ignore[arg-type]
        else:
            shared.reset_and_notify_pending(CopyResult.DROPPED)
    # a host reader sees the failure (or DroppedError); a later guest read traps
    shared.dropped = True
    w._close()


class _FutureRead:
    """Awaiting a host :class:`Future` handle pumped into a guest (it is dropped if the
    pumped future dies first)."""

    __slots__ = ("handle",)

    def __init__(self, handle: Future) -> None:
        self.handle = handle

    def __await__(self) -> Generator[Any, None, Any]:
        return self.handle._get(True).__await__()


def _cancel_source(src: object) -> None:
    """Stop a future source that is no longer awaited (A13)."""
    if inspect.iscoroutine(src):
        src.close()  # never started, or already finished: closing is harmless
        return
    cancel = getattr(src, "cancel", None)
    if callable(cancel):
        with contextlib.suppress(Exception):
            cancel()


class _Pull:
    """The state of a stream pump's pull from its source (A13 cancellation)."""

    __slots__ = ("interrupted", "parked", "stopped")

    def __init__(self) -> None:
        #: a pull is in flight (the pump awaits the source)
        self.parked = False
        #: the stream died during a pull: the pump stops after it
        self.stopped = False
        #: the pump task was cancelled to interrupt the pull
        self.interrupted = False


_PUMP_CHUNK = 64 * 1024
