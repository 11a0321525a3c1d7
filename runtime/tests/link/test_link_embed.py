"""Link-time type checks of ``instantiate`` (Explainer.md §"Subtyping", issue 14).

Imports whose component-level type is known (another instance, its
interface namespaces and export functions, guest resource classes, a core
module's binary) are checked before any guest code runs, and refused with a
``LinkError`` naming the import path, the expected and the found type.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

import polyengine
from polyengine.errors import LinkError

PROVIDER = """
(component
  (core module $m
    (func (export "f") (result i32) i32.const 7)
    (func (export "take") (param i32)))
  (core instance $i (instantiate $m))
  (type $r1 (resource (rep i32)))
  (type $r2 (resource (rep i32)))
  (func $f (result u32) (canon lift (core func $i "f")))
  (instance $iface
    (export "r1" (type $r1))
    (export "r2" (type $r2)))
  (export $e "t:t/i" (instance $iface))
  (alias export $e "r2" (type $r2e))
  (func $take (param "x" (own $r2e)) (canon lift (core func $i "take")))
  (export "f" (func $f))
  (export "take-r2" (func $take))
)
"""

# start function: traps if it ever runs (the check comes before any guest code)
TRAP_START = """
  (core module $s (func (export "s") unreachable) (start 0))
  (core instance (instantiate $s))
"""


def consumer(imports: str, start: bool = True) -> str:
    return f"(component {imports} {TRAP_START if start else ''})"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def provider(wat: Callable[[str], bytes]) -> Any:
    async def make() -> Any:
        return await polyengine.instantiate(wat(PROVIDER))

    instance = run(make())
    yield instance
    instance.close()


def link_error(data: bytes, imports: dict[str, object]) -> str:
    with pytest.raises(LinkError) as info:
        run(polyengine.instantiate(data, imports))
    return str(info.value)


def test_instance_exports_checked(wat: Callable[[str], bytes], provider: Any) -> None:
    data = wat(consumer('(import "a" (instance (export "f" (func (result string)))))'))
    message = link_error(data, {"a": provider.exports})
    assert message.startswith("import a/f: export 'f' has the wrong type")
    assert "`string`" in message and "`u32`" in message
    # the Instance itself stands for its exports
    assert link_error(data, {"a": provider}) == message


def test_matching_instance_links(wat: Callable[[str], bytes], provider: Any) -> None:
    data = wat(consumer('(import "a" (instance (export "f" (func (result u32)))))', start=False))
    instance = run(polyengine.instantiate(data, {"a": provider.exports}))
    instance.close()


def test_kind_mismatches(wat: Callable[[str], bytes], provider: Any) -> None:
    func = wat(consumer('(import "a" (func))'))
    assert link_error(func, {"a": provider.exports}) == "import a: expected func found instance"
    inst = wat(consumer('(import "a" (instance (export "f" (func (result u32)))))'))
    assert link_error(inst, {"a": lambda: 0}) == "import a: expected instance found func"
    nested = wat(consumer('(import "a" (instance (export "f" (instance))))'))
    assert link_error(nested, {"a": provider.exports}) == (
        "import a/f: expected instance found func"
    )


def test_missing_export(wat: Callable[[str], bytes], provider: Any) -> None:
    data = wat(consumer('(import "a" (instance (export "g" (func))))'))
    assert link_error(data, {"a": provider.exports}) == "import a: export 'g' was not found"


def test_interface_namespace_and_resources(wat: Callable[[str], bytes], provider: Any) -> None:
    same = wat(
        consumer(
            '(import "t:t/i" (instance (export "r1" (type $r (sub resource)))'
            ' (export "r2" (type (eq $r)))))'
        )
    )
    message = link_error(same, {"t:t/i": provider.exports["t:t/i"]})
    assert message == "import t:t/i/r2: export 'r2': mismatched resource types"
    # a guest resource class handed in a mapping carries its resource type too
    wrong = wat(
        consumer(
            '(import "t:t/i" (instance (export "r" (type $r (sub resource)))'
            ' (export "take" (func (param "x" (own $r))))))'
        )
    )
    iface = provider.exports["t:t/i"]
    message = link_error(wrong, {"t:t/i": {"R": iface.R1, "take": provider.exports.take_r2}})
    assert message.startswith("import t:t/i/take: export 'take' has the wrong type")
    assert "resource types are not the same" in message
    right = wat(
        consumer(
            '(import "t:t/i" (instance (export "r" (type $r (sub resource)))'
            ' (export "take" (func (param "x" (own $r))))))',
            start=False,
        )
    )
    ok = run(
        polyengine.instantiate(right, {"t:t/i": {"R": iface.R2, "take": provider.exports.take_r2}})
    )
    ok.close()


def test_core_module_imports(wat: Callable[[str], bytes]) -> None:
    module = wat(
        '(module (func (export "g") (result i32) i32.const 1)'
        ' (global (export "v") i32 (i32.const 0)))'
    )
    good = wat(consumer('(import "m" (core module (export "g" (func (result i32)))))', start=False))
    run(polyengine.instantiate(good, {"m": module})).close()
    absent = wat(consumer('(import "m" (core module (export "h" (func))))'))
    assert link_error(absent, {"m": module}) == "import m: module export 'h' was not found"
    kind = wat(consumer('(import "m" (core module (export "v" (func))))'))
    assert link_error(kind, {"m": module}).startswith(
        "import m: module export 'v' has the wrong type"
    )
    assert link_error(absent, {}) == "import m: module 'm' was not found"
    assert link_error(absent, {"m": object()}).startswith("import m: expected module found object")


def test_core_module_signatures(wat: Callable[[str], bytes]) -> None:
    """A supplied core module is checked by type, not only by kind (core import matching)."""
    module = wat(
        '(module (import "env" "f" (func (param i32)))'
        ' (func (export "g") (result i32) i32.const 1)'
        ' (memory (export "mem") 2 4) (global (export "v") (mut i32) (i32.const 0)))'
    )
    imports = '(import "env" "f" (func (param i32)))'

    def declared(decls: str) -> bytes:
        return wat(consumer(f'(import "m" (core module {decls}))'))

    def refusal(decls: str) -> str:
        return link_error(declared(decls), {"m": module})

    assert refusal(f'{imports} (export "g" (func (result i64)))') == (
        "import m: module export 'g' has the wrong type: "
        "expected func [] -> [i64], found func [] -> [i32]"
    )
    assert refusal('(import "env" "f" (func (param i64))) (export "g" (func (result i32)))') == (
        "import m: module import 'env::f' has the wrong type: "
        "expected func [i32] -> [], found func [i64] -> []"
    )
    assert refusal(f'{imports} (export "v" (global i32))') == (
        "import m: module export 'v' has the wrong type: expected global i32, found global mut i32"
    )
    # limits: the module's memory (2..4) must lie within the declared ones
    assert refusal(f'{imports} (export "mem" (memory 3))').endswith("(limits)")
    assert refusal(f'{imports} (export "mem" (memory 1 3))').endswith("(limits)")
    good = wat(
        consumer(
            f'(import "m" (core module {imports} (export "g" (func (result i32)))'
            ' (export "mem" (memory 1 8)) (export "v" (global (mut i32)))))',
            start=False,
        )
    )
    run(polyengine.instantiate(good, {"m": module})).close()


# -- providers reused across instantiations ---------------------------------------
#
# An object provider is checked like a mapping: its typed members (another
# instance's export functions, guest resource classes) against the declared
# types, its plain functions and classes left to resolution. The names a
# component's instance types look up are worked out once, but every
# instantiation reads the providers afresh: an imports mapping (or provider)
# changed between two instantiations is checked as it is now.

REUSE_CONSUMER = """
(component
  (import "t:t/i" (instance $i
    (export "r" (type $r (sub resource)))
    (export "take" (func (param "x" (own $r))))
    (export "g" (func (result u32)))))
)
"""


def _link(data: bytes, imports: dict[str, object]) -> None:
    run(polyengine.instantiate(data, imports)).close()


def test_an_object_provider_is_checked_like_a_mapping(
    wat: Callable[[str], bytes], provider: Any
) -> None:
    data = wat(REUSE_CONSUMER)
    iface = provider.exports["t:t/i"]

    def g() -> int:
        return 1

    good = SimpleNamespace(R=iface.R2, take=provider.exports.take_r2, g=g)
    _link(data, {"t:t/i": good})
    bad = SimpleNamespace(R=iface.R1, take=provider.exports.take_r2, g=g)
    with pytest.raises(LinkError, match=r"^import t:t/i/take: export 'take' has the wrong type"):
        _link(data, {"t:t/i": bad})
    # a typed function where a plain one would do is still checked
    wrong_g = SimpleNamespace(R=iface.R2, take=provider.exports.take_r2, g=provider.exports.take_r2)
    with pytest.raises(LinkError, match=r"^import t:t/i/g: export 'g' has the wrong type"):
        _link(data, {"t:t/i": wrong_g})


def test_plain_classes_and_functions_are_left_to_resolution(wat: Callable[[str], bytes]) -> None:
    data = wat(REUSE_CONSUMER)

    class R:
        pass

    _link(data, {"t:t/i": {"R": R, "take": lambda r: None, "g": lambda: 1}})


def test_a_provider_changed_between_instantiations_is_checked_anew(
    wat: Callable[[str], bytes], provider: Any
) -> None:
    data = wat(REUSE_CONSUMER)
    iface = provider.exports["t:t/i"]
    members: dict[str, object] = {"R": iface.R2, "take": provider.exports.take_r2, "g": lambda: 1}
    imports: dict[str, object] = {"t:t/i": members}
    _link(data, imports)
    _link(data, imports)  # the same objects again
    members["R"] = iface.R1
    with pytest.raises(LinkError, match=r"mismatched resource types|has the wrong type"):
        _link(data, imports)
    members["R"] = iface.R2
    _link(data, imports)
    imports["t:t/i"] = SimpleNamespace(
        R=iface.R2, take=provider.exports.take_r2, g=provider.exports.f
    )
    _link(data, imports)  # f: () -> u32 serves g
    imports["t:t/i"] = SimpleNamespace(R=iface.R2, take=provider.exports.f, g=provider.exports.f)
    with pytest.raises(LinkError, match=r"^import t:t/i/take: export 'take' has the wrong type"):
        _link(data, imports)
