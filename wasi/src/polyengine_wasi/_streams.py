"""``wasi:io/error`` and ``wasi:io/streams`` (WASI 0.2).

Values follow python-mapping.md §2: a ``stream-error`` is the variant
``{"kind": "closed"}`` or ``{"kind": "last-operation-failed", "value":
Error}`` carried by ``ComponentException``; ``list<u8>`` is ``bytes``.

Non-blocking operations (``read``, ``skip``, ``check-write``, ``write``,
``flush``, ``splice``) never park. The ``blocking-*`` operations carry the
``suspending`` mark (amendment A14) and return their result synchronously
whenever the underlying source or sink can answer at once; only a genuinely
waiting stream (a pipe, a socket, an async producer) parks the frame.
"""

from __future__ import annotations

import contextlib
import errno as _errno
from collections.abc import Awaitable
from typing import NoReturn, cast

from polyengine_protocol import ComponentException, Trap, define_realm_local, suspending

from ._bytes import ByteSink, ByteSource, sink_from, source_from
from ._kernel import Pollable

__all__ = ["IoError", "InputStream", "OutputStream", "BLOCKING_WRITE_LIMIT", "READ_LIMIT"]

#: The most bytes a ``blocking-write-and-flush`` may carry (wasi:io/streams).
BLOCKING_WRITE_LIMIT = 4096
#: The most bytes one read hands out (a stream may always return fewer).
READ_LIMIT = 1 << 20


class IoError:
    """``wasi:io/error.error``: an opaque error with a debug string.

    ``errno`` (when known) lets ``filesystem-error-code`` and
    ``network-error-code`` recover a typed code from it.
    """

    def __init__(self, message: str, errno: int | None = None) -> None:
        self._message = message
        self.errno = errno

    @classmethod
    def from_os_error(cls, exc: OSError) -> IoError:
        text = exc.strerror or str(exc) or type(exc).__name__
        if exc.errno is not None:
            name = _errno.errorcode.get(exc.errno, str(exc.errno))
            text = f"{name}: {text}"
        return cls(text, exc.errno)

    def to_debug_string(self) -> str:
        """WIT ``[method]error.to-debug-string``."""
        return self._message

    def __repr__(self) -> str:
        return f"IoError({self._message!r})"


_len = len  # the WIT parameter ``len`` shadows the builtin inside methods


def _closed() -> ComponentException[dict[str, object]]:
    return ComponentException({"kind": "closed"}, "the stream is closed")


def _failed(exc: OSError) -> ComponentException[dict[str, object]]:
    err = IoError.from_os_error(exc)
    return ComponentException(
        {"kind": "last-operation-failed", "value": err}, err.to_debug_string()
    )


def _check_len(what: str, n: int) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise TypeError(f"{what}: length must be a non-negative int, got {n!r}")
    return n


def _is_source(value: object) -> bool:
    return all(callable(getattr(value, m, None)) for m in ("read_now", "readable", "wait"))


def _is_sink(value: object) -> bool:
    return all(callable(getattr(value, m, None)) for m in ("capacity", "flushed", "wait"))


@define_realm_local
class InputStream:
    """``wasi:io/streams.input-stream`` over a host byte source.

    ``source`` is a ``ByteSource`` or anything ``source_from`` adapts:
    ``bytes``, a binary file, an async iterable of ``bytes``.
    """

    def __init__(self, source: ByteSource | object, *, owned: bool = True) -> None:
        self._source: ByteSource | None = (
            cast(ByteSource, source) if _is_source(source) else source_from(source)
        )
        self._owned = owned
        self._done = False

    # The non-blocking read of the spec: data, b"" (nothing yet) or closed.
    def _read_now(self, n: int) -> bytes:
        if self._done or self._source is None:
            raise _closed()
        try:
            chunk = self._source.read_now(min(n, READ_LIMIT))
        except OSError as exc:
            self._done = True
            raise _failed(exc) from exc
        if chunk is None:
            self._done = True
            raise _closed()
        return chunk

    def _ready(self) -> bool:
        return self._done or self._source is None or self._source.readable()

    def read(self, len: int) -> bytes:
        """WIT ``read``: up to ``len`` bytes available now (possibly none)."""
        return self._read_now(_check_len("read", len))

    @suspending
    def blocking_read(self, len: int) -> bytes | Awaitable[bytes]:
        """WIT ``blocking-read``: at least one byte, parking until there is one."""
        n = _check_len("blocking-read", len)
        if n == 0:
            return self._read_now(0)
        if self._ready():
            chunk = self._read_now(n)
            if chunk:
                return chunk
        return self._blocking_read(n)

    async def _blocking_read(self, n: int) -> bytes:
        while True:
            while not self._ready():
                assert self._source is not None
                await self._source.wait()
            chunk = self._read_now(n)
            if chunk:
                return chunk
            assert self._source is not None
            await self._source.wait()

    def skip(self, len: int) -> int:
        """WIT ``skip``: like ``read`` but discards, returning the count."""
        return _len(self.read(len))

    @suspending
    def blocking_skip(self, len: int) -> int | Awaitable[int]:
        """WIT ``blocking-skip``."""
        result = self.blocking_read(len)
        if isinstance(result, bytes):
            return _len(result)
        return self._count(result)

    @staticmethod
    async def _count(pending: Awaitable[bytes]) -> int:
        return _len(await pending)

    def subscribe(self) -> Pollable:
        """WIT ``subscribe``: ready when a read would return data or an error."""

        async def wait() -> None:
            if self._source is not None and not self._done:
                await self._source.wait()

        return Pollable(self._ready, wait)

    def close(self) -> None:
        """The resource destructor."""
        source, self._source = self._source, None
        if source is not None and self._owned:
            source.close()


@define_realm_local
class OutputStream:
    """``wasi:io/streams.output-stream`` over a host byte sink.

    ``sink`` is a ``ByteSink`` or anything ``sink_from`` adapts: a
    ``bytearray`` to capture into, a binary file, ``None`` to discard.
    """

    def __init__(self, sink: ByteSink | object, *, owned: bool = True) -> None:
        self._sink: ByteSink | None = (
            cast(ByteSink, sink) if _is_sink(sink) else sink_from(sink)
        )
        self._owned = owned
        self._done = False
        self._permit = 0

    def _live(self) -> ByteSink:
        if self._done or self._sink is None:
            raise _closed()
        return self._sink

    def _fail(self, exc: OSError) -> NoReturn:
        self._done = True
        raise _failed(exc) from exc

    def _capacity(self) -> int:
        sink = self._live()
        try:
            return sink.capacity()
        except OSError as exc:
            self._fail(exc)

    def _ready(self) -> bool:
        if self._done or self._sink is None:
            return True
        try:
            return self._sink.capacity() > 0 and self._sink.flushed()
        except OSError:
            return True

    def check_write(self) -> int:
        """WIT ``check-write``: how many bytes ``write`` accepts now."""
        self._permit = self._capacity()
        return self._permit

    def write(self, contents: bytes) -> None:
        """WIT ``write``: traps when exceeding what ``check-write`` permitted."""
        data = bytes(contents)
        sink = self._live()
        if _len(data) > max(self._permit, 0):
            raise Trap(
                f"output-stream.write of {_len(data)} bytes exceeds the "
                f"{self._permit} permitted by check-write"
            )
        self._permit -= _len(data)
        try:
            sink.write(data)
        except OSError as exc:
            self._fail(exc)

    @suspending
    def blocking_write_and_flush(self, contents: bytes) -> Awaitable[None] | None:
        """WIT ``blocking-write-and-flush``: at most 4096 bytes, then flush."""
        data = bytes(contents)
        if len(data) > BLOCKING_WRITE_LIMIT:
            raise Trap(
                f"blocking-write-and-flush of {len(data)} bytes exceeds the "
                f"limit of {BLOCKING_WRITE_LIMIT}"
            )
        return self._write_then_flush(data)

    def _write_then_flush(self, data: bytes) -> Awaitable[None] | None:
        sink = self._live()
        try:
            room = sink.capacity()
            if room >= len(data):
                sink.write(data)
                sink.flush()
                if sink.flushed():
                    return None
                return self._finish_flush()
        except OSError as exc:
            self._fail(exc)
        return self._write_parked(data)

    async def _write_parked(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            sink = self._live()
            try:
                room = sink.capacity()
                if room > 0:
                    sink.write(bytes(view[:room]))
                    view = view[room:]
                    continue
            except OSError as exc:
                self._fail(exc)
            await sink.wait()
        await self._finish_flush()

    async def _finish_flush(self) -> None:
        while True:
            sink = self._live()
            try:
                sink.flush()
                if sink.flushed():
                    return
            except OSError as exc:
                self._fail(exc)
            await sink.wait()

    def flush(self) -> None:
        """WIT ``flush``: start pushing buffered bytes out."""
        sink = self._live()
        self._permit = 0
        try:
            sink.flush()
        except OSError as exc:
            self._fail(exc)

    @suspending
    def blocking_flush(self) -> Awaitable[None] | None:
        """WIT ``blocking-flush``."""
        sink = self._live()
        try:
            sink.flush()
            if sink.flushed():
                return None
        except OSError as exc:
            self._fail(exc)
        return self._finish_flush()

    def subscribe(self) -> Pollable:
        """WIT ``subscribe``: ready when ``check-write`` would be non-zero or fail."""

        async def wait() -> None:
            if self._sink is not None and not self._done:
                await self._sink.wait()

        return Pollable(self._ready, wait)

    def write_zeroes(self, len: int) -> None:
        """WIT ``write-zeroes``."""
        self.write(bytes(_check_len("write-zeroes", len)))

    @suspending
    def blocking_write_zeroes_and_flush(self, len: int) -> Awaitable[None] | None:
        """WIT ``blocking-write-zeroes-and-flush``."""
        return self.blocking_write_and_flush(bytes(_check_len("write-zeroes", len)))

    def splice(self, src: InputStream, len: int) -> int:
        """WIT ``splice``: move what is available now, up to ``len`` bytes."""
        n = min(_check_len("splice", len), self._capacity())
        if n == 0:
            return 0
        data = src.read(n)
        self._permit = _len(data)
        self.write(data)
        return _len(data)

    @suspending
    def blocking_splice(self, src: InputStream, len: int) -> int | Awaitable[int]:
        """WIT ``blocking-splice``: waits for input, then moves it."""
        n = _check_len("blocking-splice", len)
        if n == 0:
            return self.splice(src, 0)
        if src._ready():
            room = self._capacity()
            if room > 0:
                data = src.read(min(n, room))
                if data:
                    self._permit = _len(data)
                    self.write(data)
                    return _len(data)
        return self._splice_parked(src, n)

    async def _splice_parked(self, src: InputStream, n: int) -> int:
        while True:
            sink = self._live()
            if self._capacity() == 0:
                await sink.wait()
                continue
            pending = src.blocking_read(min(n, self._capacity()))
            data = pending if isinstance(pending, bytes) else await pending
            self._permit = _len(data)
            self.write(data)
            if data:
                return _len(data)

    def close(self) -> None:
        """The resource destructor."""
        if self._sink is not None:
            sink, self._sink = self._sink, None
            with contextlib.suppress(OSError):
                sink.flush()
            if self._owned:
                sink.close()

