"""The pooling instance allocator: ``EngineConfig(pooling=PoolingConfig(...))``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest
import wasmtime

import polyengine
from polyengine import engine
from polyengine.engine import (
    EngineConfig,
    PoolingConfig,
    PoolLimitError,
    component_needs,
    get_engine,
)

from .components import SPIN

#: small pools: every engine lives as long as the process
SMALL = PoolingConfig(total_core_instances=8, total_memories=8, total_tables=8, total_stacks=8)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def one_module(body: str) -> str:
    return f"""(component
  (core module $m {body} (func (export "ok") (result i32) (i32.const 1)))
  (core instance $i (instantiate $m))
  (func (export "ok") (result u32) (canon lift (core func $i "ok")))
)"""


def test_pooling_config_is_validated() -> None:
    for bad in ({"total_memories": -1}, {"table_elements": True}, {"total_core_instances": 0}):
        with pytest.raises(ValueError, match="PoolingConfig"):
            PoolingConfig(**bad)
    with pytest.raises(ValueError, match="at least one instance"):
        PoolingConfig.for_instances(component_needs([], []), 0, 1)


def test_pooled_engine_compiles_the_same_code_and_shares_the_cache() -> None:
    pooled = get_engine(EngineConfig(pooling=SMALL))
    assert pooled.pooled
    assert pooled is not get_engine()
    assert EngineConfig(pooling=SMALL).code_fingerprint() == EngineConfig().code_fingerprint()
    text = '(module (memory 1) (table 4 funcref) (func (export "f") (result i32) i32.const 3))'
    on_demand = wasmtime.Module(get_engine().wasmtime_engine, text).serialize()
    assert wasmtime.Module(pooled.wasmtime_engine, text).serialize() == on_demand


def test_pooled_and_on_demand_instances_answer_alike(wat: Callable[[str], bytes]) -> None:
    async def answers(config: EngineConfig | None) -> list[int]:
        inst = await polyengine.instantiate(wat(SPIN), engine_config=config)
        try:
            e = inst.exports
            return [
                await e.count(1000),
                await e.grow(3),
                await e.grow(2),
                await e.grow_table(10),
                await e.grow_table(5),
                await e.ok(),
            ]
        finally:
            inst.close()

    pooled = run(answers(EngineConfig(pooling=SMALL)))
    assert pooled == run(answers(None)) == [1000, 1, 4, 1, 11, 7]


def test_a_module_over_a_slot_limit_is_refused_by_name(wat: Callable[[str], bytes]) -> None:
    cases = [
        ("(memory 1) (memory 1)", "max_memories_per_module"),
        ("(table 1 funcref) (table 1 funcref)", "max_tables_per_module"),
        ("(table 300 funcref)", "table_elements"),
        ("(memory 40)", "max_memory_size"),
    ]
    config = EngineConfig(pooling=PoolingConfig(table_elements=200, max_memory_size=32 << 16))
    for body, limit in cases:
        with pytest.raises(PoolLimitError, match=rf"PoolingConfig\.{limit}") as info:
            run(polyengine.instantiate(wat(one_module(body)), engine_config=config))
        assert info.value.limit == limit
        assert "on-demand allocator" in str(info.value)


def test_a_full_pool_is_refused_until_a_slot_is_free(wat: Callable[[str], bytes]) -> None:
    config = EngineConfig(pooling=PoolingConfig(total_core_instances=8, total_memories=1))

    async def go() -> None:
        first = await polyengine.instantiate(wat(SPIN), engine_config=config)
        with pytest.raises(PoolLimitError, match=r"PoolingConfig\.total_memories") as info:
            await polyengine.instantiate(wat(SPIN), engine_config=config)
        assert info.value.limit == "total_memories"
        assert await first.exports.ok() == 7  # the full pool harms no live instance
        first.close()  # a small store is deleted at once, freeing its slot
        again = await polyengine.instantiate(wat(SPIN), engine_config=config)
        assert await again.exports.ok() == 7
        again.close()

    run(go())


def test_table_growth_stops_at_the_slot(wat: Callable[[str], bytes]) -> None:
    """Past ``table_elements`` a table does not grow, as the core spec allows (-1)."""
    config = EngineConfig(pooling=PoolingConfig(table_elements=64))

    async def go() -> tuple[int, int]:
        inst = await polyengine.instantiate(wat(SPIN), engine_config=config)
        try:
            return await inst.exports.grow_table(100), await inst.exports.grow_table(10)
        finally:
            inst.close()

    assert run(go()) == (-1, 1)


def test_fuel_limits_keep_the_pool() -> None:
    from polyengine.instance._setup import engine_for

    eng = engine_for(polyengine.Limits(fuel=10), EngineConfig(pooling=SMALL))
    assert eng.config.consume_fuel and eng.config.pooling == SMALL and eng.pooled


def test_component_needs_counts_defined_memories_and_tables(wat: Callable[[str], bytes]) -> None:
    mods = [
        wasmtime.wat2wasm("(module (memory 3) (memory 1 5) (table 7 funcref))"),
        wasmtime.wat2wasm('(module (import "a" "m" (memory 1)) (table 30000 50000 funcref))'),
        wasmtime.wat2wasm("(module)"),
    ]
    needs = component_needs(mods, [0, 1, 1, 2])
    assert needs.core_instances == 4
    assert needs.memories == 2 and needs.memories_per_module == 2
    assert needs.tables == 3 and needs.tables_per_module == 1
    assert needs.table_elements == 50000
    assert needs.memory_bytes == 3 << 16
    sized = PoolingConfig.for_instances(needs, 10, 5, keep_resident=1 << 20)
    assert sized.total_core_instances >= 40 and sized.total_memories >= 20
    assert sized.total_stacks == 5 and sized.linear_memory_keep_resident == 1 << 20


def test_an_unreservable_pool_falls_back_to_on_demand() -> None:
    """Under a low address-space limit the pool cannot be reserved: one warning, then
    the on-demand allocator, and instances work."""
    script = textwrap.dedent(
        """
        import resource, warnings, wasmtime
        resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))
        from polyengine.engine import EngineConfig, PoolingConfig, get_engine
        from polyengine import engine
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            eng = get_engine(EngineConfig(pooling=PoolingConfig(total_memories=100)))
        print(eng.pooled, len(caught), str(caught[0].message).count(chr(10)))
        print(caught[0].message)
        m = engine.compile_module(wasmtime.wat2wasm(
            '(module (memory 1) (func (export "f") (result i32) i32.const 5))'), engine=eng)
        store = engine.EngineStore(eng)
        print(engine.instantiate(store, m, []).export("f").call_raw([]))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "False 1 0"
    assert "pooling allocator" in lines[1] and "on-demand" in lines[1]
    assert lines[2] == "[5]"


def test_pool_limit_reads_only_pool_errors() -> None:
    assert engine.pool_limit("some other failure") is None
    err = engine.pool_limit("maximum concurrent limit of 4 for stacks reached", "call: ")
    assert err is not None and err.limit == "total_stacks"
    assert str(err).startswith("call: over the pooling allocator's PoolingConfig.total_stacks")
