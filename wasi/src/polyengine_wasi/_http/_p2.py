"""``wasi:http/types`` and ``outgoing-handler`` on the 0.2 track.

Every resource of types.wit (wasi:http 0.2.x): ``fields`` (in
``_fields``), ``incoming-request``, ``outgoing-request``,
``request-options``, ``response-outparam``, ``incoming-response``,
``incoming-body``, ``future-trailers``, ``outgoing-response``,
``outgoing-body`` and ``future-incoming-response``, plus
``http-error-code``. Bodies are ``wasi:io`` streams of this package
(``InputStream`` over a pulled source, ``OutputStream`` over a
``BodyChannel``); readiness is ``Pollable``.

The host side of an incoming request: build an ``IncomingRequest`` and a
``ResponseOutparam``, call the guest's ``handle``, and await
``ResponseOutparam.response`` (see ``polyengine.asgi``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, Awaitable, Mapping
from types import SimpleNamespace
from typing import Any

from polyengine_protocol import ComponentException, Trap, define_realm_local

from .._bytes import AsyncIterSource, BufferSource, ByteSource
from .._kernel import Pollable
from .._streams import InputStream, IoError, OutputStream
from ._fields import Fields
from ._transport import (
    BodyChannel,
    BodyError,
    DeniedTransport,
    HttpError,
    OutgoingMessage,
    Transport,
)

__all__ = [
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
    "BodyInputStream",
    "HttpIoError",
    "http_error_code",
    "method_value",
    "method_name",
    "scheme_value",
    "types_provider",
    "outgoing_handler_provider",
]

_METHODS = ("get", "head", "post", "put", "delete", "connect", "options", "trace", "patch")
_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def method_value(method: str) -> dict[str, object]:
    """An HTTP method (``"GET"``) as the WIT ``method`` variant."""
    lower = method.lower()
    if method.upper() == method and lower in _METHODS:
        return {"kind": lower}
    return {"kind": "other", "value": method}


def method_name(value: Mapping[str, object]) -> str:
    """The WIT ``method`` variant as the request-line token."""
    kind = value["kind"]
    if kind == "other":
        return str(value["value"])
    return str(kind).upper()


def scheme_value(scheme: str) -> dict[str, object]:
    low = scheme.lower()
    if low == "http":
        return {"kind": "HTTP"}
    if low == "https":
        return {"kind": "HTTPS"}
    return {"kind": "other", "value": scheme}


def _scheme_name(value: Mapping[str, object]) -> str:
    kind = value["kind"]
    if kind == "HTTP":
        return "http"
    if kind == "HTTPS":
        return "https"
    return str(value.get("value"))


def _refused() -> ComponentException[None]:
    return ComponentException(None)


def _valid_method(value: Mapping[str, object]) -> bool:
    if value.get("kind") != "other":
        return True
    token = value.get("value")
    return isinstance(token, str) and bool(token) and all(c in _TCHAR for c in token)


def _valid_path(path: str | None) -> bool:
    if path is None:
        return True
    return bool(path) and (path.startswith("/") or path == "*") and all(
        0x20 < ord(c) < 0x7F for c in path
    )


def _valid_authority(authority: str | None) -> bool:
    if authority is None:
        return True
    return bool(authority) and not any(c in authority for c in "/?# \t\r\n\\")


class HttpIoError(IoError):
    """A body stream's ``io-error`` with the ``error-code`` behind it."""

    def __init__(self, code: Mapping[str, object], message: str) -> None:
        super().__init__(message)
        self.code = dict(code)


class BodyInputStream(InputStream):
    """An ``input-stream`` whose failures carry an ``error-code``."""

    def _read_now(self, n: int) -> bytes:
        try:
            return super()._read_now(n)
        except ComponentException as exc:
            cause = exc.__cause__
            if isinstance(cause, BodyError):
                err = HttpIoError(cause.code, str(cause))
                raise ComponentException(
                    {"kind": "last-operation-failed", "value": err}, str(cause)
                ) from cause
            raise


def http_error_code(err: IoError) -> dict[str, object] | None:
    """``http-error-code``: the ``error-code`` of a failed body stream, if any."""
    code = getattr(err, "code", None)
    return dict(code) if isinstance(code, dict) else None


def _ok(value: object) -> dict[str, object]:
    return {"kind": "ok", "value": value}


def _err(value: object = None) -> dict[str, object]:
    return {"kind": "err"} if value is None else {"kind": "err", "value": value}


def _no_live_child(stream: InputStream | OutputStream | None, where: str, kind: str) -> None:
    """Trap when a body's stream is still alive (types.wit: the stream is a child
    resource, dropped before its parent body is dropped or finished)."""
    if stream is None:
        return
    end = stream._source if isinstance(stream, InputStream) else stream._sink
    if end is not None:
        raise Trap(
            f"wasi:http/types#{where}: the body's {kind} (a child resource) is still alive; "
            f"drop the {kind} first"
        )


# --- incoming messages --------------------------------------------------------


@define_realm_local
class FutureTrailers:
    """``future-trailers``: ready once the body has ended."""

    def __init__(self, ready: Any, value: Any) -> None:
        self._ready_fn = ready
        self._value_fn = value
        self._taken = False

    def subscribe(self) -> Pollable:
        async def wait() -> None:
            await asyncio.sleep(0)

        return Pollable(lambda: bool(self._ready_fn()), wait)

    def get(self) -> dict[str, object] | None:
        """``get``: none until ready, then the trailers once, then ``err``."""
        if self._taken:
            return _err()
        if not self._ready_fn():
            return None
        self._taken = True
        value = self._value_fn()
        if isinstance(value, dict) and value.get("kind") == "err":
            return _ok(value)
        return _ok(_ok(value))


@define_realm_local
class IncomingBody:
    """``incoming-body``: its stream (once) and, when finished, its trailers."""

    def __init__(self, source: ByteSource) -> None:
        self._source: ByteSource | None = source
        self._stream: BodyInputStream | None = None

    def stream(self) -> BodyInputStream:
        """``stream``: the body's input stream, given once."""
        if self._source is None or self._stream is not None:
            raise _refused()
        self._stream = BodyInputStream(self._source)
        return self._stream

    @staticmethod
    def finish(this: IncomingBody) -> FutureTrailers:
        """``[static]incoming-body.finish``: trailers (this host always reports none)."""
        _no_live_child(this._stream, "[static]incoming-body.finish", "input-stream")
        this.close()
        return FutureTrailers(lambda: True, lambda: None)

    def close(self) -> None:
        """The destructor: the body's input stream, a child, must be dropped first."""
        _no_live_child(self._stream, "[resource-drop]incoming-body", "input-stream")
        if self._stream is None and self._source is not None:
            self._source.close()
        self._source = None


def _body_source(body: AsyncIterable[bytes] | bytes | ByteSource | None) -> ByteSource:
    if body is None:
        return BufferSource(b"")
    if isinstance(body, bytes | bytearray):
        return BufferSource(body)
    if isinstance(body, AsyncIterable):
        return AsyncIterSource(body)
    return body


@define_realm_local
class IncomingRequest:
    """``incoming-request``: built by the host from the request it received."""

    def __init__(
        self,
        method: str,
        path_with_query: str | None,
        *,
        scheme: str | None,
        authority: str | None,
        headers: list[tuple[str, bytes]],
        body: AsyncIterable[bytes] | bytes | ByteSource | None = None,
    ) -> None:
        self._method = method
        self._path = path_with_query
        self._scheme = scheme
        self._authority = authority
        self._headers = Fields.of(headers)
        self._body: ByteSource | None = _body_source(body)

    def method(self) -> dict[str, object]:
        return method_value(self._method)

    def path_with_query(self) -> str | None:
        return self._path

    def scheme(self) -> dict[str, object] | None:
        return None if self._scheme is None else scheme_value(self._scheme)

    def authority(self) -> str | None:
        return self._authority

    def headers(self) -> Fields:
        """``headers``: an immutable view."""
        return Fields.of(self._headers.items())

    def consume(self) -> IncomingBody:
        """``consume``: the body, once."""
        if self._body is None:
            raise _refused()
        body, self._body = self._body, None
        return IncomingBody(body)

    def close(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None


@define_realm_local
class IncomingResponse:
    """``incoming-response``: what a transport answered."""

    def __init__(
        self, status: int, headers: list[tuple[str, bytes]], body: AsyncIterable[bytes] | bytes
    ) -> None:
        self._status = status
        self._headers = Fields.of(headers)
        self._body: ByteSource | None = _body_source(body)

    def status(self) -> int:
        return self._status

    def headers(self) -> Fields:
        return Fields.of(self._headers.items())

    def consume(self) -> IncomingBody:
        if self._body is None:
            raise _refused()
        body, self._body = self._body, None
        return IncomingBody(body)

    def close(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None


# --- outgoing messages --------------------------------------------------------


def _size_error(kind: str, written: int) -> ComponentException[dict[str, object]]:
    return ComponentException({"kind": kind, "value": written}, f"{kind}: {written} bytes written")


@define_realm_local
class OutgoingBody:
    """``outgoing-body``: an output stream (once) and ``finish`` with trailers."""

    def __init__(self, declared: int | None, size_error: str) -> None:
        self.channel = BodyChannel()
        self._declared = declared
        self._size_error = size_error
        self._stream: OutputStream | None = None
        self._finished = False

    def write(self) -> OutputStream:
        """``write``: the body's output stream, given once."""
        if self._stream is not None or self._finished:
            raise _refused()
        self._stream = OutputStream(self.channel, owned=False)
        return self._stream

    @staticmethod
    def finish(this: OutgoingBody, trailers: Fields | None) -> None:
        """``[static]outgoing-body.finish``: end the body, checking content-length."""
        _no_live_child(this._stream, "[static]outgoing-body.finish", "output-stream")
        this._finished = True
        if this._declared is not None and this.channel.written != this._declared:
            reason = _size_error(this._size_error, this.channel.written)
            this.channel.abort(HttpError(reason.payload))
            raise reason
        this.channel.end(None if trailers is None else trailers.items())

    def close(self) -> None:
        """Dropped without ``finish``: the body is incomplete."""
        _no_live_child(self._stream, "[resource-drop]outgoing-body", "output-stream")
        if not self._finished:
            self._finished = True
            self.channel.abort(
                HttpError({"kind": "HTTP-response-incomplete"}, "outgoing-body dropped unfinished")
            )


def _declared_length(headers: Fields) -> int | None:
    raw = headers.first("content-length")
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


@define_realm_local
class OutgoingResponse:
    """``outgoing-response``: status (default 200), headers, body."""

    def __init__(self, headers: Fields) -> None:
        headers.freeze()
        self._headers = headers
        self._status = 200
        self.body_resource: OutgoingBody | None = None

    def status_code(self) -> int:
        return self._status

    def set_status_code(self, status_code: int) -> None:
        if not 100 <= status_code <= 999:
            raise _refused()
        self._status = status_code

    def headers(self) -> Fields:
        return self._headers

    def body(self) -> OutgoingBody:
        if self.body_resource is not None:
            raise _refused()
        self.body_resource = OutgoingBody(
            _declared_length(self._headers), "HTTP-response-body-size"
        )
        return self.body_resource


@define_realm_local
class RequestOptions:
    """``request-options``: timeouts in nanoseconds, ``None`` when unset."""

    def __init__(self) -> None:
        self._connect: int | None = None
        self._first_byte: int | None = None
        self._between_bytes: int | None = None

    def connect_timeout(self) -> int | None:
        return self._connect

    def set_connect_timeout(self, duration: int | None) -> None:
        self._connect = duration

    def first_byte_timeout(self) -> int | None:
        return self._first_byte

    def set_first_byte_timeout(self, duration: int | None) -> None:
        self._first_byte = duration

    def between_bytes_timeout(self) -> int | None:
        return self._between_bytes

    def set_between_bytes_timeout(self, duration: int | None) -> None:
        self._between_bytes = duration


@define_realm_local
class OutgoingRequest:
    """``outgoing-request``: method GET, no path, scheme or authority until set."""

    def __init__(self, headers: Fields) -> None:
        headers.freeze()
        self._headers = headers
        self._method: dict[str, object] = {"kind": "get"}
        self._path: str | None = None
        self._scheme: dict[str, object] | None = None
        self._authority: str | None = None
        self.body_resource: OutgoingBody | None = None

    def body(self) -> OutgoingBody:
        if self.body_resource is not None:
            raise _refused()
        self.body_resource = OutgoingBody(_declared_length(self._headers), "HTTP-request-body-size")
        return self.body_resource

    def method(self) -> dict[str, object]:
        return dict(self._method)

    def set_method(self, method: dict[str, object]) -> None:
        if not _valid_method(method):
            raise _refused()
        self._method = dict(method)

    def path_with_query(self) -> str | None:
        return self._path

    def set_path_with_query(self, path_with_query: str | None) -> None:
        if not _valid_path(path_with_query):
            raise _refused()
        self._path = path_with_query

    def scheme(self) -> dict[str, object] | None:
        return None if self._scheme is None else dict(self._scheme)

    def set_scheme(self, scheme: dict[str, object] | None) -> None:
        if scheme is not None and scheme.get("kind") == "other":
            text = scheme.get("value")
            if not isinstance(text, str) or not text.isascii() or not text.isalnum():
                raise _refused()
        self._scheme = None if scheme is None else dict(scheme)

    def authority(self) -> str | None:
        return self._authority

    def set_authority(self, authority: str | None) -> None:
        if not _valid_authority(authority):
            raise _refused()
        self._authority = authority

    def headers(self) -> Fields:
        return self._headers


@define_realm_local
class ResponseOutparam:
    """``response-outparam``: the host awaits ``response`` for what the guest set."""

    def __init__(self) -> None:
        self.response: asyncio.Future[dict[str, object]] = (
            asyncio.get_running_loop().create_future()
        )

    def send_informational(self, status: int, headers: Fields) -> None:
        raise ComponentException(
            {"kind": "internal-error", "value": "informational responses are not supported"}
        )

    @staticmethod
    def set(param: ResponseOutparam, response: dict[str, object]) -> None:
        """``[static]response-outparam.set``: the guest's answer (ok or an error-code)."""
        if not param.response.done():
            param.response.set_result(response)

    def close(self) -> None:
        return None


@define_realm_local
class FutureIncomingResponse:
    """``future-incoming-response`` over the transport's running exchange."""

    def __init__(self, task: asyncio.Future[IncomingResponse]) -> None:
        self._task = task
        self._taken = False

    def subscribe(self) -> Pollable:
        async def wait() -> None:
            await asyncio.wait({self._task})

        return Pollable(self._task.done, wait)

    def get(self) -> dict[str, object] | None:
        if self._taken:
            return _err()
        if not self._task.done():
            return None
        self._taken = True
        exc = self._task.exception()
        if isinstance(exc, HttpError):
            return _ok(_err(exc.code))
        if exc is not None:
            return _ok(_err({"kind": "internal-error", "value": f"{type(exc).__name__}: {exc}"}))
        return _ok(_ok(self._task.result()))

    def close(self) -> None:
        if not self._task.done():
            self._task.cancel()


def _seconds(ns: int | None) -> float | None:
    return None if ns is None else ns / 1e9


async def _exchange(transport: Transport, message: OutgoingMessage) -> IncomingResponse:
    try:
        answer = await transport.send(message)
    except HttpError:
        raise
    except (TimeoutError, OSError) as exc:
        raise HttpError({"kind": "internal-error", "value": str(exc)}) from exc
    return IncomingResponse(answer.status, answer.headers, answer.body)


def outgoing_handler_provider(transport: Transport | None) -> SimpleNamespace:
    """``wasi:http/outgoing-handler``: ``handle`` over ``transport``."""
    chosen: Transport = DeniedTransport() if transport is None else transport

    def handle(request: OutgoingRequest, options: RequestOptions | None) -> FutureIncomingResponse:
        scheme = request.scheme() or {"kind": "HTTPS"}
        if scheme["kind"] not in ("HTTP", "HTTPS"):
            raise ComponentException({"kind": "HTTP-protocol-error"}, "unsupported scheme")
        authority = request.authority()
        if not authority:
            raise ComponentException({"kind": "HTTP-request-URI-invalid"}, "no authority")
        body = request.body_resource
        url = f"{_scheme_name(scheme)}://{authority}{request.path_with_query() or '/'}"
        message = OutgoingMessage(
            method=method_name(request.method()),
            url=url,
            headers=request.headers().items(),
            body=None if body is None else body.channel.chunks(),
            connect_timeout=_seconds(options.connect_timeout()) if options else None,
            first_byte_timeout=_seconds(options.first_byte_timeout()) if options else None,
            between_bytes_timeout=_seconds(options.between_bytes_timeout()) if options else None,
        )
        task = asyncio.get_running_loop().create_task(_exchange(chosen, message))
        task.add_done_callback(_consume_failure)
        return FutureIncomingResponse(task)

    return SimpleNamespace(handle=handle)


def _consume_failure(task: asyncio.Future[Any]) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        task.exception()


def types_provider() -> SimpleNamespace:
    """``wasi:http/types``: the resource classes and ``http-error-code``."""
    return SimpleNamespace(
        Fields=Fields,
        IncomingRequest=IncomingRequest,
        OutgoingRequest=OutgoingRequest,
        RequestOptions=RequestOptions,
        ResponseOutparam=ResponseOutparam,
        IncomingResponse=IncomingResponse,
        IncomingBody=IncomingBody,
        FutureTrailers=FutureTrailers,
        OutgoingResponse=OutgoingResponse,
        OutgoingBody=OutgoingBody,
        FutureIncomingResponse=FutureIncomingResponse,
        http_error_code=http_error_code,
    )


def awaitable_response(param: ResponseOutparam) -> Awaitable[dict[str, object]]:
    return param.response
