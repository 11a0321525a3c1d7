"""Translation time of a real component: cold, warm in the process, warm in a fresh process.

The component is the componentize-py guest ``py-sync-wasi`` (about 18 MB,
built and cached by ``runtime/tests/guests/_build.py``) unless
``--component`` names another file. Three measurements, each in a fresh
interpreter sharing one temporary cache directory (``POLYENGINE_CACHE_DIR``):

1. cold: an empty cache; the first ``translate()`` of the process;
2. warm in the process: the second and later ``translate()`` calls (the plan
   comes from the in-process plan cache), and ``translate_component()``
   (never plan-cached: every phase runs, with core-module validations and
   signatures remembered);
3. warm in a fresh process: the on-disk caches filled by step 1; the first
   ``translate()`` (plan read from disk) and the first
   ``translate_component()`` (core-module validations found on disk).

Each row gives milliseconds and the breakdown: hashing the component, the
plan-cache lookup and store, reading the binary, core modules (hashing,
validation by wasmtime, signatures), checking component definitions,
inlining the root's instantiations, and building the plan. Import time is
reported separately. ``--quick`` repeats less (a smoke test);
``--profile`` adds a cProfile listing of a warm ``translate_component()``.

Run from the repository root: ``.venv/bin/python bench/translate.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GUEST = "py-sync-wasi"
PHASES = ("hash", "lookup", "read", "core", "component", "inline", "plan", "store")


def _guest_builder() -> ModuleType:
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    path = ROOT / "runtime" / "tests" / "guests" / "_build.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_SMALL = """(component
  (core module $m
    (memory (export "mem") 1)
    (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
  (core instance $i (instantiate $m))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
)"""


def _component(args: argparse.Namespace) -> Path:
    """The component to translate: ``--component``, else the built guest, else a small one."""
    if args.component is not None:
        return Path(args.component)
    try:
        return Path(_guest_builder().build(args.guest))
    except Exception as exc:  # no toolchain: a smoke run still exercises the pipeline
        if not args.quick:
            raise SystemExit(f"cannot build guest {args.guest}: {exc}") from None
        print(f"note: guest {args.guest} unavailable ({exc}); using a small component")
    wasm_tools = Path(sys.executable).with_name("wasm-tools")
    out = Path(tempfile.mkdtemp(prefix="bench-translate-")) / "small.wasm"
    subprocess.run(
        [str(wasm_tools), "parse", "-", "-o", str(out)], input=_SMALL.encode(), check=True
    )
    return out


# -- the measuring child ------------------------------------------------------------------


def _child(path: Path, repeat: int, profile: bool) -> dict[str, Any]:
    """Runs in a fresh interpreter: import, then the first and later translations."""
    start = time.perf_counter()
    import hashlib
    import importlib

    from polyengine.translate import translate

    imported = time.perf_counter() - start
    tt = importlib.import_module("polyengine.translate._translate")
    try:
        _cache: ModuleType | None = importlib.import_module("polyengine.translate._cache")
    except ImportError:  # a translator without the plan cache (a baseline tree)
        _cache = None
    timed = getattr(tt, "translate_component_timed", None)
    data = path.read_bytes()

    def translate_timed() -> tuple[float, dict[str, float]]:
        """``translate()`` step by step, with the same caches, timing each step."""
        if _cache is None or timed is None:
            t0 = time.perf_counter()
            translate(data)
            return time.perf_counter() - t0, {}
        t0 = time.perf_counter()
        sha = hashlib.sha256(data).hexdigest()
        t1 = time.perf_counter()
        plan = _cache.cached_plan(sha, len(data))
        t2 = time.perf_counter()
        phases = {"hash": t1 - t0, "lookup": t2 - t1}
        if plan is None:
            plan, inner = timed(data)
            phases.update(inner)
            t3 = time.perf_counter()
            _cache.store_plan(sha, len(data), plan)
            phases["store"] = time.perf_counter() - t3
        return time.perf_counter() - t0, phases

    def component_timed() -> tuple[float, dict[str, float]]:
        t0 = time.perf_counter()
        if timed is None:
            tt.translate_component(data)
            return time.perf_counter() - t0, {}
        _, phases = timed(data)
        return time.perf_counter() - t0, phases

    first = translate_timed()
    later = [translate_timed() for _ in range(repeat)]
    comp = [component_timed() for _ in range(repeat)]
    out: dict[str, Any] = {
        "import": imported,
        "first": first,
        "later": later,
        "component_first": comp[0],
        "component_later": comp[1:] or comp,
        "size": len(data),
    }
    if profile:
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        tt.translate_component(data)
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
        out["profile"] = text.getvalue()
    return out


def _spawn(path: Path, cache: Path, repeat: int, profile: bool) -> dict[str, Any]:
    env = dict(os.environ, POLYENGINE_CACHE_DIR=str(cache))
    cmd = [sys.executable, __file__, "--child", str(path), "--repeat", str(repeat)]
    if profile:
        cmd.append("--profile")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"measuring process failed:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# -- report -------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f}"


def _row(label: str, samples: list[tuple[float, dict[str, float]]]) -> str:
    totals = [s[0] for s in samples]
    phases: dict[str, float] = {}
    for name in PHASES:
        values = [s[1].get(name, 0.0) for s in samples]
        phases[name] = statistics.median(values)
    cells = " ".join(_ms(phases[p]) for p in PHASES)
    best = f" (best {min(totals) * 1000:.1f})" if len(totals) > 1 else ""
    return f"{label:<44}{_ms(statistics.median(totals))} | {cells}{best}"


def _report(colds: list[dict[str, Any]], warms: list[dict[str, Any]], path: Path) -> None:
    print(f"component: {path} ({colds[0]['size'] / 1e6:.1f} MB)")
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores; times in ms, median "
        f"of {len(colds)} fresh process pair(s) and {len(colds[0]['later'])} warm repeats"
    )
    print()
    head = " ".join(f"{p:>8}" for p in PHASES)
    print(f"{'':<44}{'total':>8} | {head}")
    print(_row("cold: first translate()", [c["first"] for c in colds]))
    print(_row("warm in-process: translate() 2nd+", [s for c in colds for s in c["later"]]))
    print(
        _row(
            "warm in-process: translate_component()",
            [s for c in colds for s in c["component_later"]],
        )
    )
    print(_row("warm fresh process: first translate()", [w["first"] for w in warms]))
    print(_row("warm fresh process: translate_component()", [w["component_first"] for w in warms]))
    print()
    cold_import = statistics.median(c["import"] for c in colds) * 1000
    warm_import = statistics.median(w["import"] for w in warms) * 1000
    print(
        f"import polyengine.translate: {cold_import:.0f} ms (cold run), "
        f"{warm_import:.0f} ms (warm run); not included above"
    )
    for w in warms:
        if "profile" in w:
            print()
            print("cProfile of a warm translate_component() (fresh process, disk caches warm):")
            print(w["profile"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--component", help="component binary (default: the built guest)")
    parser.add_argument("--guest", default=GUEST, help=f"guest to build (default {GUEST})")
    parser.add_argument("--repeat", type=int, default=None, help="warm repetitions")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--profile", action="store_true", help="add a cProfile listing")
    parser.add_argument(
        "--processes", type=int, default=None, help="fresh-process pairs to run (median)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (2 if args.quick else 10)
    if args.child is not None:
        print(json.dumps(_child(Path(args.child), max(repeat, 1), args.profile)))
        return 0
    path = _component(args)
    runs = args.processes if args.processes is not None else (1 if args.quick else 3)
    colds: list[dict[str, Any]] = []
    warms: list[dict[str, Any]] = []
    for n in range(max(runs, 1)):
        with tempfile.TemporaryDirectory(prefix="bench-translate-cache-") as cache:
            colds.append(_spawn(path, Path(cache), repeat, False))
            warms.append(_spawn(path, Path(cache), repeat, args.profile and n == 0))
    _report(colds, warms, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
