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

import os
import time
from types import SimpleNamespace

from ._kernel import Pollable, monotonic_now, timer_pollable

__all__ = ["monotonic_clock_p2", "wall_clock_p2", "monotonic_clock_p3", "system_clock_p3",
           "wall_clock_p3", "timezone_p2", "timezone_p3"]

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
        import asyncio

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


def _local_offset(seconds: int) -> tuple[int, str, bool]:
    """(offset east of UTC in seconds, zone name, daylight saving) at ``seconds``."""
    try:
        local = time.localtime(seconds)
    except (OverflowError, OSError, ValueError):
        return 0, "UTC", False
    return int(local.tm_gmtoff or 0), str(local.tm_zone or "UTC"), local.tm_isdst > 0


def timezone_p2(local: bool) -> SimpleNamespace:
    """``wasi:clocks/timezone@0.2`` (unstable): UTC unless ``local`` is granted."""

    def display(when: dict[str, int]) -> dict[str, object]:
        if not local:
            return {"utc_offset": 0, "name": "UTC", "in_daylight_saving_time": False}
        offset, name, dst = _local_offset(when["seconds"])
        return {"utc_offset": offset, "name": name, "in_daylight_saving_time": dst}

    def utc_offset(when: dict[str, int]) -> int:
        return _local_offset(when["seconds"])[0] if local else 0

    return SimpleNamespace(display=display, utc_offset=utc_offset)


def timezone_p3(local: bool) -> SimpleNamespace:
    """``wasi:clocks/timezone@0.3`` (unstable): none unless ``local`` is granted."""

    def iana_id() -> str | None:
        if not local:
            return None
        link = "/etc/localtime"
        try:
            target = os.path.realpath(link)
        except OSError:
            return None
        marker = "/zoneinfo/"
        return target.split(marker, 1)[1] if marker in target else None

    def utc_offset(when: dict[str, int]) -> int | None:
        if not local:
            return None
        return _local_offset(when["seconds"])[0] * 1_000_000_000

    def to_debug_string() -> str:
        return _local_offset(int(time.time()))[1] if local else "UTC"

    return SimpleNamespace(iana_id=iana_id, utc_offset=utc_offset, to_debug_string=to_debug_string)
