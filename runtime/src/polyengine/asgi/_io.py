"""The ASGI side of :class:`polyengine.asgi.App`: the request body, the messages, the logs.

http-serve.md §4 (incoming mapping): the request target and authority, the
request body pulled from ``receive()`` as the guest reads it, the client
leaving (``http.disconnect``), wasmtime's 500 page; and the per-instance
imports with ``wasmtime serve``'s ``stdout [N] :: `` log prefixes.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, cast

from polyengine.memo import IdentityMemo

if TYPE_CHECKING:
    from polyengine.translate import Artifacts

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
    numbering: tuple[int, int] = (0, 1),
) -> ImportsFactory:
    """All of ``polyengine_wasi`` plus wasi:http, per instance (like ``wasmtime serve -Scli``).

    With ``numbering`` ``(k, n)`` instance ``i`` is shown (``INSTANCE_ID``, the
    log prefixes) as ``i * n + k``: worker ``k`` of ``polyengine serve --workers n``
    numbers its instances apart from the other workers'.

    Given the ``interfaces`` a component imports (:func:`instance_imports`
    passes them), the factory builds the WASI providers of those alone: the
    others could never be reached, and a fresh 0.2 proxy instance per
    request would build them all for nothing. What holds no per-instance
    state (the wasi:http providers, clocks, secure random, type namespaces)
    is made once per factory and shared by its instances; the environment
    (``INSTANCE_ID``), the log streams and the insecure random state are
    each instance's own.
    """
    import polyengine_wasi

    shared: dict[str, object] = {}
    http_imports: dict[str, object] = {}

    first, step = numbering
    if not 0 <= first < step:
        raise ValueError(f"numbering must be (k, n) with 0 <= k < n, not {numbering!r}")

    def factory(
        instance_id: int, interfaces: Collection[str] | None = None
    ) -> Mapping[str, object]:
        instance_id = instance_id * step + first
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
            interfaces=interfaces,
            shared=shared,
        )
        if not http_imports:
            http_imports.update(polyengine_wasi.http(transport=cast(Any, transport)))
        imports.update(http_imports)
        return imports

    setattr(factory, _NARROWS, True)
    return factory


#: marks a factory of :func:`default_imports` (it takes the imported interfaces)
_NARROWS = "__polyengine_narrows_imports__"

#: the names of the interfaces each plan imports
_INTERFACES: IdentityMemo[Any, tuple[str, ...]] = IdentityMemo(16)


def instance_imports(
    factory: ImportsFactory, instance_id: int, artifacts: Artifacts
) -> Mapping[str, object]:
    """The imports of a new instance of ``artifacts`` from ``factory``.

    A :func:`default_imports` factory is also given the names of the
    interfaces the component imports (worked out once per plan), so that it
    builds their providers only; any other factory is called as
    ``factory(instance_id)``.
    """
    if not getattr(factory, _NARROWS, False):
        return factory(instance_id)
    interfaces = _INTERFACES.get(artifacts.plan, _interface_names)
    narrowing: Callable[..., Mapping[str, object]] = factory
    return narrowing(instance_id, interfaces=interfaces)


def _interface_names(plan: Any) -> tuple[str, ...]:
    return tuple(imp.name for imp in plan.imports)


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


def _request_head(
    scope: Scope, forbidden: Collection[str], extra: Sequence[tuple[bytes, bytes]] = ()
) -> tuple[str | None, bool, list[tuple[str, bytes]]]:
    """One pass over the request's headers: its authority (the first ``host``, else
    the server's address), whether it declares no body (HTTP/1.x framing: no
    ``transfer-encoding`` and no or a zero ``content-length``; HTTP/2 and 3
    frame a body without either), and the fields handed to the guest.

    Like wasmtime, the fields a guest could not set itself (``forbidden``:
    hop-by-hop ones, and ``host``, which is the authority) are not handed to
    it either; names are lowercased, order and repeats kept; ``extra``
    (wasmtime's ``-H``, lowercased names) replace the request's own fields of
    their names and follow them.
    """
    authority: str | None = None
    no_body = scope.get("http_version", "1.1") in ("1.0", "1.1")
    replaced = {k.decode("latin-1") for k, _ in extra} if extra else ()
    fields: list[tuple[str, bytes]] = []
    for k, v in scope.get("headers") or ():
        name = bytes(k).decode("latin-1").lower()
        value = bytes(v)
        if name == "host":
            if authority is None:
                authority = value.decode("latin-1")
        elif name == "transfer-encoding" or (name == "content-length" and value.strip() != b"0"):
            no_body = False
        if name not in forbidden and name not in replaced:
            fields.append((name, value))
    for k, v in extra:
        name = k.decode("latin-1")
        if name not in forbidden:
            fields.append((name, v))
    if authority is None:
        server = scope.get("server")
        if server:
            host, port = server[0], server[1]
            authority = host if port is None else f"{host}:{port}"
    return authority, no_body, fields


class _Incoming:
    """The request body pulled from ``receive()`` as the guest reads it, and, once it
    was read to its end, a watch for the client leaving (``http.disconnect``): a
    server such as uvicorn drops what is sent after that without an error.

    ``ended``: the request declares no body (:func:`_request_head`).
    """

    def __init__(self, receive: Receive, ended: bool) -> None:
        self._receive = receive
        #: the body was read to its end, or the request declares none
        self.ended = ended
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


