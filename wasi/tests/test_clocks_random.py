"""wasi:clocks and wasi:random, called as a runtime calls them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from polyengine_wasi import Pollable, wasi


@pytest.fixture(name="imports")
def imports_fixture() -> dict[str, Any]:
    return wasi(seed=7)


def test_monotonic_clock_increases(imports: dict[str, Any]) -> None:
    clock = imports["wasi:clocks/monotonic-clock@0.2"]
    readings = [clock.now() for _ in range(50)]
    assert all(isinstance(r, int) and 0 <= r < 1 << 64 for r in readings)
    assert readings == sorted(readings)
    before = clock.now()
    time.sleep(0.002)
    assert clock.now() - before >= 2_000_000
    assert clock.resolution() >= 1


def test_wall_clock_is_a_datetime_record(imports: dict[str, Any]) -> None:
    clock = imports["wasi:clocks/wall-clock@0.2"]
    now = clock.now()
    assert set(now) == {"seconds", "nanoseconds"}
    assert abs(now["seconds"] - time.time()) < 5
    assert 0 <= now["nanoseconds"] < 1_000_000_000
    assert set(clock.resolution()) == {"seconds", "nanoseconds"}


def test_subscribe_duration_is_a_real_timer(imports: dict[str, Any]) -> None:
    clock = imports["wasi:clocks/monotonic-clock@0.2"]
    # The clock is read before subscribing: the deadline is then at least
    # ``start`` + 100 ms, however long the steps between take.
    start = time.monotonic()
    pollable = clock.subscribe_duration(100_000_000)
    assert isinstance(pollable, Pollable)
    assert pollable.ready() is False
    pending = pollable.block()
    assert pending is not None

    async def wait() -> None:
        await pending

    asyncio.run(wait())
    assert time.monotonic() - start >= 0.0999
    assert pollable.ready() is True
    assert pollable.block() is None  # the fast path once ready


def test_subscribe_instant_in_the_past_is_ready(imports: dict[str, Any]) -> None:
    clock = imports["wasi:clocks/monotonic-clock@0.2"]
    pollable = clock.subscribe_instant(clock.now() - 1)
    assert pollable.ready()
    assert pollable.block() is None


def test_subscribe_refuses_non_u64(imports: dict[str, Any]) -> None:
    clock = imports["wasi:clocks/monotonic-clock@0.2"]
    with pytest.raises(TypeError, match="u64"):
        clock.subscribe_duration(-1)


def test_p3_monotonic_clock_waits(imports: dict[str, Any]) -> None:
    clock = imports["wasi:clocks/monotonic-clock@0.3"]
    assert clock.get_resolution() >= 1

    async def main() -> int:
        start = clock.now()
        await clock.wait_for(20_000_000)
        await clock.wait_until(clock.now() + 5_000_000)
        await clock.wait_until(0)  # already past: returns at once
        return int(clock.now() - start)

    assert asyncio.run(main()) >= 25_000_000


def test_p3_system_clock(imports: dict[str, Any]) -> None:
    clock = imports["wasi:clocks/system-clock@0.3"]
    now = clock.now()
    assert abs(now["seconds"] - time.time()) < 5
    assert clock.get_resolution() >= 1


@pytest.mark.parametrize("track", ["@0.2", "@0.3"])
def test_random_lengths(imports: dict[str, Any], track: str) -> None:
    rnd = imports["wasi:random/random" + track]
    for n in (0, 1, 16, 1000):
        data = rnd.get_random_bytes(n)
        assert isinstance(data, bytes) and len(data) == n
    assert rnd.get_random_bytes(32) != rnd.get_random_bytes(32)
    assert 0 <= rnd.get_random_u64() < 1 << 64
    insecure = imports["wasi:random/insecure" + track]
    assert len(insecure.get_insecure_random_bytes(33)) == 33
    assert 0 <= insecure.get_insecure_random_u64() < 1 << 64


def test_random_refuses_bad_lengths(imports: dict[str, Any]) -> None:
    rnd = imports["wasi:random/random@0.2"]
    with pytest.raises(TypeError):
        rnd.get_random_bytes(-1)
    with pytest.raises(ValueError, match="more than"):
        rnd.get_random_bytes(1 << 40)


def test_insecure_is_deterministic_with_a_seed() -> None:
    a, b = wasi(seed=42), wasi(seed=42)
    key = "wasi:random/insecure@0.2"
    assert a[key].get_insecure_random_bytes(16) == b[key].get_insecure_random_bytes(16)
    seed = a["wasi:random/insecure-seed@0.2"].insecure_seed()
    assert isinstance(seed, tuple) and len(seed) == 2
    assert seed == b["wasi:random/insecure-seed@0.2"].insecure_seed()
    assert a["wasi:random/insecure-seed@0.3"].get_insecure_seed() == seed
    assert wasi(seed=43)["wasi:random/insecure-seed@0.2"].insecure_seed() != seed


def test_timezone_defaults_to_utc(imports: dict[str, Any]) -> None:
    when = {"seconds": 1_700_000_000, "nanoseconds": 0}
    tz2 = imports["wasi:clocks/timezone@0.2"]
    assert tz2.display(when) == {"utc_offset": 0, "name": "UTC", "in_daylight_saving_time": False}
    assert tz2.utc_offset(when) == 0
    tz3 = imports["wasi:clocks/timezone@0.3"]
    assert tz3.iana_id() is None
    assert tz3.utc_offset(when) is None
    assert tz3.to_debug_string() == "UTC"


def test_local_timezone_is_the_hosts() -> None:
    when = {"seconds": 1_700_000_000, "nanoseconds": 0}
    expected = time.localtime(when["seconds"]).tm_gmtoff
    imports = wasi(local_timezone=True)
    assert imports["wasi:clocks/timezone@0.2"].utc_offset(when) == expected
    assert imports["wasi:clocks/timezone@0.3"].utc_offset(when) == expected * 1_000_000_000
