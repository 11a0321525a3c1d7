#!/usr/bin/env python3
"""Mutation fuzzer for the whole translator (``polyengine.translate.translate_component``).

Mutates seed components and translates each mutant, reporting

* crashes: any exception other than ``TranslationError``, and a
  ``TranslationError`` that only wraps an unexpected exception (the
  translator's last-resort "internal error" conversion, which hides a bug);
  a worker process that dies is a crash too;
* hangs: inputs that take longer than the per-input time limit.

Seeds are small components written in the component text format (compiled
with ``wasm-tools parse``) and, with ``--guests``, the real guests found in
the guest build cache (``runtime/tests/guests/_build.py``; nothing is built);
``--corpus DIR`` adds every component under ``DIR`` that reads cleanly (a
converted conformance suite, for instance).
Mutations are byte-level (bit flips, byte edits, inserts, deletes,
truncation, LEB128 edits, duplication, splices between seeds) and
section-level (drop, duplicate or swap top-level sections, or take one from
another seed). In a large seed most byte mutations land outside its core
modules, so that they reach the component-level validator and inliner
rather than only the core validator.

Each input runs in a worker process that is killed and replaced when an
input exceeds the time limit (``--in-process`` runs them in this process
under a ``SIGALRM`` watchdog instead). Runs are deterministic for a given
``--seed``. The worker turns the on-disk caches off, so mutants leave
nothing behind. Exit status is 1 when anything crashed or hung.

Usage::

    python scripts/fuzz_translate.py [--seed N] [--count N] [--time-limit SECONDS]
                                     [--guests] [--corpus DIR] [--in-process]
                                     [--save-dir DIR]
                                     [SEED.wasm ...]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import struct
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz_driver import Finding, FuzzReport, Hang, leb
from fuzz_driver import time_limit as deadline

PREAMBLE = b"\x00asm\x0d\x00\x01\x00"
ROOT = Path(__file__).resolve().parents[1]

SEED_TEXTS = (
    # lifts with options, value types
    """(component
  (core module $m
    (memory (export "mem") 1)
    (global $g (mut i32) (i32.const 64))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      global.get $g global.get $g local.get 3 i32.add global.set $g)
    (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
    (func (export "echo") (param i32 i32) (result i32) i32.const 0)
    (func (export "cabi_post_echo") (param i32)))
  (core instance $i (instantiate $m))
  (type $rec (record (field "a" u32) (field "b" string)))
  (type $var (variant (case "x" u8) (case "y") (case "z" (list s64))))
  (type $e (enum "red" "green"))
  (type $fl (flags "p" "q"))
  (type $res (result $rec (error $e)))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
  (func (export "echo") (param "s" string) (result string)
    (canon lift (core func $i "echo") (memory (core memory $i "mem"))
      (realloc (core func $i "realloc")) (post-return (core func $i "cabi_post_echo"))))
  (export "rec" (type $rec))
)""",
    # an imported instance with a resource, lowering, core instance bags
    """(component
  (import "host" (instance $h
    (export "log" (func (param "msg" string)))
    (export "blob" (type (sub resource)))))
  (alias export $h "log" (func $log))
  (alias export $h "blob" (type $blob))
  (core module $mem (memory (export "mem") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) i32.const 8))
  (core instance $mi (instantiate $mem))
  (core func $log_lowered (canon lower (func $log) (memory (core memory $mi "mem"))))
  (core func $drop (canon resource.drop $blob))
  (core module $app
    (import "env" "log" (func (param i32 i32)))
    (import "env" "drop" (func (param i32)))
    (import "env" "mem" (memory 1))
    (func (export "run") (param i32) local.get 0 call 1))
  (alias core export $mi "mem" (core memory $m0))
  (core instance $env (export "log" (func $log_lowered)) (export "drop" (func $drop))
    (export "mem" (memory $m0)))
  (core instance $a (instantiate $app (with "env" (instance $env))))
  (func $run (param "b" (own $blob)) (canon lift (core func $a "run")))
  (export "run" (func $run))
)""",
    # nested components instantiated twice, adapters between them
    """(component
  (component $inner
    (import "f" (func $f (param "x" u32) (result u32)))
    (core func $fl (canon lower (func $f)))
    (core module $m (import "" "f" (func (param i32) (result i32)))
      (func (export "g") (param i32) (result i32) local.get 0 call 0))
    (core instance $fi (export "f" (func $fl)))
    (core instance $i (instantiate $m (with "" (instance $fi))))
    (func (export "g") (param "x" u32) (result u32) (canon lift (core func $i "g"))))
  (component $leaf
    (core module $m (func (export "id") (param i32) (result i32) local.get 0))
    (core instance $i (instantiate $m))
    (func (export "id") (param "x" u32) (result u32) (canon lift (core func $i "id"))))
  (instance $l (instantiate $leaf))
  (alias export $l "id" (func $id))
  (instance $n (instantiate $inner (with "f" (func $id))))
  (instance $n2 (instantiate $inner (with "f" (func $n "g"))))
  (export "g" (func $n2 "g"))
  (export "leaf" (instance $l))
)""",
    # async lifts and the stream/future/waitable built-ins
    """(component
  (type $s (stream u8))
  (type $fu (future string))
  (core module $mem (memory (export "mem") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) i32.const 8))
  (core instance $mi (instantiate $mem))
  (core func $sn (canon stream.new $s))
  (core func $sr (canon stream.read $s (memory (core memory $mi "mem")) async))
  (core func $sw (canon stream.write $s (memory (core memory $mi "mem"))))
  (core func $fw (canon future.write $fu (memory (core memory $mi "mem"))
    (realloc (core func $mi "realloc"))))
  (core func $tr (canon task.return (result u32)))
  (core func $wn (canon waitable-set.new))
  (core func $ww (canon waitable-set.wait (memory (core memory $mi "mem"))))
  (core func $bp (canon backpressure.inc))
  (core module $app
    (import "" "sn" (func (result i64)))
    (import "" "tr" (func (param i32)))
    (import "" "wn" (func (result i32)))
    (func (export "run") (result i32) i32.const 0)
    (func (export "cb") (param i32 i32 i32) (result i32) i32.const 0))
  (core instance $args (export "sn" (func $sn)) (export "tr" (func $tr)) (export "wn" (func $wn)))
  (core instance $a (instantiate $app (with "" (instance $args))))
  (func (export "run") async (result u32)
    (canon lift (core func $a "run") async (callback (core func $a "cb"))))
)""",
    # instance and component types, versioned names, outer aliases, bags
    """(component
  (type $t (func (param "x" string) (param "y" (list u8)) (result (option u32))))
  (type $inst (instance
    (type (func (param "x" u32) (result string)))
    (export "g" (func (type 0)))
    (export "h" (type (sub resource)))
    (type (record (field "n" u32) (field "m" (tuple u8 s16 f64 char))))
    (export "rec" (type (eq 2)))))
  (type (component
    (type (instance (export "z" (func))))
    (import "i" (instance (type 0)))
    (type (func (param "a" bool)))
    (export "e" (func (type 1)))))
  (import "a:b/c@1.0.0" (func $imp (type $t)))
  (import "d:e/f" (instance $df (type $inst)))
  (alias export $df "h" (type $h))
  (core module $m (memory (export "mem") 1) (table (export "t") 1 funcref)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) i32.const 8))
  (core instance $i (instantiate $m))
  (core func $lowered (canon lower (func $imp) (memory (core memory $i "mem"))
    (realloc (core func $i "realloc"))))
  (core func (canon resource.drop $h))
  (alias outer 0 $t (type $t2))
  (instance $bag (export "imp" (func $imp)) (export "t" (type $t2)))
  (export "bag" (instance $bag))
  (export "d:e/f@1.2.3" (instance $df))
)""",
)


# -- seeds ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """A seed component and where its parts are: top-level sections and core modules."""

    data: bytes
    sections: tuple[tuple[int, int], ...]  # (start, end) of each top-level section
    hot: tuple[tuple[int, int], ...]  # byte ranges outside core modules and custom sections


def make_seed(data: bytes) -> Seed:
    """Index ``data`` (which must read as a component) for structure-aware mutations."""
    from polyengine.binary import ast, read_component

    comp = read_component(data, names=False)
    modules: list[tuple[int, int]] = []

    def visit(c: ast.Component) -> None:
        for d in c.definitions:
            if isinstance(d, ast.CoreModule):
                modules.append((d.offset, d.offset + d.length))
            elif isinstance(d, ast.Component):
                visit(d)

    visit(comp)
    sections = tuple((s.offset, s.content_offset + s.content_length) for s in comp.sections)
    cold = sorted(
        modules
        + [(s.offset, s.content_offset + s.content_length) for s in comp.sections if s.id == 0]
    )
    hot: list[tuple[int, int]] = []
    pos = 0
    for start, end in cold:
        if start > pos:
            hot.append((pos, start))
        pos = max(pos, end)
    if pos < len(data):
        hot.append((pos, len(data)))
    return Seed(data, sections, tuple(hot) or ((0, len(data)),))


def _wasm_tools() -> str | None:
    local = Path(sys.executable).with_name("wasm-tools")
    return str(local) if local.exists() else shutil.which("wasm-tools")


def text_seeds() -> list[bytes]:
    """The built-in seeds, compiled with ``wasm-tools parse`` (none without it)."""
    exe = _wasm_tools()
    if exe is None:
        return []
    out = []
    for text in SEED_TEXTS:
        proc = subprocess.run(
            [exe, "parse", "-", "-o", "/dev/stdout"],
            input=text.encode(),
            capture_output=True,
            check=True,
            timeout=60,
        )
        out.append(proc.stdout)
    return out


def guest_seeds(max_size: int = 32 << 20) -> list[bytes]:
    """The real guests already in the guest build cache (never builds), smallest first."""
    configured = os.environ.get("POLYENGINE_GUEST_CACHE")
    cache = (
        Path(configured).expanduser()
        if configured
        else Path.home() / ".cache" / "polyengine" / "guests"
    )
    if not cache.is_dir():
        return []
    paths = sorted(
        (p for p in cache.glob("*.wasm") if p.stat().st_size <= max_size),
        key=lambda p: (p.stat().st_size, p.name),
    )
    return [p.read_bytes() for p in paths]


def directory_seeds(root: Path, limit: int = 1000) -> list[bytes]:
    """Components under ``root`` (e.g. a converted conformance suite) that read cleanly."""
    from polyengine.binary import read_component
    from polyengine.errors import TranslationError

    out: list[bytes] = []
    for path in sorted(root.rglob("*.wasm")):
        data = path.read_bytes()
        try:
            read_component(data, names=False)
        except TranslationError:
            continue
        out.append(data)
        if len(out) >= limit:
            break
    return out


# -- mutations -----------------------------------------------------------------------------

INTERESTING = (0x00, 0x01, 0x02, 0x0D, 0x3F, 0x40, 0x60, 0x7F, 0x80, 0x81, 0xFF)


def _position(rng: random.Random, seed: Seed, data: bytearray) -> int:
    """Somewhere to mutate: usually outside core modules in a large seed."""
    if len(data) != len(seed.data) or (len(data) < 4096 and rng.random() < 0.5):
        return rng.randrange(len(data))
    start, end = rng.choice(seed.hot)
    return min(rng.randrange(start, max(end, start + 1)), len(data) - 1)


def _byte_op(rng: random.Random, seed: Seed, data: bytearray, others: Sequence[Seed]) -> str:
    i = _position(rng, seed, data)
    op = rng.randrange(9)
    if op == 0:
        bit = rng.randrange(8)
        data[i] ^= 1 << bit
        return f"flip@{i}.{bit}"
    if op == 1:
        v = rng.choice(INTERESTING) if rng.random() < 0.6 else rng.randrange(256)
        data[i] = v
        return f"set@{i}={v:#x}"
    if op == 2:
        chunk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5)))
        data[i:i] = chunk
        return f"insert@{i}:{chunk.hex()}"
    if op == 3:
        n = rng.randrange(1, 9)
        del data[i : i + n]
        return f"delete@{i}:{n}"
    if op == 4:
        del data[i:]
        return f"truncate@{i}"
    if op == 5:
        j = i
        while j < len(data) and j - i < 10 and data[j] & 0x80:
            j += 1
        j = min(j + 1, len(data))
        old = int.from_bytes(bytes(data[i:j]), "little") & 0x7F
        new = leb(
            rng.choice((0, 1, 2, 127, 128, 2**32 - 1, max(0, old + rng.choice((-1, 1, 2))))),
            pad_to=rng.choice((0, 0, 0, 5)),
        )
        data[i:j] = new
        return f"leb@{i}:{j - i}->{new.hex()}"
    if op == 6:
        n = rng.randrange(1, 17)
        data[i:i] = data[i : i + n]
        return f"duplicate@{i}:{n}"
    if op == 7:
        other = rng.choice(others).data
        j = rng.randrange(len(other))
        n = rng.randrange(1, 64)
        data[i : i + n] = other[j : j + n]
        return f"splice@{i}:{n}<-{j}"
    v = rng.choice(INTERESTING)
    data[i:i] = bytes([v])
    return f"insert@{i}:{v:#x}"


def _section_op(rng: random.Random, seed: Seed, others: Sequence[Seed]) -> tuple[bytearray, str]:
    """Rearrange the seed's top-level sections (the preamble is kept)."""
    parts = [seed.data[s:e] for s, e in seed.sections]
    op = rng.randrange(4)
    if not parts:
        op = 3
    if op == 0:
        k = rng.randrange(len(parts))
        del parts[k]
        what = f"drop-section#{k}"
    elif op == 1:
        k = rng.randrange(len(parts))
        parts.insert(k + 1, parts[k])
        what = f"dup-section#{k}"
    elif op == 2:
        k = rng.randrange(len(parts))
        m = rng.randrange(len(parts))
        parts[k], parts[m] = parts[m], parts[k]
        what = f"swap-sections#{k},{m}"
    else:
        donor = rng.choice(others)
        if not donor.sections:
            return bytearray(seed.data), "nothing"
        s, e = rng.choice(donor.sections)
        k = rng.randrange(len(parts) + 1)
        parts.insert(k, donor.data[s:e])
        what = f"graft-section@{k}<-{s}"
    return bytearray(PREAMBLE + b"".join(parts)), what


def mutate(rng: random.Random, seeds: Sequence[Seed]) -> tuple[bytes, str]:
    """One mutant of a randomly chosen seed, with a description of what was done."""
    k = rng.randrange(len(seeds))
    seed = seeds[k]
    steps = [f"seed{k}"]
    if rng.random() < 0.25:
        data, what = _section_op(rng, seed, seeds)
        steps.append(what)
        extra = rng.choice((0, 0, 1))
    else:
        data = bytearray(seed.data)
        extra = rng.choice((1, 1, 1, 2, 3))
    for _ in range(extra):
        if not data:
            data.extend(PREAMBLE)
        steps.append(_byte_op(rng, seed, data, seeds))
    return bytes(data), "+".join(steps)


# -- running inputs ------------------------------------------------------------------------


def run_one(data: bytes) -> tuple[str, str]:
    """Translate ``data``: ``("accepted"|"rejected"|"crash", detail)``."""
    from polyengine.errors import TranslationError
    from polyengine.translate import translate_component

    try:
        translate_component(data)
    except TranslationError as exc:
        cause = exc.__cause__
        if cause is not None and not isinstance(cause, TranslationError):
            return "crash", f"{exc} [{_where(cause)}]"
        return "rejected", str(exc)
    except Exception as exc:
        return "crash", f"{type(exc).__name__}: {exc} [{_where(exc)}]"
    return "accepted", ""


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames[-4:]))


def _worker() -> int:
    """Serve inputs on stdin: each a 4-byte little-endian length then the bytes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = stdin.read(4)
        if len(head) < 4:
            return 0
        (n,) = struct.unpack("<I", head)
        data = stdin.read(n)
        start = time.perf_counter()
        outcome, detail = run_one(data)
        reply = {"outcome": outcome, "detail": detail, "elapsed": time.perf_counter() - start}
        stdout.write(json.dumps(reply).encode() + b"\n")
        stdout.flush()


class _Worker:
    """A worker process; replaced after a hang or a death."""

    def __init__(self, command: Sequence[str] | None = None) -> None:
        env = dict(os.environ, POLYENGINE_CACHE_DIR="off")
        default = [sys.executable, str(Path(__file__).resolve()), "--worker"]
        self.proc = subprocess.Popen(
            list(command) if command is not None else default,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

    def run(self, data: bytes, time_limit: float) -> dict[str, Any] | None:
        """The worker's reply, or ``None`` when it exceeded ``time_limit`` (it is killed)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(struct.pack("<I", len(data)) + data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            return {"outcome": "crash", "detail": self._death(), "elapsed": 0.0}
        ready, _, _ = select.select([self.proc.stdout], [], [], time_limit)
        if not ready:
            self.close()
            return None
        line = self.proc.stdout.readline()
        if not line:
            return {"outcome": "crash", "detail": self._death(), "elapsed": 0.0}
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _death(self) -> str:
        code = self.proc.wait()
        return f"worker died (exit status {code})"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def fuzz(
    seeds: Sequence[bytes],
    seed: int,
    count: int,
    time_limit: float = 5.0,
    *,
    isolate: bool = True,
) -> FuzzReport:
    """Translate ``count`` mutants of ``seeds`` (deterministic for ``seed``).

    With ``isolate`` each input runs in a worker process (killed on a hang),
    else in this process under a ``SIGALRM`` watchdog.
    """
    assert seeds, "at least one seed component is needed"
    indexed = [make_seed(s) for s in seeds]
    rng = random.Random(seed)
    report = FuzzReport()
    worker = _Worker() if isolate else None
    try:
        for _ in range(count):
            data, what = mutate(rng, indexed)
            report.inputs += 1
            if worker is not None:
                if not worker.alive():
                    worker.close()
                    worker = _Worker()
                reply = worker.run(data, time_limit)
                if reply is None:
                    report.findings.append(Finding("hang", what, data, f"over {time_limit}s"))
                    worker = _Worker()
                    continue
                outcome, detail, elapsed = reply["outcome"], reply["detail"], reply["elapsed"]
            else:
                start = time.perf_counter()
                try:
                    with deadline(time_limit):
                        outcome, detail = run_one(data)
                except Hang:
                    report.findings.append(Finding("hang", what, data, f"over {time_limit}s"))
                    continue
                elapsed = time.perf_counter() - start
            report.slowest = max(report.slowest, elapsed)
            if outcome == "accepted":
                report.accepted += 1
            elif outcome == "rejected":
                report.rejected += 1
            else:
                report.findings.append(Finding("crash", what, data, detail))
            if elapsed > time_limit:
                report.findings.append(Finding("hang", what, data, f"took {elapsed:.2f}s"))
    finally:
        if worker is not None:
            worker.close()
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seeds", nargs="*", type=Path, help="seed component files")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--count", type=int, default=5000, help="number of mutants")
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per input")
    parser.add_argument("--guests", action="store_true", help="add the cached real guests")
    parser.add_argument("--corpus", type=Path, help="add the components found under DIR")
    parser.add_argument("--in-process", action="store_true", help="no worker process")
    parser.add_argument("--save-dir", type=Path, help="write crashing/hanging inputs here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker()
    if args.in_process:
        os.environ["POLYENGINE_CACHE_DIR"] = "off"
    seeds = [p.read_bytes() for p in args.seeds] or text_seeds()
    if args.guests:
        seeds += guest_seeds()
    if args.corpus is not None:
        seeds += directory_seeds(args.corpus)
    if not seeds:
        parser.error("no seeds: give seed files, or install wasm-tools for the built-in ones")
    started = time.perf_counter()
    report = fuzz(seeds, args.seed, args.count, args.time_limit, isolate=not args.in_process)
    took = time.perf_counter() - started
    print(
        f"{report.inputs} inputs from {len(seeds)} seeds in {took:.1f}s: "
        f"{report.accepted} accepted, {report.rejected} rejected with TranslationError, "
        f"slowest {report.slowest * 1e3:.1f} ms"
    )
    print(f"crashes: {len(report.crashes)}, hangs: {len(report.hangs)}")
    for n, f in enumerate(report.findings):
        print(f"  {f.kind}: {f.detail} [{f.mutation}] {len(f.data)} bytes")
        if args.save_dir is not None:
            args.save_dir.mkdir(parents=True, exist_ok=True)
            (args.save_dir / f"{f.kind}-{args.seed}-{n}.wasm").write_bytes(f.data)
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
