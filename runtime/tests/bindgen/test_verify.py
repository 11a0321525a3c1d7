"""World verification (bindgen.md §3, seed A17): the digest, the subset rule, strictness,
and the typed ``instantiate`` that refuses a mismatched component before any guest code."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

import polyengine
from polyengine.bindings import WorldMismatchError, verify_world, world_digest, world_leaves
from polyengine.translate import Plan

from .support import EXPECTED, GOLDEN, bindings_text, load_module

Builder = Callable[..., bytes]
SHOP = (GOLDEN / "shop.wit").read_text()


@pytest.fixture(scope="module")
def shop() -> ModuleType:
    return load_module(EXPECTED / "shop_bindings.py", "shop_bindings")


def test_one_changed_leaf_is_named(shop: ModuleType, component_of: Builder) -> None:
    changed = SHOP.replace("grant: func(p: perms) -> perms;", "grant: func(p: perms) -> u32;")
    assert changed != SHOP
    plan = polyengine.translate(component_of(changed)).plan
    with pytest.raises(WorldMismatchError) as info:
        shop.verify(plan)
    err = info.value
    assert err.changed == ("export demo:shop/store@0.1.0#grant",)
    assert err.missing == () and err.extra == ()
    assert "demo:shop/store@0.1.0#grant" in str(err)
    assert err.expected == shop.WORLD_DIGEST and err.actual == world_digest(plan)


def test_a_changed_label_changes_the_leaf(shop: ModuleType, component_of: Builder) -> None:
    changed = SHOP.replace("dark-green", "dark-blue")
    plan = polyengine.translate(component_of(changed)).plan
    with pytest.raises(WorldMismatchError) as info:
        shop.verify(plan)
    assert "export demo:shop/store@0.1.0#[method]cart.add" in info.value.changed


def test_names_are_not_hashed(shop: ModuleType, component_of: Builder) -> None:
    renamed = (
        SHOP.replace("record item", "record thing")
        .replace("types.{item}", "types.{thing}")
        .replace("use types.{item,", "use types.{thing,")
        .replace("option<item>", "option<thing>")
        .replace("it: item", "it: thing")
        .replace("(prefix: string)", "(label: string)")
    )
    assert renamed != SHOP
    plan = polyengine.translate(component_of(renamed)).plan
    shop.verify(plan, strict=True)


LEAN = """package demo:lean@1.0.0;

interface log { log: func(msg: string); }
interface clock { now: func() -> u64; }
interface api { run: func() -> u32; }

world full {
  import log;
  import clock;
  export api;
}

world lean {
  import log;
  export api;
}

world greedy {
  import log;
  import clock;
  import extra: func();
  export api;
}

world bare {
  import log;
  import clock;
}

world more {
  import log;
  import clock;
  export api;
  export also: func();
}
"""


@pytest.fixture(scope="module")
def full(component_of: Builder, tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    text = bindings_text(component_of(LEAN, "full"), "full.wasm")
    path = Path(tmp_path_factory.mktemp("full")) / "full_bindings.py"
    path.write_text(text)
    return load_module(path, "full_bindings")


def _plan(component_of, world: str) -> Plan:
    return polyengine.translate(component_of(LEAN, world)).plan


def test_fewer_imports_pass_by_default_and_fail_when_strict(
    full: ModuleType, component_of: Builder
) -> None:
    plan = _plan(component_of, "lean")
    full.verify(plan)
    with pytest.raises(WorldMismatchError) as info:
        full.verify(plan, strict=True)
    assert info.value.missing == ("import demo:lean/clock@1.0.0#now",)


def test_more_exports_pass_by_default_and_fail_when_strict(
    full: ModuleType, component_of: Builder
) -> None:
    plan = _plan(component_of, "more")
    full.verify(plan)
    with pytest.raises(WorldMismatchError) as info:
        full.verify(plan, strict=True)
    assert info.value.extra == ("export also",)


def test_an_import_the_bindings_lack_fails(full: ModuleType, component_of: Builder) -> None:
    with pytest.raises(WorldMismatchError) as info:
        full.verify(_plan(component_of, "greedy"))
    assert info.value.extra == ("import extra",)


def test_a_missing_export_fails(full: ModuleType, component_of: Builder) -> None:
    with pytest.raises(WorldMismatchError) as info:
        full.verify(_plan(component_of, "bare"))
    assert info.value.missing == ("export demo:lean/api@1.0.0#run",)


def test_versions_compare_by_track(full: ModuleType, component_of: Builder) -> None:
    newer = LEAN.replace("demo:lean@1.0.0", "demo:lean@1.4.2")
    plan = polyengine.translate(component_of(newer, "full")).plan
    full.verify(plan)
    major = LEAN.replace("demo:lean@1.0.0", "demo:lean@2.0.0")
    with pytest.raises(WorldMismatchError):
        full.verify(polyengine.translate(component_of(major, "full")).plan)


def test_digest_ignores_leaf_order(full: ModuleType) -> None:
    leaves = list(full._LEAVES)
    assert world_digest(leaves[::-1]) == world_digest(leaves) == full.WORLD_DIGEST


def test_verify_world_accepts_the_same_world(component_of: Builder) -> None:
    plan = _plan(component_of, "full")
    verify_world(plan, world_digest(plan), world_leaves(plan), strict=True)


# -- the typed instantiate verifies before any guest code runs -------------------------

START = """(component
  (import "demo:start/log@0.1.0" (instance $log (export "log" (func (param "x" u32)))))
  (alias export $log "log" (func $f))
  (core func $lf (canon lower (func $f)))
  (core module $m
    (import "" "log" (func $log (param i32)))
    (func $start (call $log (i32.const 7)))
    (start $start))
  (core instance (instantiate $m (with "" (instance (export "log" (func $lf))))))
)"""

START_WIT = """package demo:start@0.1.0;
interface log { log: func(x: u64); }
world w { import log; }
"""


class Recorder:
    def __init__(self) -> None:
        self.calls: list[int] = []

    def log(self, x: int) -> None:
        self.calls.append(x)


def _module(text: str, name: str, tmp: Path) -> ModuleType:
    path = tmp / f"{name}.py"
    path.write_text(text)
    return load_module(path, name)


def test_mismatched_component_runs_no_start_function(
    component_of: Builder, wat: Builder, tmp_path: Path
) -> None:
    wrong = _module(bindings_text(component_of(START_WIT), "w.wasm"), "start_wrong", tmp_path)
    started = wat(START)
    rec = Recorder()
    with pytest.raises(WorldMismatchError) as info:
        asyncio.run(wrong.instantiate(started, {"demo:start/log@0.1.0": rec}))
    assert info.value.changed == ("import demo:start/log@0.1.0#log",)
    assert rec.calls == []
    # The untyped runtime path does run the start function: the check is the wrapper's.
    asyncio.run(polyengine.instantiate(started, {"demo:start/log@0.1.0": rec}))
    assert rec.calls == [7]


def test_matching_component_instantiates(wat: Builder, tmp_path: Path) -> None:
    started = wat(START)
    right = _module(bindings_text(started, "start.wasm"), "start_right", tmp_path)
    rec = Recorder()

    async def main() -> None:
        arts = polyengine.translate(started)
        world = await right.instantiate(arts, {"demo:start/log@0.1.0": rec})
        assert isinstance(world.instance, polyengine.Instance)
        world.close()

    asyncio.run(main())
    assert rec.calls == [7]
