"""Scale-out with ``polyengine.pool``: a CPU-bound export on 1 and 2 worker processes.

http-serve.md §7 (a process per core). The guest, in the component text
format, exports ``spin(n)`` (``n`` xorshift steps: a guest loop, no host
calls) and ``add(a, b)``. Printed:

* the time of one ``spin`` call in process (calibrated to ``--call-ms``);
* throughput of ``spin`` calls on a pool of 1 worker and of 2 workers,
  side by side (alternating runs, the best of ``--rounds``), with the CPU
  the workers got (cores used, from ``/proc``: on a machine shared with
  other work, 2 workers may get less than 2 cores), and the ratio
  (target: at least 1.7x on 2 cores);
* the per-call overhead: ``await pool.exports.add(1, 2)`` against
  ``await instance.exports.add(1, 2)`` in process, sequential calls.

Absolute numbers depend on the machine and its load; compare ratios taken
in one run. ``--quick`` is a smoke run of a few seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _wat import compile_component

import polyengine
from polyengine.pool import Pool

GUEST = """
(component
  (core module $m
    (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
    (func (export "spin") (param $n i32) (result i32)
      (local $x i32)
      (local.set $x (i32.const 1))
      (block $done
        (loop $top
          (br_if $done (i32.eqz (local.get $n)))
          (local.set $x (i32.xor (local.get $x) (i32.shl (local.get $x) (i32.const 13))))
          (local.set $x (i32.xor (local.get $x) (i32.shr_u (local.get $x) (i32.const 17))))
          (local.set $x (i32.xor (local.get $x) (i32.shl (local.get $x) (i32.const 5))))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br $top)))
      (local.get $x)))
  (core instance $i (instantiate $m))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
  (func (export "spin") (param "n" u32) (result u32) (canon lift (core func $i "spin")))
)
"""


async def calibrate(component: bytes, call_ms: float) -> tuple[int, float]:
    """Steps of ``spin`` taking about ``call_ms`` in process, and one call's time (s)."""
    instance = await polyengine.instantiate(component)
    try:
        steps = 1_000_000
        while True:
            started = time.perf_counter()
            await instance.exports.spin(steps)
            took = time.perf_counter() - started
            if took > 0.01 or steps >= 1 << 31:
                break
            steps *= 4
        steps = max(1, min((1 << 32) - 1, int(steps * call_ms / 1000 / took)))
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            await instance.exports.spin(steps)
            best = min(best, time.perf_counter() - started)
        return steps, best
    finally:
        instance.close()


def cpu_seconds(pids: list[int]) -> float | None:
    """CPU time (user + system) the processes ``pids`` have used, from ``/proc`` (Linux)."""
    total = 0
    try:
        for pid in pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None
    return total / os.sysconf("SC_CLK_TCK")


async def throughput(pool: Pool, steps: int, calls: int) -> tuple[float, float | None]:
    """``spin`` calls per second with ``calls`` calls offered at once, and the cores used."""
    pids = [w.pid for w in pool.workers]
    cpu = cpu_seconds(pids)
    started = time.perf_counter()
    await asyncio.gather(*(pool.exports.spin(steps) for _ in range(calls)))
    wall = time.perf_counter() - started
    after = cpu_seconds(pids)
    cores = None if cpu is None or after is None else (after - cpu) / wall
    return calls / wall, cores


async def latency_in_process(component: bytes, calls: int) -> float:
    instance = await polyengine.instantiate(component)
    try:
        add = instance.exports.add
        for _ in range(100):
            await add(1, 2)
        started = time.perf_counter()
        for _ in range(calls):
            await add(1, 2)
        return (time.perf_counter() - started) / calls
    finally:
        instance.close()


async def latency_pool(pool: Pool, calls: int) -> float:
    add = pool.exports.add
    for _ in range(100):
        await add(1, 2)
    started = time.perf_counter()
    for _ in range(calls):
        await add(1, 2)
    return (time.perf_counter() - started) / calls


async def main(args: argparse.Namespace) -> None:
    component = compile_component(GUEST)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"polyengine.pool scale-out (cores available: {cores})")
    steps, one = await calibrate(component, args.call_ms)
    print(f"  spin({steps}): {one * 1e3:.1f} ms per call in process "
          f"({1 / one:.1f} calls/s on one core)")

    best = {1: 0.0, 2: 0.0}
    cores: dict[int, float | None] = {1: None, 2: None}
    async with Pool(component, workers=1) as one_worker, Pool(component, workers=2) as two:
        pools = {1: one_worker, 2: two}
        for workers, pool in pools.items():  # warm both
            await throughput(pool, steps, workers)
        for _ in range(args.rounds):
            for workers, pool in pools.items():
                rate, used = await throughput(pool, steps, args.calls)
                if rate > best[workers]:
                    best[workers], cores[workers] = rate, used
        overhead_pool = await latency_pool(one_worker, args.latency_calls)
    overhead_local = await latency_in_process(component, args.latency_calls)

    print(f"  throughput, {args.calls} calls offered at once (best of {args.rounds}):")
    for workers, label in ((1, "1 worker: "), (2, "2 workers:")):
        used = cores[workers]
        note = "" if used is None else f"  (the workers used {used:.2f} cores)"
        print(f"    {label} {best[workers]:8.1f} calls/s{note}")
    ratio = best[2] / best[1]
    verdict = "meets" if ratio >= 1.7 else "misses"
    print(f"  ratio 2 workers / 1 worker: {ratio:.2f}x ({verdict} the 1.7x target on 2 cores)")
    if cores[1] and cores[2]:
        per_core = {w: best[w] / c for w, c in cores.items() if c}
        print(f"  per core the workers got: {per_core[1]:.1f} and {per_core[2]:.1f} calls/s "
              f"({per_core[2] / per_core[1]:.2f}x: what a second worker costs per call)")
    print(f"  per-call overhead, add(1, 2), {args.latency_calls} sequential calls:")
    print(f"    in process: {overhead_local * 1e6:8.1f} us per call")
    print(f"    pool:       {overhead_pool * 1e6:8.1f} us per call")
    print(f"    difference: {(overhead_pool - overhead_local) * 1e6:8.1f} us per call "
          f"({overhead_pool / overhead_local:.0f}x)")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--call-ms", type=float, default=50.0,
                        help="the in-process time of one spin call (default 50 ms)")
    parser.add_argument("--calls", type=int, default=40,
                        help="spin calls per throughput run (default 40)")
    parser.add_argument("--rounds", type=int, default=3, help="throughput runs per pool")
    parser.add_argument("--latency-calls", type=int, default=3000)
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    args = parser.parse_args(argv)
    if args.quick:
        args.call_ms, args.calls, args.rounds, args.latency_calls = 5.0, 8, 1, 200
    return args


if __name__ == "__main__":
    asyncio.run(main(parse()))
