"""Micro-benchmark of bulk canonical ABI moves through a BytearrayMemory.

Prints MB/s for storing and loading a 1 MiB ``list<u8>`` and a 100 KB
``string`` (ASCII and non-ASCII, in each string encoding), plus a 256 Ki
element ``list<u32>``. Run: ``.venv/bin/python bench/abi_bulk.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from polyengine.abi.compile import Compiler
from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.options import CanonicalOptions, LiftLowerContext, StringEncoding
from polyengine.abi.resources import ComponentInstance
from polyengine.types.model import F32, U8, U32, Field, List, Record, String, ValType

ROUNDS = 20


def _cx(encoding: StringEncoding) -> tuple[LiftLowerContext, BytearrayMemory]:
    mem = BytearrayMemory(1 << 16, max_pages=1 << 15)
    cx = LiftLowerContext(CanonicalOptions(encoding, mem, mem.realloc), ComponentInstance())
    return cx, mem


def _rate(nbytes: int, fn: Callable[[], object]) -> float:
    fn()  # warm up
    best = float("inf")
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return nbytes / best / 1e6


def bench(name: str, t: ValType, value: object, nbytes: int, encoding: StringEncoding) -> None:
    codec = Compiler(encoding).codec(t)
    cx, mem = _cx(encoding)
    slot = 64

    def store() -> None:
        mem.next = 1024  # reuse the same heap block every round
        codec.store(cx, value, slot)

    store()
    load_rate = _rate(nbytes, lambda: codec.load(cx, slot))
    store_rate = _rate(nbytes, store)
    print(f"{name:<34} store {store_rate:9.1f} MB/s   load {load_rate:9.1f} MB/s")


def main() -> None:
    mib = bytes(range(256)) * 4096
    bench("list<u8> 1 MiB", List(U8()), mib, len(mib), "utf8")
    ascii_text = "abcdefghij" * 10_000
    accented = "d\u00e9j\u00e0 vu \u00e9t\u00e9 " * 6_250
    cjk = "\u4e2d\u6587\u5b57\u7b26" * 25_000
    for enc in ("utf8", "utf16", "latin1+utf16"):
        for label, s in (("ascii", ascii_text), ("latin-1", accented), ("cjk", cjk)):
            bench(f"string 100 KB {label} {enc}", String(), s, len(s.encode()), enc)  # type: ignore[arg-type]
    words = list(range(1 << 18))
    bench("list<u32> 256 Ki elements", List(U32()), words, 4 << 18, "utf8")
    point = Record((Field("x", F32()), Field("y", F32())))
    points = [{"x": float(i), "y": -float(i)} for i in range(1 << 16)]
    bench("list<record{f32,f32}> 64 Ki", List(point), points, 8 << 16, "utf8")


if __name__ == "__main__":
    main()
