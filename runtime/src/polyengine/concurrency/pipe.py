"""The host side of a host-created stream (CanonicalABI.md §Stream State and
§Future State with the host as both parties or as the writer; embedder-api.md
§"Streams and futures", A5, A7, A8, A13, A21; python-mapping.md §6).

A :class:`Pipe` joins the embed layer's ``StreamWriter`` to its ``Stream``.
Unbound, it is a host↔host rendezvous: a chunk write is borrowed until a
read takes (a slice of) it, copied once; a direct session
(:mod:`.direct`) meets a chunk operation of the other side (two direct
sessions cannot meet). Bound (the stream was lowered into a guest), writes
go to a :class:`HostFedStream` through a host writer end
(:class:`~.host_ends.HostStreamWriter`), so their counts are what the guest
took; unbinding (a guest handed the stream back) re-offers a parked write's
rest to the host reader. :meth:`Pipe.write_chunk`, :meth:`Pipe.write_all`
and :meth:`Pipe.write_session` follow the stream wherever it is.

:class:`HostFedStream` and :class:`HostFedFuture` are the shared stream and
future a host producer feeds: a producer failure traps the guest reading
on (:func:`producer_trap`), never a clean end.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any, cast

from polyengine.types import model as m
from polyengine_protocol import PeerTrappedError

from .direct import (
    DirectReadSession,
    DirectSession,
    DirectWriteSession,
    retract,
    run_on_shared,
)
from .host_ends import HostStreamWriter
from .store import Store
from .streams import CopyResult, SharedFutureImpl, SharedStreamImpl

__all__ = [
    "Chunk",
    "HostFedFuture",
    "HostFedStream",
    "Pipe",
    "as_chunk",
    "producer_trap",
]

Chunk = bytes | bytearray | memoryview | list[Any]


class HostFedStream(SharedStreamImpl):
    """A shared stream whose writable end is a host :class:`Pipe` (a bound pipe).

    A producer failure stored in ``failure`` traps the guest that reads on,
    so a failed producer is never a clean end of stream; the reader dropping
    it tells the pipe (a parked producer is then cancelled, A13).
    """

    __slots__ = ("failure", "pipe")

    def __init__(self, t: m.ValType | None, pipe: Pipe) -> None:
        super().__init__(t)
        self.pipe: Pipe | None = pipe
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


def as_chunk(chunk: object) -> Chunk:
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


class Pipe:
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
        #: the host handle reading the stream (given back to the host by a guest, A5)
        self.stream: weakref.ref[Any] | None = None

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

    # -- writing wherever the stream is ------------------------------------------------

    def check(self, progress: int) -> None:
        """Raise ``PeerTrappedError`` if the instance reading the stream trapped (A7)."""
        trap = self.trap
        if trap is not None:
            raise PeerTrappedError("the instance reading this stream trapped", trap, progress)

    async def write_chunk(self, chunk: Chunk) -> int:
        """Offer ``chunk`` to the reader, bound or not; how many elements it took.

        A write parked when the stream is bound (or unbound) goes on to the
        stream's new reader; a write a guest took part of before handing the
        stream back offers the rest to the host reader.
        """
        data = chunk
        taken = 0
        while data:
            self.check(taken)
            if self.closed:
                raise ValueError("this stream writer is closed")
            bound = self.bound
            if bound is not None:
                n = await bound.write(data)
                taken += n
                self.check(taken)
                if self.bound is bound or n == len(data):
                    return taken
                data = data[n:]  # unbound mid-write: the rest goes to the host reader
                continue
            if self.reader_gone:
                return taken
            out = await self.write(data)
            if isinstance(out, _Rebind):
                continue
            return taken + out
        return taken

    async def write_all(self, chunk: Chunk) -> int:
        """Offer ``chunk`` until all of it is taken or the reader is gone; the total taken."""
        rest: Chunk = memoryview(chunk) if isinstance(chunk, bytearray) else chunk
        total = 0
        while rest:
            try:
                n = await self.write_chunk(rest)
            except PeerTrappedError as exc:
                # the progress of the whole write: what was delivered before the fault
                raise PeerTrappedError(
                    str(exc), exc.__cause__, total + (exc.progress or 0)
                ) from exc.__cause__
            if n == 0:
                break
            total += n
            rest = rest[n:]
        return total

    async def write_ahead(self, chunk: Chunk) -> bool:
        """A host producer's chunk: whether the stream still takes more.

        Bound to a ``stream<u8>``, the chunk is queued behind the ones still
        offered (:meth:`HostStreamWriter.write_ahead`), so the guest reads
        on without waiting for the producer; otherwise it is written whole
        (:meth:`write_all`). Call :meth:`flush_ahead` before ending the
        stream.
        """
        bound = self.bound
        if bound is None or isinstance(chunk, list) or not isinstance(bound.shared.t, m.U8):
            return bool(await self.write_all(chunk) == len(chunk))
        if self.trap is not None:  # (self.check(0), without the call while no trap)
            self.check(0)
        result = await bound.write_ahead(chunk)
        if result is None:  # :meth:`_after_ahead`'s common case, without its frame
            if self.trap is not None:
                self.check(0)
            return True
        return await self._after_ahead(bound, result)

    async def flush_ahead(self) -> bool:
        """Wait until the chunks written ahead are taken; whether the stream took them."""
        bound = self.bound
        if bound is None:
            return not self.reader_gone
        result = await bound.flush_ahead()
        return await self._after_ahead(bound, result)

    async def _after_ahead(self, bound: HostStreamWriter, result: CopyResult | None) -> bool:
        self.check(0)
        if result is None:
            return True
        if result is CopyResult.CANCELLED and self.bound is not bound:
            # unbound (a guest handed the stream back): the rest goes to the host reader
            rest = bound.take_rest()
            return not rest or await self.write_all(rest) == len(rest)
        return False

    async def write_session(self, session: DirectWriteSession) -> None:
        """Run a ``write_direct`` session against the reader, bound or not (A21)."""
        while not session.finished:
            self.check(session.progress)
            bound = self.bound
            if bound is not None:
                if not isinstance(bound.shared.t, m.U8):
                    raise TypeError("write_direct needs a stream<u8>")
                result = await run_on_shared(bound.store, bound.shared, session)
                self.check(session.progress)
                if result is CopyResult.DROPPED:
                    return
                if self.bound is not bound:
                    continue
                if result is CopyResult.CANCELLED:
                    return
                continue
            if self.reader_gone:
                return
            if isinstance(await self.write_direct(session), _Rebind):
                continue
            return

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
