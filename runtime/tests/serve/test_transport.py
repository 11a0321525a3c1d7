"""The aiohttp transport through the wasi:http 0.2 provider, against a local server."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from polyengine.http_transport import AiohttpTransport
from polyengine_protocol import ComponentException
from polyengine_wasi import http
from polyengine_wasi.hosthttp import Fields, OutgoingRequest, RequestOptions

HANDLER = "wasi:http/outgoing-handler@0.2"


async def _settle(value: Any) -> Any:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value


async def _server(routes: web.RouteTableDef) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.add_routes(routes)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, int(port)


def _request(port: int, path: str, method: str = "get") -> OutgoingRequest:
    req = OutgoingRequest(Fields.from_list([("x-probe", b"1")]))
    req.set_method({"kind": method})
    req.set_scheme({"kind": "HTTP"})
    req.set_authority(f"127.0.0.1:{port}")
    req.set_path_with_query(path)
    return req


async def _answer(future: Any) -> dict[str, Any]:
    pollable = future.subscribe()
    while not pollable.ready():
        await pollable.wait()
    answer = future.get()
    assert answer is not None and answer["kind"] == "ok"
    return dict(answer["value"])


async def _read_all(stream: Any) -> bytes:
    data = b""
    while True:
        try:
            data += await _settle(stream.blocking_read(65536))
        except ComponentException as exc:
            if exc.payload == {"kind": "closed"}:
                return data
            raise


def _run(main: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(main(), 30))


def test_streaming_upload_and_download() -> None:
    routes = web.RouteTableDef()
    seen: dict[str, Any] = {}

    @routes.post("/up")
    async def up(request: web.Request) -> web.StreamResponse:
        seen["probe"] = request.headers.get("x-probe")
        chunks = [c async for c in request.content.iter_any()]
        seen["body"] = b"".join(chunks)
        resp = web.StreamResponse(status=207, headers={"x-got": str(len(seen["body"]))})
        await resp.prepare(request)
        for i in range(5):
            await resp.write(b"%d" % i * 1000)
            await asyncio.sleep(0.01)
        await resp.write_eof()
        return resp

    async def main() -> None:
        runner, port = await _server(routes)
        transport = AiohttpTransport()
        try:
            handle = http(transport=transport)[HANDLER].handle
            req = _request(port, "/up?q=1", "post")
            body = req.body()
            out = body.write()
            future = handle(req, None)
            for i in range(20):
                data = bytes([97 + i]) * 10_000
                while out.check_write() < len(data):
                    await out.subscribe().wait()
                out.write(data)
                await asyncio.sleep(0)
            out.close()
            type(body).finish(body, None)
            answer = await _answer(future)
            response = answer["value"]
            assert response.status() == 207
            assert response.headers().get("x-got") == [b"200000"]
            got = await _read_all(response.consume().stream())
            assert got == b"".join(b"%d" % i * 1000 for i in range(5))
        finally:
            await transport.close()
            await runner.cleanup()
        assert seen["probe"] == "1"
        assert seen["body"] == b"".join(bytes([97 + i]) * 10_000 for i in range(20))

    _run(main)


def test_connection_refused_maps_to_its_error_code() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()

    async def main() -> dict[str, Any]:
        transport = AiohttpTransport()
        try:
            future = http(transport=transport)[HANDLER].handle(_request(port, "/"), None)
            return await _answer(future)
        finally:
            await transport.close()

    assert _run(main) == {"kind": "err", "value": {"kind": "connection-refused"}}


def test_first_byte_timeout() -> None:
    routes = web.RouteTableDef()

    @routes.get("/slow")
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(1)
        return web.Response(text="late")

    async def main() -> dict[str, Any]:
        runner, port = await _server(routes)
        transport = AiohttpTransport()
        try:
            options = RequestOptions()
            options.set_first_byte_timeout(100_000_000)
            future = http(transport=transport)[HANDLER].handle(_request(port, "/slow"), options)
            return await _answer(future)
        finally:
            await transport.close()
            await runner.cleanup()

    assert _run(main) == {"kind": "err", "value": {"kind": "HTTP-response-timeout"}}


def test_between_bytes_timeout_fails_the_body_stream() -> None:
    routes = web.RouteTableDef()

    @routes.get("/stall")
    async def stall(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(b"first")
        await asyncio.sleep(1)
        return resp

    async def main() -> None:
        from polyengine_wasi.hosthttp import http_error_code

        runner, port = await _server(routes)
        transport = AiohttpTransport()
        try:
            options = RequestOptions()
            options.set_between_bytes_timeout(150_000_000)
            future = http(transport=transport)[HANDLER].handle(_request(port, "/stall"), options)
            answer = await _answer(future)
            stream = answer["value"].consume().stream()
            assert await _settle(stream.blocking_read(100)) == b"first"
            with pytest.raises(ComponentException) as exc:
                await _settle(stream.blocking_read(100))
            err = exc.value.payload
            assert err["kind"] == "last-operation-failed"
            assert http_error_code(err["value"]) == {"kind": "connection-read-timeout"}
            stream.close()
        finally:
            await transport.close()
            await runner.cleanup()

    _run(main)


def test_the_pool_reuses_one_connection() -> None:
    routes = web.RouteTableDef()
    peers: list[Any] = []

    @routes.get("/")
    async def root(request: web.Request) -> web.Response:
        assert request.transport is not None
        peers.append(request.transport.get_extra_info("peername"))
        return web.Response(body=b"ok")

    async def main() -> None:
        runner, port = await _server(routes)
        transport = AiohttpTransport()
        try:
            handle = http(transport=transport)[HANDLER].handle
            for _ in range(3):
                answer = await _answer(handle(_request(port, "/"), None))
                assert await _read_all(answer["value"].consume().stream()) == b"ok"
        finally:
            await transport.close()
            await runner.cleanup()

    _run(main)
    assert len(peers) == 3 and len(set(peers)) == 1

