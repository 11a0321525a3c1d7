"""The host side of a host-created stream: :class:`_Pipe` and the shared
streams and futures that host producers feed (embedder-api.md §"Streams and
futures", A5, A7, A8, A13, A21; python-mapping.md §6).

A :class:`_Pipe` joins a :class:`~._streams.StreamWriter` to its
:class:`~._streams.Stream`. Unbound, it is a host↔host rendezvous: a chunk
write is borrowed until a read takes (a slice of) it, copied once; a direct
session meets a chunk operation of the other side (two direct sessions
cannot meet). Bound (the stream was lowered into a guest), writes go to a
:class:`HostFedStream` through a host writer end, so their counts are what
the guest took; unbinding (a guest handed the stream back) re-offers a
parked write's rest to the host reader.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from polyengine.concurrency import HostStreamWriter, SharedFutureImpl, SharedStreamImpl, Store
from polyengine.embed._direct import DirectReadSession, DirectSession, DirectWriteSession, retract
from polyengine.types import model as m

if TYPE_CHECKING:
    from polyengine.embed._streams import Stream

__all__ = [
    "Chunk",
    "ElementLowering",
    "Held",
    "HostFedFuture",
    "HostFedStream",
    "element_lifting",
    "producer_trap",
]

Chunk = bytes | bytearray | memoryview | list[Any]


class HostFedStream(SharedStreamImpl):
    """A shared stream whose writable end is a host :class:`_Pipe` (a bound pipe).

    A producer failure stored in ``failure`` traps the guest that reads on,
    so a failed producer is never a clean end of stream; the reader dropping
    it tells the pipe (a parked producer is then cancelled, A13).
    """

    __slots__ = ("failure", "pipe")

    def __init__(self, t: m.ValType | None, pipe: _Pipe) -> None:
        super().__init__(t)
        self.pipe: _Pipe | None = pipe
        self.failure: BaseException | None = None

    def drop(self) -> None:
        first = not self.dropped
        super().drop()
        pipe = self.pipe
        if first and pipe is not None and not pipe.closed:
            pipe.reader_dropped()

    def read(self, inst: Any, dst: Any, on_copy: Any, on_copy_done: Any) -> None:
        failure = self.failure
        if failure is not None and inst is not None:
            raise producer_trap(failure)
        super().read(inst, dst, on_copy, on_copy_done)


def producer_trap(failure: BaseException) -> BaseException:
    """The trap a guest reading a failed host producer's stream or future sees."""
    from polyengine.abi.trap import Trap, TrapCode

    trap = Trap(str(failure), code=TrapCode.HOST_IMPORT)
    trap.__cause__ = failure
    return trap


def _as_chunk(chunk: object) -> Chunk:
    if isinstance(chunk, bytes | bytearray | memoryview | list):
        return chunk
    if isinstance(chunk, str):
        raise TypeError("a stream chunk is bytes-like or a list, not a str")
    return list(cast(Any, chunk))


class _Op:
    """A parked pipe operation: a chunk write or read, or a direct session."""

    __slots__ = ("data", "fut", "max", "session", "taken")

    def __init__(
        self,
        fut: asyncio.Future[Any],
        *,
        data: Chunk | None = None,
        max_count: int = 0,
        session: DirectSession | None = None,
    ) -> None:
        self.fut = fut
        self.data = data
        self.max = max_count
        self.session = session
        self.taken = 0


class _Rebind:
    """A parked pipe write resumed because the pipe was bound or unbound."""


_REBIND = _Rebind()


def _slice(data: Chunk, start: int, end: int) -> bytes | list[Any]:
    """Elements ``[start, end)`` of a chunk, copied once (a whole ``bytes`` is not copied)."""
    if isinstance(data, list):
        return data[start:end]
    if isinstance(data, bytes) and start == 0 and end == len(data):
        return data
    return bytes(memoryview(data)[start:end])


class _Pipe:
    """The writable side of a host-created stream and its rendezvous."""

    __slots__ = (
        "__weakref__",
        "bound",
        "closed",
        "dead",
        "demand",
        "failure",
        "offer",
        "reader_gone",
        "stream",
        "trap",
    )

    def __init__(self) -> None:
        self.offer: _Op | None = None
        self.demand: _Op | None = None
        self.closed = False
        self.reader_gone = False
        #: the guest-visible writer while the stream is lowered into a guest
        self.bound: HostStreamWriter | None = None
        #: the trap of the instance holding the readable end (A7)
        self.trap: BaseException | None = None
        #: a producer failure (StreamProducerError) for a host reader
        self.failure: BaseException | None = None
        #: resolved when the reader goes away (to cancel a parked producer, A13)
        self.dead: asyncio.Future[None] | None = None
        self.stream: weakref.ref[Stream] | None = None

    # -- reader side (host↔host) ------------------------------------------------------

    def _park(self, op: _Op, demand: bool) -> asyncio.Future[Any]:
        if demand:
            self.demand = op
        else:
            self.offer = op
        return op.fut

    async def read(self, max_count: int) -> bytes | bytearray | list[Any] | None:
        while True:
            if self.failure is not None:
                raise self.failure
            offer = self.offer
            if offer is None:
                if self.closed:
                    return None
                fut = asyncio.get_running_loop().create_future()
                op = _Op(fut, max_count=max_count)
                self._park(op, True)
                try:
                    out: bytes | bytearray | list[Any] | None = await fut
                finally:
                    if self.demand is op:
                        self.demand = None
                return out
            session = offer.session
            if session is None:
                data = offer.data
                assert data is not None
                end = min(len(data), offer.taken + max_count)
                chunk = _slice(data, offer.taken, end)
                taken = end - offer.taken
                self.offer = None
                offer.fut.set_result(taken)
                return chunk
            scratch = bytearray(max_count)
            k = session.run_view(memoryview(scratch))
            if session.finished:
                self.offer = None
                offer.fut.set_result(None)
            if k:
                del scratch[k:]
                return scratch
            # a retracted or failed session ended: the read parks (next turn)

    async def read_direct(self, session: DirectReadSession) -> None:
        while not session.finished:
            if self.failure is not None:
                raise self.failure
            offer = self.offer
            if offer is None:
                if self.closed:
                    return
                fut = asyncio.get_running_loop().create_future()
                op = _Op(fut, session=session)
                self._park(op, True)
                try:
                    await fut
                finally:
                    if self.demand is op:
                        self.demand = None
                continue
            if offer.session is not None:
                raise TypeError(
                    "two direct sessions cannot rendezvous host↔host: "
                    "one side must use read()/write()"
                )
            data = offer.data
            assert data is not None
            if isinstance(data, list):
                raise TypeError("read_direct needs a stream<u8> (the writer wrote a list)")
            k = session.run_view(memoryview(data)[offer.taken :])
            if k:
                offer.taken += k
                self.offer = None
                offer.fut.set_result(k)

    def cancel_read(self) -> None:
        op, self.demand = self.demand, None
        if op is not None:
            if op.session is not None:
                op.session.finished = True
            if not op.fut.done():
                op.fut.set_result(None)

    def drop(self) -> None:
        """The host reader let go of the stream."""
        self.cancel_read()
        self.reader_dropped()

    def reader_dropped(self) -> None:
        self.reader_gone = True
        offer, self.offer = self.offer, None
        if offer is not None and not offer.fut.done():
            offer.fut.set_result(0)
        dead = self.dead
        if dead is not None and not dead.done():
            dead.set_result(None)

    # -- writer side ------------------------------------------------------------------

    async def write(self, data: Chunk) -> int | _Rebind:
        demand = self.demand
        if demand is not None:
            session = demand.session
            if session is None:
                end = min(len(data), demand.max)
                self.demand = None
                demand.fut.set_result(_slice(data, 0, end))
                return end
            if isinstance(data, list):
                raise TypeError("a direct reader needs bytes, not a list")
            k = session.run_view(memoryview(data))
            if session.finished:
                self.demand = None
                demand.fut.set_result(None)
            if k:
                return k
        fut = asyncio.get_running_loop().create_future()
        op = _Op(fut, data=data)
        self._park(op, False)
        try:
            out: int | _Rebind = await fut
        finally:
            if self.offer is op:
                self.offer = None
        return out

    async def write_direct(self, session: DirectWriteSession) -> _Rebind | None:
        while not session.finished:
            if self.reader_gone or self.bound is not None:
                return _REBIND if self.bound is not None else None
            demand = self.demand
            if demand is None:
                fut = asyncio.get_running_loop().create_future()
                op = _Op(fut, session=session)
                self._park(op, False)
                try:
                    out: object = await fut
                finally:
                    if self.offer is op:
                        self.offer = None
                if out is _REBIND:
                    return _REBIND
                continue
            if demand.session is not None:
                raise TypeError(
                    "two direct sessions cannot rendezvous host↔host: "
                    "one side must use read()/write()"
                )
            scratch = bytearray(demand.max)
            k = session.run_view(memoryview(scratch))
            if k:
                del scratch[k:]
                self.demand = None
                demand.fut.set_result(scratch)
        return None

    def cancel_write(self) -> None:
        offer, self.offer = self.offer, None
        if offer is not None:
            if offer.session is not None:
                offer.session.finished = True
            if not offer.fut.done():
                offer.fut.set_result(0 if offer.session is None else None)
        bound = self.bound
        if bound is not None:
            shared = bound.shared
            buf = shared.pending_buffer
            if buf is not None and shared.pending_inst is None:
                if isinstance(buf, DirectSession):
                    retract(shared, buf)
                else:
                    shared.cancel()
                bound.store.wake()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        bound = self.bound
        if bound is not None:
            bound.drop()
        op, self.demand = self.demand, None
        if op is not None and not op.fut.done():
            op.fut.set_result(None)

    def fail(self, failure: BaseException) -> None:
        """The producer feeding this pipe failed: readers see ``failure``, never an end."""
        self.failure = failure
        bound = self.bound
        if bound is not None:
            shared = bound.shared
            assert isinstance(shared, HostFedStream)
            shared.failure = failure
            pending = shared.pending_inst
            if pending is not None and shared.pending_buffer is not None:
                trap = producer_trap(failure)
                bound.store.poison(pending, trap)  # type: ignore[arg-type]
            bound.store.wake()
        op, self.demand = self.demand, None
        if op is not None and not op.fut.done():
            op.fut.set_exception(failure)

    def dead_future(self) -> asyncio.Future[None]:
        dead = self.dead
        if dead is None:
            dead = self.dead = asyncio.get_running_loop().create_future()
            if self.reader_gone:
                dead.set_result(None)
        return dead

    # -- binding to a guest-visible stream ----------------------------------------------

    def bind(self, store: Store, shared: HostFedStream) -> None:
        """The stream was lowered into a guest: writes go to ``shared`` from now on."""
        assert self.bound is None
        self.bound = HostStreamWriter(store, shared)
        offer, self.offer = self.offer, None
        if offer is not None and not offer.fut.done():
            offer.fut.set_result(_REBIND)
        if self.closed:
            self.bound.drop()

    def unbind(self) -> None:
        """A guest handed the stream back (A5): the host reads it directly again."""
        bound, self.bound = self.bound, None
        assert bound is not None
        shared = bound.shared
        if isinstance(shared, HostFedStream):
            shared.pipe = None
        if shared.pending_buffer is not None and shared.pending_inst is None:
            shared.cancel()  # a parked write resumes and re-offers its rest to the pipe
        bound._close()


class HostFedFuture(SharedFutureImpl):
    """A shared future written by a host producer; its failure traps a guest reader.

    ``on_drop`` runs once when the future dies before the producer let go
    of it (its reader dropped it unread): the producer is then cancelled (A13).
    """

    __slots__ = ("failure", "on_drop")

    def __init__(self, t: m.ValType | None) -> None:
        super().__init__(t)
        self.failure: BaseException | None = None
        self.on_drop: Callable[[], None] | None = None

    def drop(self) -> None:
        super().drop()
        on_drop, self.on_drop = self.on_drop, None
        if on_drop is not None:
            on_drop()

    def read(self, inst: Any, dst: Any, on_copy_done: Any) -> None:
        failure = self.failure
        if failure is not None and inst is not None:
            raise producer_trap(failure)
        super().read(inst, dst, on_copy_done)


#: a resource an element lowering registered or took: (its type, its rep)
Held = tuple[Any, int]


class ElementLowering:
    """How host values become elements of a ``stream<T>`` whose ``T`` holds ``own<R>`` (A13).

    A stream's elements are copied into the reader's memory with the raw
    codec of the copy built-in, which takes resource reps: each element is
    converted first, every ``own<R>`` inside it turned into a rep (a
    host-implemented object is registered; a guest-resource wrapper is
    taken, so it becomes unusable, as passing it as ``own`` does). What
    :meth:`lower` registered or took is returned with the element, so the
    resources of elements the reader never takes can be destroyed by
    :meth:`release`, exactly as if it had taken and dropped them: a host
    object's ``close()`` runs, a guest resource's destructor runs.

    Shapes: ``own<R>`` at the top or nested in tuples, records, lists,
    maps, options (plain and boxed), variants and results, in the Python shapes
    of python-mapping.md §2. A value of the wrong shape is left as it is
    (the copy's codec then refuses it, naming the problem). Not covered:
    a ``stream``/``future`` inside an element (its producer is not pumped),
    and ``borrow`` (never a stream element, CanonicalABI.md §"stream.read").
    """

    __slots__ = ("_convert", "_table")

    def __init__(self, convert: Callable[[Any, list[Held]], Any], table: Any) -> None:
        self._convert = convert
        self._table = table

    @classmethod
    def of(
        cls, elem: m.ValType | None, rt_of: Callable[[int], Any], table: Any
    ) -> ElementLowering | None:
        """The lowering for elements of type ``elem``; ``None`` when ``elem`` holds no ``own``."""
        if elem is None or table is None:
            return None

        def own_of(rt: Any) -> Convert:
            def own(v: Any, held: list[Held]) -> Any:
                rep = int(table.lower_own(rt, v))
                held.append((rt, rep))
                return rep

            return own

        convert = _converter(elem, own_of, rt_of, boxed=False)
        return None if convert is None else cls(convert, table)

    def lower(self, v: Any) -> tuple[Any, list[Held]]:
        """The raw element for ``v`` and the resources it holds (released again on failure)."""
        held: list[Held] = []
        try:
            return self._convert(v, held), held
        except BaseException:
            self.release(held)
            raise

    def release(self, held: list[Held]) -> None:
        """Destroy resources of an element the reader never took (A13)."""
        for rt, rep in held:
            if getattr(rt, "impl", None) is None:
                self._table.host_dtor(rep)
            else:
                self._table.wrap_guest(rt, rep, True).drop()


Convert = Callable[[Any, list[Held]], Any]


def _converter(
    t: m.ValType, own_of: Callable[[Any], Convert], rt_of: Callable[[int], Any], *, boxed: bool
) -> Convert | None:
    """The conversion of values of ``t`` applying ``own_of(rt)`` to each ``own<rt>`` inside;
    ``None`` when ``t`` holds no ``own`` (the identity)."""
    from collections.abc import Mapping

    from polyengine.abi.compile import snake

    def sub(u: m.ValType | None, inner_boxed: bool = False) -> Convert | None:
        return None if u is None else _converter(u, own_of, rt_of, boxed=inner_boxed)

    if isinstance(t, m.Own):
        return own_of(rt_of(t.rt))
    if isinstance(t, m.Map):
        return sub(m.List(m.Tuple((t.k, t.v))))
    if isinstance(t, m.Tuple):
        parts = [sub(u) for u in t.ts]
        if not any(parts):
            return None

        def tup(v: Any, held: list[Held]) -> Any:
            if not isinstance(v, tuple | list):
                return v
            return tuple(x if c is None else c(x, held) for c, x in zip(parts, v, strict=False))

        return tup
    if isinstance(t, m.List):
        item = sub(t.t)
        if item is None:
            return None
        each = item

        def lst(v: Any, held: list[Held]) -> Any:
            if isinstance(v, str | bytes | bytearray) or not hasattr(v, "__iter__"):
                return v
            return [each(x, held) for x in v]

        return lst
    if isinstance(t, m.Record):
        fields = {snake(f.label): c for f in t.fields if (c := sub(f.t)) is not None}
        if not fields:
            return None

        def rec(v: Any, held: list[Held]) -> Any:
            if not isinstance(v, Mapping):
                return v
            out = dict(v)
            for k, c in fields.items():
                if out.get(k) is not None:
                    out[k] = c(out[k], held)
            return out

        return rec
    cases: dict[str, Convert]
    if isinstance(t, m.Option):
        payload = sub(t.t, inner_boxed=True)
        if payload is None:
            return None
        some = payload
        if not boxed:
            return lambda v, held: None if v is None else some(v, held)
        cases = {"some": some}
    elif isinstance(t, m.Result):
        cases = {k: c for k, u in (("ok", t.ok), ("err", t.error)) if (c := sub(u)) is not None}
    elif isinstance(t, m.Variant):
        cases = {c.label: cv for c in t.cases if (cv := sub(c.t)) is not None}
    else:
        return None
    if not cases:
        return None

    def var(v: Any, held: list[Held]) -> Any:
        if not isinstance(v, Mapping) or "value" not in v:
            return v
        c = cases.get(v.get("kind"))  # type: ignore[arg-type]
        return v if c is None else {**v, "value": c(v["value"], held)}

    return var


def element_lifting(
    elem: m.ValType | None, rt_of: Callable[[int], Any], table: Any
) -> Callable[[Any], Any] | None:
    """How an element (or future value) a guest wrote becomes a host value, when it holds
    ``own<R>``: the copy built-in's raw codec hands over resource reps, each of which
    becomes the host's object (a host-implemented resource's registered instance, or a
    new wrapper of a guest-implemented one). ``None`` when ``elem`` holds no ``own``."""
    if elem is None or table is None:
        return None

    def own_of(rt: Any) -> Convert:
        return lambda rep, held: table.lift_own(rt, rep)

    convert = _converter(elem, own_of, rt_of, boxed=False)
    if convert is None:
        return None
    lift = convert
    return lambda v: lift(v, [])
