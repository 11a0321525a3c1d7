"""The task-model boundary: async imports, park/resume, export calls, streams.

Rows, all in one process on one asyncio loop (architecture.md §4):

* **async import round trip**: a stackful export calls an ``async`` host
  import through an async ``canon lower`` in a loop; the host function
  settles at once (a plain function, or a coroutine that never awaits) or
  after ``await asyncio.sleep(0)``. Time per guest call. The async lower is
  a plain host function; a result available at once is lowered on the
  guest's fiber (``RETURNED``, no subtask); a coroutine's first step runs at
  once (eager start), so one that never awaits settles the same way, and
  only one that suspends costs a subtask, a task and a park of the guest.
  The note gives the event-loop iterations per call (an untimed run with a
  ticker task): a coroutine that settles after ``sleep(0)`` resumes the
  guest from its task's last step, so one iteration (the sleep's own).
* **park/resume**: a sync-lifted export calls a ``suspending()``-marked sync
  import whose coroutine the guest's fiber parks on. Time per guest call.
* **sync export call**: ``await inst.exports.add(1, 2)`` on an instance that
  runs on the task model (it has an async import) and on the plain path.
* **stream<u8>**: a guest writes (guest→host) or reads (host→guest) a
  ``stream<u8>`` in chunks of one size; the host reads with
  ``stream.read(chunk)`` or feeds an async generator of chunks. MB/s of
  payload (1 MB = 10^6 bytes).

Every row runs twice in the same process: on the compiled call path (when it
is built and not switched off) and, marked ``[pure]``, on instances made
under ``pure_stores()``; the export row also has the C-extension floor
(``bench/c_floor.c``). The run ends with the compiled call path's acceptance
table: pure / compiled / floor side by side.

Run: ``.venv/bin/python bench/async_boundary.py [--quick]``. Each figure is
the best of the timed repeats (process CPU time, ``time.process_time``,
cyclic GC off during a repeat); targets: >= 100 k async import round trips/s, >= 1 GB/s for
``stream<u8>`` at 64 KiB chunks; for the compiled path >= 500 k/s settled at once,
>= 2 GB/s at 16 KiB chunks both ways, the awaited ``add`` <= 3x the C floor.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import platform
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polyengine
from polyengine.engine import _callpath, call_path
from polyengine_protocol import suspending

sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from bench import _cfloor
    from bench._wat import compile_component
else:
    import _cfloor
    from _wat import compile_component


clock = time.process_time  # CPU time: other processes on a busy machine do not count
BUF = 65536  # guest buffer of the stream rows (up to 256 KiB past it)

_LIBC = """
  (core module $libc
    (memory (export "mem") 8)
    (global $bump (mut i32) (i32.const 4096))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $r i32)
      (local.set $r
        (i32.and
          (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
          (i32.sub (i32.const 0) (local.get 2))))
      (global.set $bump (i32.add (local.get $r) (local.get 3)))
      (local.get $r)))
  (core instance $libc (instantiate $libc))
"""
_MEM = '(memory (core memory $libc "mem"))'
_OPTS = f'{_MEM} (realloc (core func $libc "realloc"))'

#: the task-model component: ``add`` (sync lift), ``round-trips(n)`` (async
#: lower of ``get`` n times), ``naps(n)`` (sync lift over the suspending
#: ``nap``), ``produce(total, chunk)`` and ``consume(s, chunk)`` (stream<u8>)
TASK_MODEL = f"""(component {_LIBC}
  (type $bs (stream u8))
  (import "get" (func $get async (param "x" u32) (result u32)))
  (import "nap" (func $nap (param "x" u32) (result u32)))
  (core func $ret-u32 (canon task.return (result u32)))
  (core func $ret-bs (canon task.return (result $bs)))
  (core func $get-async (canon lower (func $get) async {_OPTS}))
  (core func $nap (canon lower (func $nap)))
  (core func $ws.new (canon waitable-set.new))
  (core func $ws.wait (canon waitable-set.wait {_MEM}))
  (core func $join (canon waitable.join))
  (core func $st.drop (canon subtask.drop))
  (core func $stream.new (canon stream.new $bs))
  (core func $stream.write (canon stream.write $bs {_MEM}))
  (core func $stream.read (canon stream.read $bs {_MEM}))
  (core func $stream.drop-w (canon stream.drop-writable $bs))
  (core func $stream.drop-r (canon stream.drop-readable $bs))
  (core module $m
    (import "libc" "mem" (memory 8))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
    (import "" "ret-bs" (func $ret-bs (param i32)))
    (import "" "get-async" (func $get-async (param i32 i32) (result i32)))
    (import "" "nap" (func $nap (param i32) (result i32)))
    (import "" "ws.new" (func $ws.new (result i32)))
    (import "" "ws.wait" (func $ws.wait (param i32 i32) (result i32)))
    (import "" "join" (func $join (param i32 i32)))
    (import "" "st.drop" (func $st.drop (param i32)))
    (import "" "stream.new" (func $stream.new (result i64)))
    (import "" "stream.write" (func $stream.write (param i32 i32 i32) (result i32)))
    (import "" "stream.read" (func $stream.read (param i32 i32 i32) (result i32)))
    (import "" "stream.drop-w" (func $stream.drop-w (param i32)))
    (import "" "stream.drop-r" (func $stream.drop-r (param i32)))
    (func (export "add") (param i32 i32) (result i32)
      (i32.add (local.get 0) (local.get 1)))
    (func (export "round-trips") (param $n i32)
      (local $i i32) (local $st i32) (local $ws i32) (local $sum i32)
      (local.set $ws (call $ws.new))
      (block $done
        (loop $next
          (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
          (local.set $st (call $get-async (local.get $i) (i32.const 64)))
          (if (i32.ne (i32.and (local.get $st) (i32.const 15)) (i32.const 2 (; RETURNED ;)))
            (then
              (call $join (i32.shr_u (local.get $st) (i32.const 4)) (local.get $ws))
              (loop $wait
                (drop (call $ws.wait (local.get $ws) (i32.const 32)))
                (br_if $wait (i32.ne (i32.load (i32.const 36)) (i32.const 2))))
              (call $st.drop (i32.shr_u (local.get $st) (i32.const 4)))))
          (local.set $sum (i32.add (local.get $sum) (i32.load (i32.const 64))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $next)))
      (call $ret-u32 (local.get $sum)))
    (func (export "naps") (param $n i32) (result i32)
      (local $i i32) (local $sum i32)
      (block $done
        (loop $next
          (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
          (local.set $sum (i32.add (local.get $sum) (call $nap (local.get $i))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $next)))
      (local.get $sum))
    (func (export "produce") (param $total i32) (param $chunk i32)
      (local $rw i64) (local $w i32) (local $ret i32) (local $n i32)
      (local.set $rw (call $stream.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (block $done
        (loop $next
          (br_if $done (i32.eqz (local.get $total)))
          (local.set $n (local.get $chunk))
          (if (i32.lt_u (local.get $total) (local.get $n)) (then (local.set $n (local.get $total))))
          (local.set $ret (call $stream.write (local.get $w) (i32.const {BUF}) (local.get $n)))
          (local.set $total (i32.sub (local.get $total) (i32.shr_u (local.get $ret) (i32.const 4))))
          (br_if $done (i32.and (local.get $ret) (i32.const 15)))
          (br $next)))
      (call $stream.drop-w (local.get $w)))
    (func (export "consume") (param $s i32) (param $chunk i32)
      (local $ret i32) (local $count i32)
      (loop $more
        (local.set $ret (call $stream.read (local.get $s) (i32.const {BUF}) (local.get $chunk)))
        (local.set $count (i32.add (local.get $count) (i32.shr_u (local.get $ret) (i32.const 4))))
        (br_if $more (i32.eqz (i32.and (local.get $ret) (i32.const 15)))))
      (call $stream.drop-r (local.get $s))
      (call $ret-u32 (local.get $count))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret-u32" (func $ret-u32)) (export "ret-bs" (func $ret-bs))
      (export "get-async" (func $get-async)) (export "nap" (func $nap))
      (export "ws.new" (func $ws.new)) (export "ws.wait" (func $ws.wait))
      (export "join" (func $join)) (export "st.drop" (func $st.drop))
      (export "stream.new" (func $stream.new)) (export "stream.write" (func $stream.write))
      (export "stream.read" (func $stream.read)) (export "stream.drop-w" (func $stream.drop-w))
      (export "stream.drop-r" (func $stream.drop-r))))))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
  (func (export "round-trips") async (param "n" u32) (result u32)
    (canon lift (core func $i "round-trips") async))
  (func (export "naps") (param "n" u32) (result u32)
    (canon lift (core func $i "naps")))
  (func (export "produce") async (param "total" u32) (param "chunk" u32) (result $bs)
    (canon lift (core func $i "produce") async))
  (func (export "consume") async (param "s" $bs) (param "chunk" u32) (result u32)
    (canon lift (core func $i "consume") async))
)"""

#: the same ``add`` with nothing async: the plain synchronous path
PLAIN = """(component
  (core module $m
    (func (export "add") (param i32 i32) (result i32)
      (i32.add (local.get 0) (local.get 1))))
  (core instance $i (instantiate $m))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
)"""

CHUNKS = (("1200 B", 1200), ("16 KiB", 16384), ("64 KiB", 65536), ("256 KiB", 262144))
ROUND_TRIP_TARGET_US = 10.0  # >= 100 k round trips/s
STREAM_TARGET_MBPS = 1000.0  # >= 1 GB/s at 64 KiB chunks
# the compiled call path's targets (bench/README.md)
COMPILED_ROUND_TRIP_US = 2.0  # >= 500 k round trips/s, settled at once
COMPILED_STREAM_16K_MBPS = 2000.0  # >= 2 GB/s at 16 KiB chunks, both ways
COMPILED_ADD_VS_C = 3.0  # awaited add <= 3x the C floor
PURE = " [pure]"


@dataclass(frozen=True)
class Settings:
    repeats: int
    calls: int  # guest calls per repeat (round trips, naps)
    exports: int  # export calls per repeat
    stream_bytes: int  # payload per stream repeat
    min_chunks: int  # at least this many chunks per stream repeat


FULL = Settings(repeats=5, calls=20_000, exports=5_000, stream_bytes=32 << 20, min_chunks=2_000)
QUICK = Settings(repeats=2, calls=1_000, exports=300, stream_bytes=2 << 20, min_chunks=100)


async def best_of(repeats: int, body: Callable[[], Awaitable[object]]) -> float:
    """The fastest of ``repeats`` timed runs of ``body`` (after one untimed run), in seconds."""
    await body()
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            t0 = clock()
            await body()
            best = min(best, clock() - t0)
        finally:
            gc.enable()
    return best


# -- host functions -------------------------------------------------------------------


def get_plain(x: int) -> int:
    return x


async def get_ready(x: int) -> int:
    return x


async def get_after_sleep(x: int) -> int:
    await asyncio.sleep(0)
    return x


@suspending
async def nap_ready(x: int) -> int:
    return x


@suspending
async def nap_after_sleep(x: int) -> int:
    await asyncio.sleep(0)
    return x


async def loop_iterations(n: int, call: Callable[[int], Awaitable[object]]) -> float:
    """Event-loop iterations per guest call while ``call(n)`` runs (an untimed run).

    A ticker task that yields once per iteration counts them (``asyncio.sleep(0)``
    reschedules it for the next one).
    """
    ticks = 0
    stop = False

    async def ticker() -> None:
        nonlocal ticks
        while not stop:
            ticks += 1
            await asyncio.sleep(0)

    counter = asyncio.get_running_loop().create_task(ticker())
    await asyncio.sleep(0)
    start = ticks
    await call(n)
    spent = ticks - start
    stop = True
    await counter
    return spent / n


@dataclass
class Row:
    section: str
    label: str
    value: float
    unit: str
    note: str = ""


async def instance(wasm: bytes, imports: dict[str, Any] | None = None, pure: bool = False) -> Any:
    """The instance; ``pure``: on the pure-Python call path (``pure_stores``)."""
    if pure:
        with _callpath.pure_stores():
            return await polyengine.instantiate(wasm, imports or {})
    return await polyengine.instantiate(wasm, imports or {})


PATHS = ((False, ""), (True, PURE))


async def import_rows(wasm: bytes, s: Settings) -> list[Row]:
    rows: list[Row] = []
    n = s.calls
    cases: list[tuple[str, Callable[[int], Any]]] = [
        ("plain function, settled at once", get_plain),
        ("coroutine, settled without awaiting", get_ready),
        ("coroutine, after await asyncio.sleep(0)", get_after_sleep),
    ]
    for (label, get), (pure, mark) in ((c, p) for c in cases for p in PATHS):
        inst = await instance(wasm, {"get": get, "nap": nap_ready}, pure)
        with inst:
            f = inst.exports.round_trips
            expected = n * (n - 1) // 2 % (1 << 32)

            async def body(f: Any = f, expected: int = expected) -> None:
                assert await f(n) == expected

            t = await best_of(s.repeats, body)
            iters = await loop_iterations(n, f)
        us = t / n * 1e6
        rows.append(
            Row(
                "async import round trip (async lower)",
                label + mark,
                us,
                "us",
                f"{1 / us * 1e3:7.1f} k/s, {us / ROUND_TRIP_TARGET_US:5.2f}x target, "
                f"{iters:.2f} loop it./call",
            )
        )
    return rows


async def park_rows(wasm: bytes, s: Settings) -> list[Row]:
    rows: list[Row] = []
    n = s.calls
    naps = (
        ("suspending import, coroutine settled without awaiting", nap_ready),
        ("suspending import, after await asyncio.sleep(0)", nap_after_sleep),
    )
    for (name, nap), (pure, mark) in ((c, p) for c in naps for p in PATHS):
        label = name + mark
        inst = await instance(wasm, {"get": get_plain, "nap": nap}, pure)
        with inst:
            f = inst.exports.naps
            expected = n * (n - 1) // 2 % (1 << 32)

            async def body(f: Any = f, expected: int = expected) -> None:
                assert await f(n) == expected

            t = await best_of(s.repeats, body)
            iters = await loop_iterations(n, f)
        us = t / n * 1e6
        rows.append(
            Row(
                "park/resume cycle (sync lower, parked fiber)",
                label,
                us,
                "us",
                f"{1 / us * 1e3:7.1f} k/s, {iters:.2f} loop it./call",
            )
        )
    return rows


async def export_rows(wasm: bytes, plain: bytes, s: Settings) -> list[Row]:
    n = s.exports
    times: dict[str, float] = {}
    c_add = _cfloor.add_floor()
    if c_add is not None:
        assert c_add(1, 2) == 3

        async def floor_body() -> None:
            for _ in range(n):
                c_add(1, 2)

        times["C extension floor (bench/c_floor.c), no coroutine"] = (
            await best_of(s.repeats, floor_body) / n * 1e6
        )
    shapes = (
        ("plain path", plain, {}),
        ("task-model instance", wasm, {"get": get_plain, "nap": nap_ready}),
    )
    for (name, w, imports), (pure, mark) in ((c, p) for c in shapes for p in PATHS):
        label = name + mark
        inst = await instance(w, imports, pure)
        with inst:
            add = inst.exports.add

            async def body(add: Any = add) -> None:
                for _ in range(n):
                    await add(1, 2)

            times[label] = await best_of(s.repeats, body) / n * 1e6
    base = times["plain path"]
    return [
        Row(
            "sync export add(u32, u32) -> u32, awaited", label, us, "us", f"{us / base:6.2f}x plain"
        )
        for label, us in times.items()
    ]


def chunk_count(s: Settings, chunk: int) -> int:
    return max(s.min_chunks, s.stream_bytes // chunk)


async def stream_rows(wasm: bytes, s: Settings) -> list[Row]:
    rows: list[Row] = []
    for pure, mark in PATHS:
        rows += await _stream_rows(wasm, s, pure, mark)
    return rows


async def _stream_rows(wasm: bytes, s: Settings, pure: bool, mark: str) -> list[Row]:
    rows: list[Row] = []
    inst = await instance(wasm, {"get": get_plain, "nap": nap_ready}, pure)
    with inst:
        for name, chunk in CHUNKS:
            total = chunk * chunk_count(s, chunk)
            payload = bytes(chunk)

            async def out(chunk: int = chunk, total: int = total) -> None:
                stream = await inst.exports.produce(total, chunk)
                got = 0
                while True:
                    data = await stream.read(chunk)
                    if not data:
                        break
                    got += len(data)
                assert got == total, (got, total)

            async def into(
                chunk: int = chunk, total: int = total, payload: bytes = payload
            ) -> None:
                async def source() -> AsyncIterator[bytes]:
                    for _ in range(total // chunk):
                        yield payload

                assert await inst.exports.consume(source(), chunk) == total

            for direction, body in (("guest->host", out), ("host->guest", into)):
                t = await best_of(s.repeats, body)
                mbps = total / t / 1e6
                note = f"{mbps / STREAM_TARGET_MBPS:5.2f}x target" if chunk == 65536 else ""
                label = f"{direction} {name} chunks{mark}"
                rows.append(Row("stream<u8>", label, mbps, "MB/s", note))
    return rows


def acceptance(rows: list[Row]) -> str:
    """The compiled call path's targets: pure / compiled / floor side by side."""
    by = {(r.section, r.label): r.value for r in rows}
    out = [
        "== compiled call path: pure / compiled / floor (one process)",
        f"  {'':<44}{'pure':>12}{'compiled':>12}{'floor':>12}  target",
    ]

    def line(  # noqa: PLR0917 - one table row
        label: str, pure: float, compiled: float, floor: str, target: str, ok: bool
    ) -> None:
        verdict = "meets target" if ok else "MISSES target"
        out.append(f"  {label:<44}{pure:12.3f}{compiled:12.3f}{floor:>12}  {target:<26}{verdict}")

    rt = "async import round trip (async lower)"
    key = "plain function, settled at once"
    if (rt, key) in by:
        c, p = by[rt, key], by[rt, key + PURE]
        line(
            f"{key} (us)", p, c, "", f">= 500 k/s ({1e3 / c:.0f} k/s)", c <= COMPILED_ROUND_TRIP_US
        )
    ex = "sync export add(u32, u32) -> u32, awaited"
    floor_key = (ex, "C extension floor (bench/c_floor.c), no coroutine")
    if (ex, "plain path") in by:
        c, p = by[ex, "plain path"], by[ex, "plain path" + PURE]
        if floor_key in by:
            f = by[floor_key]
            line("await add(1, 2), plain path (us)", p, c, f"{f:.3f}",
                 f"<= 3x C floor ({c / f:.2f}x)", c <= COMPILED_ADD_VS_C * f)  # fmt: skip
        else:
            line("await add(1, 2), plain path (us)", p, c, "n/a", "<= 3x C floor", False)
    for direction in ("guest->host", "host->guest"):
        key = f"{direction} 16 KiB chunks"
        if ("stream<u8>", key) in by:
            c, p = by["stream<u8>", key], by["stream<u8>", key + PURE]
            line(f"stream<u8> {key} (MB/s)", p, c, "", ">= 2 GB/s", c >= COMPILED_STREAM_16K_MBPS)
    return "\n".join(out)


def render(rows: list[Row]) -> str:
    out: list[str] = []
    section = None
    for r in rows:
        if r.section != section:
            section = r.section
            out.append(f"== {section}")
        out.append(f"  {r.label:<56} {r.value:10.2f} {r.unit:<4}  {r.note}".rstrip())
    return "\n".join(out)


async def run(s: Settings, only: set[str] | None) -> list[Row]:
    wasm = compile_component(TASK_MODEL)
    plain = compile_component(PLAIN)
    rows: list[Row] = []
    if only is None or "import" in only:
        rows += await import_rows(wasm, s)
    if only is None or "park" in only:
        rows += await park_rows(wasm, s)
    if only is None or "export" in only:
        rows += await export_rows(wasm, plain, s)
    if only is None or "stream" in only:
        rows += await stream_rows(wasm, s)
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    ap.add_argument(
        "--only",
        action="append",
        choices=("import", "park", "export", "stream"),
        help="run only these sections (repeatable)",
    )
    args = ap.parse_args(argv)
    s = QUICK if args.quick else FULL
    print(
        f"polyengine async boundary benchmark, python {platform.python_version()}, "
        f"wasmtime-py {version('wasmtime')}"
    )
    print(f"{'quick' if args.quick else 'full'} run: best of {s.repeats} repeats, CPU time")
    print(f"call path: {call_path()} (rows marked [pure] use the pure path)")
    rows = asyncio.run(run(s, set(args.only) if args.only else None))
    print(render(rows))
    print(acceptance(rows))


if __name__ == "__main__":
    main()
