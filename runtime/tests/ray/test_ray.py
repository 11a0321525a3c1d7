"""Components on a local Ray instance: a wasi:http guest through Ray Serve, export calls
through a deployment handle (http-serve.md §7, python-mapping.md §8).

Serve's proxy listens on 127.0.0.1 only; the HTTP requests are few, each with
a timeout.
"""

from __future__ import annotations

import asyncio
import http.client
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pool_hosts
import pytest

import polyengine
import polyengine.ray
from polyengine.ray import ExportsClient, exports_deployment, http_deployment
from polyengine_protocol import ComponentException, InvalidHandleError, is_trap

HERE = Path(__file__).resolve().parent

pytestmark = [
    pytest.mark.ray,
    # Ray's own modules use deprecated APIs of their dependencies (pydantic).
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"),
]


def _wat_guests() -> Any:
    spec = importlib.util.spec_from_file_location(
        "polyengine_serve_wat_guests", HERE.parent / "serve" / "wat_guests.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _get(port: int, path: str, body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST" if body is not None else "GET", path, body=body)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_a_wasi_http_guest_answers_through_ray_serve(
    ray_serve: tuple[Any, int], wat: Callable[[str], bytes]
) -> None:
    serve, port = ray_serve
    guests = _wat_guests().GUESTS
    hello = http_deployment(wat(guests["hello"]), name="hello", instances=2, reuse=1000)
    assert hello.max_ongoing_requests == 2  # 0.2: one request per instance
    assert hello.ray_actor_options == {"num_cpus": 1}
    echo = http_deployment(wat(guests["echo"]), name="echo", instances=1, reuse=1000)
    serve.run(hello.bind(), name="hello", route_prefix="/hello")
    serve.run(echo.bind(), name="echo", route_prefix="/echo")
    for _ in range(3):
        status, headers, body = _get(port, "/hello")
        assert (status, body) == (200, b"hello from wasm\n")
        assert headers["content-type"] == "text/plain"
    status, headers, body = _get(port, "/echo", b"through ray" * 1000)
    assert (status, headers["x-echo"], body) == (200, "1", b"through ray" * 1000)
    serve.delete("hello")
    serve.delete("echo")


def test_http_deployment_refuses_a_component_without_a_handler(guest: bytes) -> None:
    with pytest.raises(TypeError, match="exports no wasi:http"):
        http_deployment(guest)


def test_export_calls_through_a_deployment_handle(ray_serve: tuple[Any, int], guest: bytes) -> None:
    serve, _ = ray_serve
    deployment = exports_deployment(guest, pool_hosts.imports, name="exports")
    assert deployment.max_ongoing_requests == 1
    assert deployment.ray_actor_options == {"num_cpus": 1}
    handle = serve.run(deployment.bind(), name="exports", route_prefix=None)
    # The handle's method takes and returns cloneable data.
    assert handle.call.remote(None, "add", [1, 2]).result(timeout_s=60) == {
        "kind": "ok",
        "value": 3,
    }
    catalog = handle.catalog.remote().result(timeout_s=60)
    assert "add" in catalog["functions"] and "test:pool/math@1.2.0" in catalog["interfaces"]

    async def main() -> None:
        client = ExportsClient(handle)
        exports = client.exports
        assert await exports.add(40, 2) == 42
        assert await exports["test:pool/math@1.2.0"].mul(6, 7) == 42
        items = [{"name": "n", "data": b"\x00\x01", "tags": ["t"], "size": None,
                  "shape": {"kind": "square", "value": 3}, "pair": (1, "c"), "mode": "fast",
                  "bits": {"a": True, "b": False}}]
        assert await exports.echo(items) == items
        with pytest.raises(ComponentException) as failed:
            await exports.fail(items)
        assert failed.value.payload == items
        # A trap: the replica makes a new instance (its counter starts again).
        await exports.counter()
        with pytest.raises(Exception) as trapped:
            await exports.crash()  # a guest's own trap (`unreachable`), in the replica
        assert is_trap(trapped.value) and "unreachable" in str(trapped.value)
        assert await exports.counter() == 1
        await exports.counter()
        with pytest.raises(Exception) as trapped:
            await exports.poke(12)
        assert is_trap(trapped.value)
        peer = trapped.value.__cause__
        assert peer is not None and peer.progress == 7  # type: ignore[attr-defined]
        assert is_trap(peer.__cause__)
        assert await exports.counter() == 1
        # Realm-local values stay where they are: refused at the sender...
        stream, writer = polyengine.create_stream()
        try:
            with pytest.raises(InvalidHandleError, match=r"argument 0 at \[0\]\.tags is a"):
                await exports.echo([dict(items[0], tags=stream)])
        finally:
            stream.drop()
            writer.close()
        # ... and a resource made in the replica stays in the replica.
        with pytest.raises(InvalidHandleError, match="the result holds a resource"):
            await exports.make_thing(1)
        with pytest.raises(AttributeError, match="no export 'nope'"):
            await exports.nope()

    asyncio.run(asyncio.wait_for(main(), 120))
    serve.delete("exports")


def test_the_extra_is_named_when_ray_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ray.serve", None)
    with pytest.raises(ImportError, match=r"pip install 'polyengine\[ray\]'"):
        polyengine.ray.exports_deployment(b"")
