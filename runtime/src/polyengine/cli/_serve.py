"""``polyengine serve``: serve a wasi:http component (0.2 proxy, 0.3 service) over HTTP/1.1.

Mirrors ``wasmtime serve`` (http-serve.md §6): its reuse, concurrency and
idle-timeout flags, ``-H``, ``--dir``/``--env``/``-S``, the ``Serving HTTP
on http://ADDR/`` line on stderr, ``stdout [N] :: `` log prefixes,
``INSTANCE_ID`` in each instance's environment, and a graceful shutdown on
ctrl-c or a connection to ``--shutdown-addr``. The default address is
127.0.0.1:8080 (loopback: the server is not hardened). ``--workers N``
runs N processes that serve the connections the parent accepts, in turn
(:mod:`polyengine.cli._workers`, http-serve.md §7). Needs the ``serve``
extra (uvicorn, aiohttp).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import re
import socket
import sys
from pathlib import Path
from typing import Any

from polyengine.cli._limits import add_wasm_options, limits_from

__all__ = ["register", "serve_command", "serve_worker", "parse_duration", "listener"]

INSTALL_HINT = (
    "polyengine serve needs the serve extra: pip install 'polyengine[serve]' "
    "(it installs uvicorn and aiohttp)"
)

_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "μs": 1e-6, "ns": 1e-9}


def parse_duration(text: str) -> float:
    """``1s``, ``500ms``, ``10us``, ``5ns`` or a bare number of seconds."""
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(s|ms|us|μs|ns)?\s*", text)
    if found is None:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (e.g. 1s, 500ms)")
    return float(found.group(1)) * _UNITS[found.group(2) or ""]


def _addr(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"invalid socket address {text!r} (HOST:PORT)")
    return host.strip("[]") or "127.0.0.1", int(port)


def register(subparsers: Any) -> None:
    """Add the ``serve`` verb."""
    p = subparsers.add_parser(
        "serve",
        help="serve a wasi:http component over HTTP",
        description="Serve a wasi:http 0.2 proxy or 0.3 service component "
        "(like wasmtime serve). "
        f"{INSTALL_HINT}.",
    )
    p.add_argument("component", type=Path, help="the component binary (.wasm)")
    p.add_argument("--addr", type=_addr, default=("127.0.0.1", 8080), metavar="SOCKADDR",
                   help="address to listen on (default 127.0.0.1:8080)")
    p.add_argument("--shutdown-addr", type=_addr, default=None, metavar="SOCKADDR",
                   help="a connection to this address starts a graceful shutdown")
    p.add_argument("--no-logging-prefix", action="store_true",
                   help="no 'stdout [N] :: ' prefixes on the guests' output")
    p.add_argument("--max-instance-reuse-count", type=int, default=None, metavar="N",
                   help="requests per instance before it is dropped (default 0.2: 1, 0.3: 128)")
    p.add_argument("--max-instance-concurrent-reuse-count", type=int, default=None,
                   metavar="N", help="concurrent requests per instance (0.3 default 16; 0.2: 1)")
    p.add_argument("--idle-instance-timeout", type=parse_duration, default=1.0,
                   metavar="DURATION", help="how long an idle instance is kept (default 1s)")
    p.add_argument("-H", "--header", action="append", default=[], metavar="HEADER",
                   help="'name: value' to set on every request, or @FILE (one per line)")
    p.add_argument("--max-concurrent-requests", type=int, default=1000, metavar="N",
                   help="requests served at once by the whole server (--workers share it)")
    p.add_argument("--max-concurrent-connections", type=int, default=1000, metavar="N",
                   help="connections open at once to the whole server (--workers share it)")
    p.add_argument("--dir", action="append", default=[], metavar="HOST[::GUEST]",
                   help="grant a host directory to the guest")
    p.add_argument("--env", action="append", default=[], metavar="NAME[=VALUE]",
                   help="set (or, without a value, inherit) a guest environment variable")
    p.add_argument("-S", dest="wasi_options", action="append", default=[], metavar="OPT",
                   help="WASI options: cli (always on), inherit-network (sockets and "
                   "outgoing HTTP)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="serving processes, each given the accepted connections in turn; "
                   "the first compiles alone, the others load its compiled code; one that "
                   "dies is replaced")
    p.add_argument("--prewarm", type=int, default=0, metavar="N",
                   help="instances kept instantiated ahead of requests")
    p.add_argument("--request-timeout", type=float, default=None, metavar="SECONDS",
                   help="answer 500 (or cut the response) after this long, interrupting "
                   "a guest still running")
    p.add_argument("-O", dest="optimize_options", action="append", default=[], metavar="OPT",
                   help="optimization options as wasmtime spells them: pooling-allocator[=y|n] "
                   "(default y: instances take memories, tables and stacks from a pool "
                   "reserved once)")
    add_wasm_options(p)
    p.set_defaults(func=serve_command)


def _pooling_allocator(options: list[str]) -> bool:
    """Whether ``-O`` leaves the pooling allocator on (wasmtime's ``-O pooling-allocator``)."""
    enabled = True
    for option in options:
        for item in option.split(","):
            key, eq, value = item.strip().partition("=")
            if key != "pooling-allocator":
                raise ValueError(f"unknown optimization option -O {item!r} (serve knows "
                                 "pooling-allocator=y|n)")
            choice = value.strip().lower() if eq else "y"
            if choice in ("y", "yes", "true", "1", ""):
                enabled = True
            elif choice in ("n", "no", "false", "0"):
                enabled = False
            else:
                raise ValueError(f"-O {item!r}: expected pooling-allocator=y or =n")
    return enabled


def _headers(items: list[str]) -> list[tuple[str, str]]:
    from polyengine_wasi.hosthttp import valid_field_name as valid_name
    from polyengine_wasi.hosthttp import valid_field_value as valid_value

    lines: list[str] = []
    for item in items:
        if item.startswith("@"):
            text = Path(item[1:]).read_text()
            lines.extend(line for line in text.splitlines() if line.strip())
        else:
            lines.append(item)
    out: list[tuple[str, str]] = []
    for line in lines:
        name, sep, value = line.partition(":")
        name, value = name.strip(), value.lstrip()
        if not sep:
            raise ValueError(f"header `{line}` is missing `:`")
        if not valid_name(name):
            raise ValueError(f"invalid header name in header `{line}`")
        if not valid_value(value.encode()):
            raise ValueError(f"invalid header value in header `{line}`")
        out.append((name, value))
    return out


def _options(args: argparse.Namespace) -> dict[str, Any]:
    network = False
    for option in args.wasi_options:
        for item in option.split(","):
            key, _, value = item.strip().partition("=")
            enabled = value.lower() not in ("n", "no", "false", "0")
            if key in ("inherit-network", "network", "http"):
                network = enabled
            elif key not in ("cli", "tcp", "udp", "allow-ip-name-lookup", "inherit-env"):
                raise ValueError(f"unknown WASI option -S {item!r}")
    env: list[tuple[str, str]] = []
    for item in args.env:
        name, eq, value = item.partition("=")
        if not name:
            raise ValueError(f"--env {item!r}: expected NAME=VALUE or NAME")
        if eq:
            env.append((name, value))
        elif name in os.environ:
            env.append((name, os.environ[name]))
    preopens: list[tuple[str, str]] = []
    for item in args.dir:
        host, sep, guest = item.partition("::")
        guest = guest if sep else host
        if not os.path.isdir(host):
            raise ValueError(f"--dir {item!r}: {host} is not a directory")
        preopens.append((host, guest))
    return {
        "component": str(args.component),
        "addr": args.addr,
        "shutdown_addr": args.shutdown_addr,
        "log_prefix": not args.no_logging_prefix,
        "reuse": args.max_instance_reuse_count,
        "concurrent_reuse": args.max_instance_concurrent_reuse_count,
        "idle_timeout": args.idle_instance_timeout,
        "headers": _headers(args.header),
        "max_requests": args.max_concurrent_requests,
        "max_connections": args.max_concurrent_connections,
        "env": env,
        "preopens": preopens,
        "network": network,
        "workers": max(1, args.workers),
        "prewarm": max(0, args.prewarm),
        "request_timeout": args.request_timeout,
        "limits": limits_from(args.wasm_options),
        "pooling_allocator": _pooling_allocator(args.optimize_options),
    }


def listener(addr: tuple[str, int]) -> socket.socket:
    """A TCP listener created with ``IPPROTO_TCP``, so asyncio sets TCP_NODELAY."""
    family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(addr)
    sock.listen(100)
    sock.setblocking(False)
    return sock


def serve_command(args: argparse.Namespace) -> int:
    """``polyengine serve``; returns the exit status."""
    try:
        import aiohttp  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        print(f"error: {INSTALL_HINT}", file=sys.stderr)
        return 2
    try:
        options = _options(args)
        data = Path(options["component"]).read_bytes()
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from polyengine import TranslationError, translate

    try:
        translate(data)
    except TranslationError as exc:
        print(f"error: {options['component']}: {exc}", file=sys.stderr)
        return 1
    workers = options["workers"]
    try:
        sock = listener(options["addr"])
    except OSError as exc:
        print(f"error: cannot listen on {options['addr'][0]}:{options['addr'][1]}: {exc}",
              file=sys.stderr)
        return 1
    host, port = sock.getsockname()[:2]
    options["addr"] = (host, port)
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if workers == 1:
        print(f"Serving HTTP on http://{shown}/", file=sys.stderr, flush=True)
        return _serve(options, sock)
    from polyengine.cli._workers import Supervisor

    try:
        return asyncio.run(Supervisor(options, workers, shown, sock).run())
    finally:
        sock.close()


def _serve(
    options: dict[str, Any],
    sock: socket.socket | None,
    control: tuple[socket.socket, socket.socket] | None = None,
) -> int:
    """Serve until stopped: on the listener ``sock``, or (a worker of ``--workers``) on
    the connections handed over ``control``'s second socket, until its first says stop."""
    from polyengine.asgi import App, default_imports
    from polyengine.http_transport import AiohttpTransport

    transport = AiohttpTransport() if options["network"] else None

    class _App(App):
        async def startup(self) -> None:
            # The process serves this app only: the translation lives as long
            # as the process, so the cyclic collector stops walking it
            # (gc.freeze) before any instance exists; each instance's garbage
            # is then collected without that walk, and none of it is frozen.
            self.artifacts()
            gc.collect()
            gc.freeze()
            _tune_collector()
            await super().startup()

    app = _App(
        Path(options["component"]).read_bytes(),
        default_imports(
            transport=transport,
            env=options["env"],
            preopens=options["preopens"],
            network=options["network"],
            log_prefix=options["log_prefix"],
            numbering=options.get("numbering", (0, 1)),
        ),
        reuse=options["reuse"],
        concurrent_reuse=options["concurrent_reuse"],
        idle_timeout=options["idle_timeout"],
        prewarm=options["prewarm"],
        request_timeout=options["request_timeout"],
        limits=options.get("limits"),
        headers=options["headers"],
        max_concurrent_requests=options["max_requests"],
        pooling_allocator=options.get("pooling_allocator", True),
    )
    server = _Server(_uvicorn_config(app, options["max_connections"]))

    async def main() -> None:
        watcher = None
        if control is not None:
            from polyengine.cli._workers import controlled

            watcher = asyncio.ensure_future(controlled(server, *control))
        elif options["shutdown_addr"] is not None:
            watcher = asyncio.ensure_future(_shutdown_listener(options["shutdown_addr"], server))
        try:
            await server.serve(sockets=[] if sock is None else [sock])
        finally:
            if watcher is not None:
                watcher.cancel()
            if transport is not None:
                await transport.close()

    with (
        contextlib.suppress(KeyboardInterrupt),
        asyncio.Runner(loop_factory=_loop_factory()) as runner,
    ):
        runner.run(main())
    return 0


def _uvicorn_config(app: Any, max_connections: int | None) -> Any:
    """uvicorn's configuration of the serve command (http-serve.md §4, §6).

    No access log (uvicorn formats a line per request otherwise), no
    ``server`` header, and no ``X-Forwarded-*`` rewriting: like ``wasmtime
    serve``, the guest sees the connection's own client and the ``http``
    scheme whatever a client claims (and no middleware runs per request).
    """
    import uvicorn

    return uvicorn.Config(
        app,
        lifespan="on",
        log_level="warning",
        access_log=False,
        proxy_headers=False,
        limit_concurrency=max_connections,
        timeout_graceful_shutdown=None,
        server_header=False,
        date_header=True,
        http=_corked_protocol(),
    )


#: objects the cyclic collector lets accumulate before a young collection (Python's
#: default is 700): see :func:`_tune_collector`
_GC_YOUNG = 20_000


def _tune_collector() -> None:
    """Collect the young generation every ``_GC_YOUNG`` allocations, not 700.

    A closed instance is freed by reference counting (its runtime breaks its
    reference cycles on close), but each young collection still walks every
    young container alive at that moment, and a new instance allocates a few
    thousand of them while it is made and serves: with Python's default
    threshold the young generation is walked several times per request (and
    its survivors promoted, to be walked again by the older generations). With
    ``_GC_YOUNG`` a 0.2 proxy's request spends ~0.1 ms in the collector instead
    of ~0.5 ms. The older generations' thresholds are kept; the threshold is
    only ever raised.
    """
    young, *older = gc.get_threshold()
    if young < _GC_YOUNG:
        gc.set_threshold(_GC_YOUNG, *older)


#: how long a connection's response bytes may wait for the rest of the response
#: (a response leaves at once when complete; this bounds a streamed one's delay)
_HOLD_SECONDS = 0.002
#: pending bytes that leave at once, held or not
_HOLD_BYTES = 64 * 1024


class _CorkedTransport:
    """A connection's transport whose writes of one event-loop turn leave as one.

    uvicorn writes a response's head, each body chunk and the end of the body
    separately, and on a TCP_NODELAY socket each write is a send of its own
    (and a wake-up of the client). Writes made in one turn of the loop are
    joined and sent at its end (``call_soon``): the bytes and their order are
    unchanged, a ``close`` sends what is pending first, an ``abort`` drops it.

    With ``hold`` (seconds) the pending writes wait for :meth:`flush` instead,
    at most ``hold`` seconds after the first of them (or until ``_HOLD_BYTES``
    are pending): the HTTP protocol flushes when a response is complete, so a
    response whose head and body are written in several turns (a guest
    streaming its body) still leaves as one send, and a streamed one is
    delayed by ``hold`` at most.
    """

    __slots__ = ("_hold", "_loop", "_parts", "_size", "_timer", "_transport")

    def __init__(
        self, transport: Any, loop: asyncio.AbstractEventLoop, hold: float | None = None
    ) -> None:
        self._transport = transport
        self._loop = loop
        self._hold = hold
        self._parts: list[bytes] = []
        self._size = 0
        self._timer: asyncio.Handle | None = None

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._parts:
            if self._hold is None:
                self._timer = self._loop.call_soon(self.flush)
            else:
                self._timer = self._loop.call_later(self._hold, self.flush)
        self._parts.append(data)
        self._size += len(data)
        if self._size >= _HOLD_BYTES:
            self.flush()

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        """Send what is pending now (one send)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        parts = self._parts
        if not parts:
            return
        self._parts = []
        self._size = 0
        if not self._transport.is_closing():
            self._transport.write(parts[0] if len(parts) == 1 else b"".join(parts))

    def get_write_buffer_size(self) -> int:
        size: int = self._transport.get_write_buffer_size()
        return size + self._size

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._parts = []
        self._size = 0
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _corked_protocol() -> Any:
    """uvicorn's HTTP/1.1 protocol (httptools or h11) on a held :class:`_CorkedTransport`.

    A response's bytes leave in one send when it is complete (or after
    ``_HOLD_SECONDS``, for a response still streaming).
    """
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class CorkedHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: Any) -> None:
            corked = _CorkedTransport(transport, asyncio.get_running_loop(), _HOLD_SECONDS)
            super().connection_made(corked)

        def on_response_complete(self) -> None:
            self.transport.flush()
            super().on_response_complete()

    return CorkedHTTPProtocol


def _loop_factory() -> Any:
    """uvloop's event loop when it is installed (the serve extra brings it), else asyncio's."""
    if os.environ.get("POLYENGINE_SERVE_LOOP", "") == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


class _Server:
    """uvicorn's server, announcing the drain the way wasmtime does."""

    def __new__(cls, config: Any) -> Any:
        import uvicorn

        class Server(uvicorn.Server):
            def handle_exit(self, sig: int, frame: Any) -> None:
                if not self.should_exit:
                    print(
                        "Waiting for child tasks to exit, ctrl-c again to quit sooner...",
                        file=sys.stderr,
                        flush=True,
                    )
                super().handle_exit(sig, frame)

        return Server(config)


async def _shutdown_listener(addr: tuple[str, int], server: Any) -> None:
    from polyengine.cli._workers import shutdown_listener

    await shutdown_listener(addr, asyncio.Event())
    print("Waiting for child tasks to exit, ctrl-c again to quit sooner...",
          file=sys.stderr, flush=True)
    server.should_exit = True


# -- a worker of --workers (polyengine.cli._workers) ------------------------------------


def _worker_main() -> int:
    import polyengine
    from polyengine.pool.process import connect_to_parent

    polyengine.instantiate  # noqa: B018 (import the runtime while the parent holds us back)
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        raise SystemExit("usage: python -m polyengine.cli._serve FD HANDOFF_FD "
                         "(a worker of polyengine serve --workers)")
    handoff = socket.socket(fileno=int(sys.argv[2]))
    control, init = connect_to_parent(sys.argv[1:2])
    return 0 if init is None else serve_worker(control, handoff, init)


def serve_worker(control: socket.socket, handoff: socket.socket, init: dict[str, Any]) -> int:
    """A serving worker: serve the connections the parent hands over until it says stop
    (or is gone)."""
    from polyengine.cli._workers import share
    from polyengine.limits import Limits

    options = dict(init["options"])
    options["addr"] = tuple(options["addr"])
    options["headers"] = [tuple(h) for h in options["headers"]]
    options["env"] = [tuple(e) for e in options["env"]]
    options["preopens"] = [tuple(p) for p in options["preopens"]]
    index, count = options["numbering"] = tuple(init["numbering"])
    for limit in ("max_requests", "max_connections"):
        options[limit] = share(options[limit], index, count)
    if options.get("limits") is not None:
        options["limits"] = Limits(**options["limits"])
    return _serve(options, None, control=(control, handoff))


if __name__ == "__main__":
    raise SystemExit(_worker_main())
