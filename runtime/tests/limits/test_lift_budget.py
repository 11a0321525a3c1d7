"""The lift budget bounds values whose lists alias one range of memory (issue 19)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

import polyengine
from polyengine import Limits
from polyengine_protocol import Trap

from .components import NESTED


def test_aliasing_nested_lists_trap_past_the_budget(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(wat(NESTED), limits=Limits(max_lift_bytes=100_000))
        with pytest.raises(Trap) as info:
            await inst.exports.nest()
        assert info.value.code == "lift-limit"
        assert "max_lift_bytes" in str(info.value)

    asyncio.run(go())


def test_the_budget_is_per_call(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        # about 562,000 bytes and elements each call, 1.7 million in all
        inst = await polyengine.instantiate(wat(NESTED), limits=Limits(max_lift_bytes=1_000_000))
        for _ in range(3):
            value = await inst.exports.nest3()
            assert len(value) == 64 and len(value[0][0]) == 64

    asyncio.run(go())


def test_the_default_budget_is_finite(wat: Callable[[str], bytes]) -> None:
    assert 0 < Limits().max_lift_bytes <= 1 << 32

    async def go() -> None:
        inst = await polyengine.instantiate(wat(NESTED))
        value = await inst.exports.nest()  # 16 MiB: within the default
        assert len(value) == 64 and value[63][63][63] == bytes(value[0][0][0])

    asyncio.run(go())
