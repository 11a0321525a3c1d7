"""polyengine.asgi.App over the component-text proxy guests, in process."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from asgi_client import asgi_call, scope_of

from polyengine.asgi import ERROR_PAGE, App

Guest = Callable[[str], bytes]


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def quiet_app(component: bytes, **kw: Any) -> tuple[App, list[str]]:
    lines: list[str] = []
    return App(component, log=lines.append, **kw), lines


def test_hello(guest: Guest) -> None:
    app, _ = quiet_app(guest("hello"))

    async def main() -> Any:
        await app.startup()
        return await asgi_call(app, scope_of())

    ex = run(main())
    assert ex.status == 200
    assert ex.headers == [(b"content-type", b"text/plain")]
    assert ex.body == b"hello from wasm\n"


def test_echo_streams_each_chunk_and_sends_trailers_when_offered(guest: Guest) -> None:
    app, _ = quiet_app(guest("echo"))
    chunks = [b"alpha", b"beta" * 3000, b"gamma"]

    async def main() -> Any:
        await app.startup()
        return await asgi_call(app, scope_of("POST", trailers=True), chunks)

    ex = run(main())
    assert ex.status == 200
    assert ex.header(b"x-echo") == b"1"
    assert ex.body == b"".join(chunks)
    assert len(ex.chunks) >= 3
    assert ex.trailers == [(b"x-trailer", b"done")]
    start = ex.messages[0]
    assert start["trailers"] is True


def test_echo_without_the_trailers_extension_sends_no_trailers(guest: Guest) -> None:
    app, _ = quiet_app(guest("echo"))
    ex = run(asgi_call(app, scope_of("PUT"), [b"x"]))
    assert ex.body == b"x"
    assert ex.trailers is None
    assert all(m["type"] != "http.response.trailers" for m in ex.messages)
    assert "trailers" not in ex.messages[0]


def test_the_request_body_is_read_only_as_the_guest_reads_it(guest: Guest) -> None:
    """hello never reads its body: at most the request's first message is pulled."""
    app, _ = quiet_app(guest("hello"))
    ex = run(asgi_call(app, scope_of("POST"), [b"a", b"b", b"c", b"d"]))
    assert ex.status == 200
    assert ex.received == 0


def test_a_slow_client_stalls_the_guest_instead_of_buffering(guest: Guest) -> None:
    """Each chunk is one awaited send: the app never runs far ahead of the client."""
    app, _ = quiet_app(guest("echo"))
    chunks = [bytes([65 + i % 26]) * 60_000 for i in range(12)]
    ex = run(asgi_call(app, scope_of("POST"), chunks, send_delay=0.0005))
    assert ex.body == b"".join(chunks)
    # 720 kB went through, but what was pulled from the client never ran more
    # than the channel budget (64 KiB) plus a read and a chunk ahead of what
    # the client had taken.
    assert max(ex.lags) < 256 * 1024


@pytest.mark.parametrize("name", ["noreply", "trap"])
def test_no_response_gives_wasmtimes_500_page(guest: Guest, name: str) -> None:
    app, lines = quiet_app(guest(name))
    ex = run(asgi_call(app, scope_of()))
    assert ex.status == 500
    assert ex.headers == [
        (b"content-type", b"text/html; charset=UTF-8"),
        (b"content-length", str(len(ERROR_PAGE)).encode()),
    ]
    assert ex.body == ERROR_PAGE
    assert any(line.startswith("error:") for line in lines)


def test_a_trap_after_the_response_started_aborts_it(guest: Guest) -> None:
    app, lines = quiet_app(guest("partial"))
    with pytest.raises(Exception, match="unreachable"):
        run(asgi_call(app, scope_of()))
    assert any("unreachable" in line for line in lines)


def test_a_trap_discards_only_its_instance(guest: Guest) -> None:
    app, _ = quiet_app(guest("trap"), reuse=10)

    async def main() -> None:
        await app.startup()
        for _ in range(3):
            ex = await asgi_call(app, scope_of())
            assert ex.status == 500

    run(main())
    assert app.pool_stats["discarded"] >= 2


def test_reuse_limit_bounds_requests_per_instance(guest: Guest) -> None:
    def created(reuse: int) -> int:
        app, _ = quiet_app(guest("hello"), reuse=reuse)

        async def main() -> int:
            await app.startup()
            for _ in range(6):
                assert (await asgi_call(app, scope_of())).status == 200
            return app.pool_stats["created"]

        return int(run(main()))

    assert created(1) == 6
    assert created(3) == 2
    assert created(100) == 1


def test_idle_instances_expire(guest: Guest) -> None:
    app, _ = quiet_app(guest("hello"), reuse=100, idle_timeout=0.05)

    async def main() -> int:
        await app.startup()
        await asgi_call(app, scope_of())
        await asyncio.sleep(0.1)
        await asgi_call(app, scope_of())
        return app.pool_stats["created"]

    assert run(main()) == 2


def test_client_disconnect_fails_the_guests_read(guest: Guest) -> None:
    """The echo guest sees a failed read, stops and finishes what it had."""
    app, _ = quiet_app(guest("echo"))
    ex = run(asgi_call(app, scope_of("POST", trailers=True), [b"one", b"two"], disconnect_after=1))
    assert ex.status == 200
    assert ex.body == b"one"


def test_request_timeout_gives_the_500_page_and_drops_the_instance(guest: Guest) -> None:
    app, lines = quiet_app(guest("hang"), request_timeout=0.2, reuse=5)

    async def main() -> Any:
        await app.startup()
        return await asgi_call(app, scope_of())

    ex = run(main())
    assert ex.status == 500
    assert "error: request timed out" in lines


def test_lifespan_starts_and_stops(guest: Guest) -> None:
    app, _ = quiet_app(guest("hello"), prewarm=2)
    sent: list[dict[str, Any]] = []
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "lifespan.startup.complete":
            assert app.pool_stats["created"] == 2

    run(app({"type": "lifespan"}, receive, send))
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_lifespan_reports_a_component_that_is_not_a_proxy(wat: Callable[[str], bytes]) -> None:
    app, _ = quiet_app(wat("(component)"))
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "lifespan.startup"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    run(app({"type": "lifespan"}, receive, send))
    assert sent[0]["type"] == "lifespan.startup.failed"
    assert "wasi:http/incoming-handler@0.2" in sent[0]["message"]


def test_header_injection_replaces_request_headers_and_hop_by_hop_ones_are_dropped() -> None:
    app = App(b"", headers=[("X-Env", "prod")])
    scope = scope_of(
        headers=[
            (b"host", b"h"), (b"X-Env", b"dev"), (b"Connection", b"keep-alive"),
            (b"x-env", b"qa"), (b"X-Kept", b"1"), (b"x-kept", b"2"),
        ]
    )
    # ``host`` is the authority, ``connection`` is hop-by-hop: like wasmtime,
    # the guest sees neither; names are lowercased, order and repeats kept.
    from polyengine.asgi._io import _request_head

    _, _, fields = _request_head(scope, app._forbidden, app.headers)
    assert fields == [("x-kept", b"1"), ("x-kept", b"2"), ("x-env", b"prod")]


def test_requests_on_new_instances_take_turns(guest: Guest) -> None:
    """Two requests instantiate and answer at a time; a guest that waits gives its turn back."""
    from polyengine.asgi import default_imports

    made: list[float] = []
    base = default_imports(log_prefix=False)

    def factory(instance_id: int) -> Any:
        made.append(time.monotonic())
        return base(instance_id)

    app = App(guest("hang"), factory, request_timeout=0.5, log=lambda _: None)

    async def main() -> list[Any]:
        await app.startup()
        made.clear()
        return await asyncio.gather(*(asgi_call(app, scope_of()) for _ in range(5)))

    exchanges = run(main())
    assert [e.status for e in exchanges] == [500] * 5
    # The startup instance serves the first request; the next four are new:
    # two of them at once, the other two only once a turn is given back
    # (the hanging guest holds it for 0.1 s).
    assert len(made) >= 4
    first = made[0]
    assert made[1] - first < 0.09
    assert made[2] - first >= 0.09
    assert made[3] - first >= 0.09


def test_default_imports_build_only_the_imported_interfaces(guest: Guest) -> None:
    """The pool gives a default factory the component's interfaces: it builds their
    WASI providers alone (the hello proxy imports io, clocks and http ones, no
    wasi:cli); a factory of the embedder's own is still called with the id alone."""
    from polyengine.asgi import default_imports
    from polyengine.asgi._io import instance_imports

    app, _ = quiet_app(guest("hello"))
    arts = app.artifacts()
    tracks = {name.rsplit(".", 1)[0] for imp in arts.plan.imports for name in [imp.name]}
    narrowed = instance_imports(default_imports(log_prefix=False), 7, arts)
    everything = default_imports(log_prefix=False)(7)
    assert "wasi:cli/stdout@0.2" in everything
    assert not any(key.startswith("wasi:cli/") for key in narrowed)
    wasi_keys = {key for key in narrowed if not key.startswith("wasi:http/")}
    assert wasi_keys == {t for t in tracks if not t.startswith("wasi:http/")}
    assert {k for k in everything if k.startswith("wasi:http/")} <= set(narrowed)
    calls: list[tuple[Any, ...]] = []

    def own(*args: Any) -> Any:
        calls.append(args)
        return everything

    assert instance_imports(own, 3, arts) is everything
    assert calls == [(3,)]
    ex = run(_serve_once(App(arts, default_imports(log_prefix=False), log=lambda _: None)))
    assert ex.status == 200 and ex.body == b"hello from wasm\n"


async def _serve_once(app: App) -> Any:
    await app.startup()
    return await asgi_call(app, scope_of())


SERVER = "127.0.0.1:8080"  # scope_of's server address


@pytest.mark.parametrize(
    ("headers", "version", "head"),
    [
        (
            [(b"host", b"h:1"), (b"Content-Length", b"0"), (b"X-A", b"1"), (b"x-a", b"2")], "1.1",
            ("h:1", True, [("content-length", b"0"), ("x-a", b"1"), ("x-a", b"2")]),
        ),
        (
            [(b"Host", b"first"), (b"host", b"second"), (b"content-length", b" 12 ")], "1.1",
            ("first", False, [("content-length", b" 12 ")]),
        ),
        (
            [(b"Transfer-Encoding", b"chunked"), (b"Connection", b"close")], "1.1",
            (SERVER, False, []),
        ),
        (
            [(b"content-length", b"0"), (b"Upgrade", b"h2c"), (b"x-b", b"\xff")], "1.0",
            (SERVER, True, [("content-length", b"0"), ("x-b", b"\xff")]),
        ),
        ([(b"x-c", b"3")], "2", (SERVER, False, [("x-c", b"3")])),
        ([], "1.1", (SERVER, True, [])),
    ],
)
def test_the_request_head_gives_authority_framing_and_fields(
    headers: list[tuple[bytes, bytes]], version: str, head: tuple[object, ...]
) -> None:
    """The authority is the first ``host`` (else the server's address); HTTP/1.x
    without ``transfer-encoding`` or a non-zero ``content-length`` declares no
    body (HTTP/2 never does by headers); the guest's fields leave out the
    hop-by-hop ones and ``host``, lowercased, order and repeats kept."""
    from polyengine.asgi._io import _request_head

    app = App(b"")
    scope = scope_of(headers=headers)
    scope["http_version"] = version
    assert _request_head(scope, app._forbidden) == head


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The instances closed, in order (``Instance.close`` recorded)."""
    from polyengine.embed._instantiate import Instance

    seen: list[Instance] = []
    close = Instance.close

    def recording_close(self: Instance) -> None:
        seen.append(self)
        close(self)

    monkeypatch.setattr(Instance, "close", recording_close)
    return seen


def test_an_instance_past_its_last_request_is_closed_once_the_request_returned(
    guest: Guest, closed: list[Any]
) -> None:
    """The close of a used-up instance is off its last request's path: it runs at the
    loop's next turn (the response is out by then), and shutdown closes what is left."""
    app, _ = quiet_app(guest("hello"), reuse=1)

    async def main() -> list[int]:
        await app.startup()
        counts = []
        for _ in range(2):
            ex = await asgi_call(app, scope_of())
            assert ex.body == b"hello from wasm\n"
            counts.append(len(closed))  # as the request returns
            await asyncio.sleep(0)
            counts.append(len(closed))  # a turn of the loop later
        await app.shutdown()
        counts.append(len(closed))
        return counts

    assert run(main()) == [0, 1, 1, 2, 2]
    assert len(set(map(id, closed))) == 2
    assert app.pool_stats == {} and app.requests == 2


def test_the_instances_of_one_app_share_stateless_imports_and_keep_their_own_state() -> None:
    """``default_imports``: the wasi:http providers and the stateless WASI ones are made
    once per factory; each instance has its own environment and log streams; another
    factory (another app) shares nothing with the first."""
    from polyengine.asgi import default_imports

    names = (
        "wasi:clocks/monotonic-clock@0.2.0",
        "wasi:cli/environment@0.2.0",
        "wasi:cli/stdout@0.2.0",
        "wasi:random/insecure@0.2.0",
    )
    factory, other = default_imports(), default_imports()
    narrowing: Any = factory
    one, two = narrowing(1, interfaces=names), narrowing(2, interfaces=names)
    three = other(3, interfaces=names)  # type: ignore[call-arg]
    shared = {"wasi:clocks/monotonic-clock@0.2", "wasi:http/types@0.2",
              "wasi:http/outgoing-handler@0.2", "wasi:http/types@0.3", "wasi:http/client@0.3"}
    own = {"wasi:cli/environment@0.2", "wasi:cli/stdout@0.2", "wasi:random/insecure@0.2"}
    assert set(one) == set(two) == set(three) == shared | own
    for key in shared:
        assert one[key] is two[key], key
        assert three[key] is not one[key], key
    for key in own:
        assert one[key] is not two[key], key
    assert ("INSTANCE_ID", "1") in one["wasi:cli/environment@0.2"].get_environment()
    assert ("INSTANCE_ID", "2") in two["wasi:cli/environment@0.2"].get_environment()
    # worker 1 of 3 (``serve --workers 3``): its instances 0, 1, 2 are shown as 1, 4, 7
    third: Any = default_imports(numbering=(1, 3))
    shown = [third(i, interfaces=names)["wasi:cli/environment@0.2"].get_environment()
             for i in range(3)]
    assert [dict(env)["INSTANCE_ID"] for env in shown] == ["1", "4", "7"]
    with pytest.raises(ValueError, match="numbering"):
        default_imports(numbering=(2, 2))


def test_max_concurrent_requests_admits_that_many_and_the_rest_in_arrival_order() -> None:
    """The admission gate (``max_concurrent_requests``): room is taken without waiting,
    a request waits when there is none, waiters enter first come first, and a waiter
    cancelled (even as it was given room) leaves the room to the next."""
    from polyengine.asgi._pool import _Gate

    async def main() -> list[str]:
        gate = _Gate(2)
        log: list[str] = []
        assert gate.try_enter() and gate.try_enter()
        assert not gate.try_enter()

        async def request(name: str) -> None:
            await gate.enter()
            log.append(name)

        first = asyncio.ensure_future(request("first"))
        doomed = asyncio.ensure_future(request("doomed"))
        second = asyncio.ensure_future(request("second"))
        await asyncio.sleep(0)
        assert log == []
        gate.leave()  # room for "first"
        await asyncio.sleep(0)
        doomed.cancel()
        gate.leave()  # "doomed" is cancelled: "second" gets the room
        await asyncio.gather(first, second)
        assert doomed.cancelled()
        assert not gate.try_enter()  # both entered and hold their places
        gate.leave()
        gate.leave()
        assert gate.try_enter() and gate.try_enter() and not gate.try_enter()
        given = asyncio.ensure_future(request("given"))
        after = asyncio.ensure_future(request("after"))
        await asyncio.sleep(0)
        gate.leave()  # room for "given", which is cancelled before it runs
        given.cancel()
        await after
        assert given.cancelled()
        return log

    assert run(main()) == ["first", "second", "after"]


def test_an_instance_let_go_of_outside_the_event_loop_is_closed_at_once(
    guest: Guest, closed: list[Any]
) -> None:
    app, _ = quiet_app(guest("hello"), reuse=1)

    async def main() -> Any:
        await app.startup()
        pool = app._pool
        assert pool is not None
        return pool, await pool.acquire()

    pool, slot = run(main())  # the loop is gone now
    pool.release(slot)
    assert closed == [slot.instance]
    assert pool.discarded == 1
