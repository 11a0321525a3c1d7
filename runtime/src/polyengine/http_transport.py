"""An aiohttp client behind ``polyengine_wasi``'s outgoing-request ``Transport``.

http-serve.md §5: HTTP/1.1 with connection pooling (one ``ClientSession``
per event loop), the upload streamed from the guest's body channel, the
download pulled as the guest reads. ``request-options`` timeouts map to the
connect timeout, a first-byte deadline until the response head, and the
socket read timeout between body chunks; client failures map to
``error-code`` cases. Response trailers are not surfaced (aiohttp has none).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator
from typing import Any

from polyengine_wasi.hosthttp import BodyError, HttpError, IncomingMessage, OutgoingMessage

__all__ = ["AiohttpTransport", "error_code_of"]


def error_code_of(exc: BaseException) -> dict[str, object]:
    """The ``error-code`` for an aiohttp (or socket) failure."""
    import aiohttp

    if isinstance(exc, HttpError):
        return exc.code
    if isinstance(exc, aiohttp.ClientConnectorDNSError | socket.gaierror):
        return {"kind": "DNS-error", "value": {"rcode": str(exc), "info_code": None}}
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return {"kind": "TLS-certificate-error"}
    if isinstance(exc, aiohttp.ClientSSLError | ssl.SSLError):
        return {"kind": "TLS-protocol-error"}
    if isinstance(exc, aiohttp.ClientConnectorError):
        cause = exc.os_error
        if isinstance(cause, ConnectionRefusedError):
            return {"kind": "connection-refused"}
        if isinstance(cause, TimeoutError):
            return {"kind": "connection-timeout"}
        if isinstance(cause, OSError) and cause.errno in (101, 113):
            return {"kind": "destination-unavailable"}
        return {"kind": "connection-refused"}
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return {"kind": "connection-timeout"}
    if isinstance(exc, aiohttp.SocketTimeoutError):
        return {"kind": "connection-read-timeout"}
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return {"kind": "HTTP-response-incomplete"}
    if isinstance(exc, aiohttp.ClientResponseError):
        return {"kind": "HTTP-protocol-error"}
    if isinstance(exc, aiohttp.InvalidURL):
        return {"kind": "HTTP-request-URI-invalid"}
    if isinstance(exc, ConnectionResetError | BrokenPipeError):
        return {"kind": "connection-terminated"}
    return {"kind": "internal-error", "value": f"{type(exc).__name__}: {exc}"}


class AiohttpTransport:
    """Sends the guest's requests with aiohttp; one pooled session per loop.

    ``limit`` and ``limit_per_host`` bound the pool's connections.
    """

    def __init__(self, *, limit: int = 100, limit_per_host: int = 0) -> None:
        self._limit = limit
        self._limit_per_host = limit_per_host
        self._sessions: dict[int, Any] = {}

    def _session(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        session = self._sessions.get(id(loop))
        if session is None or session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._limit, limit_per_host=self._limit_per_host
            )
            session = aiohttp.ClientSession(
                connector=connector, auto_decompress=False, skip_auto_headers=("User-Agent",)
            )
            self._sessions[id(loop)] = session
        return session

    async def close(self) -> None:
        """Close the session of the running loop."""
        loop = asyncio.get_running_loop()
        session = self._sessions.pop(id(loop), None)
        if session is not None:
            await session.close()

    async def send(self, request: OutgoingMessage) -> IncomingMessage:
        import aiohttp

        session = self._session()
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=None,
            sock_connect=request.connect_timeout,
            sock_read=request.between_bytes_timeout,
        )
        headers = [(k, v.decode("latin-1")) for k, v in request.headers]
        try:
            async with asyncio.timeout(request.first_byte_timeout):
                response = await session.request(
                    request.method,
                    request.url,
                    headers=headers,
                    data=request.body,
                    timeout=timeout,
                    allow_redirects=False,
                    compress=None,
                )
        except TimeoutError as exc:
            if request.first_byte_timeout is not None:
                raise HttpError({"kind": "HTTP-response-timeout"}, "no response in time") from exc
            raise HttpError({"kind": "connection-timeout"}, str(exc)) from exc
        except aiohttp.ClientError as exc:
            raise HttpError(error_code_of(exc), str(exc)) from exc
        except OSError as exc:
            raise HttpError(error_code_of(exc), str(exc)) from exc
        head = [(bytes(k).decode("latin-1").lower(), bytes(v)) for k, v in response.raw_headers]
        return IncomingMessage(response.status, head, _download(response))


async def _download(response: Any) -> AsyncIterator[bytes]:
    """The response body as it arrives; failures carry an ``error-code``."""
    import aiohttp

    try:
        while True:
            try:
                chunk = await response.content.readany()
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                raise BodyError(error_code_of(exc), str(exc)) from exc
            if not chunk:
                return
            yield bytes(chunk)
    finally:
        response.release()
