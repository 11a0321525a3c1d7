"""The lift budget bounds values whose lists alias one range of memory (issue 19)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

import polyengine
from polyengine import Limits
from polyengine_protocol import Trap

from .components import ALIASED_COPIES, NESTED


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


# -- stream and future copies ----------------------------------------------------------
# Each copy (one stream.write/read or future.write/read, or a host read of a
# guest's write) lifts its elements against a budget of its own: a value
# whose lists alias one range of memory traps with the lift-limit code
# whether the host or another guest reads it.


@pytest.mark.parametrize("reader", ["host", "guest"])
@pytest.mark.parametrize("kind", ["stream", "future"])
def test_an_aliasing_value_copied_through_a_stream_or_future_traps(
    wat: Callable[[str], bytes], kind: str, reader: str
) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(
            wat(ALIASED_COPIES), limits=Limits(max_lift_bytes=100_000)
        )
        try:
            async with asyncio.timeout(30):
                with pytest.raises(Trap) as info:
                    if kind == "stream":
                        s = await inst.exports.produce(1)
                        if reader == "host":
                            await s.read(1)
                        else:
                            await inst.exports.consume(s)
                    else:
                        f = await inst.exports.make_fut()
                        if reader == "host":
                            await f
                        else:
                            await inst.exports.read_fut(f)
        finally:
            inst.close()
        assert info.value.code == "lift-limit", info.value
        assert "max_lift_bytes" in str(info.value)

    asyncio.run(go())


def test_each_copy_has_a_budget_of_its_own(wat: Callable[[str], bytes]) -> None:
    """Three writes of about 34 million bytes and elements each, under a 40 million budget."""

    async def go() -> None:
        inst = await polyengine.instantiate(
            wat(ALIASED_COPIES), limits=Limits(max_lift_bytes=40_000_000)
        )
        try:
            async with asyncio.timeout(60):
                s = await inst.exports.produce(3)
                got = 0
                while chunk := await s.read(1):
                    assert len(chunk[0]) == 64
                    got += len(chunk)
                assert got == 3
        finally:
            inst.close()

    asyncio.run(go())
