"""The serve CLI's process: one send per loop turn or per held response; the collector."""

from __future__ import annotations

import asyncio
from typing import Any

from polyengine.cli._serve import _HOLD_BYTES, _corked_protocol, _CorkedTransport


class _Recorder:
    """A transport that records what reaches it."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        assert not self.closed, "a write after close"
        self.sent.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return sum(len(b) for b in self.sent)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5000)}.get(name, default)


def test_writes_of_one_turn_are_joined_in_order() -> None:
    async def scenario() -> list[bytes]:
        inner = _Recorder()
        corked = _CorkedTransport(inner, asyncio.get_running_loop())
        corked.write(b"HTTP/1.1 200 OK\r\n\r\n")
        corked.write(b"")
        corked.write(b"body")
        corked.writelines([b"-", b"end"])
        assert inner.sent == []  # nothing left yet
        assert corked.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\n\r\nbody-end")
        await asyncio.sleep(0)
        corked.write(b"next")
        await asyncio.sleep(0)
        return inner.sent

    assert asyncio.run(scenario()) == [b"HTTP/1.1 200 OK\r\n\r\nbody-end", b"next"]


def test_close_sends_what_is_pending_and_abort_drops_it() -> None:
    async def scenario() -> tuple[_Recorder, _Recorder]:
        loop = asyncio.get_running_loop()
        closing, aborting = _Recorder(), _Recorder()
        a = _CorkedTransport(closing, loop)
        a.write(b"last")
        a.close()
        b = _CorkedTransport(aborting, loop)
        b.write(b"dropped")
        b.abort()
        await asyncio.sleep(0)
        return closing, aborting

    closing, aborting = asyncio.run(scenario())
    assert closing.sent == [b"last"] and closing.closed
    assert aborting.sent == [] and aborting.aborted


def test_other_members_are_the_transport_s_own() -> None:
    async def scenario() -> Any:
        corked = _CorkedTransport(_Recorder(), asyncio.get_running_loop())
        return corked.get_extra_info("peername"), corked.is_closing()

    assert asyncio.run(scenario()) == (("127.0.0.1", 5000), False)


def test_held_writes_wait_for_flush_and_leave_as_one() -> None:
    async def scenario() -> tuple[list[bytes], list[bytes]]:
        inner = _Recorder()
        corked = _CorkedTransport(inner, asyncio.get_running_loop(), hold=10.0)
        corked.write(b"HTTP/1.1 200 OK\r\n\r\n")
        await asyncio.sleep(0)
        corked.write(b"body")
        await asyncio.sleep(0)
        before = list(inner.sent)
        corked.flush()
        corked.flush()  # nothing pending: no empty send
        return before, inner.sent

    before, after = asyncio.run(scenario())
    assert before == []
    assert after == [b"HTTP/1.1 200 OK\r\n\r\nbody"]


def test_held_writes_leave_after_the_hold_at_most() -> None:
    async def scenario() -> tuple[list[bytes], list[bytes]]:
        inner = _Recorder()
        corked = _CorkedTransport(inner, asyncio.get_running_loop(), hold=0.01)
        corked.write(b"head")
        await asyncio.sleep(0)
        early = list(inner.sent)
        await asyncio.sleep(0.2)
        corked.write(b"more")
        await asyncio.sleep(0.2)
        return early, inner.sent

    early, sent = asyncio.run(scenario())
    assert early == []
    assert sent == [b"head", b"more"]


def test_held_writes_past_the_byte_bound_leave_at_once() -> None:
    async def scenario() -> list[bytes]:
        inner = _Recorder()
        corked = _CorkedTransport(inner, asyncio.get_running_loop(), hold=10.0)
        corked.write(b"h")
        corked.write(b"x" * _HOLD_BYTES)
        sent = list(inner.sent)
        corked.write(b"tail")
        corked.close()
        return sent + inner.sent[len(sent):]

    assert asyncio.run(scenario()) == [b"h" + b"x" * _HOLD_BYTES, b"tail"]


def test_a_response_written_over_several_turns_leaves_in_one_send() -> None:
    """The serve protocol flushes when uvicorn completes a response."""
    import uvicorn
    from uvicorn.server import ServerState

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for chunk in (b"one", b"two"):
            await asyncio.sleep(0)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def scenario() -> list[bytes]:
        loop = asyncio.get_running_loop()
        config = uvicorn.Config(app, lifespan="off", log_level="warning")
        protocol = _corked_protocol()(config=config, server_state=ServerState(), app_state={},
                                      _loop=loop)
        inner = _Recorder()
        protocol.connection_made(inner)
        protocol.data_received(b"GET / HTTP/1.1\r\nHost: example\r\n\r\n")
        for _ in range(50):
            await asyncio.sleep(0)
        sent = list(inner.sent)
        protocol.connection_lost(None)
        return sent

    sent = asyncio.run(scenario())
    assert len(sent) == 1
    head, _, body = sent[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert body == b"3\r\none\r\n3\r\ntwo\r\n0\r\n\r\n"


def test_the_serve_process_collects_young_garbage_in_larger_batches() -> None:
    import gc

    from polyengine.cli._serve import _GC_YOUNG, _tune_collector

    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 7, 9)
        _tune_collector()
        assert gc.get_threshold() == (_GC_YOUNG, 7, 9)
        gc.set_threshold(_GC_YOUNG * 2, 7, 9)
        _tune_collector()  # never lowered
        assert gc.get_threshold() == (_GC_YOUNG * 2, 7, 9)
    finally:
        gc.set_threshold(*saved)


def test_the_served_scope_ignores_forwarded_headers() -> None:
    """The serve command's uvicorn passes the connection's client and scheme through:
    ``X-Forwarded-For``/``-Proto`` from a loopback client change neither (as with
    ``wasmtime serve``), and the response has no ``server`` header."""
    import socket

    import uvicorn

    from polyengine.cli._serve import _uvicorn_config

    seen: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].rsplit(".", 1)[1]
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        seen.append({"scheme": scope["scheme"], "client": scope["client"][0]})
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def scenario() -> bytes:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        port = sock.getsockname()[1]
        server = uvicorn.Server(_uvicorn_config(app, None))
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            while not server.started:
                await asyncio.sleep(0.01)
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                b"GET / HTTP/1.1\r\nHost: t\r\nX-Forwarded-Proto: https\r\n"
                b"X-Forwarded-For: 203.0.113.9\r\nConnection: close\r\n\r\n"
            )
            answer = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            return answer
        finally:
            server.should_exit = True
            await asyncio.wait_for(serving, 10)

    answer = asyncio.run(scenario())
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"\r\nok\r\n0\r\n\r\n")
    assert b"\r\nserver:" not in answer.lower()
    assert seen == [{"scheme": "http", "client": "127.0.0.1"}]
