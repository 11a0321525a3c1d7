"""The 0.3 ``request`` the host received, as ``polyengine.asgi`` hands it to a guest."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from polyengine_wasi.hosthttp import BodyError, Request


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 10))


def received(body: Any) -> Request:
    return Request.incoming(
        "GET", "/p?q", scheme="http", authority="example.test", headers=[], body=body
    )


async def _collect(contents: Any) -> bytes:
    return b"".join([chunk async for chunk in contents])


def test_a_received_body_is_pulled_only_once_the_guest_consumes_it() -> None:
    pulled: list[bytes] = []

    async def body() -> AsyncIterator[bytes]:
        for chunk in (b"ab", b"cd"):
            pulled.append(chunk)
            yield chunk

    async def go() -> tuple[list[bytes], bytes, Any, list[bytes]]:
        request = received(body())
        await asyncio.sleep(0)
        before = list(pulled)
        contents, trailers = Request.consume_body(request, None)
        data = await _collect(contents)
        return before, data, await trailers, pulled

    before, data, trailers, pulled_after = run(go())
    assert before == []
    assert data == b"abcd"
    assert trailers == {"kind": "ok", "value": None}
    assert pulled_after == [b"ab", b"cd"]


def test_a_received_body_that_fails_ends_the_stream_and_fails_its_trailers() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield b"ab"
        raise BodyError({"kind": "connection-terminated"}, "the client disconnected")

    async def go() -> tuple[bytes, Any]:
        contents, trailers = Request.consume_body(received(body()), None)
        return await _collect(contents), await trailers

    data, trailers = run(go())
    assert data == b"ab"
    assert trailers == {"kind": "err", "value": {"kind": "connection-terminated"}}


def test_a_received_request_is_consumed_once_and_without_a_body_is_empty() -> None:
    async def go() -> tuple[bytes, Any, bool]:
        request = received(None)
        contents, trailers = Request.consume_body(request, None)
        try:
            Request.consume_body(request, None)
        except Exception:
            again = False
        else:
            again = True
        return await _collect(contents), await trailers, again

    data, trailers, again = run(go())
    assert (data, trailers, again) == (b"", {"kind": "ok", "value": None}, False)


def test_received_method_and_scheme_values_are_each_requests_own() -> None:
    async def go() -> tuple[Any, Any, Any]:
        one, two = received(None), received(None)
        one.set_method({"kind": "post"})
        odd = Request.incoming(
            "get", None, scheme="HTTPS", authority=None, headers=[], body=None
        )
        return one.get_method(), two.get_method(), (odd.get_method(), odd.get_scheme())

    one, two, odd = run(go())
    assert one == {"kind": "post"}
    assert two == {"kind": "get"}
    assert odd == ({"kind": "other", "value": "get"}, {"kind": "HTTPS"})
