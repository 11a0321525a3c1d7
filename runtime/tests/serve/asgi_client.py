"""An in-process ASGI client for the serve tests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Exchange:
    """What an ASGI app sent for one request."""

    status: int | None = None
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)
    trailers: list[tuple[bytes, bytes]] | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    received: int = 0
    received_bytes: int = 0
    sent_bytes: int = 0
    #: bytes pulled from the client minus bytes sent back, at each body send
    lags: list[int] = field(default_factory=list)

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def header(self, name: bytes) -> bytes | None:
        return next((v for k, v in self.headers if k == name), None)


def scope_of(
    method: str = "GET",
    path: str = "/",
    query: bytes = b"",
    headers: Iterable[tuple[bytes, bytes]] = ((b"host", b"example.test"),),
    trailers: bool = False,
) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "headers": list(headers),
        "server": ("127.0.0.1", 8080),
        "extensions": {"http.response.trailers": {}} if trailers else {},
    }


async def asgi_call(
    app: Any,
    scope: dict[str, Any],
    body: Iterable[bytes] = (),
    *,
    disconnect_after: int | None = None,
    send_delay: float = 0.0,
) -> Exchange:
    """Run one request through ``app`` in process, pulling ``body`` chunk by chunk."""
    chunks = list(body)
    ex = Exchange()

    async def receive() -> dict[str, Any]:
        if disconnect_after is not None and ex.received >= disconnect_after:
            return {"type": "http.disconnect"}
        i = ex.received
        ex.received += 1
        if i < len(chunks):
            ex.received_bytes += len(chunks[i])
            return {"type": "http.request", "body": chunks[i], "more_body": i + 1 < len(chunks)}
        if i == 0:
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        ex.messages.append(message)
        if message["type"] == "http.response.start":
            ex.status = message["status"]
            ex.headers = list(message["headers"])
        elif message["type"] == "http.response.body":
            if send_delay:
                await asyncio.sleep(send_delay)
            if message.get("body"):
                ex.chunks.append(message["body"])
                ex.sent_bytes += len(message["body"])
                ex.lags.append(ex.received_bytes - ex.sent_bytes)
        elif message["type"] == "http.response.trailers":
            ex.trailers = list(message["headers"])

    await app(scope, receive, send)
    return ex
