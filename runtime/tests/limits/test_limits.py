"""``polyengine.Limits``: fuel, deadlines, memory, tables and instances (issue 19)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

import polyengine
from polyengine import Limits
from polyengine_protocol import Trap

from .components import BIG_MEMORY, BIG_TABLE, SPIN


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def test_limits_is_public_frozen_and_validated() -> None:
    limits = Limits(fuel=10, timeout=1.5)
    assert polyengine.Limits is Limits
    with pytest.raises(AttributeError):
        limits.fuel = 3  # type: ignore[misc]
    for bad in (
        {"fuel": -1},
        {"fuel": True},
        {"timeout": 0},
        {"timeout": float("nan")},
        {"max_memory_size": 1 << 63},
        {"max_instances": "3"},
        {"fuel_per_call": True},
    ):
        with pytest.raises(ValueError, match="Limits"):
            Limits(**bad)  # type: ignore[arg-type]


def test_instantiate_refuses_other_limits(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        await polyengine.instantiate(wat(SPIN), limits={"fuel": 1})  # type: ignore[arg-type]

    with pytest.raises(TypeError, match=r"polyengine\.Limits"):
        run(go())


def test_fuel_per_instance_traps_and_poisons_only_that_instance(
    wat: Callable[[str], bytes],
) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(wat(SPIN), limits=Limits(fuel=100_000))
        other = await polyengine.instantiate(wat(SPIN))
        assert await inst.exports.count(10) == 10
        with pytest.raises(Trap) as info:
            await inst.exports.spin()
        assert info.value.code == "out-of-fuel"
        with pytest.raises(Trap) as again:
            await inst.exports.ok()
        assert again.value.code == "instance-poisoned"
        assert await other.exports.ok() == 7

    run(go())


def test_fuel_per_call_is_refilled(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        limits = Limits(fuel=200_000, fuel_per_call=True)
        inst = await polyengine.instantiate(wat(SPIN), limits=limits)
        for _ in range(20):  # 20 x 20,000 iterations would exhaust one tank
            assert await inst.exports.count(20_000) == 20_000
        with pytest.raises(Trap) as info:
            await inst.exports.count(10_000_000)
        assert info.value.code == "out-of-fuel"

    run(go())


def test_timeout_interrupts_a_spinning_guest(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(wat(SPIN), limits=Limits(timeout=0.2))
        other = await polyengine.instantiate(wat(SPIN), limits=Limits(timeout=0.2))
        assert await inst.exports.ok() == 7
        t0 = time.monotonic()
        with pytest.raises(Trap) as info:
            await inst.exports.spin()
        elapsed = time.monotonic() - t0
        assert info.value.code == "interrupt"
        assert "deadline" in str(info.value.__cause__.details)  # type: ignore[union-attr]
        assert 0.15 < elapsed < 2.0
        assert await other.exports.ok() == 7

    run(go())


def test_timeout_is_per_call(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(wat(SPIN), limits=Limits(timeout=0.3))
        for _ in range(3):
            await asyncio.sleep(0.15)  # time outside the guest does not count
            assert await inst.exports.count(1000) == 1000

    run(go())


def test_max_memory_size_fails_growth_and_creation(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(wat(SPIN), limits=Limits(max_memory_size=2 << 16))
        assert await inst.exports.grow(1) == 1
        assert await inst.exports.grow(1) == -1  # memory.grow fails beyond the limit
        unbounded = await polyengine.instantiate(wat(SPIN))
        assert await unbounded.exports.grow(1) == 1
        assert await unbounded.exports.grow(1) == 2
        with pytest.raises(Trap) as info:
            await polyengine.instantiate(wat(BIG_MEMORY), limits=Limits(max_memory_size=1 << 16))
        assert info.value.code == "memory-limit"

    run(go())


def test_max_table_elements(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(wat(SPIN), limits=Limits(max_table_elements=10))
        assert await inst.exports.grow_table(9) == 1
        assert await inst.exports.grow_table(1) == -1
        with pytest.raises(Trap) as info:
            await polyengine.instantiate(wat(BIG_TABLE), limits=Limits(max_table_elements=10))
        assert info.value.code == "table-limit"

    run(go())


def test_max_instances_memories_tables(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        for limits, code in (
            (Limits(max_instances=0), "instance-limit"),
            (Limits(max_memories=0), "memory-limit"),
            (Limits(max_tables=0), "table-limit"),
        ):
            with pytest.raises(Trap) as info:
                await polyengine.instantiate(wat(SPIN), limits=limits)
            assert info.value.code == code, limits
        inst = await polyengine.instantiate(
            wat(SPIN), limits=Limits(max_instances=1, max_memories=1, max_tables=1)
        )
        assert await inst.exports.ok() == 7

    run(go())


def test_sync_facade_takes_limits(wat: Callable[[str], bytes]) -> None:
    from polyengine.sync import instantiate_sync

    with instantiate_sync(wat(SPIN), limits=Limits(timeout=0.2)) as inst:
        with pytest.raises(Trap) as info:
            inst.exports.spin()
        assert info.value.code == "interrupt"
