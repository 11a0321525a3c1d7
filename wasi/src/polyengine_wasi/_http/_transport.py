"""The outgoing-request seam and the in-memory body channels.

``Transport`` is what ``outgoing-handler.handle`` (0.2) and ``client.send``
(0.3) call: one coroutine taking an ``OutgoingMessage`` and returning an
``IncomingMessage`` or raising ``HttpError`` carrying an ``error-code``
value. The default, ``DeniedTransport``, refuses every request with
``HTTP-request-denied``: a guest reaches the network only when the host
injects a transport (the aiohttp one lives in ``polyengine``).

``BodyChannel`` carries a body the guest writes to the host side that sends
it (an ASGI response, an upload), with a bounded buffer: when the reader is
slow the guest's ``check-write`` budget drops to zero and it waits.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "HttpError",
    "OutgoingMessage",
    "IncomingMessage",
    "Transport",
    "DeniedTransport",
    "BodyChannel",
    "BodyError",
    "CHANNEL_LIMIT",
]

#: Bytes a body channel buffers before the writer must wait for the reader.
CHANNEL_LIMIT = 64 * 1024


class HttpError(Exception):
    """A failed HTTP exchange, with the ``error-code`` variant value."""

    def __init__(self, code: Mapping[str, object], message: str | None = None) -> None:
        self.code = dict(code)
        super().__init__(message or str(code.get("kind")))


class BodyError(OSError):
    """A body stream failed; ``code`` is the ``error-code`` for ``http-error-code``."""

    def __init__(self, code: Mapping[str, object], message: str | None = None) -> None:
        self.code = dict(code)
        super().__init__(message or f"HTTP body failed: {code.get('kind')}")


@dataclass
class OutgoingMessage:
    """A request the guest sends: the URL is ``scheme://authority/path?query``."""

    method: str
    url: str
    headers: list[tuple[str, bytes]]
    body: AsyncIterator[bytes] | None
    connect_timeout: float | None = None
    first_byte_timeout: float | None = None
    between_bytes_timeout: float | None = None


@dataclass
class IncomingMessage:
    """A response the guest receives; ``body`` is pulled as the guest reads."""

    status: int
    headers: list[tuple[str, bytes]]
    body: AsyncIterator[bytes]
    trailers: list[tuple[str, bytes]] | None = field(default=None)


class Transport(Protocol):
    """Sends one request; raises ``HttpError`` with an ``error-code`` on failure."""

    def send(self, request: OutgoingMessage) -> Awaitable[IncomingMessage]: ...


class DeniedTransport:
    """Refuses every outgoing request with ``HTTP-request-denied``."""

    async def send(self, request: OutgoingMessage) -> IncomingMessage:
        raise HttpError(
            {"kind": "HTTP-request-denied"},
            f"outgoing HTTP request to {request.url} denied: the host granted no network access",
        )


async def _nothing() -> None:
    return None


class BodyChannel:
    """A bounded byte channel: the guest writes (a ``ByteSink``), the host reads.

    The writer ends it with ``end(trailers)`` or aborts it (``abort``) when
    the body is dropped unfinished; the reader fails it (``fail``) when its
    peer is gone, after which the guest's writes fail.
    """

    def __init__(self, limit: int = CHANNEL_LIMIT) -> None:
        self._chunks: deque[bytes] = deque()
        self._pending = 0
        self._limit = limit
        self.written = 0
        self._ended = False
        self._trailers: list[tuple[str, bytes]] | None = None
        self._aborted: BaseException | None = None
        self._failed: OSError | None = None
        self._reader: asyncio.Future[None] | None = None
        self._writer: asyncio.Future[None] | None = None

    # -- ByteSink (the guest's side) -----------------------------------------

    def capacity(self) -> int:
        if self._failed is not None:
            raise self._failed
        if self._ended:
            raise OSError("the body is already finished")
        return max(0, self._limit - self._pending)

    def write(self, data: bytes) -> None:
        if self._failed is not None:
            raise self._failed
        if data:
            self._chunks.append(bytes(data))
            self._pending += len(data)
            self.written += len(data)
            self._wake_reader()

    def flush(self) -> None:
        if self._failed is not None:
            raise self._failed

    def flushed(self) -> bool:
        return True

    def wait(self) -> Awaitable[None]:
        if self._failed is not None or self._pending == 0:
            return _nothing()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_future()
        return asyncio.shield(self._writer)

    def close(self) -> None:
        return None

    # -- ending -------------------------------------------------------------

    def end(self, trailers: list[tuple[str, bytes]] | None = None) -> None:
        """The writer finished the body, optionally with trailers."""
        self._ended = True
        self._trailers = trailers
        self._wake_reader()

    def abort(self, reason: BaseException) -> None:
        """The body ends in an error (dropped unfinished, the guest trapped)."""
        if not self._ended:
            self._aborted = reason
            self._ended = True
            self._wake_reader()

    def fail(self, exc: OSError) -> None:
        """The reader side is gone: the writer's next operation fails."""
        self._failed = exc
        self._chunks.clear()
        self._pending = 0
        self._wake_writer()

    @property
    def ended(self) -> bool:
        return self._ended

    @property
    def trailers(self) -> list[tuple[str, bytes]] | None:
        return self._trailers

    # -- the reader's side ----------------------------------------------------

    def _wake_reader(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.set_result(None)

    def _wake_writer(self) -> None:
        if self._writer is not None and not self._writer.done():
            self._writer.set_result(None)

    async def next_chunk(self) -> bytes | None:
        """The next chunk, or ``None`` at the end; raises the abort reason."""
        while True:
            if self._chunks:
                chunk = self._chunks.popleft()
                self._pending -= len(chunk)
                self._wake_writer()
                return chunk
            if self._ended:
                if self._aborted is not None:
                    raise self._aborted
                return None
            self._reader = asyncio.get_running_loop().create_future()
            await self._reader

    async def chunks(self) -> AsyncIterator[bytes]:
        """Every chunk in order (the upload body of an outgoing request)."""
        while True:
            chunk = await self.next_chunk()
            if chunk is None:
                return
            yield chunk
