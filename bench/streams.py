"""Stream throughput at the host boundary (embedder-api.md A5, A21).

Rows, each at several chunk sizes, in MB/s (median of the repeats, best in
brackets):

* ``stream-pass``: a host stream handed through a guest and back (the A5
  identity round trip, ``echo(s) -> s``); the payload then moves host↔host
  without touching guest memory;
* ``host↔guest``: the same bytes relayed by a guest (``relay(s) -> out``:
  every chunk is copied into guest memory and out again), the path a
  pass-through would take without A5;
* ``host→guest`` (64 KiB chunks): an async generator of chunks lowered
  as a ``stream<u8>`` argument and drained by a guest reader (``sink``),
  the host producer pump's own cost;
* ``write_direct`` / ``read_direct`` (A21, 256 KiB chunks): a host direct
  session filling a guest reader's buffer (``sink``), and one draining a
  guest writer (``spew``); the embedder's own copy is the only one.

Run from the repository root: ``.venv/bin/python bench/streams.py``
(``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polyengine

sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from bench._wat import compile_component
else:
    from _wat import compile_component


SIZES = (1200, 16 * 1024, 256 * 1024)
DIRECT = 256 * 1024
PUMP = 64 * 1024
#: where the guest writes from and reads into (two 256 KiB regions)
SRC, BUF = 65536, 65536 + 262144

COMPONENT = f"""(component
  (core module $mem (memory (export "mem") 10))
  (core instance $mem (instantiate $mem))
  (type $bs (stream u8))
  (core func $ret-u32 (canon task.return (result u32)))
  (core func $ret-bs (canon task.return (result $bs)))
  (core func $new (canon stream.new $bs))
  (core func $read (canon stream.read $bs (memory (core memory $mem "mem"))))
  (core func $write (canon stream.write $bs (memory (core memory $mem "mem"))))
  (core func $drop-r (canon stream.drop-readable $bs))
  (core func $drop-w (canon stream.drop-writable $bs))
  (core module $m
    (import "" "mem" (memory 10))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
    (import "" "ret-bs" (func $ret-bs (param i32)))
    (import "" "new" (func $new (result i64)))
    (import "" "read" (func $read (param i32 i32 i32) (result i32)))
    (import "" "write" (func $write (param i32 i32 i32) (result i32)))
    (import "" "drop-r" (func $drop-r (param i32)))
    (import "" "drop-w" (func $drop-w (param i32)))
    ;; write n bytes at ptr to w; 0 when the reader went away
    (func $write-all (param $w i32) (param $ptr i32) (param $n i32) (result i32)
      (local $code i32) (local $k i32)
      (loop $more
        (local.set $code (call $write (local.get $w) (local.get $ptr) (local.get $n)))
        (local.set $k (i32.shr_u (local.get $code) (i32.const 4)))
        (local.set $ptr (i32.add (local.get $ptr) (local.get $k)))
        (local.set $n (i32.sub (local.get $n) (local.get $k)))
        (if (i32.ne (i32.and (local.get $code) (i32.const 15)) (i32.const 0))
          (then (return (i32.const 0))))
        (br_if $more (i32.gt_u (local.get $n) (i32.const 0))))
      (i32.const 1))
    (func (export "echo") (param i32) (call $ret-bs (local.get 0)))
    (func (export "sink") (param $s i32) (param $cap i32)
      (local $code i32) (local $total i32)
      (loop $more
        (local.set $code (call $read (local.get $s) (i32.const {BUF}) (local.get $cap)))
        (local.set $total (i32.add (local.get $total) (i32.shr_u (local.get $code) (i32.const 4))))
        (br_if $more (i32.eqz (i32.and (local.get $code) (i32.const 15)))))
      (call $drop-r (local.get $s))
      (call $ret-u32 (local.get $total)))
    (func (export "spew") (param $n i32) (param $size i32)
      (local $rw i64) (local $w i32)
      (local.set $rw (call $new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (block $gone
        (loop $more
          (br_if $gone (i32.eqz (local.get $n)))
          (br_if $gone (i32.eqz
            (call $write-all (local.get $w) (i32.const {SRC}) (local.get $size))))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br $more)))
      (call $drop-w (local.get $w)))
    (func (export "relay") (param $in i32) (param $cap i32)
      (local $rw i64) (local $w i32) (local $code i32) (local $k i32)
      (local.set $rw (call $new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (block $end
        (loop $more
          (local.set $code (call $read (local.get $in) (i32.const {BUF}) (local.get $cap)))
          (local.set $k (i32.shr_u (local.get $code) (i32.const 4)))
          (if (i32.gt_u (local.get $k) (i32.const 0))
            (then (br_if $end (i32.eqz
              (call $write-all (local.get $w) (i32.const {BUF}) (local.get $k))))))
          (br_if $more (i32.eqz (i32.and (local.get $code) (i32.const 15))))))
      (call $drop-r (local.get $in))
      (call $drop-w (local.get $w))))
  (core instance $i (instantiate $m
    (with "" (instance
      (export "mem" (memory $mem "mem"))
      (export "ret-u32" (func $ret-u32)) (export "ret-bs" (func $ret-bs))
      (export "new" (func $new)) (export "read" (func $read)) (export "write" (func $write))
      (export "drop-r" (func $drop-r)) (export "drop-w" (func $drop-w))))))
  (func (export "echo") async (param "s" $bs) (result $bs)
    (canon lift (core func $i "echo") async))
  (func (export "sink") async (param "s" $bs) (param "cap" u32) (result u32)
    (canon lift (core func $i "sink") async))
  (func (export "spew") async (param "n" u32) (param "size" u32) (result $bs)
    (canon lift (core func $i "spew") async))
  (func (export "relay") async (param "s" $bs) (param "cap" u32) (result $bs)
    (canon lift (core func $i "relay") async))
)"""


async def feed(writer: Any, chunk: bytes, count: int) -> None:
    for _ in range(count):
        await writer.write_all(chunk)
    writer.close()


async def drain(stream: Any, size: int) -> int:
    total = 0
    while True:
        chunk = await stream.read(size)
        if not chunk:
            return total
        total += len(chunk)


async def stream_pass(inst: Any, size: int, count: int) -> int:
    stream, writer = polyengine.create_stream()
    back = await inst.exports.echo(stream)
    assert back is stream, "the A5 identity round trip should hand back the same stream"
    chunk = b"p" * size
    got, _ = await asyncio.gather(drain(back, size), feed(writer, chunk, count))
    return int(got)


async def relayed(inst: Any, size: int, count: int) -> int:
    stream, writer = polyengine.create_stream()
    out = await inst.exports.relay(stream, size)
    chunk = b"r" * size
    got, _ = await asyncio.gather(drain(out, size), feed(writer, chunk, count))
    return int(got)


async def host_to_guest(inst: Any, size: int, count: int) -> int:
    chunk = bytes(size)

    async def source() -> AsyncIterator[bytes]:
        for _ in range(count):
            yield chunk

    got = await inst.exports.sink(source(), size)
    assert got == size * count, got
    return int(got)


async def write_direct(inst: Any, size: int, count: int) -> int:
    stream, writer = polyengine.create_stream()
    call = asyncio.ensure_future(inst.exports.sink(stream, size))
    payload = memoryview(b"d" * size)
    left = [size * count]

    def produce(dest: Any) -> str:
        view = dest.remaining()
        n = min(len(view), left[0], size)
        view[:n] = payload[:n]
        dest.mark_written(n)
        left[0] -= n
        return "more" if left[0] else "done"

    sent = await writer.write_direct(produce)
    writer.close()
    got = await call
    assert got == sent == size * count, (got, sent)
    return int(sent)


async def read_direct(inst: Any, size: int, count: int) -> int:
    out = await inst.exports.spew(count, size)
    landing = bytearray(size)

    def consume(src: Any) -> str:
        view = src.remaining()
        n = len(view)
        landing[:n] = view
        src.mark_read(n)
        return "more"

    got = await out.read_direct(consume)
    assert got == size * count, got
    return int(got)


Row = Callable[[Any, int, int], Awaitable[int]]


async def measure(inst: Any, row: Row, size: int, count: int, repeats: int) -> list[float]:
    await row(inst, size, max(1, count // 10))  # warm-up
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        moved = await row(inst, size, count)
        rates.append(moved / (time.perf_counter() - t0) / 1e6)
    return rates


def fmt(rates: list[float]) -> str:
    return f"{statistics.median(rates):10.1f} [{max(rates):9.1f}]"


async def main(quick: bool) -> dict[str, dict[int, float]]:
    inst = await polyengine.instantiate(compile_component(COMPONENT))
    budget = 4 << 20 if quick else 64 << 20  # bytes per timed repeat
    repeats = 1 if quick else 5
    results: dict[str, dict[int, float]] = {}
    print(f"{'row':<14}{'chunk':>9}{'MB/s median [best]':>24}")
    with inst:
        rows: list[tuple[str, Row, tuple[int, ...]]] = [
            ("stream-pass", stream_pass, SIZES),
            ("host↔guest", relayed, SIZES),
            ("host→guest", host_to_guest, (PUMP,)),
            ("write_direct", write_direct, (DIRECT,)),
            ("read_direct", read_direct, (DIRECT,)),
        ]
        for name, row, sizes in rows:
            for size in sizes:
                count = max(20, budget // size // (8 if size < 4096 else 1))
                rates = await measure(inst, row, size, count, repeats)
                results.setdefault(name, {})[size] = statistics.median(rates)
                print(f"{name:<14}{size:>9}{fmt(rates):>24}")
    print()
    for size in SIZES:
        ratio = results["stream-pass"][size] / results["host↔guest"][size]
        print(f"stream-pass / host↔guest at {size:>6} B: {ratio:5.2f}x")
    pump = results["host→guest"][PUMP] / 1000
    print(f"host→guest async generator at 64 KiB: {pump:.2f} GB/s (target >= 1 GB/s)")
    for name in ("write_direct", "read_direct"):
        print(f"{name} at 256 KiB: {results[name][DIRECT] / 1000:.2f} GB/s (target >= 2 GB/s)")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    asyncio.run(main(parser.parse_args().quick))
