"""An export several core instances import is fetched once per linking, then copied."""

from __future__ import annotations

from collections.abc import Callable

from polyengine.engine import CoreModule, EngineStore, ExportSource, InstancePre, get_engine

Wat = Callable[..., CoreModule]

PROVIDER = """(module
  (global $g (export "g") (mut i32) (i32.const 5))
  (func (export "f") (result i32) (global.get $g))
  (func (export "set") (param i32) (global.set $g (local.get 0))))"""

USER = """(module
  (import "a" "f" (func $f (result i32)))
  (import "a" "again" (func $f2 (result i32)))
  (import "a" "g" (global $g (mut i32)))
  (func (export "sum") (result i32) (i32.add (i32.add (call $f) (call $f2)) (global.get $g))))"""

OTHER = """(module
  (import "a" "f" (func $f (result i32)))
  (func (export "twice") (result i32) (i32.mul (call $f) (i32.const 2))))"""


def _pre(wat: Wat) -> InstancePre:
    modules = [wat(PROVIDER, "provider"), wat(USER, "user"), wat(OTHER, "other")]
    f, g = ExportSource(0, "f"), ExportSource(0, "g")
    return InstancePre(get_engine(), modules, [(0, []), (1, [f, f, g]), (2, [f])], 0)


def test_an_export_taken_by_several_imports_is_fetched_once(wat: Wat, call_path: None) -> None:
    pre = _pre(wat)
    assert pre.shared == 1  # "f" of instance 0; "g" is taken once
    assert [len(step.exports) for step in pre.steps] == [0, 2, 0]
    assert [len(step.loads) for step in pre.steps] == [0, 1, 1]
    for value in (7, 11):  # two stores of one pre: each its own instances
        with EngineStore() as store:
            linking = pre.link(store, lambda index: None)  # type: ignore[arg-type,return-value]
            provider = linking.instantiate(0)
            user = linking.instantiate(1)
            other = linking.instantiate(2)
            provider.func("set").call_raw([value])
            assert user.func("sum").call_raw([]) == [3 * value]
            assert other.func("twice").call_raw([]) == [2 * value]
