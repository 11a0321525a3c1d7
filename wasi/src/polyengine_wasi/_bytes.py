"""Byte sources and sinks behind ``wasi:io/streams`` resources.

A source answers non-blocking reads and says how to wait for more; a sink
takes writes up to its current capacity and says how to wait for room. Each
kind of host object (a ``bytes`` buffer, a file, a pipe read on a thread, an
async iterable, a socket) gets one small adapter here, so the stream
resources in ``_streams`` stay one class each.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
import threading
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import IO, TYPE_CHECKING, Protocol, cast

from ._kernel import fd_ready, wait_fd

if TYPE_CHECKING:
    import asyncio
    import socket

__all__ = [
    "ByteSource",
    "ByteSink",
    "BufferSource",
    "FileSource",
    "PreadSource",
    "ThreadSource",
    "AsyncIterSource",
    "SocketSource",
    "BufferSink",
    "FileSink",
    "PwriteSink",
    "SocketSink",
    "DiscardSink",
    "source_from",
    "sink_from",
    "WRITE_BUDGET",
]

#: How many bytes a sink with no back-pressure of its own admits at once
#: (the answer of ``check-write``).
WRITE_BUDGET = 1 << 20


async def _nothing() -> None:
    return None


async def _await(awaitable: Awaitable[object]) -> None:
    await awaitable


class ByteSource(Protocol):
    """Where an input stream's bytes come from."""

    def read_now(self, n: int) -> bytes | None:
        """Up to ``n`` bytes available now; ``b""`` if none yet, ``None`` at end."""
        ...

    def readable(self) -> bool:
        """Whether ``read_now`` would return data or the end without waiting."""
        ...

    def wait(self) -> Awaitable[None]:
        """Completes when ``readable`` may have become true."""
        ...

    def close(self) -> None: ...


class ByteSink(Protocol):
    """Where an output stream's bytes go."""

    def capacity(self) -> int:
        """How many bytes ``write`` accepts now without waiting."""
        ...

    def write(self, data: bytes) -> None: ...

    def flush(self) -> None:
        """Start (or finish) pushing buffered bytes out."""
        ...

    def flushed(self) -> bool: ...

    def wait(self) -> Awaitable[None]:
        """Completes when capacity or flushing may have progressed."""
        ...

    def close(self) -> None: ...


# --- sources -----------------------------------------------------------------


class BufferSource:
    """A source over an in-memory buffer: always ready."""

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self._data = bytes(data)
        self._pos = 0

    def read_now(self, n: int) -> bytes | None:
        if self._pos >= len(self._data):
            return None
        chunk = self._data[self._pos : self._pos + n]
        self._pos += len(chunk)
        return chunk

    def readable(self) -> bool:
        return True

    def wait(self) -> Awaitable[None]:
        return _nothing()

    def close(self) -> None:
        self._data = b""


class FileSource:
    """A source over a binary file object whose reads do not block for long."""

    def __init__(self, file: IO[bytes], *, owned: bool = False) -> None:
        self._file = file
        self._owned = owned

    def read_now(self, n: int) -> bytes | None:
        if n == 0:
            return b""
        chunk = self._file.read(n)
        if not chunk:
            return None
        return bytes(chunk)

    def readable(self) -> bool:
        return True

    def wait(self) -> Awaitable[None]:
        return _nothing()

    def close(self) -> None:
        if self._owned:
            self._file.close()


class PreadSource:
    """A source reading a file descriptor at an explicit offset (``pread``)."""

    def __init__(self, fd: int, offset: int) -> None:
        self._fd = os.dup(fd)
        self._offset = offset

    def read_now(self, n: int) -> bytes | None:
        if n == 0:
            return b""
        chunk = os.pread(self._fd, min(n, WRITE_BUDGET), self._offset)
        if not chunk:
            return None
        self._offset += len(chunk)
        return chunk

    def readable(self) -> bool:
        return True

    def wait(self) -> Awaitable[None]:
        return _nothing()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class _Buffered:
    """Shared state of the sources that fill a buffer in the background."""

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._eof = False
        self._error: OSError | None = None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._lock = threading.Lock()

    def read_now(self, n: int) -> bytes | None:
        with self._lock:
            if not self._chunks:
                if self._error is not None:
                    err, self._error = self._error, None
                    self._eof = True
                    raise err
                return None if self._eof else b""
            out = bytearray()
            while self._chunks and len(out) < n:
                chunk = self._chunks.popleft()
                take = n - len(out)
                out += chunk[:take]
                if len(chunk) > take:
                    self._chunks.appendleft(chunk[take:])
            return bytes(out)

    def readable(self) -> bool:
        with self._lock:
            return bool(self._chunks) or self._eof or self._error is not None

    def _push(self, chunk: bytes | None, error: OSError | None = None) -> None:
        with self._lock:
            if chunk is None:
                self._eof = True
                self._error = error
            elif chunk:
                self._chunks.append(chunk)
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            with contextlib.suppress(RuntimeError):  # a closed loop has no waiter left
                loop.call_soon_threadsafe(_settle, fut)

    def _waiter(self) -> asyncio.Future[None]:
        import asyncio

        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._chunks or self._eof or self._error is not None:
                fut.set_result(None)
            else:
                self._waiters.append((loop, fut))
        return fut


def _settle(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class ThreadSource(_Buffered):
    """A source over a blocking file (a pipe, a terminal) read on a thread.

    The thread starts at the first demand and reads one chunk per demand, so
    nothing is consumed from the file before the guest asks for it.
    """

    def __init__(self, file: IO[bytes] | int, chunk_size: int = 65536) -> None:
        super().__init__()
        self._fd = file if isinstance(file, int) else file.fileno()
        self._chunk_size = chunk_size
        self._demand = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    def _run(self) -> None:
        while True:
            self._demand.wait()
            self._demand.clear()
            if self._closed:
                return
            try:
                chunk = os.read(self._fd, self._chunk_size)
            except OSError as exc:
                self._push(None, exc)
                return
            if not chunk:
                self._push(None)
                return
            self._push(chunk)

    def _request(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="polyengine-wasi-stdin", daemon=True
            )
            self._thread.start()
        self._demand.set()

    def read_now(self, n: int) -> bytes | None:
        chunk = super().read_now(n)
        if chunk == b"":
            self._request()
        return chunk

    def wait(self) -> Awaitable[None]:
        fut = self._waiter()
        if not fut.done():
            self._request()
        return fut

    def close(self) -> None:
        self._closed = True
        self._demand.set()


class AsyncIterSource(_Buffered):
    """A source over an async iterable of byte chunks, pumped on demand."""

    def __init__(self, iterable: AsyncIterable[bytes]) -> None:
        super().__init__()
        self._iterator: AsyncIterator[bytes] = aiter(iterable)
        self._pump: asyncio.Task[None] | None = None

    async def _next(self) -> None:
        try:
            chunk: object = await anext(self._iterator)
        except StopAsyncIteration:
            self._push(None)
        except OSError as exc:
            self._push(None, exc)
        except Exception as exc:  # a failing producer ends the stream with an error
            self._push(None, OSError(f"{type(exc).__name__}: {exc}"))
        else:
            if not isinstance(chunk, bytes | bytearray | memoryview):
                self._push(None, OSError(f"stream chunk is {type(chunk).__name__}, not bytes"))
            else:
                self._push(bytes(chunk))
        finally:
            self._pump = None

    def wait(self) -> Awaitable[None]:
        import asyncio

        fut = self._waiter()
        if not fut.done() and self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._next())
        return fut

    def close(self) -> None:
        import asyncio

        if self._pump is not None:
            self._pump.cancel()
        closer = getattr(self._iterator, "aclose", None)
        if callable(closer):
            with contextlib.suppress(RuntimeError):  # no running loop: nothing to cancel
                asyncio.get_running_loop().create_task(_await(closer()))


class SocketSource:
    """A source over a connected non-blocking socket."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._eof = False

    def read_now(self, n: int) -> bytes | None:
        if self._eof:
            return None
        if n == 0:
            return b""
        try:
            chunk = self._sock.recv(min(n, WRITE_BUDGET))
        except BlockingIOError:
            return b""
        if not chunk:
            self._eof = True
            return None
        return chunk

    def readable(self) -> bool:
        return self._eof or fd_ready(self._sock.fileno(), write=False)

    def wait(self) -> Awaitable[None]:
        if self._sock.fileno() < 0:
            return _nothing()
        return wait_fd(self._sock.fileno(), write=False)

    def close(self) -> None:
        self._eof = True


# --- sinks -------------------------------------------------------------------


class BufferSink:
    """A sink appending to a ``bytearray`` (output capture)."""

    def __init__(self, buffer: bytearray) -> None:
        self._buffer = buffer

    def capacity(self) -> int:
        return WRITE_BUDGET

    def write(self, data: bytes) -> None:
        self._buffer += data

    def flush(self) -> None:
        return None

    def flushed(self) -> bool:
        return True

    def wait(self) -> Awaitable[None]:
        return _nothing()

    def close(self) -> None:
        return None


class DiscardSink(BufferSink):
    """A sink that drops everything."""

    def __init__(self) -> None:
        super().__init__(bytearray())

    def write(self, data: bytes) -> None:
        return None


class FileSink:
    """A sink over a binary file object (written synchronously).

    ``file`` may be a callable returning the file, looked up at each write,
    so that an inherited ``sys.stdout`` follows later redirection.
    """

    def __init__(self, file: IO[bytes] | Callable[[], IO[bytes]], *, owned: bool = False) -> None:
        self._file = file
        self._owned = owned

    def _target(self) -> IO[bytes]:
        return self._file() if callable(self._file) else self._file

    def capacity(self) -> int:
        return WRITE_BUDGET

    def write(self, data: bytes) -> None:
        target = self._target()
        view = memoryview(data)
        while view:
            written = target.write(view)
            if written is None:  # a non-blocking raw file that took nothing
                raise BlockingIOError("the file accepted no bytes")
            view = view[written:]

    def flush(self) -> None:
        self._target().flush()

    def flushed(self) -> bool:
        return True

    def wait(self) -> Awaitable[None]:
        return _nothing()

    def close(self) -> None:
        if self._owned and not callable(self._file):
            self._file.close()


class PwriteSink:
    """A sink writing a file descriptor at an offset, or at its end (append)."""

    def __init__(self, fd: int, offset: int | None) -> None:
        self._fd = os.dup(fd)
        self._offset = offset

    def capacity(self) -> int:
        return WRITE_BUDGET

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            at = os.fstat(self._fd).st_size if self._offset is None else self._offset
            written = os.pwrite(self._fd, view, at)
            if self._offset is not None:
                self._offset += written
            view = view[written:]

    def flush(self) -> None:
        return None

    def flushed(self) -> bool:
        return True

    def wait(self) -> Awaitable[None]:
        return _nothing()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class SocketSink:
    """A sink over a connected non-blocking socket, with a bounded buffer."""

    def __init__(self, sock: socket.socket, limit: int = 65536) -> None:
        self._sock = sock
        self._pending = bytearray()
        self._limit = limit

    def capacity(self) -> int:
        self._drain()
        return max(0, self._limit - len(self._pending))

    def write(self, data: bytes) -> None:
        self._pending += data
        self._drain()

    def _drain(self) -> None:
        while self._pending:
            try:
                sent = self._sock.send(self._pending)
            except BlockingIOError:
                return
            del self._pending[:sent]

    def flush(self) -> None:
        self._drain()

    def flushed(self) -> bool:
        self._drain()
        return not self._pending

    def wait(self) -> Awaitable[None]:
        if self._sock.fileno() < 0:
            return _nothing()
        return wait_fd(self._sock.fileno(), write=True)

    def close(self) -> None:
        return None


# --- adaptation --------------------------------------------------------------


def _is_blocking_file(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISBLK(mode))


def _binary(value: object, verb: str) -> object:
    """The binary file under a text file (``sys.stdout`` → ``sys.stdout.buffer``)."""
    if isinstance(value, io.TextIOBase):
        buffer = getattr(value, "buffer", None)
        if buffer is None:
            raise TypeError(
                f"cannot {verb} bytes through the text stream {type(value).__name__}: "
                "pass a binary file"
            )
        return buffer
    return value


def source_from(value: object) -> ByteSource:
    """Adapt a host object to a source.

    ``None`` is an empty stream; ``bytes``-like values are read from memory;
    an async iterable of chunks is pumped; a binary file with a descriptor
    that may block (a pipe, a terminal, a socket) is read on a thread; any
    other object with ``read(n)`` is read directly.
    """
    value = _binary(value, "read")
    if value is None:
        return BufferSource(b"")
    if isinstance(value, bytes | bytearray | memoryview):
        return BufferSource(value)
    if isinstance(value, AsyncIterable):
        return AsyncIterSource(cast(AsyncIterable[bytes], value))
    reader = getattr(value, "read", None)
    if callable(reader):
        fileno = getattr(value, "fileno", None)
        if callable(fileno):
            try:
                fd = fileno()
            except (OSError, ValueError):
                fd = None
            if isinstance(fd, int) and _is_blocking_file(fd):
                return ThreadSource(fd)
        return FileSource(cast(IO[bytes], value))
    raise TypeError(
        f"cannot read bytes from {type(value).__name__}: pass bytes, a binary file "
        "or an async iterable of bytes"
    )


def sink_from(value: object, default: Callable[[], IO[bytes]] | None = None) -> ByteSink:
    """Adapt a host object to a sink.

    ``None`` means ``default`` (the process's own stream, looked up at each
    write) or, without one, discarding; a ``bytearray`` captures; any object
    with ``write(bytes)`` is written synchronously.
    """
    value = _binary(value, "write")
    if value is None:
        return FileSink(default) if default is not None else DiscardSink()
    if isinstance(value, bytearray):
        return BufferSink(value)
    if callable(getattr(value, "write", None)):
        return FileSink(cast(IO[bytes], value))
    raise TypeError(
        f"cannot write bytes to {type(value).__name__}: pass a bytearray or a binary file"
    )


def process_stdout() -> IO[bytes]:
    return sys.stdout.buffer


def process_stderr() -> IO[bytes]:
    return sys.stderr.buffer
