"""Instances of one component share what does not depend on the instance (the
instance-pre per engine and plan, the link template per plan) and still get
their own state: memories, globals, resources, poisoning."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine.embed import _instantiate as inst_mod
from polyengine.engine import EngineConfig
from polyengine_protocol import Trap

from .components import BASIC, GUEST_RESOURCE

Wat = Callable[[str], bytes]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def _pre(inst: Any) -> object:
    return inst._runtime._linking._pre


def test_two_instances_share_the_prepared_parts_and_keep_their_own_state(wat: Wat) -> None:
    arts = polyengine.translate(wat(GUEST_RESOURCE))

    async def main() -> None:
        a = await polyengine.instantiate(arts, {})
        b = await polyengine.instantiate(arts, {})
        assert _pre(a) is _pre(b)
        assert a._runtime.store is not b._runtime.store
        ca = a.exports.Counter(7)
        assert await ca.get() == 7
        ca.drop()
        # the destructor ran in a's core instance only: its global, not b's
        assert (await a.exports.drops(), await a.exports.last()) == (1, 7)
        assert (await b.exports.drops(), await b.exports.last()) == (0, 0)
        # handle tables are each instance's own: b's first handle is its own
        cb = b.exports.Counter(9)
        assert await cb.get() == 9
        cb.drop()
        assert await b.exports.drops() == 1
        assert await a.exports.drops() == 1
        a.close()
        b.close()

    run(main())


def test_a_trap_in_one_instance_leaves_the_other_usable(wat: Wat) -> None:
    arts = polyengine.translate(wat(BASIC))
    logs: list[str] = []
    imports = {"log": logs.append, "fail": lambda: None}

    async def main() -> None:
        a = await polyengine.instantiate(arts, imports)
        b = await polyengine.instantiate(arts, imports)
        assert _pre(a) is _pre(b)
        assert inst_mod._TEMPLATES.peek(arts.plan) is not None
        with pytest.raises(Trap):
            await a.exports.crash()
        with pytest.raises(Trap, match="poisoned"):
            await a.exports.add(1, 2)
        assert await b.exports.add(1, 2) == 3
        assert await b.exports.greet("b") == "b"
        # a third instance made after the trap starts clean
        c = await polyengine.instantiate(arts, imports)
        assert await c.exports.greet("c") == "c"
        for inst in (a, b, c):
            inst.close()

    run(main())
    assert logs == ["b", "c"]


def test_another_engine_configuration_gets_its_own_pre(wat: Wat) -> None:
    arts = polyengine.translate(wat(BASIC))
    imports = {"log": lambda s: None, "fail": lambda: None}

    async def main() -> None:
        plain = await polyengine.instantiate(arts, imports)
        fueled = await polyengine.instantiate(
            arts, imports, engine_config=EngineConfig(max_wasm_stack=256 * 1024)
        )
        again = await polyengine.instantiate(
            arts, imports, engine_config=EngineConfig(max_wasm_stack=256 * 1024)
        )
        assert _pre(plain) is not _pre(fueled)
        assert _pre(fueled) is _pre(again)
        assert await fueled.exports.add(2, 3) == 5
        assert await plain.exports.add(2, 3) == 5
        for inst in (plain, fueled, again):
            inst.close()

    run(main())


def test_another_component_gets_its_own_pre(wat: Wat) -> None:
    a = polyengine.translate(wat(BASIC))
    b = polyengine.translate(wat(BASIC.replace("(i32.add (local.get 0)", "(i32.sub (local.get 0)")))
    imports = {"log": lambda s: None, "fail": lambda: None}

    async def main() -> None:
        ia = await polyengine.instantiate(a, imports)
        ib = await polyengine.instantiate(b, imports)
        assert _pre(ia) is not _pre(ib)
        assert await ia.exports.add(5, 3) == 8
        assert await ib.exports.add(5, 3) == 2
        ia.close()
        ib.close()

    run(main())
