"""``wasi:http/types``, ``handler`` and ``client`` on the 0.3 track.

wasi:http 0.3.0 types.wit: ``request`` and ``response`` carry their body as
a ``stream<u8>`` plus a ``future`` of trailers, and ``new`` returns a
transmission future that settles once the message was sent (or failed).
There is no ``wasi:io``: the host side awaits the guest's streams and
futures directly (python-mapping.md §6) and hands the guest async iterables
and awaitables. ``client.send`` is an ``async func`` over the injected
transport.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterable, AsyncIterator, Awaitable
from types import SimpleNamespace
from typing import Any

from polyengine_protocol import ComponentException, define_realm_local

from ._begun import Begun
from ._fields import Fields
from ._p2 import (
    _scheme_name,
    _valid_authority,
    _valid_method,
    _valid_path,
    method_name,
    method_value,
    scheme_value,
)
from ._transport import BodyError, DeniedTransport, HttpError, OutgoingMessage, Transport

__all__ = ["Request", "Response", "RequestOptions", "types_provider_p3", "client_provider"]


def _refused() -> ComponentException[None]:
    return ComponentException(None)


def _options_error(kind: str) -> ComponentException[dict[str, object]]:
    return ComponentException({"kind": kind}, f"request-options-error.{kind}")


async def _ok_none() -> dict[str, object]:
    return {"kind": "ok", "value": None}


async def _empty() -> AsyncIterator[bytes]:
    nothing: tuple[bytes, ...] = ()
    for chunk in nothing:
        yield chunk


async def _until_failure(
    body: AsyncIterable[bytes], outcome: asyncio.Future[dict[str, object]]
) -> AsyncIterator[bytes]:
    """``body`` until it ends or fails; ``outcome`` gets the trailers result."""
    try:
        async for chunk in body:
            yield chunk
    except BodyError as exc:
        _settle(outcome, {"kind": "err", "value": exc.code})
        return
    finally:
        _settle(outcome, {"kind": "ok", "value": None})


def _settle(fut: asyncio.Future[dict[str, object]] | None, value: dict[str, object]) -> None:
    """Settle ``fut`` with ``value`` unless it is settled already (or there is none)."""
    if fut is not None and not fut.done():
        fut.set_result(value)


@define_realm_local
class RequestOptions:
    """``request-options`` (0.3): timeouts in nanoseconds; immutable once attached."""

    def __init__(self) -> None:
        self._values: dict[str, int | None] = {"connect": None, "first": None, "between": None}
        self._mutable = True

    def _set(self, key: str, duration: int | None) -> None:
        if not self._mutable:
            raise _options_error("immutable")
        self._values[key] = duration

    def get_connect_timeout(self) -> int | None:
        return self._values["connect"]

    def set_connect_timeout(self, duration: int | None) -> None:
        self._set("connect", duration)

    def get_first_byte_timeout(self) -> int | None:
        return self._values["first"]

    def set_first_byte_timeout(self, duration: int | None) -> None:
        self._set("first", duration)

    def get_between_bytes_timeout(self) -> int | None:
        return self._values["between"]

    def set_between_bytes_timeout(self, duration: int | None) -> None:
        self._set("between", duration)

    def clone(self) -> RequestOptions:
        made = RequestOptions()
        made._values = dict(self._values)
        return made

    def frozen(self) -> RequestOptions:
        made = self.clone()
        made._mutable = False
        return made


class _Message:
    """The body, trailers and transmission result shared by requests and responses."""

    #: settled once the message was sent (``None``: one the host received, no sender)
    transmission: asyncio.Future[dict[str, object]] | None

    def _init_body(
        self, headers: Fields, contents: Any, trailers: Any
    ) -> asyncio.Future[dict[str, object]]:
        self._init_parts(headers, contents, trailers)
        sent: asyncio.Future[dict[str, object]] = asyncio.get_running_loop().create_future()
        self.transmission = sent
        return sent

    def _init_parts(self, headers: Fields, contents: Any, trailers: Any) -> None:
        """The headers (frozen now), body and trailers; no transmission result yet
        (``None``: a message the host received has no sender to tell)."""
        headers.freeze()
        self._headers = headers
        self.contents: Any = contents
        self.trailers: Any = trailers
        self._consumed = False
        self.transmission = None

    def get_headers(self) -> Fields:
        return Fields.of(self._headers.items())

    def host_headers(self) -> list[tuple[str, bytes]]:
        return self._headers.items()

    def _consume(self, res: Any) -> tuple[Any, Any]:
        if self._consumed:
            raise _refused()
        self._consumed = True
        contents = self.contents if self.contents is not None else _empty()
        trailers = self.trailers if self.trailers is not None else _ok_none()
        if res is not None:
            self._forwarding = asyncio.ensure_future(self._forward(res))
        return contents, trailers

    async def _forward(self, res: Any) -> None:
        try:
            value = await res
        except Exception as exc:  # the reader dropped its result future
            value = {"kind": "err", "value": {"kind": "internal-error", "value": str(exc)}}
        _settle(self.transmission, value if isinstance(value, dict) else {"kind": "ok"})


@define_realm_local
class Request(_Message):
    """``request`` (0.3)."""

    def __init__(self) -> None:
        #: the body of a request the host received, until it is consumed
        self._received: AsyncIterable[bytes] | None = None
        self._method: dict[str, object] = {"kind": "get"}
        self._path: str | None = None
        self._scheme: dict[str, object] | None = None
        self._authority: str | None = None
        self._options: RequestOptions | None = None

    @staticmethod
    def new(
        headers: Fields, contents: Any, trailers: Any, options: RequestOptions | None
    ) -> tuple[Request, Awaitable[dict[str, object]]]:
        made = Request()
        done = made._init_body(headers, contents, trailers)
        made._options = None if options is None else options.frozen()
        return made, done

    @classmethod
    def incoming(
        cls,
        method: str,
        path_with_query: str | None,
        *,
        scheme: str | None,
        authority: str | None,
        headers: list[tuple[str, bytes]] | Fields,
        body: AsyncIterable[bytes] | None,
    ) -> Request:
        """A request the host received, for the guest's ``handler.handle``.

        ``body`` failing with ``BodyError`` (the client went away) ends the
        guest's body stream and settles its trailers future with that
        ``error-code``; a complete body settles it ``ok(none)`` (ASGI carries
        no request trailers). ``headers`` given as :class:`Fields` are the
        request's own (made with :meth:`Fields.adopt`, say).
        """
        made = cls()
        # the body stream and trailers future are made when the guest consumes the body
        made._init_parts(headers if isinstance(headers, Fields) else Fields.of(headers), None, None)
        made._received = body
        made._method = _METHOD_VALUES.get(method) or method_value(method)
        made._path = path_with_query
        made._scheme = (
            None if scheme is None else (_SCHEME_VALUES.get(scheme) or scheme_value(scheme))
        )
        made._authority = authority
        return made

    def get_method(self) -> dict[str, object]:
        return dict(self._method)

    def set_method(self, method: dict[str, object]) -> None:
        if not _valid_method(method):
            raise _refused()
        self._method = dict(method)

    def get_path_with_query(self) -> str | None:
        return self._path

    def set_path_with_query(self, path_with_query: str | None) -> None:
        if not _valid_path(path_with_query):
            raise _refused()
        self._path = path_with_query

    def get_scheme(self) -> dict[str, object] | None:
        return None if self._scheme is None else dict(self._scheme)

    def set_scheme(self, scheme: dict[str, object] | None) -> None:
        self._scheme = None if scheme is None else dict(scheme)

    def get_authority(self) -> str | None:
        return self._authority

    def set_authority(self, authority: str | None) -> None:
        if not _valid_authority(authority):
            raise _refused()
        self._authority = authority

    def get_options(self) -> RequestOptions | None:
        return None if self._options is None else self._options.frozen()

    def _consume(self, res: Any) -> tuple[Any, Any]:
        received = self._received
        if received is not None and not self._consumed:
            self._received = None
            outcome: asyncio.Future[dict[str, object]] = (
                asyncio.get_running_loop().create_future()
            )
            self.contents, self.trailers = _until_failure(received, outcome), outcome
        return super()._consume(res)

    @staticmethod
    def consume_body(this: Request, res: Any) -> tuple[Any, Any]:
        return this._consume(res)


@define_realm_local
class Response(_Message):
    """``response`` (0.3): status 200 unless set.

    The host reads the body and trailers of a response the guest makes from
    the moment it is made (:meth:`_read_ahead`): the guest's writes complete
    as it makes them, up to a chunk, instead of parking it until the host
    sends the response. A guest that consumes the body itself gets what was
    read first (:meth:`consume_body`); one that drops the response stops the
    reads (:meth:`close`).
    """

    def __init__(self) -> None:
        self._status = 200
        #: the host's reads begun when the guest made it: (body's first chunk, trailers)
        self._ahead: tuple[Begun | None, Begun | None] | None = None

    @staticmethod
    def new(
        headers: Fields, contents: Any, trailers: Any
    ) -> tuple[Response, Awaitable[dict[str, object]]]:
        made = Response()
        done = made._init_body(headers, contents, trailers)
        made._read_ahead()
        return made, done

    def _read_ahead(self) -> None:
        """Begin reading the guest's body stream and trailers future (python-mapping.md §6:
        a host reader is always ready, up to a bound)."""
        contents, trailers = self.contents, self.trailers
        read = getattr(contents, "read", None)
        first = Begun(read(FIRST_READ)) if contents is not None and callable(read) else None
        awaitable = getattr(type(trailers), "__await__", None) is not None  # (a guest's future)
        later = Begun(trailers) if awaitable or inspect.isawaitable(trailers) else None
        self._ahead = (first, later)

    def host_body(self) -> tuple[Begun | None, Any, Begun]:
        """Host side (sending it): the body's first read (``None``: read ``contents``
        from the start), the body stream, and the trailers result being read.

        An empty first chunk is the end of the body.
        """
        self._consumed = True
        first, later = self._ahead or (None, None)
        self._ahead = None
        if later is None:
            later = Begun(self.trailers if self.trailers is not None else _ok_none())
        return first, self.contents, later

    def _consume(self, res: Any) -> tuple[Any, Any]:
        if self._consumed:
            raise _refused()
        ahead, self._ahead = self._ahead, None
        if ahead is not None:  # the guest reads its own response: what was read comes first
            self.contents = _body_back(ahead[0], self.contents)
            self.trailers = _trailers_back(ahead[1], self.trailers)
        return super()._consume(res)

    def close(self) -> None:
        """The guest dropped the response: the host's reads ahead stop (its body and
        trailers then end for their writer as the handles are let go, as before)."""
        ahead, self._ahead = self._ahead, None
        for read in ahead or ():
            if read is not None:
                read.cancel()

    def get_status_code(self) -> int:
        return self._status

    def set_status_code(self, status_code: int) -> None:
        if not 100 <= status_code <= 999:
            raise _refused()
        self._status = status_code

    @staticmethod
    def consume_body(this: Response, res: Any) -> tuple[Any, Any]:
        return this._consume(res)

    def finished(self, value: dict[str, object]) -> None:
        """Host side: settle the transmission future (``ok`` or ``err``)."""
        _settle(self.transmission, value)


#: the ``method`` and ``scheme`` variants of the common request-line spellings, made
#: once (getters hand out copies, setters store copies: these are never changed)
_METHOD_VALUES: dict[str, dict[str, object]] = {
    name.upper(): method_value(name.upper())
    for name in ("get", "head", "post", "put", "delete", "connect", "options", "trace", "patch")
}
_SCHEME_VALUES: dict[str, dict[str, object]] = {
    name: scheme_value(name) for name in ("http", "https")
}

#: the most bytes the host's first read of a guest-made response's body takes
FIRST_READ = 64 * 1024


def _body_back(first: Begun | None, contents: Any) -> Any:
    """The body a guest consuming its own response reads: ``contents``, after the
    chunk the host's first read took (a read still waiting is cancelled: bytes
    it took stay with the stream, read first)."""
    if first is None:
        return contents
    if not first.done():
        first.cancel()
        return contents
    try:
        chunk = first.result()
    except Exception:
        return contents  # the read failed: the stream reports it again
    return _prepend(bytes(chunk), contents) if chunk else contents


async def _prepend(chunk: bytes, contents: Any) -> AsyncIterator[bytes]:
    yield chunk
    async for more in contents:
        yield bytes(more)


def _trailers_back(later: Begun | None, trailers: Any) -> Any:
    """The trailers a guest consuming its own response reads: ``trailers``, or the
    outcome the host's read got, handed over as a future of it."""
    if later is None:
        return trailers
    if not later.done():
        later.cancel()
        return trailers
    return _outcome(later)


async def _outcome(read: Begun) -> Any:
    return read.result()


async def _chunks(stream: Any) -> AsyncIterator[bytes]:
    if stream is None:
        return
    async for chunk in stream:
        yield bytes(chunk)


def _seconds(ns: int | None) -> float | None:
    return None if ns is None else ns / 1e9


def client_provider(transport: Transport | None) -> SimpleNamespace:
    """``wasi:http/client`` (0.3): ``send`` over ``transport`` (denied without one)."""
    chosen: Transport = DeniedTransport() if transport is None else transport

    async def send(request: Request) -> Response:
        scheme = request.get_scheme() or {"kind": "HTTPS"}
        if scheme["kind"] not in ("HTTP", "HTTPS"):
            raise ComponentException({"kind": "HTTP-protocol-error"}, "unsupported scheme")
        authority = request.get_authority()
        if not authority:
            raise ComponentException({"kind": "HTTP-request-URI-invalid"}, "no authority")
        contents, _trailers = request._consume(None)
        options = request._options
        message = OutgoingMessage(
            method=method_name(request.get_method()),
            url=f"{_scheme_name(scheme)}://{authority}{request.get_path_with_query() or '/'}",
            headers=request.host_headers(),
            body=_chunks(contents),
            connect_timeout=_seconds(options.get_connect_timeout()) if options else None,
            first_byte_timeout=_seconds(options.get_first_byte_timeout()) if options else None,
            between_bytes_timeout=(
                _seconds(options.get_between_bytes_timeout()) if options else None
            ),
        )
        try:
            answer = await chosen.send(message)
        except HttpError as exc:
            _settle(request.transmission, {"kind": "err", "value": exc.code})
            raise ComponentException(exc.code, str(exc)) from exc
        _settle(request.transmission, {"kind": "ok"})
        response = Response()
        trailers_done: asyncio.Future[dict[str, object]] = (
            asyncio.get_running_loop().create_future()
        )

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in answer.body:
                    yield chunk
            except BodyError as exc:
                _settle(trailers_done, {"kind": "err", "value": exc.code})
                return
            _settle(trailers_done, {"kind": "ok", "value": None})

        async def trailers() -> dict[str, object]:
            return await trailers_done

        response._init_body(Fields.of(answer.headers), body(), trailers())
        response._status = answer.status
        return response

    return SimpleNamespace(send=send)


def types_provider_p3() -> SimpleNamespace:
    return SimpleNamespace(
        Fields=Fields, Request=Request, Response=Response, RequestOptions=RequestOptions
    )

