#!/usr/bin/env python3
"""Mutation fuzzer for the component binary reader (``polyengine.binary.read_component``).

Mutates seed components (bit flips, byte edits, inserts, deletes, truncations,
chunk duplication, LEB128 edits, splices between seeds), reads each mutant,
and reports

* crashes: any exception other than ``TranslationError``;
* hangs: inputs that take longer than the per-input time limit.

Usage::

    python scripts/fuzz_binary.py [--seed N] [--count N] [--time-limit SECONDS]
                                  [--save-dir DIR] [SEED.wasm ...]

Without seed files, a few built-in components are used (and, when
``wasm-tools`` is on PATH or next to the interpreter, a larger one compiled
from text). Runs are deterministic for a given ``--seed``. Exit status is 1
when anything crashed or hung.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from polyengine.binary import read_component
from polyengine.errors import TranslationError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz_driver import Finding, FuzzReport, Hang, leb
from fuzz_driver import time_limit as deadline

PREAMBLE = b"\x00asm\x0d\x00\x01\x00"


def _section(sid: int, *items: bytes) -> bytes:
    """A section holding a ``vec`` of ``items`` (or, for ids 1, 4 and 9, the raw body)."""
    body = b"".join(items) if sid in (1, 4, 9) else leb(len(items)) + b"".join(items)
    return bytes([sid]) + leb(len(body)) + body


def _builtin_seeds() -> tuple[bytes, ...]:
    core = b"\x00asm\x01\x00\x00\x00"
    types = _section(
        7,
        b"\x73",
        b"\x72\x02\x01a\x7f\x01b\x7d",
        b"\x71\x02\x01x\x01\x7e\x00\x01y\x00\x00",
        b"\x70\x7b",
        b"\x3f\x7f\x00",
        b"\x69\x04",
        b"\x68\x04",
        b"\x66\x01\x7d",
        b"\x65\x00",
        b"\x40\x01\x01p\x73\x00\x79",
        b"\x67\x7d\x03",
        b"\x63\x73\x79",
        b"\x43\x00\x01\x00",
    )
    canon = _section(
        8,
        b"\x00\x00\x00\x00\x00",
        b"\x01\x00\x00\x02\x03\x00\x01",
        b"\x24",
        b"\x09\x01\x00\x00",
        b"\x0e\x06",
        b"\x0f\x06\x01\x06",
        b"\x1f",
        b"\x20\x00\x00",
        b"\x0c\x01",
        b"\x0a\x7f\x00",
        b"\x27\x00\x00",
        b"\x40\x01\x00",
    )
    core_things = (
        _section(1, core)
        + _section(2, b"\x00\x00\x00", b"\x01\x01\x01f\x00\x00")
        + _section(6, b"\x00\x00\x01\x00\x01f", b"\x03\x02\x00\x00")
        + _section(3, b"\x60\x01\x7f\x00", b"\x50\x02\x00\x01a\x01b\x00\x00\x03\x01e\x02\x00\x01")
    )
    names = (
        _section(7, b"\x42\x00", b"\x41\x02\x01\x73\x03\x00\x01a\x03\x00\x00")
        + _section(10, b"\x02\x02i1\x02\x00\x05a:b/c\x01\x03-rc\x05\x00", b"\x00\x01c\x04\x01")
        + _section(11, b"\x00\x01e\x05\x00\x00", b"\x00\x01g\x00\x11\x00\x01\x00\x11\x00")
        + _section(4, PREAMBLE + _section(7, b"\x73"))
        + _section(12, b"\x79\x01\x07")
        + _section(9, b"\x00\x01\x00\x01")
    )
    custom = b"\x00\x13\x0ecomponent-name\x00\x02\x01x"
    return (PREAMBLE, PREAMBLE + types, PREAMBLE + core_things + canon, PREAMBLE + names + custom)


SAMPLE_TEXT = """
(component $sample
  (core module $m (func (export "f")) (memory (export "mem") 1) (table (export "t") 1 funcref))
  (core instance $i (instantiate $m))
  (core type (module (import "a" "b" (func)) (export "c" (memory 1 2))))
  (type $r (resource (rep i32)))
  (type $t (func (param "x" string) (param "y" (list u8)) (result (option u32))))
  (type $inst (instance (export "g" (func (type 0))) (export "h" (type (sub resource)))))
  (type (component (import "i" (instance (type 0))) (export "e" (func (type 0)))))
  (import "a:b/c@1.0.0" (func $imp (type $t)))
  (import "d:e/f" (instance (type $inst)))
  (core func $lowered (canon lower (func $imp) (memory (core memory $i "mem"))))
  (type $s (stream u8))
  (type $fu (future string))
  (core func (canon stream.read $s (memory (core memory $i "mem")) async))
  (core func (canon future.write $fu (memory (core memory $i "mem"))))
  (core func (canon task.return (result u32)))
  (core func (canon waitable-set.wait (memory (core memory $i "mem"))))
  (core func (canon resource.drop $r))
  (component $inner (type string) (import "x" (func)))
  (instance (instantiate $inner (with "x" (func $imp))))
  (func $lifted (type $t) (canon lift (core func $i "f") (memory (core memory $i "mem"))))
  (export "run" (func $lifted))
)
"""


# -- mutations ---------------------------------------------------------------------

INTERESTING = (0x00, 0x01, 0x02, 0x0D, 0x3F, 0x40, 0x7F, 0x80, 0x81, 0xFF)


def _leb_edit(rng: random.Random, data: bytearray) -> str:
    """Replace a LEB128-shaped run with another value, length or overlong form."""
    i = rng.randrange(len(data))
    j = i
    while j < len(data) and j - i < 10 and data[j] & 0x80:
        j += 1
    j = min(j + 1, len(data))
    choice = rng.randrange(6)
    if choice == 0:
        new = leb(rng.choice((0, 1, 63, 64, 127, 128, 2**31, 2**32 - 1, 2**32, 2**35)))
    elif choice == 1:
        new = leb(rng.randrange(1 << 14), pad_to=rng.randrange(1, 7))
    elif choice == 2:
        new = b"\xff\xff\xff\xff" + bytes([rng.choice((0x0F, 0x10, 0x70, 0x7F, 0x8F))])
    elif choice == 3:
        new = b"\x80" * rng.randrange(1, 12)
    elif choice == 4:
        old = int.from_bytes(bytes(data[i:j]), "little") & 0x7F
        new = leb(max(0, old + rng.choice((-2, -1, 1, 2, 1000))))
    else:
        new = bytes([rng.randrange(256) | 0x80]) * rng.randrange(1, 6) + b"\x00"
    data[i:j] = new
    return f"leb-edit@{i}:{j - i}->{new.hex()}"


def mutate(rng: random.Random, seeds: Sequence[bytes]) -> tuple[bytes, str]:
    """One mutant of a randomly chosen seed, with a description of what was done."""
    data = bytearray(rng.choice(seeds))
    steps: list[str] = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if not data:
            data.extend(PREAMBLE)
        op = rng.randrange(9)
        i = rng.randrange(len(data))
        if op == 0:
            bit = rng.randrange(8)
            data[i] ^= 1 << bit
            steps.append(f"flip@{i}.{bit}")
        elif op == 1:
            v = rng.choice(INTERESTING) if rng.random() < 0.6 else rng.randrange(256)
            data[i] = v
            steps.append(f"set@{i}={v:#x}")
        elif op == 2:
            chunk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5)))
            data[i:i] = chunk
            steps.append(f"insert@{i}:{chunk.hex()}")
        elif op == 3:
            n = rng.randrange(1, 9)
            del data[i : i + n]
            steps.append(f"delete@{i}:{n}")
        elif op == 4:
            del data[i:]
            steps.append(f"truncate@{i}")
        elif op == 5:
            steps.append(_leb_edit(rng, data))
        elif op == 6:
            n = rng.randrange(1, 17)
            data[i:i] = data[i : i + n]
            steps.append(f"duplicate@{i}:{n}")
        elif op == 7:
            other = rng.choice(seeds)
            j = rng.randrange(len(other)) if other else 0
            data[i:] = other[j:]
            steps.append(f"splice@{i}<-{j}")
        else:
            v = rng.choice(INTERESTING)
            data[i:i] = bytes([v])
            steps.append(f"insert@{i}:{v:#x}")
    return bytes(data), "+".join(steps)


def fuzz(seeds: Sequence[bytes], seed: int, count: int, time_limit: float = 2.0) -> FuzzReport:
    """Read ``count`` mutants of ``seeds`` (deterministic for ``seed``)."""
    assert seeds, "at least one seed component is needed"
    rng = random.Random(seed)
    report = FuzzReport()
    for _ in range(count):
        data, what = mutate(rng, seeds)
        report.inputs += 1
        start = time.perf_counter()
        try:
            with deadline(time_limit):
                read_component(data)
        except TranslationError:
            report.rejected += 1
        except Hang:
            report.findings.append(Finding("hang", what, data, f"over {time_limit}s"))
            continue
        except Exception as e:
            report.findings.append(Finding("crash", what, data, f"{type(e).__name__}: {e}"))
        else:
            report.accepted += 1
        elapsed = time.perf_counter() - start
        report.slowest = max(report.slowest, elapsed)
        if elapsed > time_limit:
            report.findings.append(Finding("hang", what, data, f"took {elapsed:.2f}s"))
    return report


def default_seeds() -> list[bytes]:
    """The built-in seeds, plus the sample compiled with wasm-tools when available."""
    seeds = list(_builtin_seeds())
    tool = Path(sys.executable).parent / "wasm-tools"
    exe = str(tool) if tool.exists() else shutil.which("wasm-tools")
    if exe is not None:
        proc = subprocess.run(
            [exe, "parse", "-", "-o", "/dev/stdout"],
            input=SAMPLE_TEXT.encode(),
            capture_output=True,
            check=False,
            timeout=60,
        )
        if proc.returncode == 0:
            seeds.append(proc.stdout)
    return seeds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seeds", nargs="*", type=Path, help="seed component files")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--count", type=int, default=10000, help="number of mutants")
    parser.add_argument("--time-limit", type=float, default=2.0, help="seconds per input")
    parser.add_argument("--save-dir", type=Path, help="write crashing/hanging inputs here")
    args = parser.parse_args(argv)
    seeds = [p.read_bytes() for p in args.seeds] or default_seeds()
    started = time.perf_counter()
    report = fuzz(seeds, args.seed, args.count, args.time_limit)
    took = time.perf_counter() - started
    print(
        f"{report.inputs} inputs in {took:.1f}s: {report.accepted} accepted, "
        f"{report.rejected} rejected with TranslationError, slowest {report.slowest * 1e3:.1f} ms"
    )
    print(f"crashes: {len(report.crashes)}, hangs: {len(report.hangs)}")
    for n, f in enumerate(report.findings):
        print(f"  {f.kind}: {f.detail} [{f.mutation}] {f.data[:64].hex()}")
        if args.save_dir is not None:
            args.save_dir.mkdir(parents=True, exist_ok=True)
            (args.save_dir / f"{f.kind}-{args.seed}-{n}.wasm").write_bytes(f.data)
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
