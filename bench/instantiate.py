"""Warm instantiation, side by side: polyengine against wasmtime-py's native component API.

For each component, in one process, interleaved:

* **native**: ``wasmtime.component.Linker.instantiate(store, component)`` of
  the same bytes (the linker, the compiled ``Component`` and the WASI
  configuration built once; a new ``Store`` per instance, as a server making
  one instance per request would);
* **polyengine**: ``await polyengine.instantiate(artifacts, imports)`` (the
  artifacts translated once; every call after the first is warm: compiled
  modules and the per-(engine, plan) preparation are cached), then
  ``close()`` outside the timed region (its cost is printed on its own).

Components:

1. **small**: a component-text-format component: two core instances sharing
   a memory, two lowered imports, two lifted exports (target <= 0.2 ms);
2. **py-stub-values**: the componentize-py ``--stub-wasi`` guest of the test
   suite (about 18 MB; target <= 5 ms);
3. **js-sm**: the componentize-js (StarlingMonkey) guest of the test suite,
   a WASI 0.2 command (imports from ``polyengine_wasi``; natively
   ``Linker.add_wasip2``).

The guests come from the test suite's guest cache
(``runtime/tests/guests/_build.py``); a guest that is not built is skipped
with the command that builds it. Every figure is the median (and the
fastest) of ``--repeats`` timed instantiations after a warm-up.
``--profile`` adds a cProfile listing of polyengine's warm instantiate of
each component. ``--pooling`` makes both hosts' engines use wasmtime's
pooling instance allocator (polyengine: ``EngineConfig(pooling=...)`` sized
for a few instances of the component, as ``polyengine serve`` sizes its
pool; native: the same limits on its ``wasmtime.Config``), so a new
instance takes its memories, tables and instance slots from a pool instead
of mapping them. Run: ``.venv/bin/python bench/instantiate.py [--pooling]``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import importlib.util
import io
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import wasmtime
import wasmtime.component as wc

sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from bench._wat import compile_component
else:
    from _wat import compile_component

import polyengine
from polyengine.engine import EngineConfig, PoolingConfig, component_needs
from polyengine.engine._pooling import apply_pooling
from polyengine.translate.plan import StaticModule

ROOT = Path(__file__).resolve().parents[1]

#: targets from issue 11 (warm instantiate)
TARGETS_MS = {"small": 0.2, "py-stub-values": 5.0}

SMALL = """(component
  (import "log" (func $log (param "msg" string)))
  (import "f" (func $f (param "x" u32) (result u32)))
  (core module $mem
    (memory (export "mem") 1)
    (global $next (mut i32) (i32.const 1024))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (global.get $next))
      (global.set $next (i32.add (global.get $next) (local.get 3)))
      (local.get $p)))
  (core instance $mi (instantiate $mem))
  (core func $log (canon lower (func $log) (memory (core memory $mi "mem"))))
  (core func $f (canon lower (func $f)))
  (core module $m
    (import "host" "log" (func $log (param i32 i32)))
    (import "host" "f" (func $f (param i32) (result i32)))
    (import "env" "mem" (memory 1))
    (func (export "add") (param i32 i32) (result i32)
      (i32.add (local.get 0) (call $f (local.get 1))))
    (func (export "greet") (param i32 i32) (result i32)
      (call $log (local.get 0) (local.get 1))
      (local.get 1)))
  (core instance $i (instantiate $m
    (with "host" (instance (export "log" (func $log)) (export "f" (func $f))))
    (with "env" (instance $mi))))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
  (func (export "greet") (param "s" string) (result u32)
    (canon lift (core func $i "greet")
      (memory (core memory $mi "mem")) (realloc (core func $mi "realloc"))))
)"""


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


def cached_guest(name: str) -> bytes | str:
    """The bytes of a built guest, or why it is not available."""
    builder = _guest_builder()
    try:
        path: Path = builder.artifact_path(name)
    except builder.ToolchainMissing as exc:
        return f"toolchain missing: {exc.reason}"
    if not path.is_file():
        return f"not built (.venv/bin/python scripts/build_guests.py --only {name})"
    return path.read_bytes()


@dataclass
class Subject:
    """One component, prepared for both hosts."""

    name: str
    data: bytes
    imports: Callable[[], dict[str, object]]
    native_linker: Callable[[wasmtime.Engine], wc.Linker]
    wasi: bool = False


def _small_linker(engine: wasmtime.Engine) -> wc.Linker:
    linker = wc.Linker(engine)
    with linker.root() as root:
        root.add_func("log", lambda _store, _msg: None)
        root.add_func("f", lambda _store, x: x)
    return linker


def _no_imports(engine: wasmtime.Engine) -> wc.Linker:
    return wc.Linker(engine)


def _wasi_linker(engine: wasmtime.Engine) -> wc.Linker:
    linker = wc.Linker(engine)
    linker.add_wasip2()
    return linker


def _wasi_imports() -> dict[str, object]:
    from polyengine_wasi import wasi

    out: dict[str, object] = wasi(args=["app"], env={}, stdout=bytearray(), stderr=bytearray())
    return out


def subjects() -> tuple[list[Subject], list[str]]:
    out = [
        Subject(
            "small",
            compile_component(SMALL),
            lambda: {"log": lambda _msg: None, "f": lambda x: x},
            _small_linker,
        )
    ]
    skipped = []
    for name, imports, linker, wasi in (
        ("py-stub-values", dict, _no_imports, False),
        ("js-sm", _wasi_imports, _wasi_linker, True),
    ):
        data = cached_guest(name)
        if isinstance(data, str):
            skipped.append(f"{name}: {data}")
            continue
        out.append(Subject(name, data, imports, linker, wasi))
    return out, skipped


def pooled_config(data: bytes) -> EngineConfig:
    """A pooled engine's configuration for a few instances of the component ``data``."""
    artifacts = polyengine.translate(data)
    plan = artifacts.plan
    needs = component_needs(
        [artifacts.module_view(i) for i in range(len(plan.modules))],
        [c.module.index for c in plan.core_instances if isinstance(c.module, StaticModule)],
    )
    pooling = PoolingConfig.for_instances(needs, 8, 16)
    # the native component's own instances: a few more tables and core instances
    pooling = replace(
        pooling,
        total_core_instances=pooling.total_core_instances + 64,
        total_tables=pooling.total_tables + 64,
        total_memories=pooling.total_memories + 64,
        max_tables_per_module=max(pooling.max_tables_per_module, 4),
        max_memories_per_module=max(pooling.max_memories_per_module, 2),
    )
    return EngineConfig(pooling=pooling)


class Native:
    """wasmtime-py's component API: one linker and compiled component, a store per instance."""

    def __init__(self, subject: Subject, pooling: EngineConfig | None = None) -> None:
        if pooling is not None and pooling.pooling is not None:
            config = wasmtime.Config()
            config.wasm_multi_memory = True
            apply_pooling(config, pooling.pooling)
            self.engine = wasmtime.Engine(config)
        else:
            self.engine = wasmtime.Engine()
        self.component = wc.Component(self.engine, subject.data)
        self.linker = subject.native_linker(self.engine)
        self.wasi = subject.wasi

    def instantiate(self) -> float:
        """Seconds one instantiation takes (store creation included)."""
        t0 = time.perf_counter()
        store = wasmtime.Store(self.engine)
        if self.wasi:
            store.set_wasi(wasmtime.WasiConfig())
        self.linker.instantiate(store, self.component)
        return time.perf_counter() - t0


class Ours:
    """polyengine on one running event loop: translated once, instantiated warm."""

    def __init__(
        self,
        subject: Subject,
        loop: asyncio.AbstractEventLoop,
        config: EngineConfig | None = None,
    ) -> None:
        self.loop = loop
        self.artifacts = polyengine.translate(subject.data)
        self.imports = subject.imports
        self.config = config
        self.close_times: list[float] = []

    async def _one(self) -> float:
        imports = self.imports()
        t0 = time.perf_counter()
        inst = await polyengine.instantiate(self.artifacts, imports, engine_config=self.config)
        t = time.perf_counter() - t0
        t1 = time.perf_counter()
        inst.close()
        self.close_times.append(time.perf_counter() - t1)
        return t

    def instantiate(self) -> float:
        return self.loop.run_until_complete(self._one())

    def profile(self, n: int) -> str:
        prof = cProfile.Profile()

        async def many() -> None:
            for _ in range(n):
                imports = self.imports()
                prof.enable()
                inst = await polyengine.instantiate(
                    self.artifacts, imports, engine_config=self.config
                )
                prof.disable()
                inst.close()

        self.loop.run_until_complete(many())
        text = io.StringIO()
        stats = pstats.Stats(prof, stream=text)
        stats.sort_stats("tottime").print_stats(18)
        stats.sort_stats("cumulative").print_stats(22)
        return text.getvalue()


def timed(fn: Callable[[], float], repeats: int) -> list[float]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        return [fn() for _ in range(repeats)]
    finally:
        if enabled:
            gc.enable()


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed instantiations per host")
    parser.add_argument("--quick", action="store_true", help="a few repeats (smoke run)")
    parser.add_argument("--profile", action="store_true", help="add a cProfile listing")
    parser.add_argument("--only", help="measure only this component")
    parser.add_argument(
        "--pooling", action="store_true", help="both hosts on the pooling instance allocator"
    )
    args = parser.parse_args()
    repeats = 3 if args.quick else args.repeats
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"polyengine warm-instantiate benchmark, {stamp}")
    print(
        f"python {platform.python_version()}, wasmtime-py {wasmtime_version()}, "
        f"median of {repeats} instantiations per host, interleaved; "
        f"{'pooling' if args.pooling else 'on-demand'} instance allocator"
    )
    found, skipped = subjects()
    if args.only:
        found = [s for s in found if s.name == args.only]
    loop = asyncio.new_event_loop()
    rows: list[tuple[str, float, float, float, float, float]] = []
    hosts: list[tuple[Subject, Ours]] = []
    for subject in found:
        config = pooled_config(subject.data) if args.pooling else None
        native, ours = Native(subject, config), Ours(subject, loop, config)
        for _ in range(2):  # warm-up: compile caches, first-call preparation
            native.instantiate()
            ours.instantiate()
        ours.close_times.clear()
        nat: list[float] = []
        own: list[float] = []
        for _ in range(repeats):
            nat += timed(native.instantiate, 1)
            own += timed(ours.instantiate, 1)
        rows.append(
            (
                subject.name,
                statistics.median(nat),
                min(nat),
                statistics.median(own),
                min(own),
                statistics.median(ours.close_times),
            )
        )
        hosts.append((subject, ours))
    width = max([len(r[0]) for r in rows] + [10]) + 2
    print(
        f"{'component':<{width}}{'native':>12}{'best':>12}{'polyengine':>13}"
        f"{'best':>12}{'ratio':>9}{'close':>12}{'target':>11}"
    )
    for name, nmed, nbest, omed, obest, close in rows:
        target = TARGETS_MS.get(name)
        verdict = ""
        if target is not None:
            verdict = f"{target:6.1f} ms " + ("ok" if omed * 1e3 <= target else "MISSED")
        print(
            f"{name:<{width}}{_ms(nmed)}{_ms(nbest)} {_ms(omed)}{_ms(obest)}"
            f"{omed / nmed:8.1f}x{_ms(close)}  {verdict}"
        )
    print("(ratio = polyengine median / native median; close = polyengine's close(), not timed)")
    for line in skipped:
        print(f"skipped {line}")
    if args.profile:
        for subject, ours in hosts:
            print(f"\n== cProfile: 10 warm instantiations of {subject.name} ==")
            print(ours.profile(3 if args.quick else 10))
    loop.close()


def wasmtime_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("wasmtime")


if __name__ == "__main__":
    main()
