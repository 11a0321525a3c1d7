"""Link checks of providers reused across instantiations (seed §"Module wiring").

An object provider is checked like a mapping: its typed members (another
instance's export functions, guest resource classes) against the declared
types, its plain functions and classes left to resolution. The names a
component's instance types look up are worked out once, but every
instantiation reads the providers afresh: an imports mapping (or provider)
changed between two instantiations is checked as it is now.
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

CONSUMER = """
(component
  (import "t:t/i" (instance $i
    (export "r" (type $r (sub resource)))
    (export "take" (func (param "x" (own $r))))
    (export "g" (func (result u32)))))
)
"""


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def provider(wat: Callable[[str], bytes]) -> Any:
    async def make() -> Any:
        return await polyengine.instantiate(wat(PROVIDER))

    instance = run(make())
    yield instance
    instance.close()


def _link(data: bytes, imports: dict[str, object]) -> None:
    run(polyengine.instantiate(data, imports)).close()


def test_an_object_provider_is_checked_like_a_mapping(
    wat: Callable[[str], bytes], provider: Any
) -> None:
    data = wat(CONSUMER)
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
    data = wat(CONSUMER)

    class R:
        pass

    _link(data, {"t:t/i": {"R": R, "take": lambda r: None, "g": lambda: 1}})


def test_a_provider_changed_between_instantiations_is_checked_anew(
    wat: Callable[[str], bytes], provider: Any
) -> None:
    data = wat(CONSUMER)
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
