"""Host handles for ``stream<T>``, ``future<T>`` and ``error-context``
(python-mapping.md §6, embedder-api.md §"Streams and futures").

Lifted values arrive as :class:`Stream`, :class:`Future` and
:class:`ErrorContext` handles over the concurrency layer's host ends
(:class:`~polyengine.concurrency.HostStreamReader` and siblings); how values
cross in both directions is :mod:`polyengine.instance._hostvalues`.

:func:`create_stream` makes a ``(Stream, StreamWriter)`` pair joined by a
:class:`~polyengine.concurrency.pipe.Pipe`: while the host reads the stream
itself the pipe is a host↔host rendezvous (one copy of each chunk); once the
stream is lowered into a guest the pipe is *bound* to the guest-visible
shared stream and the writer writes into it directly (its counts are what
the guest took). A guest handing the stream back unbinds it again (A5): the
host gets the same handle back and the writer keeps feeding it. The
handles check their own rules and leave the moving of elements to the
pipe and the host ends.

Rules shared by every handle: one operation in flight per end and
direction (a second one is a ``TypeError``, A7); a trap in the instance
holding the other end fails parked and later operations with
``PeerTrappedError`` (A7); a handle already passed to a guest refuses to be
read with a ``TypeError`` naming the transfer (A15).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator, Callable, Generator, Sequence
from types import TracebackType
from typing import Any, ClassVar, Generic, Self, TypeVar, cast

from polyengine.concurrency import (
    CopyResult,
    HostFutureReader,
    HostStreamReader,
    SharedFutureImpl,
    SharedStreamImpl,
    Store,
)
from polyengine.concurrency import ErrorContext as ErrorContextValue
from polyengine.concurrency.direct import (
    DirectReadSession,
    DirectSession,
    DirectWriteSession,
    retract,
    run_on_shared,
)
from polyengine.concurrency.pipe import HostFedFuture, Pipe, as_chunk
from polyengine.types import model as m
from polyengine_protocol import (
    ERROR_CONTEXT,
    FUTURE,
    STREAM,
    STREAM_WRITER,
    DroppedError,
    PeerTrappedError,
    StreamProducerError,
    define_realm_local,
)

__all__ = [
    "ErrorContext",
    "Future",
    "Stream",
    "StreamWriter",
    "create_stream",
]

_CHUNK = 64 * 1024

_PASSED = "this {} was passed to a guest (its end was transferred); it can no longer be read"


def _busy(what: str) -> TypeError:
    return TypeError(f"an operation is already in flight on this {what} (one per end, A7)")


_Reader = TypeVar("_Reader", HostStreamReader, HostFutureReader)
_Shared = TypeVar("_Shared", SharedStreamImpl, SharedFutureImpl)


class _HostEnd(Generic[_Reader, _Shared]):
    """What the host's readable ends of a stream and of a future share.

    ``_source`` is the end the handle reads (``None`` once dropped or
    passed); passing it into a guest of the same store hands the guest the
    shared stream or future itself (:meth:`_take_shared`), and a guest
    handing that back revives this same handle (:meth:`_revive_reader`,
    A5). ``_peer_trap`` is the trap of the instance holding the other end
    (A7), ``_busy`` the one operation in flight (A7), ``_lift`` what makes
    host values of raw elements holding ``own<R>`` (A13), if they do.
    Leaving ``async with`` drops the end.
    """

    __slots__ = ("__weakref__", "_busy", "_lift", "_passed", "_peer_trap", "_store", "_via")

    #: the concurrency layer's reader class of this kind of end
    _READER: ClassVar[type[HostStreamReader] | type[HostFutureReader]]
    #: refusal of passing the end while an operation is in flight
    _BUSY_PASS: ClassVar[str]
    #: the state word of an open end in ``repr``
    _OPEN: ClassVar[str]

    _source: Any

    def __init__(self, store: Store | None) -> None:
        self._store = store
        self._peer_trap: BaseException | None = None
        self._passed = False
        self._busy = False
        #: the guest stream or future this handle was passed into a guest as (A5)
        self._via: _Shared | None = None
        self._lift: Callable[[Any], Any] | None = None

    def drop(self) -> None:
        raise NotImplementedError

    def _take_shared(self, store: Store) -> _Shared | None:
        """The guest stream or future under this handle, taken over, if it belongs to ``store``."""
        src = self._source
        if isinstance(src, self._READER) and src.store is store and not src.closed:
            if self._busy:
                raise TypeError(self._BUSY_PASS)
            if isinstance(src, HostStreamReader) and src.stashed:
                return None  # bytes read ahead go first: the stream is pumped from here
            self._source = None
            self._passed = True
            shared = cast("_Shared", src.shared)
            self._via = shared
            src._close()
            return shared
        return None

    def _revive_reader(self, reader: _Reader) -> None:
        """A guest handed back what this handle passed to it (A5): read it again."""
        assert self._passed and self._source is None and self._via is reader.shared
        self._source = reader
        self._passed = False
        self._via = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.drop()

    def __repr__(self) -> str:
        state = "passed" if self._passed else "dropped" if self._source is None else self._OPEN
        return f"<{type(self).__name__} {state}>"


class Stream(_HostEnd[HostStreamReader, SharedStreamImpl]):
    """The readable end of a ``stream<T>`` held by the host.

    ``async for chunk in stream`` reads chunks (``bytes`` for ``stream<u8>``,
    ``list`` otherwise) to the end; ``await stream.read(n)`` reads at most
    ``n`` elements (an empty chunk is the end); ``read_direct`` is the
    direct form for ``stream<u8>`` (A21); ``drop()`` (or leaving
    ``async with``) releases the end.

    A read takes at most ``n`` elements of what the writer offers, and the
    writer is told exactly how many were taken (CanonicalABI.md §"Stream
    State"); a writer that then drops without offering the rest has ended
    its stream after what was taken. Until the writer resumes, the rest of
    its offer stays available, so a read right after, in the same task, may
    still take it. A read of a guest's ``stream<u8>`` that has to wait lets
    the guest write ahead, up to a bound (64 KiB, or the read's count when
    larger): the bytes the read does not return come first on the next
    reads, and go first when the stream is passed on into a guest.
    """

    __polyengine_brand__ = STREAM
    __slots__ = ("_bytes", "_session", "_source", "elem")
    _READER = HostStreamReader
    _BUSY_PASS = "cannot pass a stream with a read in flight to a guest"
    _OPEN = "open"

    def __init__(
        self, elem: m.ValType | None, source: HostStreamReader | Pipe, store: Store | None
    ) -> None:
        super().__init__(store)
        self.elem = elem
        self._bytes = isinstance(elem, m.U8) or (elem is None and store is None)
        self._source: HostStreamReader | Pipe | None = source
        self._session: DirectSession | None = None
        if isinstance(source, Pipe):
            source.stream = weakref.ref(self)

    def _empty(self) -> bytes | list[Any]:
        return b"" if self._bytes else []

    def _usable(self, internal: bool = False) -> HostStreamReader | Pipe:
        src = self._source
        if self._passed and not internal:
            raise TypeError(_PASSED.format("stream"))
        if src is None:
            raise ValueError("this stream was dropped")
        if self._busy:
            raise _busy("stream")
        return src

    async def read(self, max_count: int = _CHUNK, /) -> bytes | bytearray | list[Any]:
        """At most ``max_count`` elements; an empty chunk at the end of the stream."""
        src = self._source
        if (
            src.__class__ is HostStreamReader
            and not (self._passed or self._busy)
            and max_count >= 1
        ):
            # what :meth:`_read` does for a host reader, without its frames
            if src.ready_stash():
                return src.take_stash(max_count)  # bytes read ahead come first
            if self._peer_trap is None:
                self._busy = True
                try:
                    chunk = await src.read(max_count)
                finally:
                    self._busy = False
                if chunk.__class__ is bytes and chunk:
                    return chunk  # (what the tail of _read returns)
                return self._read_tail(src, chunk)
        return await self._read(max_count, False)

    async def _read(self, max_count: int, internal: bool) -> bytes | bytearray | list[Any]:
        src = self._usable(internal)
        if max_count < 1:
            raise ValueError("read needs a positive element count")
        if self._peer_trap is not None and not (isinstance(src, HostStreamReader) and src.stashed):
            self._check_peer(None)  # bytes the writer was told were taken come first
        self._busy = True
        try:
            chunk = await src.read(max_count)
        finally:
            self._busy = False
        return self._read_tail(src, chunk)

    def _read_tail(
        self, src: HostStreamReader | Pipe, chunk: bytes | bytearray | list[Any] | None
    ) -> bytes | bytearray | list[Any]:
        """What a read returns of the ``chunk`` its source read (``None``: the end)."""
        if chunk is None or (not chunk and isinstance(src, HostStreamReader)):
            self._check_peer(0)
            return self._empty()
        lift = self._lift
        if lift is not None and isinstance(src, HostStreamReader) and isinstance(chunk, list):
            return [lift(v) for v in chunk]
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
        stashed = isinstance(src, HostStreamReader) and src.stashed > 0
        if not stashed:
            self._check_peer(None)  # else the bytes read ahead come first
        session = DirectReadSession(consume)
        self._busy = True
        self._session = session
        try:
            if isinstance(src, HostStreamReader):
                _run_on_stash(src, session)
                if not session.finished:
                    if stashed:
                        self._check_peer(session.progress)
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
        if isinstance(src, Pipe):
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

    def _take_pipe(self) -> Pipe | None:
        """The unbound pipe under this handle, taken over for lowering into a guest."""
        src = self._source
        if isinstance(src, Pipe) and src.bound is None:
            if self._busy:
                raise TypeError("cannot pass a stream with a read in flight to a guest")
            self._source = None
            self._passed = True
            return src
        return None

    def _relay(self) -> Stream:
        """A handle of its own over this one's reader, for a pump to relay from (A5).

        This handle is passed from here on (A15); a guest handing the pumped
        stream back revives it over the pump's pipe, so it reads the bytes
        read ahead and the rest of the stream in order.
        """
        src = self._source
        assert src is not None
        inner = Stream(self.elem, src, self._store)
        inner._lift = self._lift
        inner._peer_trap = self._peer_trap
        self._source = None
        self._passed = True
        return inner

    def _revive(self, pipe: Pipe, elem: m.ValType | None) -> None:
        """The guest handed the stream back (A5): this handle reads it again."""
        self._source = pipe
        self._passed = False
        self.elem = elem
        self._bytes = isinstance(elem, m.U8)


def _run_on_stash(src: HostStreamReader, session: DirectReadSession) -> None:
    """Offer the bytes ``src`` read ahead to a ``read_direct`` session first (A21)."""
    while src.stashed and not session.finished:
        stash = src.take_stash(src.stashed)
        k = session.run_view(memoryview(stash))
        if k < len(stash):
            src.unread(stash[k:])


class StreamWriter:
    """The writable end of a stream made by :func:`create_stream`.

    Chunks are borrowed until the write settles (A5): a ``bytes``-like chunk
    is copied once, at the rendezvous. The writer addresses the stream
    wherever it is, across any number of hops into and out of guests.
    """

    __polyengine_brand__ = STREAM_WRITER
    __slots__ = ("__weakref__", "_busy", "_pipe")

    def __init__(self, pipe: Pipe) -> None:
        self._pipe = pipe
        self._busy = False

    def _enter(self) -> Pipe:
        pipe = self._pipe
        if pipe.closed:
            raise ValueError("this stream writer is closed")
        if self._busy:
            raise _busy("stream writer")
        self._busy = True
        return pipe

    async def write(self, chunk: Sequence[Any], /) -> int:
        """Offer ``chunk``; resolves with how many elements the reader took (0: it is gone)."""
        pipe = self._enter()
        try:
            return await pipe.write_chunk(as_chunk(chunk))
        finally:
            self._busy = False

    async def write_all(self, chunk: Sequence[Any], /) -> int:
        """Offer ``chunk`` until all of it is taken or the reader is gone; the total taken."""
        pipe = self._enter()
        try:
            return await pipe.write_all(as_chunk(chunk))
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
            await pipe.write_session(session)
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
    pipe = Pipe()
    return Stream(None, pipe, None), StreamWriter(pipe)


class Future(_HostEnd[HostFutureReader, SharedFutureImpl]):
    """The readable end of a ``future<T>`` held by the host: ``await future`` yields ``T``.

    ``drop()`` and ``cancel()`` are total and silent (A16): they never raise
    and never surface a failure; awaiting is the only place a failure (or
    ``DroppedError``) is reported.
    """

    __polyengine_brand__ = FUTURE
    __slots__ = ("_outcome", "_source")
    _READER = HostFutureReader
    _BUSY_PASS = "cannot pass a future being awaited to a guest"
    _OPEN = "pending"

    def __init__(self, reader: HostFutureReader, store: Store) -> None:
        super().__init__(store)
        self._source: HostFutureReader | None = reader
        #: the value (or failure) once read: awaiting again gives it again
        self._outcome: tuple[bool, Any] | None = None

    async def _get(self, internal: bool = False) -> Any:
        if self._passed and not internal:
            raise TypeError(_PASSED.format("future"))
        outcome = self._outcome
        if outcome is not None:
            if outcome[0]:
                return outcome[1]
            raise outcome[1]
        reader = self._source
        if reader is None:
            raise ValueError("this future was dropped")
        if self._busy:
            raise _busy("future")
        self._busy = True
        try:
            if self._peer_trap is not None:
                raise _FutureDropped
            # the writer's value, or _FutureDropped when it left without one
            shared = reader.shared
            if shared.dropped and shared.pending_buffer is None:
                reader.drop()  # the writer went away without a value: nothing left to read
                raise _FutureDropped
            try:
                value = await reader.read()
            except IndexError:
                raise _FutureDropped from None
        except _FutureDropped:
            self._source = None
            exc: BaseException
            shared = reader.shared
            if self._peer_trap is not None:
                reader.drop()
                exc = PeerTrappedError("the instance writing this future trapped", self._peer_trap)
            elif isinstance(shared, HostFedFuture) and isinstance(
                shared.failure, StreamProducerError
            ):
                exc = shared.failure  # a failed host producer, never a bare drop
            else:
                exc = DroppedError()
            self._outcome = (False, exc)
            raise exc from exc.__cause__
        finally:
            self._busy = False
        self._source = None
        if self._lift is not None:
            value = self._lift(value)
        self._outcome = (True, value)
        return value

    def __await__(self) -> Generator[Any, None, Any]:
        return self._get().__await__()

    def drop(self) -> None:
        """Release the end (idempotent, never raises)."""
        reader, self._source = self._source, None
        if reader is not None:
            with contextlib.suppress(Exception):  # total by contract (A16)
                reader.drop()

    def cancel(self) -> None:
        """Same as :meth:`drop` (a total, fire-and-forget handle operation, A16)."""
        self.drop()


class _FutureDropped(Exception):
    """The future ended without a value (its writer dropped it, or failed)."""


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
