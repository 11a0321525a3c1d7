"""WASI 0.3 file reads: ``read-via-stream`` throughput, polyengine vs the wasmtime CLI.

The guest is ``py-p3-files`` (componentize-py) in its ``count NAME`` mode:
it opens ``NAME`` in the preopened ``/data`` and reads it through
``wasi:filesystem/types@0.3.0#[method]descriptor.read-via-stream`` in
1 MiB reads, printing the byte count. Both runners start the same guest as
a command (``polyengine run -S p3`` and ``wasmtime run -S p3``); each runs
once on an empty file and once on the big file, and the throughput is the
big file's size over the difference, so start-up (translation, compilation,
CPython's own start) cancels out. Best of ``--repeat`` runs per cell.

    .venv/bin/python bench/wasi.py            # 64 MiB, best of 3
    .venv/bin/python bench/wasi.py --mib 16 --repeat 1
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def _builder() -> ModuleType:
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, REPO / "runtime" / "tests" / "guests" / "_build.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _timed(cmd: list[str], cwd: Path, expect: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=900, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or expect not in proc.stdout:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stdout}{proc.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64, help="size of the file read (MiB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell (best kept)")
    args = parser.parse_args()

    build = _builder()
    guest = build.build("py-p3-files")
    wasmtime = build.wasmtime_cli()
    size = args.mib << 20
    runners = [("polyengine", [sys.executable, "-m", "polyengine", "run", "-S", "p3"])]
    if wasmtime is not None:
        runners.append(("wasmtime CLI", [str(wasmtime), "run", "-S", "p3"]))
    else:
        print("the wasmtime CLI is not installed: polyengine alone")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "d").mkdir()
        (root / "d" / "empty.bin").write_bytes(b"")
        with open(root / "d" / "big.bin", "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(args.mib):
                f.write(block)
        print(f"read-via-stream of {args.mib} MiB, best of {args.repeat}")
        print(f"{'runner':14} {'empty s':>9} {'big s':>9} {'MB/s':>9}")
        rates = {}
        for label, cmd in runners:
            def best(name: str, count: int, cmd: list[str] = cmd) -> float:
                full = [*cmd, "--dir", "d::/data", str(guest), "count", name]
                return min(_timed(full, root, f"count: {count}") for _ in range(args.repeat))

            empty = best("empty.bin", 0)
            big = best("big.bin", size)
            rate = size / 1e6 / max(big - empty, 1e-9)
            rates[label] = rate
            print(f"{label:14} {empty:9.2f} {big:9.2f} {rate:9.1f}")
        if len(rates) == 2:
            print(f"polyengine / wasmtime CLI: {rates['polyengine'] / rates['wasmtime CLI']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
