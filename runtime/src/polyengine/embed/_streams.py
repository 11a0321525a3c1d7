"""Host handles for ``stream<T>``, ``future<T>`` and ``error-context``
(python-mapping.md §6, embedder-api.md §"Streams and futures").

Lifted values arrive as :class:`Stream`, :class:`Future` and
:class:`ErrorContext` handles over the concurrency layer's host ends
(:class:`~polyengine.concurrency.HostStreamReader` and siblings); how values
cross in both directions is :mod:`polyengine.embed._hostvalues`.

:func:`create_stream` makes a ``(Stream, StreamWriter)`` pair that belongs
to no store yet: lowering its stream into a guest pumps what the writer
writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Generator
from types import TracebackType
from typing import Any, Protocol

from polyengine.concurrency import ErrorContext as ErrorContextValue
from polyengine.concurrency import (
    HostFutureReader,
    HostStreamReader,
    SharedFutureImpl,
    SharedStreamImpl,
    Store,
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
    "Stream",
    "StreamWriter",
    "create_stream",
]

_CHUNK = 64 * 1024


class _Source(Protocol):
    """Where a :class:`Stream` handle reads from."""

    async def read(self, max_count: int) -> list[Any] | bytes | None: ...

    def drop(self) -> None: ...


class Stream:
    """The readable end of a ``stream<T>`` held by the host.

    ``async for chunk in stream`` reads chunks (``bytes`` for ``stream<u8>``,
    ``list`` otherwise) to the end; ``await stream.read(n)`` reads at most
    ``n`` elements (an empty chunk is the end); ``drop()`` (or leaving
    ``async with``) releases the end.
    """

    __polyengine_brand__ = STREAM
    __slots__ = (
        "__weakref__",
        "_bytes",
        "_leftover",
        "_passed",
        "_peer_trap",
        "_source",
        "_store",
        "elem",
    )

    def __init__(self, elem: m.ValType | None, source: _Source, store: Store | None) -> None:
        self.elem = elem
        self._bytes = isinstance(elem, m.U8) or (elem is None and store is None)
        self._source: _Source | None = source
        self._store = store
        #: the trap of the instance holding the other end (A7)
        self._peer_trap: BaseException | None = None
        self._passed = False
        #: bytes a ``read_direct`` callback left unread, served first
        self._leftover = b""

    def _empty(self) -> bytes | list[Any]:
        return b"" if self._bytes else []

    async def read(self, max_count: int = _CHUNK, /) -> bytes | list[Any]:
        """At most ``max_count`` elements; an empty chunk at the end of the stream."""
        src = self._source
        if src is None:
            if self._passed:
                raise TypeError("this stream was passed to a guest; it can no longer be read")
            raise ValueError("this stream was dropped")
        if max_count < 1:
            raise ValueError("read needs a positive element count")
        left = self._leftover
        if left:
            self._leftover = left[max_count:]
            return left[:max_count]
        self._check_peer()
        chunk = await src.read(max_count)
        if chunk is None:
            self._check_peer()
            return self._empty()
        return chunk

    def _check_peer(self) -> None:
        trap = self._peer_trap
        if trap is not None:
            raise PeerTrappedError("the instance writing this stream trapped", trap)

    async def read_direct(self, consume: Callable[[Any], str], /) -> int:
        """A direct session (``stream<u8>`` only, A21): ``consume(source)`` until ``"done"``.

        ``source.remaining()`` views the bytes that arrived and were not
        taken yet; ``source.mark_read(n)`` takes ``n`` more of them. The
        session parks for more bytes on ``"more"`` and ends on ``"done"`` or
        at the end of the stream; it resolves with the bytes taken. Bytes
        left untaken are what the next read returns.
        """
        if not self._bytes:
            raise TypeError("read_direct needs a stream<u8>")
        total = 0
        pending = b""
        while True:
            chunk = await self.read(_CHUNK)
            if not chunk:
                self._leftover = pending
                return total
            data = pending + bytes(chunk)
            src = _DirectSource(data)
            try:
                verdict = consume(src)
            finally:
                src.dead = True
            total += src.taken
            pending = data[src.taken :]
            if verdict == "done":
                self._leftover = pending
                return total
            if verdict != "more":
                self._leftover = pending
                raise TypeError(
                    f"a direct session callback returns 'more' or 'done', not {verdict!r}"
                )

    def __aiter__(self) -> AsyncIterator[bytes | list[Any]]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes | list[Any]]:
        while True:
            chunk = await self.read(_CHUNK)
            if not chunk:
                return
            yield chunk

    async def __anext__(self) -> bytes | list[Any]:
        chunk = await self.read(_CHUNK)
        if not chunk:
            raise StopAsyncIteration
        return chunk

    def cancel_read(self) -> None:
        """Give up on the stream: an in-flight read ends as the end of the stream."""
        self.drop()

    def drop(self) -> None:
        """Release the end (idempotent): a guest writer sees the reader dropped."""
        src, self._source = self._source, None
        if src is not None:
            src.drop()

    def _take_shared(self, store: Store) -> SharedStreamImpl | None:
        """The guest stream under this handle, taken over, if it belongs to ``store``."""
        src = self._source
        if isinstance(src, HostStreamReader) and src.store is store and not src.closed:
            self._source = None
            self._passed = True
            src._close()
            return src.shared
        return None

    async def __aenter__(self) -> Stream:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.drop()

    def __repr__(self) -> str:
        return f"<Stream {'dropped' if self._source is None else 'open'}>"


class _Pipe:
    """A rendezvous between a :class:`StreamWriter` and its :class:`Stream` (no store)."""

    __slots__ = ("_offer", "_waiter", "closed", "reader_gone")

    def __init__(self) -> None:
        self._offer: tuple[bytes | list[Any], asyncio.Future[int]] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False
        self.reader_gone = False

    def _wake(self) -> None:
        w, self._waiter = self._waiter, None
        if w is not None and not w.done():
            w.set_result(None)

    async def read(self, max_count: int) -> list[Any] | bytes | None:
        while self._offer is None:
            if self.closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        chunk, fut = self._offer
        taken = chunk[:max_count]
        self._offer = None
        if not fut.done():
            fut.set_result(len(taken))
        return taken

    async def write(self, chunk: bytes | list[Any]) -> int:
        if self.reader_gone:
            return 0
        if self._offer is not None:
            raise RuntimeError("a write is already in progress on this stream writer")
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._offer = (chunk, fut)
        self._wake()
        try:
            return await fut
        finally:
            if self._offer is not None and self._offer[1] is fut:
                self._offer = None

    def close(self) -> None:
        self.closed = True
        self._wake()

    def drop(self) -> None:
        self.reader_gone = True
        offer, self._offer = self._offer, None
        if offer is not None and not offer[1].done():
            offer[1].set_result(0)


class StreamWriter:
    """The writable end of a stream made by :func:`create_stream`."""

    __polyengine_brand__ = STREAM_WRITER
    __slots__ = ("__weakref__", "_pipe")

    def __init__(self, pipe: _Pipe) -> None:
        self._pipe = pipe

    async def write(self, chunk: bytes | bytearray | memoryview | list[Any], /) -> int:
        """Offer ``chunk``; resolves with how many elements the reader took."""
        if self._pipe.closed:
            raise ValueError("this stream writer is closed")
        data = bytes(chunk) if isinstance(chunk, bytes | bytearray | memoryview) else list(chunk)
        if not data:
            return 0
        return await self._pipe.write(data)

    async def write_all(self, chunk: bytes | bytearray | memoryview | list[Any], /) -> int:
        """Offer ``chunk`` until all of it is taken or the reader is gone; the total taken."""
        rest: bytes | list[Any] = (
            bytes(chunk) if isinstance(chunk, bytes | bytearray | memoryview) else list(chunk)
        )
        total = 0
        while rest:
            n = await self.write(rest)
            if n == 0:
                break
            total += n
            rest = rest[n:]
        return total

    async def write_direct(self, produce: Callable[[Any], str], /) -> int:
        """A direct session (A21): ``produce(destination)`` until ``"done"``.

        ``destination.remaining()`` is a writable view of room for the next
        bytes; ``destination.mark_written(n)`` delivers ``n`` more of them.
        Resolves with the bytes the reader took.
        """
        total = 0
        while True:
            dest = _DirectDestination(_CHUNK)
            try:
                verdict = produce(dest)
            finally:
                dest.dead = True
            if dest.written:
                total += await self.write_all(bytes(dest.buffer[: dest.written]))
            if verdict == "done":
                return total
            if verdict != "more":
                raise TypeError(
                    f"a direct session callback returns 'more' or 'done', not {verdict!r}"
                )

    def cancel_write(self) -> None:
        """Retract an in-flight write (it resolves with 0)."""
        offer = self._pipe._offer
        if offer is not None:
            self._pipe._offer = None
            if not offer[1].done():
                offer[1].set_result(0)

    def close(self) -> None:
        """End the stream (idempotent)."""
        self._pipe.close()

    async def __aenter__(self) -> StreamWriter:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class _DirectSource:
    """The unread bytes offered to a ``read_direct`` callback (valid during the call)."""

    __slots__ = ("data", "dead", "taken")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.taken = 0
        self.dead = False

    def _live(self) -> None:
        if self.dead:
            raise TypeError("this direct source is only valid while its callback runs")

    def remaining(self) -> memoryview:
        self._live()
        return memoryview(self.data)[self.taken :]

    def mark_read(self, n: int, /) -> None:
        self._live()
        if n < 0 or self.taken + n > len(self.data):
            raise ValueError(
                f"cannot mark {n} more bytes read: {len(self.data) - self.taken} remain"
            )
        self.taken += n


class _DirectDestination:
    """Room for bytes offered to a ``write_direct`` callback (valid during the call)."""

    __slots__ = ("buffer", "dead", "written")

    def __init__(self, size: int) -> None:
        self.buffer = bytearray(size)
        self.written = 0
        self.dead = False

    def _live(self) -> None:
        if self.dead:
            raise TypeError("this direct destination is only valid while its callback runs")

    def remaining(self) -> memoryview:
        self._live()
        return memoryview(self.buffer)[self.written :]

    def mark_written(self, n: int, /) -> None:
        self._live()
        if n < 0 or self.written + n > len(self.buffer):
            raise ValueError(
                f"cannot mark {n} more bytes written: room for {len(self.buffer) - self.written}"
            )
        self.written += n


def create_stream() -> tuple[Stream, StreamWriter]:
    """A new host stream: ``(stream, writer)`` (python-mapping.md §6).

    The stream may be read by the host or passed to a guest (lowering pumps
    what the writer writes); chunks are ``bytes`` when the writer writes
    bytes-like chunks.
    """
    pipe = _Pipe()
    return Stream(None, pipe, None), StreamWriter(pipe)


class Future:
    """The readable end of a ``future<T>`` held by the host: ``await future`` yields ``T``."""

    __polyengine_brand__ = FUTURE
    __slots__ = ("__weakref__", "_outcome", "_passed", "_peer_trap", "_reader", "_store")

    def __init__(self, reader: HostFutureReader, store: Store) -> None:
        self._reader: HostFutureReader | None = reader
        self._store = store
        #: the trap of the instance holding the writable end (A7)
        self._peer_trap: BaseException | None = None
        #: the value (or failure) once read: awaiting again gives it again
        self._outcome: tuple[bool, Any] | None = None
        self._passed = False

    async def _get(self) -> Any:
        outcome = self._outcome
        if outcome is not None:
            if outcome[0]:
                return outcome[1]
            raise outcome[1]
        reader = self._reader
        if reader is None:
            if self._passed:
                raise TypeError("this future was passed to a guest; it can no longer be read")
            raise ValueError("this future was dropped")
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
        self._reader = None
        self._outcome = (True, value)
        return value

    def __await__(self) -> Generator[Any, None, Any]:
        return self._get().__await__()

    def drop(self) -> None:
        """Release the end (idempotent, never raises)."""
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.drop()

    def cancel(self) -> None:
        """Same as :meth:`drop` (a total, fire-and-forget handle operation)."""
        self.drop()

    def _take_shared(self, store: Store) -> SharedFutureImpl | None:
        reader = self._reader
        if reader is not None and reader.store is store and not reader.closed:
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
        return f"<Future {'dropped' if self._reader is None else 'pending'}>"


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
