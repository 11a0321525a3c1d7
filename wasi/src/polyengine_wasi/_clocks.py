"""``wasi:clocks`` providers: 0.2 (monotonic-clock, wall-clock) and 0.3.

0.2's ``subscribe-instant`` / ``subscribe-duration`` return real timer
pollables (the parking kernel, ``_kernel``). 0.3's ``wait-until`` /
``wait-for`` are ``async func``s, provided as coroutine functions. The 0.3
track is a union provider (embedder-api.md §"Version canonicalization",
D-1): drafts of 0.3 named some members differently (``resolution`` versus
``get-resolution``, ``wall-clock`` versus ``system-clock``), and each name
is served.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

from ._kernel import Pollable, monotonic_now, timer_pollable

__all__ = ["monotonic_clock_p2", "wall_clock_p2", "monotonic_clock_p3", "system_clock_p3",
           "wall_clock_p3"]

U64_MAX = (1 << 64) - 1


def _u64(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= U64_MAX:
        raise TypeError(f"{name}: expected a u64, got {value!r}")
    return value


def _resolution_ns() -> int:
    info = time.get_clock_info("monotonic")
    return max(1, round(info.resolution * 1e9))


def _wall_resolution_ns() -> int:
    info = time.get_clock_info("time")
    return max(1, round(info.resolution * 1e9))


def _datetime_now() -> dict[str, int]:
    ns = time.time_ns()
    return {"seconds": ns // 1_000_000_000, "nanoseconds": ns % 1_000_000_000}


def monotonic_clock_p2() -> SimpleNamespace:
    """``wasi:clocks/monotonic-clock@0.2``."""

    def now() -> int:
        return monotonic_now()

    def resolution() -> int:
        return _resolution_ns()

    def subscribe_instant(when: int) -> Pollable:
        return timer_pollable(_u64("subscribe-instant", when))

    def subscribe_duration(when: int) -> Pollable:
        return timer_pollable(monotonic_now() + _u64("subscribe-duration", when))

    return SimpleNamespace(
        now=now,
        resolution=resolution,
        subscribe_instant=subscribe_instant,
        subscribe_duration=subscribe_duration,
    )


def wall_clock_p2() -> SimpleNamespace:
    """``wasi:clocks/wall-clock@0.2``: ``datetime`` records as dicts."""

    def now() -> dict[str, int]:
        return _datetime_now()

    def resolution() -> dict[str, int]:
        ns = _wall_resolution_ns()
        return {"seconds": ns // 1_000_000_000, "nanoseconds": ns % 1_000_000_000}

    return SimpleNamespace(now=now, resolution=resolution)


def monotonic_clock_p3() -> SimpleNamespace:
    """``wasi:clocks/monotonic-clock@0.3``: async waits over asyncio timers."""

    def now() -> int:
        return monotonic_now()

    def get_resolution() -> int:
        return _resolution_ns()

    async def wait_until(when: int) -> None:
        remaining = _u64("wait-until", when) - monotonic_now()
        while remaining > 0:
            await asyncio.sleep((remaining + 999) / 1e9)
            remaining = when - monotonic_now()

    async def wait_for(how_long: int) -> None:
        await wait_until(monotonic_now() + _u64("wait-for", how_long))

    return SimpleNamespace(
        now=now,
        get_resolution=get_resolution,
        resolution=get_resolution,
        wait_until=wait_until,
        wait_for=wait_for,
    )


def system_clock_p3() -> SimpleNamespace:
    """``wasi:clocks/system-clock@0.3``: ``instant`` records as dicts."""

    def now() -> dict[str, int]:
        return _datetime_now()

    def get_resolution() -> int:
        return _wall_resolution_ns()

    return SimpleNamespace(now=now, get_resolution=get_resolution, resolution=get_resolution)


def wall_clock_p3() -> SimpleNamespace:
    """``wasi:clocks/wall-clock@0.3`` as earlier 0.3 drafts named it."""
    return wall_clock_p2()
