"""``polyengine.asgi.App``: a wasi:http component as an ASGI 3 application.

Both tracks: a 0.2 ``proxy`` (``incoming-handler.handle`` with a
response outparam) and a 0.3 ``service`` (``handler.handle`` as an async
call returning the response; several run concurrently on one instance).

http-serve.md §4 and §6. The app translates the component at lifespan
startup (or at the first request under a server without lifespan), keeps a
pool of instances with ``wasmtime serve``'s defaults (0.2 ``proxy``: one
request per instance; ``--max-instance-reuse-count`` and the idle timeout
are ``reuse`` and ``idle_timeout``), and maps each ``http`` scope onto
``wasi:http/incoming-handler.handle``:

* the request body is pulled from ``receive()`` only as the guest reads it;
  ``http.disconnect`` fails the guest's read with ``connection-terminated``;
* each response chunk is one awaited ``send`` (the guest's write budget is
  bounded, so a slow client stalls the guest, not the server's memory);
* trailers are sent when the server offers ``http.response.trailers``;
* a guest that sets no response, or an error, or traps before responding,
  gets wasmtime's 500 page; a trap after the response started aborts it;
* a trap discards its instance; other requests are untouched.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from polyengine.asgi._io import (
    ERROR_PAGE,
    ImportsFactory,
    Receive,
    Scope,
    Send,
    _error_page,
    _Incoming,
    _may_have_length,
    _path_with_query,
    _request_head,
    call_quietly,
    default_imports,
)
from polyengine.asgi._pool import (
    _FRESH_AT_ONCE,
    P2_HANDLER,
    P3_HANDLER,
    _Gate,
    _Pool,
    _Slot,
    _Turn,
)
from polyengine.limits import Limits
from polyengine.translate import Artifacts, translate
from polyengine_protocol import is_component_exception

__all__ = ["App", "ERROR_PAGE", "ImportsFactory", "P2_HANDLER", "P3_HANDLER", "default_imports"]

def _forget(*reads: Any) -> None:
    """Stop the reads of a response that is not sent to its end (``None``: no read)."""
    for read in reads:
        if read is not None:
            read.cancel()


def _reader(contents: Any) -> Callable[[], Awaitable[Any]]:
    """The next chunk of a response body, an empty one at its end: a guest's stream
    reads so itself (``read``); any other async iterable skips its empty chunks."""
    read: Callable[[], Awaitable[Any]] | None = getattr(contents, "read", None)
    if read is not None:
        return read
    chunks = aiter(contents)

    async def next_chunk() -> Any:
        async for chunk in chunks:
            if chunk:
                return chunk
        return b""

    return next_chunk


class _Aborted(Exception):
    """The response had started when the guest failed: the connection is cut."""


class _P3Answer:
    """Whether a 0.3 response has started (its head was sent)."""

    __slots__ = ("started",)

    def __init__(self) -> None:
        self.started = False


class App:
    """An ASGI 3 application serving a wasi:http 0.2 proxy or 0.3 service component.

    ``component`` is the binary (``bytes``), a path to it, or translation
    ``Artifacts``. ``imports_factory(instance_id)`` gives each new instance
    its imports (default: all of ``polyengine_wasi`` plus ``wasi:http``
    with outgoing requests denied, log lines prefixed ``stdout [N] :: ``).
    ``reuse`` is how many requests an instance serves before it is dropped
    (default: wasmtime's, 1 for 0.2 and 128 for 0.3), ``concurrent_reuse``
    how many run at once on a 0.3 instance (default 16), ``idle_timeout`` how long an idle one
    is kept (seconds), ``prewarm`` how many instances are kept ready,
    ``request_timeout`` bounds each request (seconds; a guest still running
    then is interrupted), ``headers`` replace or add request headers
    (wasmtime's ``-H``), ``limits`` (:class:`polyengine.Limits`) bounds
    every instance of the pool; ``pooling_allocator`` (default, like wasmtime
    serve) makes the instances with wasmtime's pooling allocator (``_pool.py``).
    """

    def __init__(
        self,
        component: bytes | str | os.PathLike[str] | Artifacts,
        imports_factory: ImportsFactory | None = None,
        *,
        reuse: int | None = None,
        concurrent_reuse: int | None = None,
        idle_timeout: float = 1.0,
        prewarm: int = 0,
        request_timeout: float | None = None,
        headers: Sequence[tuple[str, str]] = (),
        log: Callable[[str], None] | None = None,
        max_concurrent_requests: int | None = None,
        limits: Limits | None = None,
        pooling_allocator: bool = True,
    ) -> None:
        self._component = component
        self.limits = limits
        self.pooling_allocator = pooling_allocator
        self.max_concurrent_requests = max_concurrent_requests
        self._artifacts: Artifacts | None = None
        self.imports_factory: ImportsFactory = imports_factory or default_imports()
        self.reuse = reuse
        self.concurrent_reuse = concurrent_reuse
        if min(reuse or 1, concurrent_reuse or 1) < 1:
            raise ValueError("reuse and concurrent_reuse must be at least 1")
        self.idle_timeout = idle_timeout
        self.prewarm = prewarm
        self.request_timeout = request_timeout
        self.headers = [(k.strip().lower().encode(), v.encode()) for k, v in headers]
        from polyengine_wasi.hosthttp import FORBIDDEN_FIELDS, Fields, Request

        #: Request fields a guest never sees (hop-by-hop; ``host`` is the authority).
        self._forbidden = FORBIDDEN_FIELDS
        #: the 0.3 request class (imported once, not per request)
        self._p3_request = Request
        self._p3_fields = Fields
        self._log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self._pool: _Pool | None = None
        self._started = asyncio.Lock()
        self.requests = 0
        self._admission = _Gate(max_concurrent_requests) if max_concurrent_requests else None
        self._fresh = asyncio.Semaphore(_FRESH_AT_ONCE)

    def reuse_for(self, slot: _Slot) -> int:
        """Requests per instance: ``reuse``, else wasmtime's default (0.2: 1, 0.3: 128)."""
        return self.reuse if self.reuse is not None else (128 if slot.p3 else 1)

    def concurrent_for(self, slot: _Slot) -> int:
        """Concurrent requests per instance (0.2: always 1; 0.3 default 16)."""
        if not slot.p3:
            return 1
        return self.concurrent_reuse if self.concurrent_reuse is not None else 16

    # -- lifecycle ------------------------------------------------------------

    def artifacts(self) -> Artifacts:
        """The translated component (translated once)."""
        if self._artifacts is None:
            comp = self._component
            if isinstance(comp, Artifacts):
                self._artifacts = comp
            elif isinstance(comp, bytes | bytearray):
                self._artifacts = translate(bytes(comp))
            else:
                self._artifacts = translate(Path(comp).read_bytes())
        return self._artifacts

    async def startup(self) -> None:
        """Translate, instantiate once (to check the exports) and prewarm."""
        async with self._started:
            if self._pool is not None:
                return
            self.artifacts()
            pool = _Pool(self)
            await pool.prewarm(max(1, self.prewarm))
            self._pool = pool

    async def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @property
    def pool_stats(self) -> dict[str, int]:
        pool = self._pool
        return {"created": pool.created, "discarded": pool.discarded} if pool else {}

    # -- ASGI -------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "http":
            if self._pool is None:
                await self.startup()
            gate = self._admission
            if gate is None:
                await self._http(scope, receive, send)
                return
            if not gate.try_enter():
                await gate.enter()
            try:
                await self._http(scope, receive, send)
            finally:
                gate.leave()
        else:
            raise ValueError(f"polyengine.asgi.App serves http scopes, not {kind!r}")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as exc:  # reported to the server, which stops
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        pool = self._pool
        assert pool is not None
        self.requests += 1
        slot = pool.take()
        if slot is None:
            await self._http_fresh(pool, scope, receive, send)
        elif slot.p3:
            await self._http_p3(slot, scope, receive, send)
        else:
            await self._http_p2(slot, scope, receive, send)

    async def _http_fresh(self, pool: _Pool, scope: Scope, receive: Receive, send: Send) -> None:
        """A request that needs a new instance waits for its turn: instantiating
        blocks the loop, and many at once would interleave with (and delay) the
        requests already answering. The turn ends when the response starts, or
        after ``_FRESH_HOLD`` seconds for a guest that waits long."""
        turn = _Turn(self._fresh)
        await turn.take()
        try:
            slot = await pool.acquire()

            async def first_send(message: dict[str, Any]) -> None:
                turn.give_back()
                await send(message)

            if slot.p3:
                await self._http_p3(slot, scope, receive, first_send)
            else:
                await self._http_p2(slot, scope, receive, first_send)
        finally:
            turn.give_back()

    async def _http_p2(self, slot: _Slot, scope: Scope, receive: Receive, send: Send) -> None:
        """0.2: ``incoming-handler.handle(request, outparam)``; the outparam's response
        is sent as the guest sets it, its body as the guest writes it."""
        assert self._pool is not None
        from polyengine_wasi.hosthttp import IncomingRequest, ResponseOutparam

        started = False
        authority, ended, fields = _request_head(scope, self._forbidden, self.headers)
        incoming = _Incoming(receive, ended)
        try:
            request = IncomingRequest(
                scope["method"],
                _path_with_query(scope),
                scheme=scope.get("scheme", "http"),
                authority=authority,
                headers=fields,
                body=incoming.body(),
            )
            out = ResponseOutparam()
            call = asyncio.ensure_future(slot.handler.handle(request, out))
            try:
                async with asyncio.timeout(self.request_timeout):
                    started = await self._respond(
                        slot, incoming, scope, send, call=call, out=out
                    )
            except TimeoutError:
                call.cancel()
                slot.broken = True
                self._log("error: request timed out")
                if started:
                    raise _Aborted("the request timed out") from None
                await _error_page(send)
            if not call.done() or call.cancelled() or call.exception() is not None:
                slot.broken = True
        except BaseException:
            slot.broken = True
            raise
        finally:
            incoming.close()
            self._pool.release(slot)

    async def _respond(
        self,
        slot: _Slot,
        incoming: _Incoming,
        scope: Scope,
        send: Send,
        *,
        call: asyncio.Future[Any],
        out: Any,
    ) -> bool:
        await asyncio.wait({call, out.response}, return_when=asyncio.FIRST_COMPLETED)
        if not out.response.done():
            failure = call.exception()
            if failure is not None:
                self._log(f"error: {failure}")
            else:
                self._log("error: guest never invoked `response-outparam::set` method")
            await _error_page(send)
            return False
        answer = out.response.result()
        if answer.get("kind") != "ok":
            self._log(f"error: the guest answered with error-code {answer.get('value')!r}")
            await call_quietly(call)
            await _error_page(send)
            return False
        response = answer["value"]
        trailers_ok = "http.response.trailers" in (scope.get("extensions") or {})
        status = response.status_code()
        headers = [(k.encode(), v) for k, v in response.headers().items()]
        if response.body_resource is None and _may_have_length(status, headers):
            # No body was made before ``set`` took the response, so it is empty
            # for good: announce that, as hyper does for an empty body.
            headers.append((b"content-length", b"0"))
        start: dict[str, Any] = {"type": "http.response.start", "status": status,
                                 "headers": headers}
        if trailers_ok:
            start["trailers"] = True
        await send(start)
        await self._stream_body(
            slot, incoming, send, call, response=response, trailers_ok=trailers_ok
        )
        return True

    async def _stream_body(
        self,
        slot: _Slot,
        incoming: _Incoming,
        send: Send,
        call: asyncio.Future[Any],
        *,
        response: Any,
        trailers_ok: bool,
    ) -> None:
        if response.body_resource is None:
            await asyncio.wait({call})
        body = response.body_resource
        if body is None:
            failure = call.exception()
            if failure is not None:
                raise _Aborted(str(failure)) from failure
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            if trailers_ok:
                await send(
                    {"type": "http.response.trailers", "headers": [], "more_trailers": False}
                )
            return
        channel = body.channel
        client_gone = False
        while True:
            nxt = asyncio.ensure_future(channel.next_chunk())
            await asyncio.wait({nxt, call}, return_when=asyncio.FIRST_COMPLETED)
            if not nxt.done():
                # The guest returned or trapped; whatever it queued is still readable.
                failure = call.exception()
                if failure is not None:
                    nxt.cancel()
                    self._log(f"error: {failure}")
                    raise _Aborted(str(failure)) from failure
                if not channel.ended:
                    # The guest returned holding its body neither finished nor
                    # dropped: wasmtime ends such a body when it drops the
                    # instance, so the instance is discarded and the body ends.
                    nxt.cancel()
                    slot.broken = True
                    if client_gone:
                        return
                    break
            try:
                chunk = await nxt
            except Exception as exc:
                self._log(f"error: {exc}")
                raise _Aborted(str(exc)) from exc
            if chunk is None:
                break
            if client_gone:
                continue
            try:
                if incoming.gone():
                    raise OSError("http.disconnect")
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except OSError as exc:
                client_gone = True
                channel.fail(OSError(f"the client disconnected: {exc}"))
        if client_gone:
            await call_quietly(call)
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        if trailers_ok:
            items = channel.trailers or []
            await send(
                {
                    "type": "http.response.trailers",
                    "headers": [(k.encode(), v) for k, v in items],
                    "more_trailers": False,
                }
            )
        await call_quietly(call)

    async def _http_p3(self, slot: _Slot, scope: Scope, receive: Receive, send: Send) -> None:
        """0.3: ``handler.handle(request)`` returns the response; stream its body."""
        pool = self._pool
        assert pool is not None
        incoming: _Incoming | None = None
        try:
            authority, ended, fields = _request_head(scope, self._forbidden, self.headers)
            incoming = _Incoming(receive, ended)
            request = self._p3_request.incoming(
                scope["method"],
                _path_with_query(scope),
                scheme=scope.get("scheme", "http"),
                authority=authority,
                headers=self._p3_fields.adopt(fields),
                body=incoming.body(),
            )
            answer = _P3Answer()
            try:
                if self.request_timeout is None:  # no timer to arm and disarm per request
                    await self._answer_p3(slot, scope, send, incoming, request, answer)
                else:
                    async with asyncio.timeout(self.request_timeout):
                        await self._answer_p3(slot, scope, send, incoming, request, answer)
            except TimeoutError:
                slot.broken = True
                self._log("error: request timed out")
                if answer.started:
                    raise _Aborted("the request timed out") from None
                await _error_page(send)
        except BaseException:
            slot.broken = True
            raise
        finally:
            if incoming is not None:
                incoming.close()
            pool.release(slot)

    async def _answer_p3(  # noqa: PLR0917 (the request's parts, passed along once)
        self,
        slot: _Slot,
        scope: Scope,
        send: Send,
        incoming: _Incoming,
        request: Any,
        answer: _P3Answer,
    ) -> None:
        """:meth:`_http_p3` inside its timeout: call the guest, send its response."""
        try:
            response = await slot.handler.handle(request)
        except Exception as exc:
            if not is_component_exception(exc):
                slot.broken = True
            self._log(f"error: {exc}")
            await _error_page(send)
            return
        trailers_ok = "http.response.trailers" in (scope.get("extensions") or {})
        start: dict[str, Any] = {
            "type": "http.response.start",
            "status": response.get_status_code(),
            "headers": [(k.encode(), v) for k, v in response.host_headers()],
        }
        if trailers_ok:
            start["trailers"] = True
        # The guest's body and trailers are being read since the guest made the
        # response (``Response.host_body``): its writes did not wait for the host.
        first, contents, trailers = response.host_body()
        try:
            await send(start)
        except BaseException:
            _forget(first, trailers)
            raise
        answer.started = True
        try:
            more = contents is not None
            if first is not None:
                chunk = await first
                more = bool(chunk)
                if more:
                    if incoming.gone():
                        raise OSError("http.disconnect")
                    await send(
                        {"type": "http.response.body", "body": bytes(chunk), "more_body": True}
                    )
            if more:
                read = _reader(contents)
                while chunk := await read():
                    # One event-loop turn per further chunk: the watch for the
                    # client leaving runs even when the guest's writes and the
                    # sends complete without waiting.
                    await asyncio.sleep(0)
                    if incoming.gone():
                        raise OSError("http.disconnect")
                    await send(
                        {"type": "http.response.body", "body": bytes(chunk), "more_body": True}
                    )
            sent = await trailers
        except OSError as exc:
            # The guest's stream loses its reader; its transmission future fails.
            _forget(first, trailers)
            drop = getattr(contents, "drop", None)
            if drop is not None:
                drop()
            response.finished({"kind": "err", "value": {"kind": "connection-terminated"}})
            self._log(f"error: the client disconnected: {exc}")
            return
        except Exception as exc:
            _forget(first, trailers)
            response.finished(
                {"kind": "err", "value": {"kind": "internal-error", "value": str(exc)}}
            )
            raise _Aborted(str(exc)) from exc
        except BaseException:
            _forget(first, trailers)
            raise
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        fields = sent.get("value") if isinstance(sent, dict) else None
        if trailers_ok:
            items = fields.items() if fields is not None else []
            await send(
                {
                    "type": "http.response.trailers",
                    "headers": [(k.encode(), v) for k, v in items],
                    "more_trailers": False,
                }
            )
        response.finished({"kind": "ok"})
