"""``polyengine serve`` against ``wasmtime serve``: requests/s and latency on loopback.

Both servers run the same wasi:http 0.2 proxy guest (the component-text
``hello`` guest of runtime/tests/serve, or any ``--guest FILE``) on
127.0.0.1, each with its default instance policy (0.2: one instance per
request) and with reuse (``--max-instance-reuse-count``). A bounded asyncio
client keeps C keep-alive connections busy for a fixed number of requests
per row and prints req/s, p50 and p99 side by side, with the ratio.

    .venv/bin/python bench/serve.py [--requests 400] [--concurrency 1,8,32] [--guest g.wasm]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import time
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


def _wasmtime() -> str | None:
    local = Path(sys.executable).with_name("wasmtime")
    return str(local) if local.exists() else shutil.which("wasmtime")


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


def _row(host: str, port: int, c: int, n: int) -> tuple[float, float, float]:
    asyncio.run(load(host, port, c, min(n, 20)))  # warm-up
    seconds, lat = asyncio.run(load(host, port, c, n))
    lat.sort()
    return n / seconds, lat[len(lat) // 2] * 1e3, lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--guest", type=Path, default=None)
    args = parser.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    wasmtime = _wasmtime()
    with tempfile.TemporaryDirectory() as tmp:
        guest = args.guest or Path(tmp) / "hello.wasm"
        if args.guest is None:
            guest.write_bytes(compile_component(_hello_text()))
        policies = [
            ("defaults (0.2: 1, 0.3: 128)", []),
            ("reuse 1000", ["--max-instance-reuse-count", "1000"]),
        ]
        print(f"guest: {guest.name}; {args.requests} requests per row; 127.0.0.1")
        print(f"{'policy':26} {'c':>3} | {'polyengine req/s':>16} {'p50 ms':>7} {'p99 ms':>7} | "
              f"{'wasmtime req/s':>14} {'p50 ms':>7} {'p99 ms':>7} | ratio")
        for label, flags in policies:
            ours = Server([sys.executable, "-m", "polyengine", "serve", "--addr", "127.0.0.1:0",
                           *flags, str(guest)])
            theirs = (
                Server([wasmtime, "serve", "-Scli", "--addr", "127.0.0.1:0", *flags, str(guest)])
                if wasmtime else None
            )
            try:
                for c in levels:
                    a = _row(ours.host, ours.port, c, args.requests)
                    b = _row(theirs.host, theirs.port, c, args.requests) if theirs else None
                    other = (f"{b[0]:14.0f} {b[1]:7.2f} {b[2]:7.2f} | {a[0] / b[0]:5.2f}"
                             if b else f"{'-':>14} {'-':>7} {'-':>7} |     -")
                    print(f"{label:26} {c:3d} | {a[0]:16.0f} {a[1]:7.2f} {a[2]:7.2f} | {other}",
                          flush=True)
            finally:
                ours.stop()
                if theirs:
                    theirs.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
