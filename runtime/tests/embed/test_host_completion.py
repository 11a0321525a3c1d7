"""A host coroutine that settles after suspending resumes its guest at once.

python-mapping.md §4, architecture.md §4: when the coroutine behind an async
import returns after an ``await``, the call is resolved and the waiting
guest runs on inside the same loop iteration (no done-callback hop), in the
context the call started in and with no asyncio task current, as a
done-callback of the host task would have seen it.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine.abi import HostResultError
from polyengine_protocol import Trap

from .test_async import aio

Wat = Callable[[str], bytes]

#: ``round-trips(n)``: a stackful async export calling the async import
#: ``get(i)`` n times, waiting on each subtask; returns the sum of the results
ROUND_TRIPS = """(component
  (core module $libc (memory (export "mem") 1))
  (core instance $libc (instantiate $libc))
  (import "get" (func $get async (param "x" u32) (result u32)))
  (core func $ret (canon task.return (result u32)))
  (core func $get-async (canon lower (func $get) async (memory (core memory $libc "mem"))))
  (core func $ws.new (canon waitable-set.new))
  (core func $ws.wait (canon waitable-set.wait (memory (core memory $libc "mem"))))
  (core func $join (canon waitable.join))
  (core func $st.drop (canon subtask.drop))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret" (func $ret (param i32)))
    (import "" "get-async" (func $get-async (param i32 i32) (result i32)))
    (import "" "ws.new" (func $ws.new (result i32)))
    (import "" "ws.wait" (func $ws.wait (param i32 i32) (result i32)))
    (import "" "join" (func $join (param i32 i32)))
    (import "" "st.drop" (func $st.drop (param i32)))
    (func (export "round-trips") (param $n i32)
      (local $i i32) (local $st i32) (local $ws i32) (local $sum i32)
      (local.set $ws (call $ws.new))
      (block $done
        (loop $next
          (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
          (local.set $st (call $get-async (local.get $i) (i32.const 64)))
          (if (i32.ne (i32.and (local.get $st) (i32.const 15)) (i32.const 2))
            (then
              (call $join (i32.shr_u (local.get $st) (i32.const 4)) (local.get $ws))
              (loop $wait
                (drop (call $ws.wait (local.get $ws) (i32.const 32)))
                (br_if $wait (i32.ne (i32.load (i32.const 36)) (i32.const 2))))
              (call $st.drop (i32.shr_u (local.get $st) (i32.const 4)))))
          (local.set $sum (i32.add (local.get $sum) (i32.load (i32.const 64))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $next)))
      (call $ret (local.get $sum))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret" (func $ret)) (export "get-async" (func $get-async))
      (export "ws.new" (func $ws.new)) (export "ws.wait" (func $ws.wait))
      (export "join" (func $join)) (export "st.drop" (func $st.drop))))))
  (func (export "round-trips") async (param "n" u32) (result u32)
    (canon lift (core func $i "round-trips") async))
)"""

N = 40


async def _round_trips(wat: Wat, get: Callable[[int], Any], n: int = N) -> int:
    inst = await polyengine.instantiate(wat(ROUND_TRIPS), {"get": get})
    with inst:
        result = await inst.exports.round_trips(n)
    assert isinstance(result, int)
    return result


@pytest.mark.xfail(
    sys.version_info >= (3, 12),
    strict=True,
    reason="on Python 3.12 and 3.13 each round trip after an await costs two loop"
    " iterations (2N+1 measured), not one: the guest resumes one hop late",
)
@aio
async def test_one_loop_iteration_per_round_trip_after_sleep0(wat: Wat) -> None:
    async def get(x: int) -> int:
        await asyncio.sleep(0)
        return x

    ticks = 0
    stop = False

    async def ticker() -> None:
        nonlocal ticks
        while not stop:
            ticks += 1
            await asyncio.sleep(0)

    inst = await polyengine.instantiate(wat(ROUND_TRIPS), {"get": get})
    with inst:
        counter = asyncio.get_running_loop().create_task(ticker())
        await asyncio.sleep(0)
        start = ticks
        assert await inst.exports.round_trips(N) == N * (N - 1) // 2
        spent = ticks - start
        stop = True
        await counter
    # the sleep(0) of each call costs its one iteration; the guest resumes in
    # that same iteration (a done-callback hop would double the count)
    assert N <= spent <= N + 3, spent


_var: contextvars.ContextVar[str] = contextvars.ContextVar("_var", default="unset")


@aio
async def test_context_changes_after_the_await_stay_in_the_host_task(wat: Wat) -> None:
    seen: list[str] = []

    async def get(x: int) -> int:
        seen.append(_var.get())
        await asyncio.sleep(0)
        _var.set(f"call {x}")
        return x

    _var.set("caller")
    assert await _round_trips(wat, get, 5) == 10
    assert seen == ["caller"] * 5
    assert _var.get() == "caller"


@aio
async def test_each_call_runs_as_its_own_task_and_none_leaks(wat: Wat) -> None:
    tasks: list[tuple[object, object]] = []

    async def get(x: int) -> int:
        first = asyncio.current_task()
        await asyncio.sleep(0)
        tasks.append((first, asyncio.current_task()))
        return x

    outer = asyncio.current_task()
    assert await _round_trips(wat, get, 6) == 15
    assert all(a is b and a is not None and a is not outer for a, b in tasks)
    assert len({id(a) for a, _ in tasks}) == 6
    assert asyncio.current_task() is outer


@aio
async def test_a_failure_after_the_await_still_traps_with_the_import_named(wat: Wat) -> None:
    async def get(x: int) -> int:
        await asyncio.sleep(0)
        if x == 3:
            raise ValueError("boom")
        return x

    with pytest.raises(Trap, match=r"host import get raised ValueError: boom"):
        await _round_trips(wat, get, 6)


@aio
async def test_a_value_that_cannot_be_lowered_after_the_await_names_the_import(wat: Wat) -> None:
    # as on the synchronous path: a TypeError naming the import (embedder-api
    # platform-class limit 2), the instance poisoned
    async def get(x: int) -> Any:
        await asyncio.sleep(0)
        return "not a number" if x == 2 else x

    with pytest.raises(HostResultError, match="host import get returned a value of the wrong"):
        await _round_trips(wat, get, 4)


@aio
async def test_the_host_task_shows_the_host_coroutine(wat: Wat) -> None:
    shown: list[str] = []

    async def get(x: int) -> int:
        await asyncio.sleep(0)
        shown.append(repr(asyncio.current_task()))
        return x

    assert await _round_trips(wat, get, 2) == 1
    assert len(shown) == 2
    assert all("name='get'" in r and ".get() running at" in r for r in shown), shown
