"""Parked calls: how the task model scales with the number of calls waiting at once.

N calls of one async export are started together; each calls an async host
import whose future the bench settles only after all N have parked; then
every future is settled and the calls complete. Two lifts:

* **stackful**: ``canon lift ... async`` without a callback; the guest calls
  the import through a sync ``canon lower``, so each parked call holds a
  fiber.
* **callback**: ``canon lift ... async (callback ...)``; the guest calls the
  import through an async lower, returns ``WAIT`` and needs no fiber.

Printed per size and lift: seconds to park all N calls and seconds to
complete them (wall clock on one asyncio loop), with issue 19's targets
beside them (10,000 calls <= 1 s on either lift, 100,000 <= 10 s
callback-lifted). A store runs at most ``Limits.max_stackful`` (10,000 by
default) stackful activations at once; a stackful size beyond it cannot park
every call before settling any, so there the host settles each ``get`` one
loop iteration after the call makes it: "park" is then the time until the
first settlement (the cap's worth of calls parked) and "complete" the rest.
A size whose run would take longer than ``--budget`` seconds (projected
from the size before it, twice linear growth assumed) is skipped and
reported as such, so the script always ends.

Run: ``.venv/bin/python bench/concurrency.py [--sizes 1000,10000,100000] [--budget 60]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import platform
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import polyengine

sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from bench._wat import compile_component
else:
    from _wat import compile_component

_LIBC = """
  (core module $libc
    (memory (export "mem") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 0)))
  (core instance $libc (instantiate $libc))
"""

PARKED = f"""(component {_LIBC}
  (import "get" (func $get async (param "x" u32) (result u32)))
  (core func $ret (canon task.return (result u32)))
  (core func $get (canon lower (func $get)))
  (core func $get-async (canon lower (func $get) async (memory (core memory $libc "mem"))))
  (core func $ws.new (canon waitable-set.new))
  (core func $join (canon waitable.join))
  (core func $st.drop (canon subtask.drop))
  (core func $ctx.get (canon context.get i32 0))
  (core func $ctx.set (canon context.set i32 0))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret" (func $ret (param i32)))
    (import "" "get" (func $get (param i32) (result i32)))
    (import "" "get-async" (func $get-async (param i32 i32) (result i32)))
    (import "" "ws.new" (func $ws.new (result i32)))
    (import "" "join" (func $join (param i32 i32)))
    (import "" "st.drop" (func $st.drop (param i32)))
    (import "" "ctx.get" (func $ctx.get (result i32)))
    (import "" "ctx.set" (func $ctx.set (param i32)))
    (func (export "wait") (param i32)
      (call $ret (i32.add (call $get (local.get 0)) (i32.const 1))))
    (func (export "wait-cb") (param i32) (result i32)
      (local $st i32) (local $ws i32)
      ;; every call gets its own result slot (slot 0 is unused)
      (local.set $st (call $get-async (local.get 0) (i32.const 0)))
      (local.set $ws (call $ws.new))
      (call $ctx.set (local.get $ws))
      (call $join (i32.shr_u (local.get $st) (i32.const 4)) (local.get $ws))
      (i32.or (i32.const 2 (; WAIT ;)) (i32.shl (local.get $ws) (i32.const 4))))
    (func (export "wait-cb-cb") (param $code i32) (param $index i32) (param $payload i32)
      (result i32)
      (if (i32.ne (local.get $payload) (i32.const 2 (; RETURNED ;)))
        (then (return (i32.or (i32.const 2) (i32.shl (call $ctx.get) (i32.const 4))))))
      (call $st.drop (local.get $index))
      (call $ret (i32.const 1))
      (i32.const 0 (; EXIT ;))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret" (func $ret)) (export "get" (func $get))
      (export "get-async" (func $get-async)) (export "ws.new" (func $ws.new))
      (export "join" (func $join)) (export "st.drop" (func $st.drop))
      (export "ctx.get" (func $ctx.get)) (export "ctx.set" (func $ctx.set))))))
  (func (export "wait") async (param "x" u32) (result u32)
    (canon lift (core func $i "wait") async))
  (func (export "wait-cb") async (param "x" u32) (result u32)
    (canon lift (core func $i "wait-cb") async (callback (core func $i "wait-cb-cb"))))
)"""

TARGETS = {
    ("stackful", 10_000): 1.0,
    ("callback", 10_000): 1.0,
    ("callback", 100_000): 10.0,
}


CAP = polyengine.Limits().max_stackful
assert CAP is not None


async def measure(wasm: bytes, lift: str, n: int) -> tuple[float, float]:
    """Seconds to park ``n`` calls of the ``lift`` export, and to complete them."""
    loop = asyncio.get_running_loop()
    pending: list[asyncio.Future[int]] = []
    rolling = lift == "stackful" and n > CAP
    first_settled: list[float] = []

    def settle(fut: asyncio.Future[int], x: int) -> None:
        if not first_settled:
            first_settled.append(time.perf_counter())
        fut.set_result(x)

    def get(x: int) -> asyncio.Future[int]:
        fut: asyncio.Future[int] = loop.create_future()
        if rolling:
            loop.call_soon(settle, fut, x)
        else:
            pending.append(fut)
        return fut

    inst = await polyengine.instantiate(wasm, {"get": get})
    export = inst.exports.wait if lift == "stackful" else inst.exports.wait_cb
    try:
        t0 = time.perf_counter()
        calls = [asyncio.ensure_future(export(k)) for k in range(n)]
        if rolling:
            results = await asyncio.gather(*calls)
            t2 = time.perf_counter()
            return first_settled[0] - t0, t2 - first_settled[0]
        while len(pending) < n:
            await asyncio.sleep(0)
        parked = time.perf_counter() - t0
        t1 = time.perf_counter()
        for k, fut in enumerate(pending):
            fut.set_result(k)
        results = await asyncio.gather(*calls)
        completed = time.perf_counter() - t1
        assert len(results) == n
    finally:
        inst.close()
    return parked, completed


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--budget", type=float, default=120.0, help="seconds one run may take")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    wasm = compile_component(PARKED)
    print(
        f"# parked calls — Python {platform.python_version()}, "
        f"wasmtime {version('wasmtime')}, {platform.machine()}"
    )
    print(f"# stackful calls beyond Limits.max_stackful ({CAP:,}) are settled as they park")
    print(f"{'lift':10} {'calls':>8} {'park s':>9} {'complete s':>11}  target (complete)")
    for lift in ("stackful", "callback"):
        last: tuple[int, float] | None = None
        for n in sizes:
            target = TARGETS.get((lift, n))
            want = f"<= {target:g} s" if target is not None else "-"
            if last is not None:
                projected = 2 * last[1] * n / last[0]
                if projected > args.budget:
                    print(
                        f"{lift:10} {n:>8} {'skipped':>9} {'skipped':>11}  {want}"
                        f"  (projected {projected:.0f} s > --budget {args.budget:g} s)"
                    )
                    continue
            gc.collect()
            parked, completed = await measure(wasm, lift, n)
            met = "" if target is None else ("  met" if completed <= target else "  MISSED")
            note = "  (settled as they park)" if lift == "stackful" and n > CAP else ""
            print(f"{lift:10} {n:>8} {parked:>9.3f} {completed:>11.3f}  {want}{met}{note}")
            last = (n, parked + completed)


if __name__ == "__main__":
    asyncio.run(main())
