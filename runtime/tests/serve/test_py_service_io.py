"""The componentize-py 0.3 service's body, trailers and outgoing requests (``client.send``).

``/echo`` reads the request body and its trailers future (``consume-body``);
``/fetch/PORT/PATH`` sends a request with ``wasi:http/client.send`` to a local
aiohttp server on 127.0.0.1 through the aiohttp transport, streaming the
answer back.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from aiohttp import web
from asgi_client import asgi_call, scope_of
from live import builder

from polyengine.asgi import App, default_imports
from polyengine.http_transport import AiohttpTransport

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]


@pytest.fixture(scope="module")
def py_service() -> bytes:
    return bytes(builder().build_guest("py-http-service").read_bytes())


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 300))


async def _upstream() -> tuple[web.AppRunner, int]:
    routes = web.RouteTableDef()

    @routes.get("/big")
    async def big(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "application/x-big"})
        await response.prepare(request)
        for i in range(20):
            await response.write(bytes([97 + i]) * 10_000)
        await response.write_eof()
        return response

    @routes.get("/missing")
    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404, text="no such thing")

    app = web.Application()
    app.add_routes(routes)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, int(runner.addresses[0][1])


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_client_send_streams_an_upstream_answer_back(py_service: bytes) -> None:
    transport = AiohttpTransport()
    app = App(py_service, default_imports(transport=transport, network=True),
              log=lambda _: None)

    async def main() -> None:
        runner, port = await _upstream()
        try:
            await app.startup()
            ex = await asgi_call(app, scope_of("GET", f"/fetch/{port}/big"))
            assert ex.status == 200
            assert ex.header(b"x-upstream") == b"200"
            assert ex.header(b"content-type") == b"application/x-big"
            assert ex.body == b"".join(bytes([97 + i]) * 10_000 for i in range(20))
            ex = await asgi_call(app, scope_of("GET", f"/fetch/{port}/missing"))
            assert ex.status == 404
            assert ex.body == b"no such thing"
            ex = await asgi_call(app, scope_of("GET", f"/fetch/{_closed_port()}/x"))
            assert ex.status == 502
            assert ex.body == b"error-code ConnectionRefused\n"
        finally:
            await app.shutdown()
            await transport.close()
            await runner.cleanup()

    run(main())


def test_client_send_is_denied_without_a_grant(py_service: bytes) -> None:
    app = App(py_service, log=lambda _: None)

    async def main() -> Any:
        await app.startup()
        try:
            return await asgi_call(app, scope_of("GET", "/fetch/9/x"))
        finally:
            await app.shutdown()

    ex = run(main())
    assert ex.status == 502
    assert ex.body == b"error-code HttpRequestDenied\n"


def test_the_request_body_and_its_trailers_future_reach_the_guest(py_service: bytes) -> None:
    app = App(py_service, log=lambda _: None)
    chunks = [os.urandom(5000), os.urandom(40_000), b"tail"]

    async def main() -> Any:
        await app.startup()
        try:
            return await asgi_call(app, scope_of("POST", "/echo", trailers=True), chunks)
        finally:
            await app.shutdown()

    ex = run(main())
    assert ex.status == 200
    assert ex.body == b"".join(chunks)
    assert ex.trailers == [(b"x-request-trailers", b"ok")]


def test_a_client_disconnect_fails_the_guests_request_trailers(
    py_service: bytes, capfd: pytest.CaptureFixture[str]
) -> None:
    """The client leaves mid-body: the guest's body stream ends and its trailers
    future gives ``error-code.connection-terminated``."""
    app = App(py_service, log=lambda _: None)

    async def main() -> Any:
        await app.startup()
        try:
            return await asgi_call(
                app, scope_of("POST", "/echo"), [b"x" * 1000] * 5, disconnect_after=2
            )
        finally:
            await app.shutdown()

    run(main())
    out = capfd.readouterr().out
    assert "echo: 2000 bytes, trailers err ConnectionTerminated" in out


def test_a_client_gone_mid_response_fails_the_guests_transmission_future(
    py_service: bytes, capfd: pytest.CaptureFixture[str]
) -> None:
    """The client leaves while the guest streams 200 chunks: the guest's stream
    loses its reader and ``response.new``'s transmission future gives
    ``error-code.connection-terminated``."""
    lines: list[str] = []
    app = App(py_service, log=lines.append)

    async def main() -> Any:
        await app.startup()
        try:
            ex = await asgi_call(app, scope_of("GET", "/stream/200"), disconnect_after=1)
            await asyncio.sleep(0.2)  # the guest's background task reports
            return ex
        finally:
            await app.shutdown()

    ex = run(main())
    assert ex.status == 200
    assert len(ex.chunks) < 200
    out = capfd.readouterr().out
    assert "transmission err ConnectionTerminated" in out
    assert any("the client disconnected" in line for line in lines)


def test_a_streamed_response_that_completes_reports_transmission_ok(
    py_service: bytes, capfd: pytest.CaptureFixture[str]
) -> None:
    app = App(py_service, log=lambda _: None)

    async def main() -> Any:
        await app.startup()
        try:
            ex = await asgi_call(app, scope_of("GET", "/stream/50"))
            await asyncio.sleep(0.2)
            return ex
        finally:
            await app.shutdown()

    ex = run(main())
    assert ex.body == b"".join(bytes([97 + i % 26]) * 1000 for i in range(50))
    assert "stream: 50 of 50 chunks, transmission ok" in capfd.readouterr().out


@pytest.fixture(scope="module")
def outgoing_answers(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``client.send`` through ``polyengine serve -S inherit-network`` and through
    ``wasmtime serve`` (which grants outgoing HTTP by default), to the same local
    upstream on 127.0.0.1: a 150 kB file, a missing one, a refused connection."""
    import functools
    import http.server
    import threading

    from live import Request, differential

    root = tmp_path_factory.mktemp("upstream")
    (root / "data.bin").write_bytes(os.urandom(150_000))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

    upstream = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(root))
    )
    thread = threading.Thread(target=upstream.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        port = upstream.server_address[1]
        requests: list[Request] = [
            ("GET", f"/fetch/{port}/data.bin", None),
            ("GET", f"/fetch/{port}/missing.txt", None),
            ("GET", f"/fetch/{_closed_port()}/x", None),
        ]
        wasm = str(builder().build_guest("py-http-service"))
        ours, theirs = differential(
            wasm,
            requests,
            wasmtime_flags=["-Sp3", "-Wcomponent-model-async"],
            ours=["-S", "inherit-network"],
        )
    finally:
        upstream.shutdown()
        upstream.server_close()
        thread.join(10)
    return ours, theirs, (root / "data.bin").read_bytes()


def test_outgoing_requests_through_polyengine_serve_match_wasmtime_heads(
    outgoing_answers: Any,
) -> None:
    ours, theirs, data = outgoing_answers
    assert [a[:2] for a in ours] == [b[:2] for b in theirs]
    assert ours[0][0] == 200
    assert ours[0][2] == data
    assert ours[1][0] == 404
    assert ours[2][0] == 502
    assert ours[2][2] == b"error-code ConnectionRefused\n"
    assert ours[2] == theirs[2]


@pytest.mark.xfail(
    strict=True,
    reason="wasmtime serve 49 ends this guest's streamed copy of a client.send answer "
    "early (0 to ~8 kB of a 150 kB file, nothing of a 404 page); polyengine streams "
    "it whole. Which host is right is open (the guest drops the consumed response "
    "before reading its body)",
)
def test_outgoing_streamed_body_matches_wasmtime(outgoing_answers: Any) -> None:
    ours, theirs, _ = outgoing_answers
    assert [a[2] for a in ours[:2]] == [b[2] for b in theirs[:2]]
