"""A real componentize-py guest (``py-stub-values``, built with ``--stub-wasi``)
called from Python with exactly the value shapes of python-mapping.md §2.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import polyengine
from polyengine_protocol import ComponentException, InvalidHandleError

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]

API = "polyengine:values/api"


def _builder() -> ModuleType:
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).parent.parent / "guests" / "_build.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def artifacts() -> polyengine.Artifacts:
    path: Path = _builder().build_guest("py-stub-values")
    return polyengine.translate(path.read_bytes())


def run(artifacts: polyengine.Artifacts, body: Any) -> Any:
    async def main() -> Any:
        inst = await polyengine.instantiate(artifacts, {})
        try:
            return await body(inst.exports[API])
        finally:
            inst.close()

    return asyncio.run(main())


def test_no_imports_needed(artifacts: polyengine.Artifacts) -> None:
    assert polyengine.required_imports(artifacts) == []


def test_strings_and_lists(artifacts: polyengine.Artifacts) -> None:
    async def body(api: Any) -> None:
        assert await api.echo_string("héllo ☃ 𝄞") == "héllo ☃ 𝄞"
        assert await api.upper("straße") == "STRASSE"
        # A lone surrogate is replaced with U+FFFD when lowered (the USVString rule).
        assert await api.echo_string("a\ud800b") == "a\ufffdb"
        out = await api.reverse_bytes(b"\x00\x01\x02\xff")
        assert out == b"\xff\x02\x01\x00" and type(out) is bytes
        assert await api.reverse_bytes(bytearray(b"ab")) == b"ba"
        assert await api.reverse_bytes(memoryview(b"xyz")) == b"zyx"
        assert await api.join_strings(["a", "b", "c"], "-") == "a-b-c"
        assert await api.split_words("the quick  fox") == ["the", "quick", "fox"]
        assert await api.sum_u32([1, 2, 3, 0xFFFFFFFF]) == 0xFFFFFFFF + 6
        assert await api.double_u32((1, 2, 3)) == [2, 4, 6]

    run(artifacts, body)


def test_records_variants_enums_flags(artifacts: polyengine.Artifacts) -> None:
    async def body(api: Any) -> None:
        assert await api.add_points({"x": 1, "y": -2}, {"x": 10, "y": 20}) == {"x": 11, "y": 18}
        person = {"name": "Ada", "age": 36, "tags": ["math", "engines"]}
        assert await api.describe_person(person) == "Ada (36) [math, engines]"
        assert await api.make_person("Bo", 7) == {"name": "Bo", "age": 7, "tags": ["new"]}
        assert await api.area({"kind": "circle", "value": 2.0}) == 12.0
        assert await api.area({"kind": "rect", "value": {"x": 3, "y": -4}}) == 12.0
        assert await api.area({"kind": "empty"}) == 0.0
        assert await api.next_color("blue") == "red"
        assert await api.toggle_exec({"read": True}) == {
            "read": True,
            "write": False,
            "exec": True,
        }
        assert await api.swap(("x", 5)) == (5, "x")

    run(artifacts, body)


def test_options_results_scalars(artifacts: polyengine.Artifacts) -> None:
    async def body(api: Any) -> None:
        assert await api.maybe_double(21) == 42
        assert await api.maybe_double(None) is None
        assert await api.parse_u32("17") == 17
        with pytest.raises(ComponentException) as err:
            await api.parse_u32("seventeen")
        assert err.value.payload == "not a number: seventeen"
        assert await api.check_positive(3) is None
        with pytest.raises(ComponentException) as err2:
            await api.check_positive(-1)
        assert err2.value.payload == "-1 is not positive"
        got = await api.scalars(True, -128, 65535, -(2**63), 1.5, "☃")
        assert got == (True, -128, 65535, -(2**63), 1.5, "☃")
        nan = (await api.scalars(False, 0, 0, 0, math.nan, "a"))[4]
        assert math.isnan(nan)

    run(artifacts, body)


def test_lowering_refusals_name_the_value(artifacts: polyengine.Artifacts) -> None:
    async def body(api: Any) -> None:
        with pytest.raises(OverflowError, match="age"):
            await api.make_person("x", 256)
        with pytest.raises(TypeError):
            await api.scalars(1, 0, 0, 0, 0.0, "a")  # bool refuses int
        with pytest.raises(ValueError):
            await api.scalars(True, 0, 0, 0, 0.0, "\ud800")  # surrogate char
        with pytest.raises(TypeError):
            await api.next_color(3)

    run(artifacts, body)


def test_guest_resource(artifacts: polyengine.Artifacts) -> None:
    async def body(api: Any) -> None:
        counter = api.Counter
        a = counter(5)
        assert await a.get() == 5
        assert await a.increment_by(3) == 8
        b = counter(10)
        merged = await counter.merge(a, b)
        assert await merged.get() == 18
        assert await api.counter_total([a, b, merged]) == 36
        # Passing as borrow keeps the wrappers usable.
        assert await a.get() == 8
        with merged:
            pass
        with pytest.raises(InvalidHandleError):
            await merged.get()
        a.drop()
        b.drop()

    run(artifacts, body)
