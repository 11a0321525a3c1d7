"""The host side of a 0.3 incoming request: its body stream and trailers future."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from polyengine_wasi.hosthttp import BodyError, Request


def _request(body: AsyncIterator[bytes] | None) -> Request:
    return Request.incoming(
        "POST", "/p?q=1", scheme="http", authority="h:1", headers=[("X-A", b"1")], body=body
    )


async def _drain(contents: Any) -> bytes:
    data = b""
    async for chunk in contents:
        data += chunk
    return data


def test_a_complete_body_then_trailers_ok_none() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield b"ab"
        yield b"cd"

    async def main() -> tuple[bytes, Any, bool]:
        request = _request(body())
        contents, trailers = Request.consume_body(request, None)
        early = asyncio.ensure_future(trailers)
        await asyncio.sleep(0)
        pending = not early.done()
        data = await _drain(contents)
        return data, await early, pending

    data, trailers, pending_before_the_body = asyncio.run(main())
    assert data == b"abcd"
    assert pending_before_the_body
    assert trailers == {"kind": "ok", "value": None}


def test_a_client_gone_mid_body_ends_the_stream_and_fails_the_trailers() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield b"part"
        raise BodyError({"kind": "connection-terminated"}, "the client disconnected")

    async def main() -> tuple[bytes, Any]:
        contents, trailers = Request.consume_body(_request(body()), None)
        return await _drain(contents), await trailers

    data, trailers = asyncio.run(main())
    assert data == b"part"
    assert trailers == {"kind": "err", "value": {"kind": "connection-terminated"}}


def test_no_body_has_trailers_ok_at_once_and_fields_are_lowercased() -> None:
    async def main() -> tuple[Any, Any, Any]:
        request = _request(None)
        contents, trailers = Request.consume_body(request, None)
        return await _drain(contents), await trailers, request.get_headers().copy_all()

    data, trailers, headers = asyncio.run(main())
    assert data == b""
    assert trailers == {"kind": "ok", "value": None}
    assert headers == [("x-a", b"1")]
