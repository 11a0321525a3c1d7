"""Context slots across composed components (CanonicalABI.md §"canon context.get/set", issue 14).

Each task has its own slots: a caller sets slot 0 to 42, calls a component
that reads slot 0 (it must see 0, its own task's) and sets it to 7, then
reads slot 0 back (it must still see 42). ``f`` returns ``after * 1000 +
seen``. A synchronous task calling an ``async`` function with a synchronous
lower traps before the callee runs (the official suite's
``trap-if-block-and-sync.wast``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import Trap

COMPOSED = {
    "sync->sync": """
(component
  (component $B
    (core func $set (canon context.set i32 0))
    (core func $get (canon context.get i32 0))
    (core module $m
      (import "" "set" (func $set (param i32)))
      (import "" "get" (func $get (result i32)))
      (func (export "g") (result i32)
        (local $before i32)
        (local.set $before (call $get))
        (call $set (i32.const 7))
        (local.get $before)))
    (core instance $i (instantiate $m (with "" (instance (export "set" (func $set))
      (export "get" (func $get))))))
    (func (export "g") (result u32) (canon lift (core func $i "g"))))
  (component $A
    (import "g" (func $g (result u32)))
    (core func $set (canon context.set i32 0))
    (core func $get (canon context.get i32 0))
    (core func $gl (canon lower (func $g)))
    (core module $m
      (import "" "set" (func $set (param i32)))
      (import "" "get" (func $get (result i32)))
      (import "" "g" (func $g (result i32)))
      ;; returns get-after * 1000 + what g saw before setting
      (func (export "f") (result i32)
        (local $seen i32)
        (call $set (i32.const 42))
        (local.set $seen (call $g))
        (i32.add (i32.mul (call $get) (i32.const 1000)) (local.get $seen))))
    (core instance $i (instantiate $m (with "" (instance (export "set" (func $set))
      (export "get" (func $get)) (export "g" (func $gl))))))
    (func (export "f") (result u32) (canon lift (core func $i "f"))))
  (instance $b (instantiate $B))
  (instance $a (instantiate $A (with "g" (func $b "g"))))
  (export "f" (func $a "f"))
)
""",
    "async->sync": """
(component
  (component $B
    (core func $set (canon context.set i32 0))
    (core func $get (canon context.get i32 0))
    (core module $m
      (import "" "set" (func $set (param i32)))
      (import "" "get" (func $get (result i32)))
      (func (export "g") (result i32)
        (local $before i32)
        (local.set $before (call $get))
        (call $set (i32.const 7))
        (local.get $before)))
    (core instance $i (instantiate $m (with "" (instance (export "set" (func $set))
      (export "get" (func $get))))))
    (func (export "g") (result u32) (canon lift (core func $i "g"))))
  (component $A
    (import "g" (func $g (result u32)))
    (core func $set (canon context.set i32 0))
    (core func $get (canon context.get i32 0))
    (core func $gl (canon lower (func $g)))
    (core module $m
      (import "" "set" (func $set (param i32)))
      (import "" "get" (func $get (result i32)))
      (import "" "g" (func $g (result i32)))
      ;; returns get-after * 1000 + what g saw before setting
      (import "" "ret" (func $ret (param i32)))
      (func (export "f")
        (local $seen i32)
        (call $set (i32.const 42))
        (local.set $seen (call $g))
        (call $ret (i32.add (i32.mul (call $get) (i32.const 1000)) (local.get $seen)))))
    (core func $ret (canon task.return (result u32)))
    (core instance $i (instantiate $m (with "" (instance (export "set" (func $set))
      (export "get" (func $get)) (export "g" (func $gl)) (export "ret" (func $ret))))))
    (func (export "f") async (result u32) (canon lift (core func $i "f") async)))
  (instance $b (instantiate $B))
  (instance $a (instantiate $A (with "g" (func $b "g"))))
  (export "f" (func $a "f"))
)
""",
    "async->async": """
(component
  (component $B
    (core func $set (canon context.set i32 0))
    (core func $get (canon context.get i32 0))
    (core func $ret (canon task.return (result u32)))
    (core module $m
      (import "" "set" (func $set (param i32)))
      (import "" "get" (func $get (result i32)))
      (import "" "ret" (func $ret (param i32)))
      (func (export "g")
        (local $before i32)
        (local.set $before (call $get))
        (call $set (i32.const 7))
        (call $ret (local.get $before))))
    (core instance $i (instantiate $m (with "" (instance (export "set" (func $set))
      (export "get" (func $get)) (export "ret" (func $ret))))))
    (func (export "g") async (result u32) (canon lift (core func $i "g") async)))
  (component $A
    (import "g" (func $g async (result u32)))
    (core func $set (canon context.set i32 0))
    (core func $get (canon context.get i32 0))
    (core func $gl (canon lower (func $g)))
    (core module $m
      (import "" "set" (func $set (param i32)))
      (import "" "get" (func $get (result i32)))
      (import "" "g" (func $g (result i32)))
      ;; returns get-after * 1000 + what g saw before setting
      (import "" "ret" (func $ret (param i32)))
      (func (export "f")
        (local $seen i32)
        (call $set (i32.const 42))
        (local.set $seen (call $g))
        (call $ret (i32.add (i32.mul (call $get) (i32.const 1000)) (local.get $seen)))))
    (core func $ret (canon task.return (result u32)))
    (core instance $i (instantiate $m (with "" (instance (export "set" (func $set))
      (export "get" (func $get)) (export "g" (func $gl)) (export "ret" (func $ret))))))
    (func (export "f") async (result u32) (canon lift (core func $i "f") async)))
  (instance $b (instantiate $B))
  (instance $a (instantiate $A (with "g" (func $b "g"))))
  (export "f" (func $a "f"))
)
""",
    "callback->callback": """
(component
  (component $B
    (core func $set (canon context.set i32 0))
    (core func $get (canon context.get i32 0))
    (core func $ret (canon task.return (result u32)))
    (core module $m
      (import "" "set" (func $set (param i32)))
      (import "" "get" (func $get (result i32)))
      (import "" "ret" (func $ret (param i32)))
      (func (export "g") (result i32)
        (local $before i32)
        (local.set $before (call $get))
        (call $set (i32.const 7))
        (call $ret (local.get $before))
        (i32.const 0))
      (func (export "cb") (param i32 i32 i32) (result i32) unreachable))
    (core instance $i (instantiate $m (with "" (instance (export "set" (func $set))
      (export "get" (func $get)) (export "ret" (func $ret))))))
    (func (export "g") async (result u32) (canon lift (core func $i "g") async (callback
      (core func $i "cb")))))
  (component $A
    (import "g" (func $g async (result u32)))
    (core func $set (canon context.set i32 0))
    (core func $get (canon context.get i32 0))
    (core func $gl (canon lower (func $g)))
    (core module $m
      (import "" "set" (func $set (param i32)))
      (import "" "get" (func $get (result i32)))
      (import "" "g" (func $g (result i32)))
      ;; returns get-after * 1000 + what g saw before setting
      (import "" "ret" (func $ret (param i32)))
      (func (export "f") (result i32)
        (local $seen i32)
        (call $set (i32.const 42))
        (local.set $seen (call $g))
        (call $ret (i32.add (i32.mul (call $get) (i32.const 1000)) (local.get $seen)))
        (i32.const 0))
      (func (export "cb") (param i32 i32 i32) (result i32) unreachable))
    (core func $ret (canon task.return (result u32)))
    (core instance $i (instantiate $m (with "" (instance (export "set" (func $set))
      (export "get" (func $get)) (export "g" (func $gl)) (export "ret" (func $ret))))))
    (func (export "f") async (result u32) (canon lift (core func $i "f") async (callback
      (core func $i "cb")))))
  (instance $b (instantiate $B))
  (instance $a (instantiate $A (with "g" (func $b "g"))))
  (export "f" (func $a "f"))
)
""",
    "sync->async": """
(component
  (component $B
    (core func $set (canon context.set i32 0))
    (core func $get (canon context.get i32 0))
    (core func $ret (canon task.return (result u32)))
    (core module $m
      (import "" "set" (func $set (param i32)))
      (import "" "get" (func $get (result i32)))
      (import "" "ret" (func $ret (param i32)))
      (func (export "g")
        (local $before i32)
        (local.set $before (call $get))
        (call $set (i32.const 7))
        (call $ret (local.get $before))))
    (core instance $i (instantiate $m (with "" (instance (export "set" (func $set))
      (export "get" (func $get)) (export "ret" (func $ret))))))
    (func (export "g") async (result u32) (canon lift (core func $i "g") async)))
  (component $A
    (import "g" (func $g async (result u32)))
    (core func $set (canon context.set i32 0))
    (core func $get (canon context.get i32 0))
    (core func $gl (canon lower (func $g)))
    (core module $m
      (import "" "set" (func $set (param i32)))
      (import "" "get" (func $get (result i32)))
      (import "" "g" (func $g (result i32)))
      ;; returns get-after * 1000 + what g saw before setting
      (func (export "f") (result i32)
        (local $seen i32)
        (call $set (i32.const 42))
        (local.set $seen (call $g))
        (i32.add (i32.mul (call $get) (i32.const 1000)) (local.get $seen))))
    (core instance $i (instantiate $m (with "" (instance (export "set" (func $set))
      (export "get" (func $get)) (export "g" (func $gl))))))
    (func (export "f") (result u32) (canon lift (core func $i "f"))))
  (instance $b (instantiate $B))
  (instance $a (instantiate $A (with "g" (func $b "g"))))
  (export "f" (func $a "f"))
)
""",
}

CONCURRENT = """
(component
  (core func $set (canon context.set i32 0))
  (core func $get (canon context.get i32 0))
  (core func $ret (canon task.return (result u32)))
  (core module $m
    (import "" "set" (func $set (param i32)))
    (import "" "get" (func $get (result i32)))
    (import "" "ret" (func $ret (param i32)))
    ;; store the argument in slot 0, yield, then return what slot 0 holds
    (func (export "f") (param i32) (result i32) (call $set (local.get 0)) (i32.const 1))
    (func (export "cb") (param i32 i32 i32) (result i32) (call $ret (call $get)) (i32.const 0)))
  (core instance $i (instantiate $m (with "" (instance
    (export "set" (func $set)) (export "get" (func $get)) (export "ret" (func $ret))))))
  (func (export "f") async (param "x" u32) (result u32)
    (canon lift (core func $i "f") async (callback (core func $i "cb"))))
)
"""


def run(data: bytes, body: Callable[[Any], Any]) -> Any:
    async def main() -> Any:
        with await polyengine.instantiate(data) as instance:
            return await body(instance.exports)

    return asyncio.run(main())


@pytest.mark.parametrize(
    "combo", ["sync->sync", "async->sync", "async->async", "callback->callback"]
)
def test_each_task_has_its_own_slots(wat: Callable[[str], bytes], combo: str) -> None:
    assert run(wat(COMPOSED[combo]), lambda ex: ex.f()) == 42_000


def test_sync_task_calling_async_function_traps(wat: Callable[[str], bytes]) -> None:
    with pytest.raises(Trap, match="cannot block a synchronous task before returning"):
        run(wat(COMPOSED["sync->async"]), lambda ex: ex.f())


def test_concurrent_tasks_of_one_instance(wat: Callable[[str], bytes]) -> None:
    async def body(ex: Any) -> Any:
        return await asyncio.gather(*(ex.f(n) for n in (11, 22, 33)))

    assert run(wat(CONCURRENT), body) == [11, 22, 33]
