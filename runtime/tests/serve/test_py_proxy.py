"""componentize-py wasi:http guests (0.2 proxy, 0.3 service), in process and against wasmtime.

The guests are ``py-http-proxy`` and ``py-http-service`` of the guest
builder (sources in ``py_proxy/`` and ``py_service/``; the wasi:http 0.2.12
and 0.3.0 WIT packages are jco's bundled copies, linked at build time).
"""

from __future__ import annotations

import asyncio

import pytest
from asgi_client import asgi_call, scope_of
from live import Request, builder, differential

from polyengine.asgi import App

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]

#: wasmtime runs 0.3 services only with the p3 WASI and the async component model.
P3_FLAGS = ["-Sp3", "-Wcomponent-model-async"]


@pytest.fixture(scope="module")
def py_proxy() -> bytes:
    return bytes(builder().build_guest("py-http-proxy").read_bytes())


@pytest.fixture(scope="module")
def py_service() -> bytes:
    return bytes(builder().build_guest("py-http-service").read_bytes())


def test_componentize_py_proxy_through_the_asgi_app(py_proxy: bytes) -> None:
    app = App(py_proxy, reuse=100, log=lambda _: None)

    async def main() -> None:
        await app.startup()
        ex = await asgi_call(app, scope_of("GET", "/a", query=b"b=1"))
        assert ex.status == 200
        assert ex.headers == [(b"content-type", b"text/plain")]
        assert ex.body == b"hello from python at /a?b=1\n"
        payload = [b"abc", b"def" * 5000]
        ex = await asgi_call(app, scope_of("POST", "/"), payload)
        assert ex.body == b"".join(payload)
        await app.shutdown()

    asyncio.run(asyncio.wait_for(main(), 300))


def test_componentize_py_service_with_wasmtimes_reuse_defaults(py_service: bytes) -> None:
    """A wasi:http 0.3 service: 128 requests per instance, 16 at a time on one."""
    app = App(py_service, log=lambda _: None)

    async def main() -> None:
        await app.startup()
        ex = await asgi_call(app, scope_of("GET", "/a", query=b"b=1", trailers=True))
        assert ex.status == 200
        assert ex.headers == [(b"content-type", b"text/plain")]
        assert ex.body == b"hello from python p3 at /a?b=1\n"
        assert ex.trailers == []
        # each response is sent slowly, so the 32 requests are in flight at once (the
        # guest itself answers without waiting: unhurried, they would run one by one)
        exchanges = await asyncio.gather(
            *(asgi_call(app, scope_of(), send_delay=0.02) for _ in range(32))
        )
        assert {e.status for e in exchanges} == {200}
        # 33 requests, at most 16 at once per instance: two or three instances, not 33.
        assert 2 <= app.pool_stats["created"] <= 4
        await app.shutdown()

    asyncio.run(asyncio.wait_for(main(), 300))


PROXY_REQUESTS: list[Request] = [
    ("GET", "/", None),
    ("GET", "/a/b?c=1&d=%20e", None),
    ("POST", "/echo", b"posted " * 9000),
    ("POST", "/", b""),
    ("PUT", "/put", b"ignored"),
]


def test_py_proxy_answers_like_wasmtime_serve() -> None:
    wasm = str(builder().build_guest("py-http-proxy"))
    ours, theirs = differential(wasm, PROXY_REQUESTS)
    assert ours == theirs
    assert ours[2][2] == b"posted " * 9000


def test_py_service_answers_like_wasmtime_serve() -> None:
    wasm = str(builder().build_guest("py-http-service"))
    requests: list[Request] = [
        ("GET", "/", None),
        ("GET", "/a/b?c=1&d=%20e", None),
        ("POST", "/p", b"unread " * 2000),
        ("DELETE", "/x", None),
        ("POST", "/echo", b"echoed " * 20_000),
        ("GET", "/stream/40", None),
    ]
    ours, theirs = differential(wasm, requests, wasmtime_flags=P3_FLAGS)
    assert ours == theirs
    assert ours[1][2] == b"hello from python p3 at /a/b?c=1&d=%20e\n"
    assert ours[4][2] == b"echoed " * 20_000
    assert len(ours[5][2]) == 40_000
