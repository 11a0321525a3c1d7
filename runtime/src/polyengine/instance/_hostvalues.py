"""Streams, futures and error contexts crossing between the host and a guest
(CanonicalABI.md §``lift_stream``/``lower_stream``, §``lift_future``/
``lower_future``, §``lift_error_context``/``lower_error_context``;
python-mapping.md §6, embedder-api.md §"Streams and futures").

:class:`HostValues` is the canonical ABI's ``AsyncValueHooks`` for the host
side of a store: lifting hands the host a ``Stream``, ``Future`` or
``ErrorContext`` handle of the embed layer (its classes are handed down as
:class:`HostHandles`, so this layer makes and recognizes them without
importing upward); lowering accepts a handle (passed through without
copying when it belongs to the same store), or a natural Python producer:
for a stream an async iterable or a finite sync iterable (``bytes``,
``list``, a generator), for a future any awaitable. A producer is pumped
(:mod:`polyengine.concurrency.pumps`) into a fresh stream or future by a
host operation of the store's :class:`~polyengine.concurrency.Driver`, so a
guest waiting on it is never declared deadlocked while the host may still
act. A trap in the instance holding the other end of a host handle fails
the handle's operations with ``PeerTrappedError`` (A7).

A handle the host passed into a guest comes back as the same object when a
guest hands its stream or future back (A5). A failed producer is a
``StreamProducerError`` naming where it was passed (:func:`lowering_site`).
Elements holding ``own<R>`` lower through
:class:`~polyengine.instance._elements.ElementLowering` and lift through
:func:`~polyengine.instance._elements.element_lifting` (the host receives
live resource objects).

A guest stream or future handle belongs to the store it was lifted from:
lowering it into another store is refused with a ``TypeError`` naming the
remedy (pass its contents by value), never silently pumped.

Known limits: a producer nested inside a stream element is not site-named; a
resource element read from one store cannot be pumped into another (a
resource belongs to its store: the pump fails naming the element).
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

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
from polyengine.concurrency.feed import feed_future
from polyengine.concurrency.pipe import Chunk, HostFedFuture, HostFedStream, Pipe
from polyengine.concurrency.pumps import pump_future, pump_stream
from polyengine.instance._async import FutureSource
from polyengine.instance._elements import ElementLowering, element_lifting
from polyengine.types import model as m
from polyengine_protocol import (
    ERROR_CONTEXT,
    FUTURE,
    STREAM,
    copy_census,
    has_brand,
)

__all__ = ["HostHandles", "HostValues", "lowering_site"]


class _Handle(Protocol):
    """What a host ``Stream`` or ``Future`` handle of the embed layer offers this layer."""

    #: the host end it reads (``None`` once dropped or passed)
    _source: Any
    #: it was passed into a guest (its end was transferred, A15)
    _passed: bool
    #: the trap of the instance holding the other end (A7)
    _peer_trap: BaseException | None
    #: the guest stream or future it was passed into a guest as (A5)
    _via: Any
    #: makes host values of raw elements holding ``own<R>`` (A13)
    _lift: Callable[[Any], Any] | None

    def _take_shared(self, store: Store) -> Any:
        """The guest stream or future under it, taken over, if it belongs to ``store``."""
        ...

    def _revive_reader(self, reader: Any) -> None:
        """A guest handed back what it passed to it (A5): read it again."""
        ...

    def drop(self) -> None: ...


class StreamHandle(_Handle, Protocol):
    """The embed layer's ``Stream``: the readable end of a ``stream<T>`` held by the host."""

    def __init__(
        self, elem: m.ValType | None, source: HostStreamReader | Pipe, store: Store | None
    ) -> None: ...

    def _take_pipe(self) -> Pipe | None:
        """The unbound pipe under it, taken over for lowering into a guest."""
        ...

    def _revive(self, pipe: Pipe, elem: m.ValType | None) -> None:
        """A guest handed the stream back (A5): it reads ``pipe`` again."""
        ...

    def _relay(self) -> StreamHandle:
        """A handle of its own over its reader, for a pump; it is passed from then on."""
        ...

    async def _read(self, max_count: int, internal: bool) -> Chunk: ...


class FutureHandle(_Handle, Protocol):
    """The embed layer's ``Future``: the readable end of a ``future<T>`` held by the host."""

    def __init__(self, reader: HostFutureReader, store: Store) -> None: ...

    async def _get(self, internal: bool = False) -> Any: ...


class ErrorContextHandle(Protocol):
    """The embed layer's ``ErrorContext``: an ``error-context`` the host received."""

    _value: ErrorContextValue

    def __init__(self, value: ErrorContextValue) -> None: ...


@dataclass(frozen=True, slots=True)
class HostHandles:
    """The host handle classes :class:`HostValues` makes and recognizes (python-mapping.md §6)."""

    stream: type[StreamHandle]
    future: type[FutureHandle]
    error_context: type[ErrorContextHandle]


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


class HostValues:
    """The host side's :class:`~polyengine.abi.compile.AsyncValueHooks` of one store."""

    __slots__ = (
        "_elements",
        "bound",
        "driver",
        "handles",
        "held",
        "hooks",
        "passed",
        "resources",
        "store",
    )

    def __init__(self, store: Store, driver: Driver, handles: HostHandles) -> None:
        self.store = store
        self.driver = driver
        self.handles = handles
        self.hooks = TaskModelHooks()
        #: the guest-backed handles the host holds (for the A7 peer-trap rule) that no
        #: watch of :func:`_drop_when_collected` knows (each watch names its ``owner``)
        self.held: weakref.WeakSet[_Handle] = weakref.WeakSet()
        #: host pipes lowered into this store's guests (for the A7 peer-trap rule)
        self.bound: weakref.WeakSet[Pipe] = weakref.WeakSet()
        #: host handles whose guest end they passed into a guest, by id of that
        #: shared stream/future: lifting it again gives the same handle back (A5)
        self.passed: weakref.WeakValueDictionary[int, _Handle] = weakref.WeakValueDictionary()
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

        for handle in self._held():
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

    def _held(self) -> list[_Handle]:
        """The guest-backed handles the host holds: those watched for collection, and ``held``."""
        found: dict[int, _Handle] = {}
        for watch in list(_WATCHED):
            handle = watch() if watch.owner is self else None
            if handle is not None:
                found[id(handle)] = handle
        for handle in list(self.held):
            found[id(handle)] = handle
        return list(found.values())

    # -- streams -----------------------------------------------------------------------

    def lift_stream(self, cx: LiftLowerContext, i: int, t: m.Stream) -> object:
        shared = self.hooks.lift_stream(cx, i, t)
        assert isinstance(shared, SharedStreamImpl)
        if isinstance(shared, HostFedStream) and shared.pipe is not None:
            return self._hand_back(shared.pipe, t)
        reader = HostStreamReader(self.store, shared)
        handle = self._returning(shared) if self.passed else None
        if isinstance(handle, self.handles.stream):
            handle._revive_reader(reader)
        else:
            handle = self.handles.stream(t.t, reader, self.store)
        elem = t.t
        if elem is not None and elem.__class__ is not m.U8:  # (bytes need no conversion)
            handle._lift = self._lifted_elements(elem)
        if not _drop_when_collected(handle, reader, self):
            self.held.add(handle)
        return handle

    def _returning(self, shared: SharedStreamImpl | SharedFutureImpl) -> _Handle | None:
        """The host handle that passed ``shared`` into a guest, if any (the A5 identity)."""
        passed = self.passed
        if not passed:  # the common case: nothing passed into a guest awaits its return
            return None
        handle: _Handle | None = passed.pop(id(shared), None)
        if handle is not None and handle._via is shared:
            return handle
        return None

    def _hand_back(self, pipe: Pipe, t: m.Stream) -> StreamHandle:
        """A host stream a guest passes back (A5): the host's own handle over the same pipe."""
        pipe.unbind()
        self.bound.discard(pipe)
        ref = pipe.stream
        handle: StreamHandle | None = ref() if ref is not None else None
        if handle is None:
            handle = self.handles.stream(t.t, pipe, None)
        handle._revive(pipe, t.t)
        return handle

    def lower_stream(self, cx: LiftLowerContext, v: object, t: m.Stream) -> int:
        return self.hooks.lower_stream(cx, self.stream_of(v, t, cx), t)

    def stream_of(
        self, v: object, t: m.Stream, cx: LiftLowerContext | None = None
    ) -> SharedStreamImpl:
        """The shared stream to hand a guest for the host value ``v``.

        A guest stream of this store passes through as itself; a host pipe
        (from ``create_stream``, or one a guest handed back) is bound to a
        fresh shared stream; any other producer is pumped into a pipe.
        """
        if isinstance(v, SharedStreamImpl):
            return v
        pipe: Pipe | None = None
        handle: StreamHandle | None = None
        if isinstance(v, self.handles.stream):
            src = v._source
            if isinstance(src, HostStreamReader) and src.store is not self.store:
                raise LowerTypeError(_CROSS_STORE.format(what="stream", by="(c async for c in s)"))
            if isinstance(src, HostStreamReader) and src.shared.t != t.t:
                raise LowerTypeError("the stream has another element type")
            shared = v._take_shared(self.store)
            if shared is not None:
                self.passed[id(shared)] = v
                assert isinstance(shared, SharedStreamImpl)
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
                handle = v
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
            pipe = Pipe()
            site = lowering_site(cx, v) or f"a stream ({type(v).__name__})"
            own = self._own_elements(t.t)
            u8 = isinstance(t.t, m.U8)
            if handle is None:
                self._spawn(pump_stream(v, u8, pipe, own, site))
            elif isinstance(handle._source, HostStreamReader) and handle._source.stashed:
                # bytes read ahead go first: relayed from a handle of the pump's own,
                # while the guest may hand this one back (A5, ``_hand_back``)
                inner = handle._relay()
                self.held.add(inner)
                pipe.stream = weakref.ref(handle)
                self._spawn(
                    pump_stream(
                        v, u8, pipe, own, site, chunks=_RelayChunks(inner, handle), done=inner.drop
                    )
                )
            else:
                read = handle._read
                self._spawn(
                    pump_stream(
                        v,
                        u8,
                        pipe,
                        own,
                        site,
                        chunks=lambda n: read(n, True),
                        done=handle.drop,
                    )
                )
        shared_fed = HostFedStream(t.t, pipe)
        pipe.bind(self.store, shared_fed)
        self.bound.add(pipe)
        return shared_fed

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

    # -- futures -------------------------------------------------------------------------

    def lift_future(self, cx: LiftLowerContext, i: int, t: m.Future) -> object:
        shared = self.hooks.lift_future(cx, i, t)
        assert isinstance(shared, SharedFutureImpl)
        reader = HostFutureReader(self.store, shared)
        handle = self._returning(shared) if self.passed else None
        if isinstance(handle, self.handles.future):
            handle._revive_reader(reader)
        else:
            handle = self.handles.future(reader, self.store)
        handle._lift = self._lifted_elements(t.t)
        if not _drop_when_collected(handle, reader, self):
            self.held.add(handle)
        return handle

    def lower_future(self, cx: LiftLowerContext, v: object, t: m.Future) -> int:
        return self.hooks.lower_future(cx, self.future_of(v, t, cx), t)

    def future_of(
        self, v: object, t: m.Future, cx: LiftLowerContext | None = None
    ) -> SharedFutureImpl:
        """The shared future to hand a guest for the host value ``v``."""
        if type(v) is asyncio.Future:  # the common source: fed by its callbacks
            site = _site_of(cx, v) or "a future (Future)"
            fed = HostFedFuture(t.t)
            feed_future(v, HostFutureWriter(self.store, fed), fed, site, self.driver.run_ready)
            return fed
        if isinstance(v, SharedFutureImpl):
            return v
        if isinstance(v, FutureSource):
            v = v.awaitable
        given = v
        done: Callable[[], None] | None = None
        if isinstance(v, self.handles.future):
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
                assert isinstance(shared, SharedFutureImpl)
                return shared
            if v._source is None or v._passed:
                raise LowerTypeError("the future was dropped or passed to a guest already")
            v._passed = True  # pumped from here on: the host no longer awaits it (A15)
            done = v.drop  # dropped if the pumped future dies first
            v = _FutureRead(v)
        elif has_brand(v, FUTURE):
            raise LowerTypeError(_foreign(v, "future", "asyncio.ensure_future(f)"))
        elif not inspect.isawaitable(v):
            raise LowerTypeError(
                f"expected a future source (a Future or an awaitable), got {type(v).__name__}"
            )
        return self._pumped(v, given, t, cx, done)

    def _pumped(
        self,
        v: Awaitable[Any],
        given: object,
        t: m.Future,
        cx: LiftLowerContext | None,
        done: Callable[[], None] | None,
    ) -> SharedFutureImpl:
        """A fresh future fed by awaiting ``v`` (``given``, as the host passed it)."""
        site = lowering_site(cx, given) or f"a future ({type(given).__name__})"
        fed = HostFedFuture(t.t)
        writer = HostFutureWriter(self.store, fed)
        self._spawn(pump_future(v, writer, fed, site, done=done))
        return fed

    # -- error contexts --------------------------------------------------------------------

    def lift_error_context(self, cx: LiftLowerContext, i: int) -> object:
        value = self.hooks.lift_error_context(cx, i)
        assert isinstance(value, ErrorContextValue)
        return self.handles.error_context(value)

    def lower_error_context(self, cx: LiftLowerContext, v: object) -> int:
        if isinstance(v, self.handles.error_context):
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
    site = _site_of(cx, v)
    return None if site is None else str(site)


class _Site:
    """A lowering site (:func:`lowering_site`) whose text is made when it is shown:
    ``v`` was item ``index`` of the tuple of values labelled ``label``."""

    __slots__ = ("index", "label", "where")

    def __init__(self, label: str, index: int, where: str | None) -> None:
        self.label = label
        self.index = index
        self.where = where

    def __str__(self) -> str:
        root = f"{self.label}[{self.index}]"
        return root if self.where is None else f"{root} of {self.where}"


def _site_of(cx: LiftLowerContext | None, v: object) -> _Site | str | None:
    """:func:`lowering_site`, its text not made yet when ``v`` is one of a tuple of values."""
    at = None if cx is None else cx.at
    if at is None:
        return None
    label, top = at
    where = cx.where if cx is not None else None
    if type(top) is tuple:  # the values of a call: ``v`` is most often one of them
        for k, item in enumerate(top):
            if item is v:
                return _Site(label, k, where)
    path = _path_to(top, v, [_SITE_NODES])
    root = f"{label}{path or ''}"
    return root if where is None else f"{root} of {where}"


def _path_to(node: object, v: object, budget: list[int]) -> str | None:
    """The path of ``v`` inside the plain value ``node`` (``""`` for ``node`` itself)."""
    if node is v:
        return ""
    budget[0] -= 1
    kind = type(node)
    if budget[0] < 0 or kind in _LEAVES:
        return None
    if kind is list or kind is tuple:  # exactly: neither is a Mapping
        return _path_in_items(enumerate(cast("Sequence[object]", node)), v, budget, "[{}]")
    if isinstance(node, str | bytes | bytearray | memoryview):
        return None
    if isinstance(node, Mapping):
        return _path_in_items(node.items(), v, budget, ".{}")
    if isinstance(node, list | tuple):
        return _path_in_items(enumerate(node), v, budget, "[{}]")
    return None


def _path_in_items(
    items: Iterable[tuple[object, object]], v: object, budget: list[int], step: str
) -> str | None:
    for key, item in items:
        sub = _path_to(item, v, budget)
        if sub is not None:
            return step.format(key) + sub
    return None


#: exact types of values that hold no other value (``_path_to`` looks no further)
_LEAVES = frozenset({str, bytes, bytearray, memoryview, int, float, bool, type(None)})

#: how many value nodes the search for a producer inside its value visits
_SITE_NODES = 10_000


class _RelayChunks:
    """The chunks a pump relays from ``inner``, keeping ``outer`` (the handle passed) alive.

    While the pump runs, the handle it was passed as is not collected (which
    would drop the reader both share): a guest may still hand it back (A5).
    """

    __slots__ = ("inner", "outer")

    def __init__(self, inner: StreamHandle, outer: StreamHandle) -> None:
        self.inner = inner
        self.outer = outer

    async def __call__(self, n: int) -> Chunk:
        return await self.inner._read(n, True)


def _drop_when_collected(
    handle: _Handle, end: HostStreamReader | HostFutureReader, owner: HostValues
) -> bool:
    """A handle the host lets go of drops its end (so it stops counting as host work);
    whether it is watched (there is a running loop).

    The drop runs on the event loop soon after collection, never inside
    whatever code the collection interrupted. The watch also counts the
    handle among those ``owner`` holds (:meth:`HostValues._held`).
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    # a weak reference with a callback, kept alive by the set until it fires: the
    # work of ``weakref.finalize`` without its registry and exit hook, per handle
    watch = _Watch(handle, _collected)
    watch.end = end
    watch.loop = loop
    watch.owner = owner
    _WATCHED.add(watch)
    return True


class _Watch(weakref.ref):  # type: ignore[type-arg]
    """A weak reference to a host handle, with the end to drop and the loop to drop it
    on once the handle is collected, and the :class:`HostValues` that lifted it;
    compared and hashed by its own identity (each watch of one handle is its own, and
    it stays hashable once the handle is gone)."""

    __slots__ = ("end", "loop", "owner")

    end: HostStreamReader | HostFutureReader
    loop: asyncio.AbstractEventLoop
    owner: HostValues

    __hash__ = object.__hash__
    __eq__ = object.__eq__


def _collected(watch: _Watch) -> None:
    _WATCHED.discard(watch)
    end, loop = watch.end, watch.loop
    if not end.closed and not loop.is_closed():  # (an end read to its end: nothing to do)
        loop.call_soon(_drop_if_open, end)


#: the weak references :func:`_drop_when_collected` waits on
_WATCHED: set[_Watch] = set()


def _drop_if_open(end: HostStreamReader | HostFutureReader) -> None:
    if not end.closed:
        end.drop()


def _shared_of(handle: _Handle) -> SharedStreamImpl | SharedFutureImpl | None:
    """The guest stream or future a host handle reads, while it reads one."""
    src = handle._source
    if isinstance(src, HostStreamReader | HostFutureReader) and not src.closed:
        return src.shared
    return None


class _FutureRead:
    """Awaiting a host ``Future`` handle pumped into a guest."""

    __slots__ = ("handle",)

    def __init__(self, handle: FutureHandle) -> None:
        self.handle = handle

    def __await__(self) -> Generator[Any, None, Any]:
        return self.handle._get(True).__await__()
