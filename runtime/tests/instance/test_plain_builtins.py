"""Task-model built-ins that never park are made in bulk for later instances of a plan.

Their core signatures are the plan's (CanonicalABI.md §"Canonical built-ins"),
so from the second instance of a plan on they are plain host functions made
from those signatures in one go, each with a body built on its first call
(``ComponentRuntime._plain_hosts``); a built-in that may park
(``waitable-set.wait``) is still bound one by one. Every instance keeps its
own state: its waitable sets, its tasks' context slots, its globals.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import polyengine
from polyengine.instance._perplan import plain_task_builtins
from polyengine.translate import plan as pln
from polyengine.translate import translate

#: ``f`` makes a waitable set ``s``, counts its calls in a global ``n``, sets
#: context slot 0 to ``s * 10 + n`` and returns what context.get reads back
#: through task.return; ``w`` (never called) imports waitable-set.wait
COMPONENT = """
(component
  (core module $mem (memory (export "mem") 1))
  (core instance $mi (instantiate $mem))
  (core func $new (canon waitable-set.new))
  (core func $set (canon context.set i32 0))
  (core func $get (canon context.get i32 0))
  (core func $ret (canon task.return (result u32)))
  (core func $wait (canon waitable-set.wait (memory (core memory $mi "mem"))))
  (core module $m
    (import "" "new" (func $new (result i32)))
    (import "" "set" (func $set (param i32)))
    (import "" "get" (func $get (result i32)))
    (import "" "ret" (func $ret (param i32)))
    (import "" "wait" (func $wait (param i32 i32) (result i32)))
    (global $n (mut i32) (i32.const 0))
    (func (export "f")
      (local $s i32)
      (local.set $s (call $new))
      (global.set $n (i32.add (global.get $n) (i32.const 1)))
      (call $set (i32.add (i32.mul (local.get $s) (i32.const 10)) (global.get $n)))
      (call $ret (call $get)))
    (func (export "w") (drop (call $wait (i32.const 0) (i32.const 0)))))
  (core instance $i (instantiate $m (with "" (instance
    (export "new" (func $new)) (export "set" (func $set)) (export "get" (func $get))
    (export "ret" (func $ret)) (export "wait" (func $wait))))))
  (func (export "f") async (result u32) (canon lift (core func $i "f") async))
)
"""


def _kinds(plan: pln.Plan) -> dict[str, int]:
    return {
        tr.kind: i for i, tr in enumerate(plan.trampolines) if isinstance(tr, pln.Builtin)
    }


def test_the_plan_names_its_built_ins_that_never_park(wat: Callable[[str], bytes]) -> None:
    plan = translate(wat(COMPONENT)).plan
    kinds = _kinds(plan)
    plain = {k for k, i in kinds.items() if i in plain_task_builtins(plan)}
    assert plain == {"waitable-set.new", "context.set", "context.get", "task.return"}


def test_later_instances_make_the_plain_built_ins_in_bulk_with_their_own_state(
    wat: Callable[[str], bytes], bound: list[int]
) -> None:
    artifacts = translate(wat(COMPONENT))
    wait = _kinds(artifacts.plan)["waitable-set.wait"]

    async def main() -> None:
        first = await polyengine.instantiate(artifacts, {})
        try:
            assert first._runtime.tasks is not None
            assert await first.exports.f() == 11  # waitable set 1, first call
            assert await first.exports.f() == 22  # its second set, its second call
        finally:
            first.close()
        bound.clear()
        for _ in range(2):
            inst = await polyengine.instantiate(artifacts, {})
            try:
                # the built-ins that never park are made without a binding each
                assert bound == [wait]
                bound.clear()
                assert await inst.exports.f() == 11  # a fresh instance's own state
                assert await inst.exports.f() == 22
            finally:
                inst.close()

    asyncio.run(main())


def test_a_second_component_does_not_share_the_first_ones_bodies(
    wat: Callable[[str], bytes],
) -> None:
    # Same built-ins, another plan: its instances work out their own signatures
    # and bodies (the task.return here returns u64).
    other = COMPONENT.replace("(result u32)", "(result u64)").replace(
        "(param i32)))\n    (import \"\" \"wait\"", "(param i64)))\n    (import \"\" \"wait\""
    ).replace("(call $ret (call $get))", "(call $ret (i64.extend_i32_u (call $get)))")
    one, two = translate(wat(COMPONENT)), translate(wat(other))

    async def main() -> None:
        for _ in range(2):
            for artifacts, want in ((one, 11), (two, 11)):
                inst = await polyengine.instantiate(artifacts, {})
                try:
                    assert await inst.exports.f() == want
                finally:
                    inst.close()
        assert plain_task_builtins(one.plan) != set()
        ret_one = one.plan.trampolines[_kinds(one.plan)["task.return"]]
        ret_two = two.plan.trampolines[_kinds(two.plan)["task.return"]]
        assert ret_one != ret_two

    asyncio.run(main())
