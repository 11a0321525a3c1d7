"""``polyengine serve`` against ``wasmtime serve``: requests/s and latency on loopback.

Both servers run the same wasi:http guest on 127.0.0.1: the component-text
``hello`` proxy of runtime/tests/serve (default), a guest of the test guest
builder by name (``py-http-proxy``, ``py-http-service``, ``js-http``) or any
``--guest FILE``. Each runs with its default instance policy (0.2: one
instance per request; 0.3: 128 requests, 16 at once) and with another
(0.2: ``--max-instance-reuse-count 1000``; 0.3: 1). A bounded asyncio
client keeps C keep-alive connections busy for a fixed number of requests
per row and prints req/s, p50, p99 and the server's CPU time per request
(its processes' user + system time, from /proc; wasmtime serve spreads a
row over both cores, polyengine runs one event loop) side by side, with
the ratio of req/s; with
``--runs K`` each row is measured K times (servers alternating) and the
min and median of the ratios are printed too. Under each policy, the rows
of one polyengine process are followed by rows of ``polyengine serve
--workers N`` against the same ``wasmtime serve`` (labelled ``--workers N,
same policy``): by default N is the number of CPUs this process may use,
the cores ``wasmtime serve`` runs its requests on (``--workers 1``: no such rows).

    .venv/bin/python bench/serve.py [--requests 400] [--concurrency 1,8,32]
        [--guest hello|py-http-proxy|py-http-service|js-http|FILE] [--runs 1] [--policy all]
        [--workers N]
    .venv/bin/python bench/serve.py --guest py-http-proxy --in-process 60 [--profile]

``--in-process N`` calls the ASGI app directly instead (no server, no
client): the CPU time of each of N requests with the default policy. With
``--through-protocol`` each request is fed instead as bytes to the serve
command's HTTP/1.1 protocol (uvicorn's, on its corked transport) over an
in-memory transport: the app plus the server's per-request Python, without
the sockets, the kernel and the client.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _wat import compile_component

ROOT = Path(__file__).resolve().parent.parent


def _hello_text() -> str:
    path = ROOT / "runtime" / "tests" / "serve" / "wat_guests.py"
    spec = importlib.util.spec_from_file_location("wat_guests", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.HELLO)


def _builder() -> object:
    path = ROOT / "runtime" / "tests" / "guests" / "_build.py"
    spec = importlib.util.spec_from_file_location("polyengine_guest_build", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["polyengine_guest_build"] = module
    spec.loader.exec_module(module)
    return module


def _wasmtime() -> str | None:
    found = _builder().wasmtime_cli()  # type: ignore[attr-defined]
    return None if found is None else str(found)


def _guest(name: str | None, tmp: Path) -> Path:
    if name is None or name == "hello":
        path = tmp / "hello.wasm"
        path.write_bytes(compile_component(_hello_text()))
        return path
    if Path(name).is_file():
        return Path(name)
    return Path(_builder().build(name))  # type: ignore[attr-defined]


def _is_p3(guest: Path) -> bool:
    return b"wasi:http/handler@0.3" in guest.read_bytes()


class Server:
    """A server process on 127.0.0.1 whose address is read from its Serving line."""

    def __init__(self, command: list[str]) -> None:
        self.proc = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            found = re.search(rb"Serving HTTP on http://([0-9.]+):([0-9]+)/", line)
            if found:
                self.host, self.port = found.group(1).decode(), int(found.group(2))
                return
            if not line and self.proc.poll() is not None:
                break
        self.stop()
        raise SystemExit(f"server did not start: {' '.join(command)}")

    def cpu_seconds(self) -> float | None:
        """User + system CPU time of the server and its child processes (Linux /proc)."""
        try:
            pids = [self.proc.pid]
            children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
            pids += [int(p) for p in children.read_text().split()]
            total = 0
            for pid in pids:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
        except (OSError, ValueError, IndexError):
            return None
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


REQUEST = b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n"


async def _one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(REQUEST)
    head = await reader.readuntil(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"unexpected response {head[:60]!r}")
    lower = head.lower()
    if b"transfer-encoding: chunked" in lower:
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    else:
        found = re.search(rb"content-length: *([0-9]+)", lower)
        await reader.readexactly(int(found.group(1)) if found else 0)


async def load(host: str, port: int, concurrency: int, requests: int) -> tuple[float, list[float]]:
    """``requests`` GETs over ``concurrency`` keep-alive connections; (seconds, latencies)."""
    latencies: list[float] = []
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while remaining > 0:
                remaining -= 1
                t = time.perf_counter()
                await asyncio.wait_for(_one(reader, writer), 30)
                latencies.append(time.perf_counter() - t)
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start, latencies


Row = tuple[float, float, float, float]

SCOPE = {
    "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
    "scheme": "http", "path": "/", "raw_path": b"/", "query_string": b"",
    "headers": [(b"host", b"bench")], "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1),
}


class _MemoryTransport:
    """A connection's transport in memory: what was written, and an event set at each write."""

    def __init__(self) -> None:
        self.written = asyncio.Event()
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data
        self.written.set()

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: object = None) -> object:
        return {"peername": ("127.0.0.1", 1), "sockname": ("127.0.0.1", 80)}.get(name, default)


def _through_protocol(app: object) -> Callable[[], Awaitable[None]]:
    """``one()`` for :func:`in_process`: a ``GET /`` fed to the serve command's protocol."""
    from uvicorn.server import ServerState

    from polyengine.cli._serve import _corked_protocol, _uvicorn_config

    config = _uvicorn_config(app, None)
    config.load()
    protocol = _corked_protocol()(config=config, server_state=ServerState(), app_state={},
                                  _loop=asyncio.get_running_loop())
    transport = _MemoryTransport()
    protocol.connection_made(transport)

    async def one() -> None:
        transport.data.clear()
        protocol.data_received(REQUEST)
        while not protocol.cycle.response_complete:
            transport.written.clear()
            await transport.written.wait()
        if not transport.data.startswith(b"HTTP/1.1 200 "):
            raise RuntimeError(f"unexpected response {bytes(transport.data[:60])!r}")

    return one


def in_process(guest: Path, requests: int, profile: bool, through_protocol: bool = False) -> None:
    """The ASGI app called directly (default policy): CPU time per request, no server.

    Each request gets a fresh copy of a ``GET /`` scope; ``time.process_time``
    brackets the app call (a 0.2 proxy's instantiation included, as on the
    server); the cyclic collector is set up as in the serve process. With
    ``profile`` the measured requests run under cProfile. With
    ``through_protocol`` each request goes through the serve command's
    HTTP/1.1 protocol on an in-memory transport (:func:`_through_protocol`).
    """
    import cProfile
    import gc
    import pstats

    from polyengine.asgi import App
    from polyengine.cli._serve import _tune_collector
    from polyengine.translate import translate

    artifacts = translate(guest.read_bytes())
    gc.collect()
    gc.freeze()  # as the serve CLI does once the component is translated
    _tune_collector()  # and the collector's young threshold of the serve process
    app = App(artifacts, log=lambda line: None)

    async def one() -> None:
        status: list[int] = []

        async def receive() -> dict[str, object]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))  # type: ignore[call-overload]

        await app(dict(SCOPE), receive, send)
        if status != [200]:
            raise RuntimeError(f"unexpected response status {status}")

    async def run() -> list[float]:
        await app.startup()
        request = _through_protocol(app) if through_protocol else one
        for _ in range(min(requests, 20)):  # warm-up
            await request()
        profiler = cProfile.Profile() if profile else None
        times: list[float] = []
        if profiler is not None:
            profiler.enable()
        for _ in range(requests):
            t = time.process_time()
            await request()
            times.append((time.process_time() - t) * 1e3)
        if profiler is not None:
            profiler.disable()
            if os.environ.get("PDUMP"):
                profiler.dump_stats(os.environ["PDUMP"])
            order, count = os.environ.get("PSORT", "cumulative"), int(os.environ.get("PN", "30"))
            pstats.Stats(profiler).sort_stats(order).print_stats(count)
        await app.shutdown()
        return times

    if through_protocol:  # on the serve command's event loop (uvloop's when installed)
        from polyengine.cli._serve import _loop_factory

        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            times = runner.run(run())
    else:
        times = asyncio.run(run())
    times.sort()
    where = "through the serve protocol" if through_protocol else "in process"
    print(f"{where}: {guest.name}, {requests} requests: CPU ms/request mean "
          f"{statistics.mean(times):.3f}, median {statistics.median(times):.3f}, "
          f"p10 {times[len(times) // 10]:.3f}, p90 {times[len(times) * 9 // 10]:.3f}"
          + (" (profiled)" if profile else ""))


def _row(server: Server, c: int, n: int) -> Row:
    """req/s, p50 ms, p99 ms and the server's CPU ms per request (NaN: not known)."""
    asyncio.run(load(server.host, server.port, c, min(n, 20)))  # warm-up
    before = server.cpu_seconds()
    seconds, lat = asyncio.run(load(server.host, server.port, c, n))
    after = server.cpu_seconds()
    cpu = (after - before) * 1e3 / n if before is not None and after is not None else math.nan
    lat.sort()
    p50 = lat[len(lat) // 2] * 1e3
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3
    return n / seconds, p50, p99, cpu


def _cell(row: Row | None, width: int) -> str:
    if row is None:
        return f"{'-':>{width}} {'-':>7} {'-':>7} {'-':>6}"
    return f"{row[0]:{width}.0f} {row[1]:7.2f} {row[2]:7.2f} {row[3]:6.2f}"


def _usable_cpus() -> int:
    """The CPUs this process may run on (``wasmtime serve`` runs its requests on all)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--guest", default=None, help="hello, a builder guest name, or a file")
    parser.add_argument("--runs", type=int, default=1, help="measurements per row")
    parser.add_argument("--policy", choices=("all", "default", "other"), default="all")
    parser.add_argument("--in-process", type=int, default=0, metavar="N",
                        help="instead: N requests to the ASGI app called directly (CPU ms each)")
    parser.add_argument("--profile", action="store_true", help="with --in-process: cProfile")
    parser.add_argument("--through-protocol", action="store_true",
                        help="with --in-process: through the serve command's HTTP/1.1 protocol "
                        "on an in-memory transport (no sockets)")
    parser.add_argument("--workers", type=int, default=_usable_cpus(), metavar="N",
                        help="also rows of polyengine serve --workers N (N > 1), labelled: "
                        "the cores wasmtime serve runs on (default: this process's usable "
                        "CPUs; 1: no such rows)")
    args = parser.parse_args()
    if args.in_process:
        with tempfile.TemporaryDirectory() as tmp:
            in_process(_guest(args.guest, Path(tmp)), args.in_process, args.profile,
                       args.through_protocol)
        return 0
    levels = [int(x) for x in args.concurrency.split(",")]
    wasmtime = _wasmtime()
    with tempfile.TemporaryDirectory() as tmp:
        guest = _guest(args.guest, Path(tmp))
        p3 = _is_p3(guest)
        extra = ["-Sp3", "-Wcomponent-model-async"] if p3 else []
        policies = [
            ("defaults (0.3: 128 x 16)" if p3 else "defaults (0.2: 1)", []),
            ("reuse 1" if p3 else "reuse 1000",
             ["--max-instance-reuse-count", "1" if p3 else "1000"]),
        ]
        if args.policy != "all":
            policies = policies[:1] if args.policy == "default" else policies[1:]
        print(f"guest: {guest.name} ({'0.3' if p3 else '0.2'}); {args.requests} requests per row, "
              f"{args.runs} run(s); 127.0.0.1")
        print(f"{'policy':26} {'c':>3} | {'polyengine req/s':>16} {'p50 ms':>7} {'p99 ms':>7} "
              f"{'cpu ms':>6} | {'wasmtime req/s':>14} {'p50 ms':>7} {'p99 ms':>7} {'cpu ms':>6} "
              f"| ratio (min/median)")
        workers = [1] + ([args.workers] if args.workers > 1 else [])
        for label, flags in policies:
            for n in workers:
                _pair(label if n == 1 else f"--workers {n}, same policy", flags, guest,
                      workers=n, wasmtime=wasmtime, extra=extra, levels=levels, args=args)
    return 0


def _pair(label: str, flags: list[str], guest: Path, *, workers: int, wasmtime: str | None,
          extra: list[str], levels: list[int], args: argparse.Namespace) -> None:
    """The rows of one polyengine server (``workers`` processes) against wasmtime serve."""
    more = ["--workers", str(workers)] if workers > 1 else []
    ours = Server([sys.executable, "-m", "polyengine", "serve", "--addr", "127.0.0.1:0",
                   *more, *flags, str(guest)])
    theirs = (
        Server([wasmtime, "serve", "-Scli", *extra, "--addr", "127.0.0.1:0", *flags,
                str(guest)])
        if wasmtime else None
    )
    try:
        for c in levels:
            a_rows, b_rows, ratios = [], [], []
            for _ in range(args.runs):
                a = _row(ours, c, args.requests)
                b = _row(theirs, c, args.requests) if theirs else None
                a_rows.append(a)
                if b is not None:
                    b_rows.append(b)
                    ratios.append(a[0] / b[0])
            a = max(a_rows, key=lambda r: r[0])
            b = max(b_rows, key=lambda r: r[0]) if b_rows else None
            ratio = (f"{min(ratios):.2f}/{statistics.median(ratios):.2f}"
                     if ratios else "-")
            print(f"{label:26} {c:3d} | {_cell(a, 16)} | {_cell(b, 14)} | {ratio}",
                  flush=True)
    finally:
        ours.stop()
        if theirs:
            theirs.stop()


if __name__ == "__main__":
    raise SystemExit(main())
