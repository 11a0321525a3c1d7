"""A componentize-js fetch-event guest (``js-http``): in process and against ``wasmtime serve``.

StarlingMonkey answers a ``fetch`` event with ``respondWith``; it serves one
request per instance (wasmtime's 0.2 default, the only policy it survives).
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from asgi_client import asgi_call, scope_of
from live import Request, builder, differential

from polyengine.asgi import App

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]


@pytest.fixture(scope="module")
def js_http() -> bytes:
    return bytes(builder().build_guest("js-http").read_bytes())


def test_fetch_event_guest_through_the_asgi_app(js_http: bytes) -> None:
    lines: list[str] = []
    app = App(js_http, log=lines.append)
    payload = [os.urandom(1000), os.urandom(70_000), b"end"]

    async def main() -> None:
        await app.startup()
        ex = await asgi_call(app, scope_of("GET", "/a/b", query=b"c=1&d=%20"))
        assert ex.status == 200
        assert ex.header(b"content-type") == b"text/plain"
        assert ex.body == b"hello from js at /a/b?c=1&d=%20\n"

        ex = await asgi_call(app, scope_of("POST", "/echo"), payload)
        assert ex.status == 200
        assert ex.header(b"x-echo") == b"1"
        assert ex.body == b"".join(payload)

        headers = ((b"host", b"example.test"), (b"x-one", b"1"), (b"x-two", b"a b"))
        ex = await asgi_call(app, scope_of("PATCH", "/headers", query=b"q", headers=headers))
        assert ex.status == 201
        seen = json.loads(ex.body)
        assert seen["method"] == "PATCH"
        assert seen["path"] == "/headers?q"
        assert ["x-one", "1"] in seen["headers"]
        assert ["x-two", "a b"] in seen["headers"]

        ex = await asgi_call(app, scope_of("GET", "/status/418"))
        assert ex.status == 418
        assert ex.body == b""
        # One instance per request: five requests, five instances (plus the startup one).
        assert app.pool_stats["created"] >= 4
        await app.shutdown()

    asyncio.run(asyncio.wait_for(main(), 300))


def test_a_throwing_handler_fails_only_its_request(js_http: bytes) -> None:
    app = App(js_http, log=lambda _: None)

    async def main() -> None:
        await app.startup()
        failed = await asgi_call(app, scope_of("GET", "/throw"))
        assert failed.status == 500
        ok = await asgi_call(app, scope_of("GET", "/"))
        assert ok.status == 200
        assert ok.body == b"hello from js at /\n"
        await app.shutdown()

    asyncio.run(asyncio.wait_for(main(), 300))


def test_js_http_answers_like_wasmtime_serve() -> None:
    wasm = str(builder().build_guest("js-http"))
    requests: list[Request] = [
        ("GET", "/", None),
        ("GET", "/a/b?c=1&d=%20e", None),
        ("POST", "/echo", os.urandom(200_000)),
        ("POST", "/echo", b""),
        ("PUT", "/headers?x=y", b"some body"),
        ("GET", "/status/404", None),
        ("GET", "/status/204", None),
        ("GET", "/throw", None),
    ]
    ours, theirs = differential(wasm, requests)
    assert ours == theirs
    assert ours[2][2] == requests[2][2]
