"""End-to-end tests of the sync path: instantiate, exports, imports, error model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

import polyengine
from polyengine.sync import SyncFacadeError, instantiate_sync
from polyengine_protocol import ComponentException, InvalidHandleError, Trap, is_trap

from . import components
from .components import BASIC, CROSS, GUEST_RESOURCE, HOST_RESOURCE, RESULTS, VERSIONED

Wat = Callable[[str], bytes]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def basic_imports(logs: list[str]) -> dict[str, Any]:
    def fail() -> None:
        raise ValueError("host is unhappy")

    return {"log": logs.append, "fail": fail}


def test_scalar_and_string_exports(wat: Wat) -> None:
    logs: list[str] = []

    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports(logs))
        assert await inst.exports.add(2, 40) == 42
        assert await inst.exports.greet("héllo ☃ 𝄞") == "héllo ☃ 𝄞"

    run(main())
    assert logs == ["héllo ☃ 𝄞"]


def test_accepts_artifacts_and_envelope(wat: Wat) -> None:
    data = wat(BASIC)
    arts = polyengine.translate(data)
    envelope = arts.to_envelope()

    async def main() -> None:
        for form in (arts, (envelope, data), data):
            inst = await polyengine.instantiate(form, basic_imports([]))
            assert await inst.exports.add(1, 2) == 3

    run(main())


def test_argument_count_and_range_checked(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports([]))
        with pytest.raises(TypeError, match="takes 2 argument"):
            await inst.exports.add(1)
        with pytest.raises(OverflowError):
            await inst.exports.add(-1, 2)

    run(main())


def test_unbranded_host_exception_traps_naming_import_and_poisons(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports([]))
        with pytest.raises(Trap, match=r"host import fail raised ValueError: host is unh") as ei:
            await inst.exports.boom()
        assert isinstance(ei.value.__cause__, ValueError)
        with pytest.raises(Trap, match="poisoned"):
            await inst.exports.add(1, 2)

    run(main())


def test_core_trap_is_a_branded_trap(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports([]))
        with pytest.raises(Exception) as ei:
            await inst.exports.crash()
        assert is_trap(ei.value)
        assert "unreachable" in str(ei.value)

    run(main())


def test_keyboard_interrupt_propagates(wat: Wat) -> None:
    def interrupt() -> None:
        raise KeyboardInterrupt

    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), {"log": print, "fail": interrupt})
        await inst.exports.boom()

    with pytest.raises(KeyboardInterrupt):
        run(main())


def test_missing_import_names_it(wat: Wat) -> None:
    with pytest.raises(polyengine.MissingImportError, match="'fail'"):
        run(polyengine.instantiate(wat(BASIC), {"log": print}))


def test_result_error_model_both_ways(wat: Wat) -> None:
    def check(x: int) -> int:
        if x == 0:
            raise ComponentException("bad input")
        return x * 2

    async def main() -> None:
        inst = await polyengine.instantiate(wat(RESULTS), {"check": check})
        assert await inst.exports.div(9, 3) == 3
        with pytest.raises(ComponentException) as ei:
            await inst.exports.div(1, 0)
        assert ei.value.payload == "zero"
        assert await inst.exports.via_check(5) == 10
        with pytest.raises(ComponentException) as ei2:
            await inst.exports.via_check(0)
        assert ei2.value.payload == "bad input"

    run(main())


def test_interface_imports_resolve_by_track(wat: Wat) -> None:
    math = SimpleNamespace(double=lambda x: 2 * x)

    async def main() -> None:
        inst = await polyengine.instantiate(wat(VERSIONED), {"test:demo/math@0.2": math})
        assert await inst.exports["test:demo/api@0.2.0"].quad(3) == 12
        assert await inst.exports["test:demo/api@0.2.7"].quad(1) == 4
        with pytest.raises(KeyError):
            inst.exports["test:demo/api@0.3.0"]

    run(main())


def test_interface_provider_forms(wat: Wat) -> None:
    class Math:
        def __init__(self) -> None:
            self.calls = 0

        def double(self, x: int) -> int:
            self.calls += 1
            return 2 * x

    obj = Math()

    async def main() -> None:
        for provider in (obj, {"double": obj.double}):
            inst = await polyengine.instantiate(wat(VERSIONED), {"test:demo/math@0.2.3": provider})
            assert await inst.exports["test:demo/api@0.2.0"].quad(5) == 20

    run(main())
    assert obj.calls == 4


def test_missing_interface_names_interface_and_function(wat: Wat) -> None:
    with pytest.raises(polyengine.MissingImportError, match=r"test:demo/math@0\.2\.3.*double"):
        run(polyengine.instantiate(wat(VERSIONED), {}))


def test_host_resource(wat: Wat) -> None:
    closed: list[str] = []

    class Blob(components.Blob):
        def close(self) -> None:
            closed.append(self.init)

    given = Blob("given")
    taken: list[Blob] = []

    def take(b: Blob) -> int:
        taken.append(b)
        return 7

    store = SimpleNamespace(Blob=Blob, take=take, give=lambda: given)

    async def main() -> None:
        inst = await polyengine.instantiate(wat(HOST_RESOURCE), {"test:demo/store": store})
        assert await inst.exports.run() == 105
        assert closed == ["hello"]
        assert await inst.exports.round_trip() == 7

    run(main())
    # own<R> given to the guest and handed back: the host's own object, no dispose call.
    assert taken == [given]
    assert closed == ["hello"]


def test_guest_resource_wrappers(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(GUEST_RESOURCE), {})
        counter = inst.exports.Counter
        c = counter(7)
        assert await c.get() == 7
        c.drop()
        assert await inst.exports.drops() == 1
        assert await inst.exports.last() == 7
        with pytest.raises(InvalidHandleError):
            await c.get()
        c2 = counter(9)
        assert await inst.exports.consume(c2) == 9
        with pytest.raises(InvalidHandleError):
            await c2.get()
        with counter(3) as c3:
            assert await c3.get() == 3
        assert await inst.exports.drops() == 2
        assert await inst.exports.last() == 3

    run(main())


def test_guest_resource_finalizer_backstop(wat: Wat) -> None:
    import gc

    async def main() -> None:
        inst = await polyengine.instantiate(wat(GUEST_RESOURCE), {})
        inst.exports.Counter(11)
        gc.collect()
        assert await inst.exports.drops() == 1
        assert await inst.exports.last() == 11

    run(main())


def test_guest_resource_wrapper_refuses_pickle(wat: Wat) -> None:
    import pickle

    async def main() -> None:
        inst = await polyengine.instantiate(wat(GUEST_RESOURCE), {})
        c = inst.exports.Counter(1)
        with pytest.raises(TypeError, match="to_cloneable"):
            pickle.dumps(c)
        c.drop()

    run(main())


def test_cross_component_string_transcoding(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(CROSS), {})
        for s in ("", "plain", "héllo ☃ 𝄞", "x" * 5000):
            assert await inst.exports.run(s) == s

    run(main())


def test_required_imports(wat: Wat) -> None:
    leaves = polyengine.required_imports(wat(VERSIONED))
    assert [leaf.name for leaf in leaves] == ["test:demo/math@0.2.3#double"]
    assert leaves[0].kind == "func"


def test_sync_facade(wat: Wat) -> None:
    with instantiate_sync(wat(BASIC), basic_imports([])) as inst:
        assert inst.exports.add(20, 22) == 42
        assert inst.exports.greet("hi") == "hi"


def test_sync_facade_refused_in_running_loop(wat: Wat) -> None:
    async def main() -> None:
        with pytest.raises(SyncFacadeError, match="running event loop"):
            instantiate_sync(wat(BASIC), basic_imports([]))

    run(main())
