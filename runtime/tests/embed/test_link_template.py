"""Link templates: a component linked again against the same provider objects takes
over what the first linking resolved, and never what another provider would serve."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import polyengine
from polyengine.embed import _instantiate as inst_mod
from polyengine.embed._host import HostLinker
from polyengine.embed._providers import Imports
from polyengine_protocol import suspending

from .components import HOST_RESOURCE, VERSIONED, Blob

Wat = Callable[[str], bytes]
API = "test:demo/api@0.2.0"
MATH = "test:demo/math@0.2.3"


class Math:
    def __init__(self, factor: int) -> None:
        self.factor = factor
        self.calls = 0

    def double(self, x: int) -> int:
        self.calls += 1
        return x * self.factor


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def quad(arts: Any, provider: object, x: int) -> int:
    inst = await polyengine.instantiate(arts, {MATH: provider})
    try:
        result: int = await inst.exports[API].quad(x)
        return result
    finally:
        inst.close()


def test_same_provider_shares_the_template(wat: Wat) -> None:
    arts = polyengine.translate(wat(VERSIONED))
    math = Math(2)

    async def main() -> None:
        assert await quad(arts, math, 3) == 12
        template = inst_mod._TEMPLATES.peek(arts.plan)
        assert template is not None
        assert await quad(arts, math, 5) == 20
        # taken over, not made again
        assert inst_mod._TEMPLATES.peek(arts.plan) is template

    run(main())
    assert math.calls == 4


def test_members_of_an_instance_s_own_providers_leave_the_template(wat: Wat) -> None:
    arts = polyengine.translate(wat(HOST_RESOURCE))
    shared = SimpleNamespace(take=lambda b: 7, give=lambda: None)

    def store() -> object:  # a provider of its own per instance, sharing the class
        return SimpleNamespace(Blob=Blob, take=lambda b: 7, give=shared.give)

    async def main() -> None:
        for _ in range(3):
            inst = await polyengine.instantiate(arts, {"test:demo/store": store()})
            assert await inst.exports.run() == 105
            inst.close()
        template = inst_mod._TEMPLATES.peek(arts.plan)
        assert template is not None
        names = sorted(entry[0][1] for entries in template.groups.values() for entry in entries)
        # the per-instance ``take`` lambda went; the shared class's method and ``give`` stay
        assert names == ["[method]blob.size", "give"]

    run(main())


def test_adopt_takes_only_what_the_same_provider_holds(wat: Wat) -> None:
    arts = polyengine.translate(wat(VERSIONED))
    path = (MATH, "double")
    math = Math(2)
    first = HostLinker(Imports({MATH: math}), suspend=False)
    first.resolve(path)
    template = first.template()

    again = HostLinker(Imports({MATH: math}), suspend=False)
    assert again.adopt(template) is template  # all of it
    assert again._callables[path] == math.double
    assert again._suspending[path] is False

    other = HostLinker(Imports({MATH: Math(3)}), suspend=False)
    assert other.adopt(template).size == 0
    assert path not in other._callables

    # an attribute replaced since: resolved again, not taken over
    math.double = suspending(lambda x: x)  # type: ignore[method-assign]
    replaced = HostLinker(Imports({MATH: math}), suspend=False)
    assert replaced.adopt(template).size == 0
    assert path not in replaced._callables
    assert replaced.resolve(path) is math.double
    assert replaced.is_marked(path)
    del arts


def test_other_provider_object_is_served_itself(wat: Wat) -> None:
    arts = polyengine.translate(wat(VERSIONED))
    twice, thrice = Math(2), Math(3)

    async def main() -> None:
        assert await quad(arts, twice, 1) == 4
        assert await quad(arts, thrice, 1) == 9
        assert await quad(arts, twice, 1) == 4
        # a mapping provider, then the same mapping with its member replaced
        mapping: dict[str, Any] = {"double": lambda x: x + 1}
        assert await quad(arts, mapping, 1) == 3
        mapping["double"] = lambda x: x * 10
        assert await quad(arts, mapping, 1) == 100

    run(main())
    assert (twice.calls, thrice.calls) == (4, 2)


def test_another_component_keeps_its_own_template(wat: Wat) -> None:
    a = polyengine.translate(wat(VERSIONED))
    once = VERSIONED.replace("(call $d (call $d (local.get 0)))", "(call $d (local.get 0))")
    b = polyengine.translate(wat(once))
    assert a.plan is not b.plan
    math = Math(2)

    async def main() -> None:
        assert await quad(a, math, 1) == 4
        assert await quad(b, math, 1) == 2
        assert await quad(a, math, 1) == 4

    run(main())
    ta, tb = inst_mod._TEMPLATES.peek(a.plan), inst_mod._TEMPLATES.peek(b.plan)
    assert ta is not None and tb is not None and ta is not tb


def test_resource_classes_follow_their_provider(wat: Wat) -> None:
    arts = polyengine.translate(wat(HOST_RESOURCE))

    def store_with(offset: int) -> SimpleNamespace:
        class Blob:
            def __init__(self, init: str) -> None:
                self.init = init

            def size(self) -> int:
                return len(self.init) + offset

            @staticmethod
            def kind() -> int:
                return 100

        return SimpleNamespace(Blob=Blob, take=lambda b: 7, give=lambda: Blob("x"))

    async def run_with(store: SimpleNamespace) -> int:
        inst = await polyengine.instantiate(arts, {"test:demo/store": store})
        try:
            result: int = await inst.exports.run()
            return result
        finally:
            inst.close()

    async def main() -> None:
        first = store_with(0)
        assert await run_with(first) == 105
        assert await run_with(first) == 105
        # a provider object of its own holding the same members: they are taken over
        own = SimpleNamespace(**vars(first))
        linker = HostLinker(Imports({"test:demo/store": own}), suspend=False)
        template = inst_mod._TEMPLATES.peek(arts.plan)
        assert template is not None
        assert linker.adopt(template).size == 3  # [method]blob.size, take, give
        assert await run_with(own) == 105
        assert await run_with(store_with(10)) == 115
        # the same provider, its class's method replaced
        first.Blob.size = lambda self: 1
        assert await run_with(first) == 101

    run(main())
