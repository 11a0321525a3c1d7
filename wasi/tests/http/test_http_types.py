"""wasi:http 0.2 types and outgoing-handler providers, called as a runtime would."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from polyengine_protocol import ComponentException
from polyengine_wasi import http
from polyengine_wasi._http import (
    BodyChannel,
    BodyError,
    Fields,
    HttpError,
    IncomingMessage,
    IncomingRequest,
    OutgoingMessage,
    OutgoingRequest,
    OutgoingResponse,
    RequestOptions,
    ResponseOutparam,
    http_error_code,
)

TYPES = "wasi:http/types@0.2"
HANDLER = "wasi:http/outgoing-handler@0.2"


def payload(exc: pytest.ExceptionInfo[ComponentException[Any]]) -> Any:
    return exc.value.payload


def test_http_registers_the_two_interfaces_on_the_02_track() -> None:
    imports = http()
    assert {TYPES, HANDLER, "wasi:http/types@0.3", "wasi:http/client@0.3"} == set(imports)
    types = imports[TYPES]
    for name in (
        "Fields",
        "IncomingRequest",
        "OutgoingRequest",
        "RequestOptions",
        "ResponseOutparam",
        "IncomingResponse",
        "IncomingBody",
        "FutureTrailers",
        "OutgoingResponse",
        "OutgoingBody",
        "FutureIncomingResponse",
        "http_error_code",
    ):
        assert hasattr(types, name), name


def test_fields_are_case_insensitive_ordered_and_keep_duplicates() -> None:
    f = Fields.from_list([("Accept", b"a"), ("X-Y", b"1"), ("accept", b"b")])
    assert f.get("ACCEPT") == [b"a", b"b"]
    assert f.has("x-y") and not f.has("x-z")
    assert f.entries() == [("accept", b"a"), ("x-y", b"1"), ("accept", b"b")]
    f.set("accept", [b"c"])
    assert f.get("accept") == [b"c"]
    f.append("x-y", b"2")
    assert f.get("x-y") == [b"1", b"2"]
    f.delete("x-y")
    assert not f.has("x-y")
    assert f.get_and_delete("accept") == [b"c"]
    assert f.copy_all() == []


@pytest.mark.parametrize(
    ("entries", "kind"),
    [
        ([("bad name", b"v")], "invalid-syntax"),
        ([("", b"v")], "invalid-syntax"),
        ([("x", b"a\r\nb")], "invalid-syntax"),
        ([("Connection", b"close")], "forbidden"),
        ([("host", b"example.test")], "forbidden"),
        ([("transfer-encoding", b"chunked")], "forbidden"),
    ],
)
def test_from_list_refuses_bad_and_forbidden_fields(
    entries: list[tuple[str, bytes]], kind: str
) -> None:
    with pytest.raises(ComponentException) as exc:
        Fields.from_list(entries)
    assert payload(exc) == {"kind": kind}


def test_field_name_and_value_syntax_byte_by_byte() -> None:
    """A name is an RFC 9110 token; a value holds no control byte but tab (each byte)."""
    from polyengine_wasi._http._fields import valid_name, valid_value

    tchar = set(b"!#$%&'*+-.^_`|~") | set(range(0x30, 0x3A)) | set(range(0x41, 0x5B))
    tchar |= set(range(0x61, 0x7B))
    for b in range(256):
        assert valid_value(bytes([b])) is (b == 0x09 or (b >= 0x20 and b != 0x7F)), b
        assert valid_value(b"ok " + bytes([b]) + b" ok") is valid_value(bytes([b])), b
        assert valid_name(chr(b)) is (b in tchar), b
        assert valid_name("x-" + chr(b) + "-y") is (b in tchar), b
    assert valid_value(b"") and valid_value(bytearray(b"a\tb")) and valid_value(memoryview(b"v"))
    assert not valid_name("") and not valid_name("caf\u00e9") and not valid_name(b"x")
    assert not valid_value("text") and not valid_value(b"a\r\nb")


def test_invalid_name_reads_as_absent() -> None:
    f = Fields.from_list([("a", b"1")])
    assert f.get("bad name") == []
    assert f.has("bad name") is False


def test_attached_fields_are_immutable_and_clone_is_mutable() -> None:
    headers = Fields.from_list([("content-type", b"text/plain")])
    response = OutgoingResponse(headers)
    for op in (
        lambda f: f.set("a", [b"1"]),
        lambda f: f.append("a", b"1"),
        lambda f: f.delete("content-type"),
    ):
        with pytest.raises(ComponentException) as exc:
            op(response.headers())
        assert payload(exc) == {"kind": "immutable"}
    copy = response.headers().clone()
    copy.append("a", b"1")
    assert copy.get("a") == [b"1"]
    assert response.headers().get("a") == []


def test_incoming_request_maps_its_parts_and_its_headers_are_immutable() -> None:
    req = IncomingRequest(
        "PATCH",
        "/a%20b?x=1",
        scheme="https",
        authority="example.test:8443",
        headers=[("X-Thing", b"1"), ("x-thing", b"2")],
    )
    assert req.method() == {"kind": "patch"}
    assert req.path_with_query() == "/a%20b?x=1"
    assert req.scheme() == {"kind": "HTTPS"}
    assert req.authority() == "example.test:8443"
    assert req.headers().get("x-thing") == [b"1", b"2"]
    with pytest.raises(ComponentException):
        req.headers().append("y", b"1")
    assert IncomingRequest(
        "PURGE", "/", scheme="gopher", authority=None, headers=[]
    ).method() == {"kind": "other", "value": "PURGE"}


def test_incoming_body_is_consumed_once_and_its_stream_given_once() -> None:
    req = IncomingRequest("POST", "/", scheme="http", authority="h", headers=[], body=b"data")
    body = req.consume()
    with pytest.raises(ComponentException) as exc:
        req.consume()
    assert payload(exc) is None
    stream = body.stream()
    with pytest.raises(ComponentException):
        body.stream()
    assert stream.read(100) == b"data"
    with pytest.raises(ComponentException) as closed:
        stream.read(1)
    assert payload(closed) == {"kind": "closed"}
    stream.close()
    trailers = type(body).finish(body)
    assert trailers.get() == {"kind": "ok", "value": {"kind": "ok", "value": None}}
    assert trailers.get() == {"kind": "err"}


def test_a_failed_body_stream_carries_its_error_code() -> None:
    async def source() -> AsyncIterator[bytes]:
        yield b"x"
        raise BodyError({"kind": "connection-terminated"})

    async def main() -> None:
        req = IncomingRequest("POST", "/", scheme="http", authority="h", headers=[], body=source())
        stream = req.consume().stream()
        first = await _settle(stream.blocking_read(10))
        assert first == b"x"
        with pytest.raises(ComponentException) as exc:
            await _settle(stream.blocking_read(10))
        err = exc.value.payload
        assert err["kind"] == "last-operation-failed"
        assert http_error_code(err["value"]) == {"kind": "connection-terminated"}

    asyncio.run(main())


async def _settle(value: Any) -> Any:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value


def test_outgoing_request_defaults_and_validation() -> None:
    req = OutgoingRequest(Fields())
    assert req.method() == {"kind": "get"}
    assert req.path_with_query() is None and req.scheme() is None and req.authority() is None
    req.set_method({"kind": "other", "value": "PURGE"})
    assert req.method() == {"kind": "other", "value": "PURGE"}
    for bad in (
        lambda: req.set_method({"kind": "other", "value": "BAD METHOD"}),
        lambda: req.set_path_with_query("no-slash"),
        lambda: req.set_path_with_query("/a b"),
        lambda: req.set_authority("a/b"),
    ):
        with pytest.raises(ComponentException) as exc:
            bad()
        assert payload(exc) is None
    with pytest.raises(ComponentException):
        req.headers().append("a", b"b")
    body = req.body()
    with pytest.raises(ComponentException):
        req.body()
    assert body.write() is not None


def test_outgoing_response_status_and_body_once() -> None:
    resp = OutgoingResponse(Fields())
    assert resp.status_code() == 200
    resp.set_status_code(404)
    assert resp.status_code() == 404
    with pytest.raises(ComponentException):
        resp.set_status_code(42)
    resp.body()
    with pytest.raises(ComponentException):
        resp.body()


def test_finish_checks_the_declared_content_length() -> None:
    async def main() -> None:
        resp = OutgoingResponse(Fields.from_list([("content-length", b"5")]))
        body = resp.body()
        out = body.write()
        assert out.check_write() > 0
        out.write(b"abc")
        out.close()  # the stream is a child of the body: dropped before finish
        with pytest.raises(ComponentException) as exc:
            type(body).finish(body, None)
        assert payload(exc) == {"kind": "HTTP-response-body-size", "value": 3}
        assert await body.channel.next_chunk() == b"abc"
        with pytest.raises(HttpError):
            await body.channel.next_chunk()

    asyncio.run(main())


def test_finish_carries_trailers_and_a_dropped_body_is_incomplete() -> None:
    async def main() -> None:
        body = OutgoingResponse(Fields()).body()
        type(body).finish(body, Fields.from_list([("x-t", b"1")]))
        assert await body.channel.next_chunk() is None
        assert body.channel.trailers == [("x-t", b"1")]
        dropped = OutgoingResponse(Fields()).body()
        dropped.close()
        with pytest.raises(HttpError) as exc:
            await dropped.channel.next_chunk()
        assert exc.value.code == {"kind": "HTTP-response-incomplete"}

    asyncio.run(main())


def test_body_channel_bounds_what_the_writer_may_queue() -> None:
    async def main() -> None:
        channel = BodyChannel(limit=10)
        assert channel.capacity() == 10
        channel.write(b"0123456789")
        assert channel.capacity() == 0
        waiter = asyncio.ensure_future(channel.wait())
        await asyncio.sleep(0)
        assert not waiter.done()
        assert await channel.next_chunk() == b"0123456789"
        await asyncio.wait_for(waiter, 1)
        assert channel.capacity() == 10
        channel.fail(OSError("gone"))
        with pytest.raises(OSError, match="gone"):
            channel.capacity()

    asyncio.run(main())


def test_response_outparam_delivers_the_first_answer() -> None:
    async def main() -> None:
        out = ResponseOutparam()
        resp = OutgoingResponse(Fields())
        ResponseOutparam.set(out, {"kind": "ok", "value": resp})
        assert out.response.result() == {"kind": "ok", "value": resp}

    asyncio.run(main())


def _request(url_authority: str = "example.test") -> OutgoingRequest:
    req = OutgoingRequest(Fields.from_list([("accept", b"*/*")]))
    req.set_scheme({"kind": "HTTP"})
    req.set_authority(url_authority)
    req.set_path_with_query("/p?q=1")
    return req


def test_outgoing_requests_are_denied_without_a_transport() -> None:
    async def main2() -> dict[str, Any] | None:
        handle = http()[HANDLER].handle
        future = handle(_request(), None)
        for _ in range(100):
            answer = future.get()
            if answer is not None:
                assert future.get() == {"kind": "err"}
                return answer
            await asyncio.sleep(0)
        return None

    answer = asyncio.run(main2())
    denied = {"kind": "HTTP-request-denied"}
    assert answer == {"kind": "ok", "value": {"kind": "err", "value": denied}}


def test_handle_refuses_a_request_without_authority_or_with_another_scheme() -> None:
    handle = http()[HANDLER].handle
    no_authority = OutgoingRequest(Fields())
    with pytest.raises(ComponentException) as exc:
        handle(no_authority, None)
    assert payload(exc) == {"kind": "HTTP-request-URI-invalid"}
    other = _request()
    other.set_scheme({"kind": "other", "value": "ftp"})
    with pytest.raises(ComponentException) as exc2:
        handle(other, None)
    assert payload(exc2) == {"kind": "HTTP-protocol-error"}


class RecordingTransport:
    def __init__(self) -> None:
        self.seen: list[OutgoingMessage] = []
        self.uploaded = b""

    async def send(self, request: OutgoingMessage) -> IncomingMessage:
        self.seen.append(request)
        if request.body is not None:
            async for chunk in request.body:
                self.uploaded += chunk

        async def body() -> AsyncIterator[bytes]:
            yield b"pong:"
            yield self.uploaded

        return IncomingMessage(201, [("Content-Type", b"text/plain")], body())


def test_a_granted_transport_sees_the_request_and_streams_both_ways() -> None:
    transport = RecordingTransport()

    async def main() -> bytes:
        handle = http(transport=transport)[HANDLER].handle
        req = _request()
        req.set_method({"kind": "post"})
        body = req.body()
        out = body.write()
        options = RequestOptions()
        options.set_connect_timeout(2_000_000_000)
        options.set_first_byte_timeout(None)
        future = handle(req, options)
        out.write(b"ping") if out.check_write() else None
        out.close()
        type(body).finish(body, None)
        pollable = future.subscribe()
        while not pollable.ready():
            await pollable.wait()
        answer = future.get()
        assert answer is not None
        response = answer["value"]["value"]
        assert response.status() == 201
        assert response.headers().get("content-type") == [b"text/plain"]
        stream = response.consume().stream()
        data = b""
        while True:
            try:
                data += await _settle(stream.blocking_read(100))
            except ComponentException as exc:
                assert exc.payload == {"kind": "closed"}
                break
        return data

    assert asyncio.run(main()) == b"pong:ping"
    message = transport.seen[0]
    assert message.method == "POST"
    assert message.url == "http://example.test/p?q=1"
    assert message.headers == [("accept", b"*/*")]
    assert message.connect_timeout == 2.0
    assert message.first_byte_timeout is None


def test_a_body_stream_is_a_child_dropped_before_its_body() -> None:
    """types.wit: the input/output stream of a body must be dropped before the
    body is dropped or finished; otherwise the host traps (as wasmtime does)."""
    from polyengine_protocol import Trap
    from polyengine_wasi._http import IncomingBody, OutgoingBody
    from polyengine_wasi.hosthttp import IncomingRequest

    async def main() -> None:
        body = IncomingRequest(
            "POST", "/", scheme="http", authority="h", headers=[], body=b"abc"
        ).consume()
        stream = body.stream()
        with pytest.raises(Trap, match="input-stream"):
            body.close()
        with pytest.raises(Trap, match="input-stream"):
            IncomingBody.finish(body)
        stream.close()
        IncomingBody.finish(body)

        out = OutgoingResponse(Fields())
        ob = out.body()
        os_ = ob.write()
        with pytest.raises(Trap, match="output-stream"):
            OutgoingBody.finish(ob, None)
        with pytest.raises(Trap, match="output-stream"):
            ob.close()
        os_.close()
        OutgoingBody.finish(ob, None)
        assert ob.channel.ended

    asyncio.run(main())
