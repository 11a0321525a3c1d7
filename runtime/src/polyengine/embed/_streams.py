"""Host handles for ``stream<T>``, ``future<T>`` and ``error-context``
(python-mapping.md §6, embedder-api.md §"Streams and futures").

Lifted values arrive as :class:`Stream`, :class:`Future` and
:class:`ErrorContext` handles over the concurrency layer's host ends
(:class:`~polyengine.concurrency.HostStreamReader` and siblings); how values
cross in both directions is :mod:`polyengine.embed._hostvalues`.

:func:`create_stream` makes a ``(Stream, StreamWriter)`` pair joined by a
:class:`_Pipe`: while the host reads the stream itself the pipe is a
host↔host rendezvous (one copy of each chunk); once the stream is lowered
into a guest the pipe is *bound* to the guest-visible shared stream and the
writer writes into it directly (its counts are what the guest took). A
guest handing the stream back unbinds it again (A5): the host gets the same
handle back and the writer keeps feeding it.

Rules shared by every handle: one operation in flight per end and
direction (a second one is a ``TypeError``, A7); a trap in the instance
holding the other end fails parked and later operations with
``PeerTrappedError`` (A7); a handle already passed to a guest refuses to be
read with a ``TypeError`` naming the transfer (A15).
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Callable, Generator
from types import TracebackType
from typing import Any, cast

from polyengine.concurrency import (
    CopyResult,
    HostFutureReader,
    HostStreamReader,
    HostStreamWriter,
    SharedFutureImpl,
    SharedStreamImpl,
    Store,
)
from polyengine.concurrency import ErrorContext as ErrorContextValue
from polyengine.embed._direct import (
    DirectReadSession,
    DirectSession,
    DirectWriteSession,
    retract,
    run_on_shared,
)
from polyengine.types import model as m
from polyengine_protocol import (
    ERROR_CONTEXT,
    FUTURE,
    STREAM,
    STREAM_WRITER,
    DroppedError,
    PeerTrappedError,
    define_realm_local,
)

__all__ = [
    "ErrorContext",
    "Future",
    "HostFedStream",
    "Stream",
    "StreamWriter",
    "create_stream",
]

_CHUNK = 64 * 1024
Chunk = bytes | bytearray | memoryview | list[Any]

_PASSED = "this {} was passed to a guest (its end was transferred); it can no longer be read"


def _busy(what: str) -> TypeError:
    return TypeError(f"an operation is already in flight on this {what} (one per end, A7)")


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
    from polyengine.concurrency.traps import Trap

    trap = Trap(str(failure), code="host")
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


class Stream:
    """The readable end of a ``stream<T>`` held by the host.

    ``async for chunk in stream`` reads chunks (``bytes`` for ``stream<u8>``,
    ``list`` otherwise) to the end; ``await stream.read(n)`` reads at most
    ``n`` elements (an empty chunk is the end); ``read_direct`` is the
    direct form for ``stream<u8>`` (A21); ``drop()`` (or leaving
    ``async with``) releases the end.
    """

    __polyengine_brand__ = STREAM
    __slots__ = (
        "__weakref__",
        "_busy",
        "_bytes",
        "_passed",
        "_peer_trap",
        "_session",
        "_source",
        "_store",
        "elem",
    )

    def __init__(
        self, elem: m.ValType | None, source: HostStreamReader | _Pipe, store: Store | None
    ) -> None:
        self.elem = elem
        self._bytes = isinstance(elem, m.U8) or (elem is None and store is None)
        self._source: HostStreamReader | _Pipe | None = source
        self._store = store
        #: the trap of the instance holding the other end (A7)
        self._peer_trap: BaseException | None = None
        self._passed = False
        self._busy = False
        self._session: DirectSession | None = None
        if isinstance(source, _Pipe):
            source.stream = weakref.ref(self)

    def _empty(self) -> bytes | list[Any]:
        return b"" if self._bytes else []

    def _usable(self) -> HostStreamReader | _Pipe:
        src = self._source
        if src is None:
            if self._passed:
                raise TypeError(_PASSED.format("stream"))
            raise ValueError("this stream was dropped")
        if self._busy:
            raise _busy("stream")
        return src

    async def read(self, max_count: int = _CHUNK, /) -> bytes | bytearray | list[Any]:
        """At most ``max_count`` elements; an empty chunk at the end of the stream."""
        src = self._usable()
        if max_count < 1:
            raise ValueError("read needs a positive element count")
        self._check_peer(None)
        self._busy = True
        try:
            chunk = await src.read(max_count)
        finally:
            self._busy = False
        if chunk is None or (not chunk and isinstance(src, HostStreamReader)):
            self._check_peer(0)
            return self._empty()
        return chunk

    def _check_peer(self, progress: int | None) -> None:
        trap = self._peer_trap
        if trap is not None:
            raise PeerTrappedError("the instance writing this stream trapped", trap, progress)

    async def read_direct(self, consume: Callable[[Any], str], /) -> int:
        """A direct session (``stream<u8>`` only, A21): resolves with the bytes taken.

        At each rendezvous ``consume(source)`` runs once with a scoped view
        of the writer's unread bytes (``source.remaining()``) and takes some
        with ``source.mark_read(n)``; it answers ``"more"`` to stay parked or
        ``"done"``. The session also ends at the end of the stream.
        """
        src = self._usable()
        if not (self._bytes or isinstance(self.elem, m.U8)):
            raise TypeError("read_direct needs a stream<u8>")
        self._check_peer(None)
        session = DirectReadSession(consume)
        self._busy = True
        self._session = session
        try:
            if isinstance(src, HostStreamReader):
                result = await run_on_shared(src.store, src.shared, session)
                if result is CopyResult.DROPPED and session.failure is None:
                    self._check_peer(session.progress)
            else:
                await src.read_direct(session)
        finally:
            self._busy = False
            self._session = None
        if session.failure is not None:
            raise session.failure
        return session.progress

    def __aiter__(self) -> AsyncIterator[bytes | bytearray | list[Any]]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes | bytearray | list[Any]]:
        while True:
            chunk = await self.read(_CHUNK)
            if not chunk:
                return
            yield chunk

    async def __anext__(self) -> bytes | bytearray | list[Any]:
        chunk = await self.read(_CHUNK)
        if not chunk:
            raise StopAsyncIteration
        return chunk

    def cancel_read(self) -> None:
        """Settle the in-flight read as the end of the stream (A8; a no-op when idle).

        The canceller is the code that observes the end, so this is
        deliberately indistinguishable from end-of-stream; the stream stays
        open for later reads.
        """
        src = self._source
        if src is None:
            return
        if isinstance(src, _Pipe):
            src.cancel_read()
            return
        shared = src.shared
        session = self._session
        if session is not None:
            retract(shared, session)
        elif shared.pending_buffer is not None and shared.pending_inst is None:
            shared.cancel()
        src.store.wake()

    def drop(self) -> None:
        """Release the end (idempotent): a guest writer sees the reader dropped."""
        src, self._source = self._source, None
        if src is not None:
            src.drop()

    def _take_shared(self, store: Store) -> SharedStreamImpl | None:
        """The guest stream under this handle, taken over, if it belongs to ``store``."""
        src = self._source
        if isinstance(src, HostStreamReader) and src.store is store and not src.closed:
            if self._busy:
                raise TypeError("cannot pass a stream with a read in flight to a guest")
            self._source = None
            self._passed = True
            src._close()
            return src.shared
        return None

    def _take_pipe(self) -> _Pipe | None:
        """The unbound pipe under this handle, taken over for lowering into a guest."""
        src = self._source
        if isinstance(src, _Pipe) and src.bound is None:
            if self._busy:
                raise TypeError("cannot pass a stream with a read in flight to a guest")
            self._source = None
            self._passed = True
            return src
        return None

    def _revive(self, pipe: _Pipe, elem: m.ValType | None) -> None:
        """The guest handed the stream back (A5): this handle reads it again."""
        self._source = pipe
        self._passed = False
        self.elem = elem
        self._bytes = isinstance(elem, m.U8)

    async def __aenter__(self) -> Stream:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.drop()

    def __repr__(self) -> str:
        state = "passed" if self._passed else "dropped" if self._source is None else "open"
        return f"<Stream {state}>"


class StreamWriter:
    """The writable end of a stream made by :func:`create_stream`.

    Chunks are borrowed until the write settles (A5): a ``bytes``-like chunk
    is copied once, at the rendezvous. The writer addresses the stream
    wherever it is, across any number of hops into and out of guests.
    """

    __polyengine_brand__ = STREAM_WRITER
    __slots__ = ("__weakref__", "_busy", "_pipe")

    def __init__(self, pipe: _Pipe) -> None:
        self._pipe = pipe
        self._busy = False

    def _enter(self) -> _Pipe:
        pipe = self._pipe
        if pipe.closed:
            raise ValueError("this stream writer is closed")
        if self._busy:
            raise _busy("stream writer")
        self._busy = True
        return pipe

    def _check(self, pipe: _Pipe, progress: int) -> None:
        trap = pipe.trap
        if trap is not None:
            raise PeerTrappedError("the instance reading this stream trapped", trap, progress)

    async def write(self, chunk: Chunk, /) -> int:
        """Offer ``chunk``; resolves with how many elements the reader took (0: it is gone)."""
        pipe = self._enter()
        try:
            return await self._write(pipe, chunk)
        finally:
            self._busy = False

    async def _write(self, pipe: _Pipe, chunk: Chunk) -> int:
        data = _as_chunk(chunk)
        taken = 0
        while data:
            self._check(pipe, taken)
            if pipe.closed:
                raise ValueError("this stream writer is closed")
            bound = pipe.bound
            if bound is not None:
                n = await bound.write(data)
                taken += n
                self._check(pipe, taken)
                if pipe.bound is bound or n == len(data):
                    return taken
                data = data[n:]  # unbound mid-write: the rest goes to the host reader
                continue
            if pipe.reader_gone:
                return taken
            out = await pipe.write(data)
            if isinstance(out, _Rebind):
                continue
            return taken + out
        return taken

    async def write_all(self, chunk: Chunk, /) -> int:
        """Offer ``chunk`` until all of it is taken or the reader is gone; the total taken."""
        pipe = self._enter()
        try:
            rest: Chunk = chunk if isinstance(chunk, bytes | bytearray | list) else bytes(chunk)
            if isinstance(rest, bytearray):
                rest = memoryview(rest)
            total = 0
            while rest:
                n = await self._write(pipe, rest)
                if n == 0:
                    break
                total += n
                rest = rest[n:]
            return total
        finally:
            self._busy = False

    async def write_direct(self, produce: Callable[[Any], str], /) -> int:
        """A direct session (``stream<u8>``, A21): resolves with the bytes delivered.

        At each rendezvous ``produce(destination)`` runs once with a scoped
        view of the reader's landing zone (``destination.remaining()``) and
        delivers some with ``destination.mark_written(n)``; it answers
        ``"more"`` to stay parked or ``"done"``. The reader going away ends
        the session with its total.
        """
        pipe = self._enter()
        session = DirectWriteSession(produce)
        try:
            while not session.finished:
                self._check(pipe, session.progress)
                bound = pipe.bound
                if bound is not None:
                    if not isinstance(bound.shared.t, m.U8):
                        raise TypeError("write_direct needs a stream<u8>")
                    result = await run_on_shared(bound.store, bound.shared, session)
                    self._check(pipe, session.progress)
                    if result is CopyResult.DROPPED:
                        break
                    if pipe.bound is not bound:
                        continue
                    if result is CopyResult.CANCELLED:
                        break
                    continue
                if pipe.reader_gone:
                    break
                if isinstance(await pipe.write_direct(session), _Rebind):
                    continue
                break
        finally:
            self._busy = False
        if session.failure is not None:
            raise session.failure
        return session.progress

    def cancel_write(self) -> None:
        """Retract the in-flight write (it resolves with what was taken so far)."""
        self._pipe.cancel_write()

    def close(self) -> None:
        """End the stream (idempotent): the reader sees the end after what was written."""
        self._pipe.close()

    async def __aenter__(self) -> StreamWriter:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def create_stream() -> tuple[Stream, StreamWriter]:
    """A new host stream: ``(stream, writer)`` (python-mapping.md §6).

    The stream may be read by the host or passed to a guest (the writer then
    writes into the guest-visible stream); chunks are ``bytes`` when the
    writer writes bytes-like chunks.
    """
    pipe = _Pipe()
    return Stream(None, pipe, None), StreamWriter(pipe)


class Future:
    """The readable end of a ``future<T>`` held by the host: ``await future`` yields ``T``.

    ``drop()`` and ``cancel()`` are total and silent (A16): they never raise
    and never surface a failure; awaiting is the only place a failure (or
    ``DroppedError``) is reported.
    """

    __polyengine_brand__ = FUTURE
    __slots__ = (
        "__weakref__",
        "_busy",
        "_outcome",
        "_passed",
        "_peer_trap",
        "_reader",
        "_store",
    )

    def __init__(self, reader: HostFutureReader, store: Store) -> None:
        self._reader: HostFutureReader | None = reader
        self._store = store
        #: the trap of the instance holding the writable end (A7)
        self._peer_trap: BaseException | None = None
        #: the value (or failure) once read: awaiting again gives it again
        self._outcome: tuple[bool, Any] | None = None
        self._passed = False
        self._busy = False

    async def _get(self) -> Any:
        outcome = self._outcome
        if outcome is not None:
            if outcome[0]:
                return outcome[1]
            raise outcome[1]
        reader = self._reader
        if reader is None:
            if self._passed:
                raise TypeError(_PASSED.format("future"))
            raise ValueError("this future was dropped")
        if self._busy:
            raise _busy("future")
        self._busy = True
        try:
            if self._peer_trap is not None:
                raise _FutureDropped
            value = await reader.read()
        except _FutureDropped:
            self._reader = None
            exc: BaseException
            if self._peer_trap is not None:
                reader.drop()
                exc = PeerTrappedError("the instance writing this future trapped", self._peer_trap)
            else:
                exc = DroppedError()
            self._outcome = (False, exc)
            raise exc from None
        finally:
            self._busy = False
        self._reader = None
        self._outcome = (True, value)
        return value

    def __await__(self) -> Generator[Any, None, Any]:
        return self._get().__await__()

    def drop(self) -> None:
        """Release the end (idempotent, never raises)."""
        reader, self._reader = self._reader, None
        if reader is not None:
            with contextlib.suppress(Exception):  # total by contract (A16)
                reader.drop()

    def cancel(self) -> None:
        """Same as :meth:`drop` (a total, fire-and-forget handle operation, A16)."""
        self.drop()

    def _take_shared(self, store: Store) -> SharedFutureImpl | None:
        reader = self._reader
        if reader is not None and reader.store is store and not reader.closed:
            if self._busy:
                raise TypeError("cannot pass a future being awaited to a guest")
            self._reader = None
            self._passed = True
            reader._close()
            return reader.shared
        return None

    async def __aenter__(self) -> Future:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.drop()

    def __repr__(self) -> str:
        state = "passed" if self._passed else "dropped" if self._reader is None else "pending"
        return f"<Future {state}>"


class _FutureDropped(Exception):
    pass


class ErrorContext:
    """An ``error-context`` received from a guest: its debug ``message``."""

    __polyengine_brand__ = ERROR_CONTEXT
    __slots__ = ("__weakref__", "_value")

    def __init__(self, value: ErrorContextValue) -> None:
        self._value = value

    @property
    def message(self) -> str:
        return self._value.debug_message

    def debug_message(self) -> str:
        return self._value.debug_message

    def __repr__(self) -> str:
        return f"ErrorContext({self.message!r})"


for _cls in (Stream, StreamWriter, Future, ErrorContext):
    define_realm_local(_cls)
