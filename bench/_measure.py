"""Timing for ``bench/boundary.py``: calibrated loops, interleaved repeats, back-to-back
pairs, and the table a section prints."""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

Loop = Callable[[int], object]


# -- measurement ---------------------------------------------------------------------------


@dataclass
class Settings:
    """How long and how often to measure."""

    min_time: float  # seconds one timed repeat should last
    repeats: int
    quick: bool

    def scaled(self, factor: float) -> Settings:
        return Settings(self.min_time * factor, self.repeats, self.quick)


def _run(loop: Loop, n: int) -> int:
    """Nanoseconds ``loop(n)`` takes, with the cyclic GC off (as ``timeit`` does)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        loop(n)
        return time.perf_counter_ns() - t0
    finally:
        if enabled:
            gc.enable()


def calibrate(loop: Loop, min_time: float) -> int:
    """How many calls make ``loop`` last about ``min_time`` seconds."""
    loop(1)  # the first call may pay for one-off set-up
    n = 1
    while True:
        t = _run(loop, n)
        if t >= min_time * 1e8 or n >= 10_000_000:
            return max(1, round(n * min_time * 1e9 / max(t, 1)))
        n *= 10


def per_call_ns(loop: Loop, s: Settings, n: int | None = None) -> float:
    """Median nanoseconds per call over ``s.repeats`` timed repeats, after a warm-up."""
    if n is None:
        n = calibrate(loop, s.min_time)
    loop(max(1, n // 10))  # warm-up
    return statistics.median(_run(loop, n) / n for _ in range(s.repeats))


@dataclass
class Case:
    """One path of a section, measured interleaved with the others."""

    label: str
    loop: Loop
    n: int = 0  # calls per timed repeat
    median: float = 0.0  # ns per call
    best: float = 0.0  # ns per call, fastest repeat


def measure(cases: Sequence[Case], s: Settings) -> list[float]:
    """Median ns per call of each case; the repeats are interleaved round-robin.

    Interleaving spreads any change of machine load evenly over the cases,
    so their ratios stay meaningful on a busy machine.
    """
    for c in cases:
        c.n = calibrate(c.loop, s.min_time)
        c.loop(max(1, c.n // 10))  # warm-up
    samples: list[list[float]] = [[] for _ in cases]
    for _ in range(s.repeats):
        for c, out in zip(cases, samples, strict=True):
            out.append(_run(c.loop, c.n) / c.n)
    for c, out in zip(cases, samples, strict=True):
        c.median, c.best = statistics.median(out), min(out)
    return [c.median for c in cases]


@dataclass
class Paired:
    """The time of one path over another's, from back-to-back pairs of repeats."""

    median: float
    low: float  # lower quartile
    high: float  # upper quartile
    pairs: int

    def describe(self) -> str:
        return (
            f"{self.median:.2f}x the time (median of {self.pairs} back-to-back pairs, "
            f"quartiles {self.low:.2f}-{self.high:.2f})"
        )


def paired_ratio(a: Loop, b: Loop, s: Settings) -> Paired:
    """``a``'s time over ``b``'s: the median of per-pair ratios, each pair run back to back.

    Each repeat lasts an eighth of ``s.min_time`` and the order alternates
    (a-b, then b-a), so a change of machine load or a drift (allocator,
    caches, clock) during the run reaches both sides of a pair alike; a real
    difference between the paths shows in every pair and moves the median.
    """
    n_a, n_b = calibrate(a, s.min_time / 8), calibrate(b, s.min_time / 8)
    a(max(1, n_a // 10))
    b(max(1, n_b // 10))
    pairs = max(8, 8 * s.repeats)
    ratios = []
    for k in range(pairs):
        if k % 2:
            tb = _run(b, n_b) / n_b
            ta = _run(a, n_a) / n_a
        else:
            ta = _run(a, n_a) / n_a
            tb = _run(b, n_b) / n_b
        ratios.append(ta / tb)
    q1, q2, q3 = statistics.quantiles(ratios, n=4)
    return Paired(q2, q1, q3, pairs)


def run_async(
    loop: asyncio.AbstractEventLoop, body: Callable[[int], Coroutine[Any, Any, None]]
) -> Loop:
    """A loop function that drives ``body(n)`` on ``loop`` (one loop turn per repeat)."""

    def run(n: int) -> None:
        loop.run_until_complete(body(n))

    return run


# -- the table -----------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    ns: float  # per call, median
    best: float | None = None  # per call, fastest repeat
    ref: float | None = None  # ns of the row this one is compared with
    nbytes: int | None = None  # payload per call, for GB/s


@dataclass
class Section:
    title: str
    rows: list[Row] = field(default_factory=list)
    ref_name: str = ""
    summary: list[str] = field(default_factory=list)


def fmt_time(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:9.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:9.3f} us"
    return f"{ns:9.1f} ns"


def fmt_rate(rate: float) -> str:
    return f"{rate:.3f}" if rate >= 0.01 else f"{rate:.1e}"


def gbps(nbytes: int, ns: float) -> float:
    return nbytes / ns if ns > 0 else float("inf")  # bytes per ns == GB/s


def render(section: Section) -> str:
    out = [f"== {section.title} =="]
    width = max(len(r.label) for r in section.rows) + 2
    rates = any(r.nbytes for r in section.rows)
    head = f"{'path':<{width}}{'median':>12}{'best':>12}"
    head += f"{'GB/s':>9}" if rates else ""
    out.append(head + f"{'ratio':>10}")
    for r in section.rows:
        line = f"{r.label:<{width}}{fmt_time(r.ns):>12}"
        line += f"{fmt_time(r.best):>12}" if r.best is not None else f"{'':12}"
        if rates:
            line += f"{fmt_rate(gbps(r.nbytes, r.ns)):>9}" if r.nbytes else f"{'':9}"
        line += f" {r.ns / r.ref:8.2f}x" if r.ref else ""
        out.append(line.rstrip())
    if section.ref_name:
        out.append(f"(ratio = median / median of {section.ref_name}; below 1 is faster)")
    out.extend(section.summary)
    return "\n".join(out)


def repeat(fn: Callable[..., Any], *args: Any) -> Loop:
    def body(n: int) -> None:
        for _ in range(n):
            fn(*args)

    return body


def verdict(ok: bool | None) -> str:
    if ok is None:
        return "unclear (load)"
    return "meets target" if ok else "MISSES target"


#: "no slower": the compiled path's time within 5% of the pure path's
NO_SLOWER = 1.05


def no_slower(p: Paired) -> bool | None:
    """Met when the median pair is within 5%; missed when three pairs in four are slower
    by more than that; else the pairs disagree (the load changed faster than a pair)."""
    if p.median <= NO_SLOWER:
        return True
    return False if p.low > NO_SLOWER else None
