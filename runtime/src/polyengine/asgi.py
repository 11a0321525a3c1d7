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
import contextlib
import itertools
import os
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from polyengine import Instance, instantiate
from polyengine.limits import Limits
from polyengine.translate import Artifacts, translate

__all__ = ["App", "ERROR_PAGE", "ImportsFactory"]

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
#: ``factory(instance_id)`` returns the imports of one new instance.
ImportsFactory = Callable[[int], Mapping[str, object]]

#: The page ``wasmtime serve`` answers when the guest gives no response.
ERROR_PAGE = (
    b"<!doctype html>\n<html>\n<head>\n    <title>500 Internal Server Error</title>\n"
    b"</head>\n<body>\n    <center>\n        <h1>500 Internal Server Error</h1>\n"
    b"        <hr>\n        wasmtime\n    </center>\n</body>\n</html>"
)

P2_HANDLER = "wasi:http/incoming-handler@0.2"
P3_HANDLER = "wasi:http/handler@0.3"


class _PrefixedLog:
    """A binary writer that starts each line with ``prefix`` (wasmtime's log streams)."""

    def __init__(self, prefix: bytes, target: Callable[[], IO[bytes]]) -> None:
        self._prefix = prefix
        self._target = target
        self._at_line_start = True

    def write(self, data: bytes) -> int:
        out = self._target()
        view = bytes(data)
        while view:
            if self._at_line_start and self._prefix:
                out.write(self._prefix)
            self._at_line_start = False
            cut = view.find(b"\n")
            if cut < 0:
                out.write(view)
                break
            out.write(view[: cut + 1])
            view = view[cut + 1 :]
            self._at_line_start = True
        return len(data)

    def flush(self) -> None:
        self._target().flush()


def _stdout() -> IO[bytes]:
    return sys.stdout.buffer


def _stderr() -> IO[bytes]:
    return sys.stderr.buffer


def default_imports(
    *,
    transport: object = None,
    env: Sequence[tuple[str, str]] = (),
    preopens: Sequence[tuple[str, str]] = (),
    network: bool = False,
    log_prefix: bool = True,
) -> ImportsFactory:
    """All of ``polyengine_wasi`` plus wasi:http, per instance (like ``wasmtime serve -Scli``)."""
    import polyengine_wasi

    def factory(instance_id: int) -> Mapping[str, object]:
        out: object = _PrefixedLog(
            f"stdout [{instance_id}] :: ".encode() if log_prefix else b"", _stdout
        )
        err: object = _PrefixedLog(
            f"stderr [{instance_id}] :: ".encode() if log_prefix else b"", _stderr
        )
        imports = polyengine_wasi.wasi(
            env=[*env, ("INSTANCE_ID", str(instance_id))],
            preopens=list(preopens),
            stdout=out,
            stderr=err,
            network=network,
        )
        imports.update(polyengine_wasi.http(transport=cast(Any, transport)))
        return imports

    return factory


@dataclass
class _Slot:
    instance: Instance
    handler: Any
    instance_id: int
    uses: int = 0
    active: int = 0
    idle_since: float = field(default_factory=time.monotonic)
    broken: bool = False
    p3: bool = False


class _Pool:
    """Instances with a reuse limit, a concurrency limit and an idle timeout."""

    def __init__(self, app: App) -> None:
        self._app = app
        self._idle: deque[_Slot] = deque()
        #: 0.3 instances serving requests, shared up to the concurrency limit
        self._shared: list[_Slot] = []
        self._warming: set[asyncio.Task[None]] = set()
        self._ids = itertools.count()
        self.created = 0
        self.discarded = 0

    async def _new(self) -> _Slot:
        instance_id = next(self._ids)
        imports = self._app.imports_factory(instance_id)
        instance = await instantiate(self._app.artifacts(), imports, limits=self._app.limits)
        names = list(instance.exports)
        p2 = [n for n in names if n.startswith(P2_HANDLER)]
        p3 = [n for n in names if n.startswith(P3_HANDLER)]
        if not p2 and not p3:
            instance.close()
            raise TypeError(
                "the component exports no wasi:http/incoming-handler@0.2.x (a 0.2 proxy) "
                f"or wasi:http/handler@0.3.x (a 0.3 service); it exports {names or 'nothing'}"
            )
        handler = instance.exports[(p2 or p3)[0]]
        self.created += 1
        return _Slot(instance, handler, instance_id, p3=not p2)

    def ready(self) -> bool:
        """Whether ``acquire`` would find an instance without instantiating one."""
        for shared in self._shared:
            if (
                not shared.broken
                and shared.uses < self._app.reuse_for(shared)
                and shared.active < self._app.concurrent_for(shared)
            ):
                return True
        now = time.monotonic()
        return any(not (self._expired(s, now) and s.uses > 0) for s in self._idle)

    def _expired(self, slot: _Slot, now: float) -> bool:
        return now - slot.idle_since > self._app.idle_timeout

    def _close(self, slot: _Slot) -> None:
        self.discarded += 1
        slot.instance.close()

    async def acquire(self) -> _Slot:
        now = time.monotonic()
        for shared in self._shared:
            if (
                not shared.broken
                and shared.uses < self._app.reuse_for(shared)
                and shared.active < self._app.concurrent_for(shared)
            ):
                shared.uses += 1
                shared.active += 1
                return shared
        while self._idle:
            slot = self._idle.popleft()
            if self._expired(slot, now) and slot.uses > 0:
                self._close(slot)
                continue
            break
        else:
            slot = await self._new()
        slot.uses += 1
        slot.active += 1
        if slot.p3:
            self._shared.append(slot)
        self._refill()
        return slot

    def release(self, slot: _Slot) -> None:
        slot.active -= 1
        if slot.broken or slot.uses >= self._app.reuse_for(slot):
            if slot.active == 0:
                if slot in self._shared:
                    self._shared.remove(slot)
                self._close(slot)
            return
        if slot.p3:
            if slot.active == 0:
                self._shared.remove(slot)
                slot.idle_since = time.monotonic()
                self._idle.append(slot)
            return
        slot.idle_since = time.monotonic()
        self._idle.append(slot)

    def _refill(self) -> None:
        want = self._app.prewarm - len(self._idle) - len(self._warming)
        for _ in range(max(0, want)):
            task = asyncio.get_running_loop().create_task(self._warm())
            self._warming.add(task)
            task.add_done_callback(self._warming.discard)

    async def _warm(self) -> None:
        slot = await self._new()
        self._idle.append(slot)

    async def prewarm(self, count: int) -> None:
        for _ in range(count):
            self._idle.append(await self._new())

    def close(self) -> None:
        for task in list(self._warming):
            task.cancel()
        while self._idle:
            self._close(self._idle.popleft())
        for slot in self._shared:
            self._close(slot)
        self._shared.clear()


#: Requests on new instances that may be instantiating or answering at once.
_FRESH_AT_ONCE = 2
#: Seconds a request on a new instance may hold its turn before it starts answering.
_FRESH_HOLD = 0.1


class _Turn:
    """One request's share of the new-instance gate, given back once."""

    def __init__(self, gate: asyncio.Semaphore) -> None:
        self._gate = gate
        self._held = False
        self._timer: asyncio.TimerHandle | None = None

    async def take(self) -> None:
        await self._gate.acquire()
        self._held = True
        self._timer = asyncio.get_running_loop().call_later(_FRESH_HOLD, self.give_back)

    def give_back(self) -> None:
        if self._held:
            self._held = False
            self._gate.release()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class _Aborted(Exception):
    """The response had started when the guest failed: the connection is cut."""


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
    every instance of the pool.
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
    ) -> None:
        self._component = component
        self.limits = limits
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
        from polyengine_wasi.hosthttp import FORBIDDEN_FIELDS

        #: Request fields a guest never sees (hop-by-hop; ``host`` is the authority).
        self._forbidden = FORBIDDEN_FIELDS
        self._log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self._pool: _Pool | None = None
        self._started = asyncio.Lock()
        self.requests = 0
        self._admission = (
            asyncio.Semaphore(max_concurrent_requests) if max_concurrent_requests else None
        )
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
            if self._admission is None:
                await self._http(scope, receive, send)
            else:
                async with self._admission:
                    await self._http(scope, receive, send)
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
        if pool.ready():
            await self._http_on(await pool.acquire(), scope, receive, send)
            return
        # A request that needs a new instance waits for its turn: instantiating
        # blocks the loop, and many at once would interleave with (and delay)
        # the requests already answering. The turn ends when the response
        # starts, or after ``_FRESH_HOLD`` seconds for a guest that waits long.
        turn = _Turn(self._fresh)
        await turn.take()
        try:
            slot = await pool.acquire()

            async def first_send(message: dict[str, Any]) -> None:
                turn.give_back()
                await send(message)

            await self._http_on(slot, scope, receive, first_send)
        finally:
            turn.give_back()

    async def _http_on(self, slot: _Slot, scope: Scope, receive: Receive, send: Send) -> None:
        from polyengine_wasi.hosthttp import IncomingRequest, ResponseOutparam

        assert self._pool is not None
        if slot.p3:
            try:
                await self._http_p3(slot, scope, receive, send)
            except BaseException:
                slot.broken = True
                raise
            finally:
                self._pool.release(slot)
            return
        started = False
        incoming = _Incoming(receive, scope)
        try:
            request = IncomingRequest(
                scope["method"],
                _path_with_query(scope),
                scheme=scope.get("scheme", "http"),
                authority=_authority(scope),
                headers=self._request_headers(scope),
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
        from polyengine_protocol import is_component_exception
        from polyengine_wasi.hosthttp import Request

        incoming = _Incoming(receive, scope)
        request = Request.incoming(
            scope["method"],
            _path_with_query(scope),
            scheme=scope.get("scheme", "http"),
            authority=_authority(scope),
            headers=self._request_headers(scope),
            body=incoming.body(),
        )
        started = False
        try:
            async with asyncio.timeout(self.request_timeout):
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
                await send(start)
                started = True
                contents, trailers = _consume_response(response)
                try:
                    if contents is not None:
                        async for chunk in contents:
                            if chunk:
                                if incoming.gone():
                                    raise OSError("http.disconnect")
                                await send(
                                    {"type": "http.response.body", "body": bytes(chunk),
                                     "more_body": True}
                                )
                    sent = await trailers
                except OSError as exc:
                    # The guest's stream loses its reader; its transmission future fails.
                    drop = getattr(contents, "drop", None)
                    if drop is not None:
                        drop()
                    response.finished({"kind": "err", "value": {"kind": "connection-terminated"}})
                    self._log(f"error: the client disconnected: {exc}")
                    return
                except Exception as exc:
                    response.finished(
                        {"kind": "err", "value": {"kind": "internal-error", "value": str(exc)}}
                    )
                    raise _Aborted(str(exc)) from exc
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
        except TimeoutError:
            slot.broken = True
            self._log("error: request timed out")
            if started:
                raise _Aborted("the request timed out") from None
            await _error_page(send)
        finally:
            incoming.close()

    def _request_headers(self, scope: Scope) -> list[tuple[str, bytes]]:
        """The request's fields without the hop-by-hop ones (``host`` is the authority).

        Like wasmtime, the fields a guest could not set itself are not handed
        to it either; ``-H`` headers replace the request's own.
        """
        raw: list[tuple[bytes, bytes]] = list(scope.get("headers") or [])
        if self.headers:
            names = {k for k, _ in self.headers}
            raw = [(k, v) for k, v in raw if k.lower() not in names] + self.headers
        out: list[tuple[str, bytes]] = []
        for k, v in raw:
            name = k.decode("latin-1").lower()
            if name not in self._forbidden:
                out.append((name, bytes(v)))
        return out


def _consume_response(response: Any) -> tuple[Any, Any]:
    """The guest response's body stream and trailers future (host side)."""
    response._consumed = True
    return response.contents, response.trailers


async def call_quietly(call: asyncio.Future[Any]) -> None:
    """Wait for the guest's ``handle`` to return; its failure was reported already."""
    with contextlib.suppress(Exception):
        await call


def _may_have_length(status: int, headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a ``content-length: 0`` may be added (RFC 9110 §8.6: not 1xx, 204, 304)."""
    if status < 200 or status in (204, 304):
        return False
    return all(k != b"content-length" for k, _ in headers)


async def _error_page(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 500,
            "headers": [
                (b"content-type", b"text/html; charset=UTF-8"),
                (b"content-length", str(len(ERROR_PAGE)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": ERROR_PAGE, "more_body": False})


def _path_with_query(scope: Scope) -> str:
    raw = scope.get("raw_path")
    if raw:
        path = bytes(raw).decode("latin-1")
    else:
        from urllib.parse import quote

        path = quote(scope.get("path") or "/", safe="/:@!$&'()*+,;=-._~%")
    query = bytes(scope.get("query_string") or b"")
    return f"{path}?{query.decode('latin-1')}" if query else path


def _authority(scope: Scope) -> str | None:
    for name, value in scope.get("headers") or []:
        if bytes(name).lower() == b"host":
            return bytes(value).decode("latin-1")
    server = scope.get("server")
    if server:
        host, port = server[0], server[1]
        return host if port is None else f"{host}:{port}"
    return None


class _Incoming:
    """The request body pulled from ``receive()`` as the guest reads it, and, once it
    was read to its end, a watch for the client leaving (``http.disconnect``): a
    server such as uvicorn drops what is sent after that without an error."""

    def __init__(self, receive: Receive, scope: Scope) -> None:
        self._receive = receive
        #: the body was read to its end, or the request declares none
        self.ended = _declares_no_body(scope)
        self._pending: deque[dict[str, Any]] = deque()
        self._watch: asyncio.Future[bool] | None = None
        self._checks = 0

    async def body(self) -> AsyncIterator[bytes]:
        """The request body, one ``receive()`` per chunk the guest asks for."""
        from polyengine_wasi.hosthttp import BodyError

        while True:
            message = self._pending.popleft() if self._pending else await self._receive()
            kind = message.get("type")
            if kind == "http.request":
                chunk = bytes(message.get("body", b""))
                if chunk:
                    yield chunk
                if not message.get("more_body", False):
                    self.ended = True
                    return
            elif kind == "http.disconnect":
                raise BodyError({"kind": "connection-terminated"}, "the client disconnected")

    def gone(self) -> bool:
        """Whether the client left, asked before each response chunk: the watch starts
        at the second chunk after the body ended (a one-chunk response never pays)."""
        watch = self._watch
        if watch is not None:
            return watch.done() and not watch.cancelled() and watch.result()
        if self.ended:
            self._checks += 1
            if self._checks > 1:
                self._watch = asyncio.ensure_future(self._disconnected())
        return False

    async def _disconnected(self) -> bool:
        """True once the client left; False if it pulled body data instead (kept for
        the guest, and the watch ends: it never reads ahead of the guest)."""
        while True:
            message = await self._receive()
            kind = message.get("type")
            if kind == "http.disconnect":
                return True
            if kind == "http.request":
                self._pending.append(message)
                if message.get("more_body", False):
                    return False

    def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()


def _declares_no_body(scope: Scope) -> bool:
    """HTTP/1.x framing: no ``transfer-encoding`` and no (or a zero) ``content-length``
    (HTTP/2 and 3 frame a body without either)."""
    if scope.get("http_version", "1.1") not in ("1.0", "1.1"):
        return False
    for name, value in scope.get("headers") or ():
        low = bytes(name).lower()
        if low == b"transfer-encoding" or (low == b"content-length" and value.strip() != b"0"):
            return False
    return True
