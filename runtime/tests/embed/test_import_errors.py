"""Failures of host imports name the import (python-mapping.md §3).

A ``Trap`` raised by a synchronous host import, the canonical class or a
hand-rolled one carrying only the brand, is re-raised as a ``Trap`` with the
same code whose message is ``host import <full import name> trapped:
<message>``, the original as ``__cause__``. Missing imports name the key the
embedder must supply; a host resource whose ``close()`` fails traps, named
as the resource's drop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import ComponentException, Trap, is_trap

from .components import OPTS, component
from .test_host_resources import WORLD_CELL

Wat = Callable[[str], bytes]

API = "test:demo/api@1.0.0"

#: three import shapes, each reaching a different trampoline body: a scalar-only
#: world-level import (the generated body), a string-taking one (the general
#: body) and an interface member with a ``result`` type (the error-model wrapper)
TRAPPING = component(
    f"""
  (import "scalar" (func $scalar (param "x" u32) (result u32)))
  (import "text" (func $text (param "s" string)))
  (import "{API}" (instance $api
    (export "checked" (func (param "x" u32) (result (result u32 (error u32)))))))
  (alias export $api "checked" (func $checked))
  (core func $scalar (canon lower (func $scalar)))
  (core func $text (canon lower (func $text) {OPTS}))
  (core func $checked (canon lower (func $checked) {OPTS}))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "h" "scalar" (func $scalar (param i32) (result i32)))
    (import "h" "text" (func $text (param i32 i32)))
    (import "h" "checked" (func $checked (param i32 i32)))
    (func (export "call-scalar") (param i32) (result i32) (call $scalar (local.get 0)))
    (func (export "call-text") (call $text (i32.const 0) (i32.const 2)))
    (func (export "call-checked") (param i32) (result i32)
      (call $checked (local.get 0) (i32.const 64))
      (i32.load (i32.const 68)))
    (func (export "ok") (result i32) (i32.const 1))
    (data (i32.const 0) "hi"))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "h" (instance
      (export "scalar" (func $scalar)) (export "text" (func $text))
      (export "checked" (func $checked))))))
  (func (export "call-scalar") (param "x" u32) (result u32)
    (canon lift (core func $i "call-scalar")))
  (func (export "call-text") (canon lift (core func $i "call-text")))
  (func (export "call-checked") (param "x" u32) (result u32)
    (canon lift (core func $i "call-checked")))
  (func (export "ok") (result u32) (canon lift (core func $i "ok")))
"""
)

#: (export to call, its argument tuple, the full import name)
SITES = [
    ("call_scalar", (1,), "scalar"),
    ("call_text", (), "text"),
    ("call_checked", (1,), f"{API}#checked"),
]


class HandRolledTrap(Exception):
    """A trap carrying only the brand (and, optionally, a code)."""

    __polyengine_brand__ = "polyengine.trap/1"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def imports_raising(exc: BaseException) -> dict[str, Any]:
    def fail(*args: Any) -> Any:
        raise exc

    return {"scalar": fail, "text": fail, API: {"checked": fail}}


async def call_expecting_trap(wat: Wat, exc: BaseException, export: str, args: Any) -> Trap:
    inst = await polyengine.instantiate(wat(TRAPPING), imports_raising(exc))
    with pytest.raises(Exception) as info:
        await getattr(inst.exports, export)(*args)
    raised = info.value
    assert is_trap(raised)
    assert isinstance(raised, Trap)
    # the instance the trap unwound is poisoned, and says by what
    with pytest.raises(Trap, match="poisoned") as later:
        await inst.exports.ok()
    assert str(raised) in str(later.value)
    return raised


@pytest.mark.parametrize(("export", "args", "name"), SITES)
def test_canonical_trap_names_the_import(wat: Wat, export: str, args: Any, name: str) -> None:
    original = Trap("the host gave up", code="host-gave-up")
    raised = run(call_expecting_trap(wat, original, export, args))
    assert raised is not original
    assert type(raised) is Trap
    assert raised.code == "host-gave-up"
    assert str(raised) == f"host import {name} trapped: the host gave up"
    assert raised.message == str(raised)
    assert raised.__cause__ is original


@pytest.mark.parametrize(("export", "args", "name"), SITES)
def test_trap_without_a_code_keeps_the_unspecified_code(
    wat: Wat, export: str, args: Any, name: str
) -> None:
    original = Trap("no code given")
    raised = run(call_expecting_trap(wat, original, export, args))
    assert raised.code == original.code == "unspecified"
    assert str(raised) == f"host import {name} trapped: no code given"


@pytest.mark.parametrize(("export", "args", "name"), SITES)
def test_hand_rolled_trap_names_the_import(wat: Wat, export: str, args: Any, name: str) -> None:
    coded = HandRolledTrap("hand-rolled with a code", code="my-code")
    raised = run(call_expecting_trap(wat, coded, export, args))
    assert raised.code == "my-code"
    assert str(raised) == f"host import {name} trapped: hand-rolled with a code"
    assert raised.__cause__ is coded

    bare = HandRolledTrap("hand-rolled, no code")
    raised = run(call_expecting_trap(wat, bare, export, args))
    assert raised.code == "unspecified"
    assert str(raised) == f"host import {name} trapped: hand-rolled, no code"
    assert raised.__cause__ is bare


@pytest.mark.parametrize(("export", "args", "name"), SITES)
def test_unbranded_exception_is_still_a_host_import_trap(
    wat: Wat, export: str, args: Any, name: str
) -> None:
    original = ValueError("not a trap")
    raised = run(call_expecting_trap(wat, original, export, args))
    assert raised.code == "host-import"
    assert str(raised) == f"host import {name} raised ValueError: not a trap"
    assert raised.__cause__ is original


def test_component_exception_is_still_an_err_value(wat: Wat) -> None:
    def checked(x: int) -> int:
        raise ComponentException(x + 41)

    async def main() -> None:
        inst = await polyengine.instantiate(
            wat(TRAPPING), {"scalar": abs, "text": len, API: {"checked": checked}}
        )
        # the err payload lands at offset 68 of the guest's result area
        assert await inst.exports.call_checked(1) == 42
        assert await inst.exports.call_scalar(3) == 3

    run(main())


# -- missing imports name the key to supply ----------------------------------------------


def test_missing_world_level_function_names_its_key(wat: Wat) -> None:
    with pytest.raises(polyengine.MissingImportError) as info:
        run(polyengine.instantiate(wat(TRAPPING), {"text": len, API: {"checked": abs}}))
    assert str(info.value) == (
        "missing import: the component imports function 'scalar' (provide it as imports['scalar'])"
    )


def test_missing_interface_names_the_interface(wat: Wat) -> None:
    with pytest.raises(polyengine.MissingImportError, match=rf"{API}.*checked"):
        run(polyengine.instantiate(wat(TRAPPING), {"scalar": abs, "text": len}))


def test_missing_interface_member_names_the_member(wat: Wat) -> None:
    with pytest.raises(polyengine.MissingImportError) as info:
        run(polyengine.instantiate(wat(TRAPPING), {"scalar": abs, "text": len, API: {}}))
    assert str(info.value) == f"missing import {API}#checked: the provider has no member 'checked'"


# -- a failing close() of a host resource traps, named as the resource's drop -----------


class Closing:
    """A world-level host resource whose ``close`` raises what it is given."""

    failure: BaseException = ValueError("unset")

    def __init__(self, v: int) -> None:
        self.v = v

    def get(self) -> int:
        return self.v

    @staticmethod
    def kind() -> int:
        return 0

    def close(self) -> None:
        raise Closing.failure


@pytest.mark.parametrize(
    ("failure", "message", "code"),
    [
        (Trap("cannot close", code="close-failed"), "trapped: cannot close", "close-failed"),
        (OSError("disk gone"), "raised OSError: disk gone", "host-import"),
    ],
)
def test_failing_close_names_the_resource_drop(
    wat: Wat, failure: BaseException, message: str, code: str
) -> None:
    Closing.failure = failure

    async def main() -> None:
        inst = await polyengine.instantiate(wat(WORLD_CELL), {"Cell": Closing, "make": Closing})
        with pytest.raises(Trap) as info:
            await inst.exports.run(1)
        assert str(info.value) == f"host import [resource-drop]cell {message}"
        assert info.value.code == code
        assert info.value.__cause__ is failure

    run(main())


def test_the_linker_looks_each_interface_up_once_and_never_remembers_a_missing_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from polyengine.embed._host import HostLinker
    from polyengine.embed._providers import Imports, MissingImportError

    asked: list[str] = []
    real = Imports.require_interface

    def counted(self: Imports, name: str, member: str) -> object:
        asked.append(name)
        return real(self, name, member)

    monkeypatch.setattr(Imports, "require_interface", counted)
    provider = SimpleNamespace(first=lambda: 1, second=lambda: 2)
    linker = HostLinker(Imports({"test:demo/api@1": provider}), suspend=False)
    assert linker.resolve((API, "first"))() == 1
    assert linker.resolve((API, "second"))() == 2
    assert asked == [API]
    for _ in range(2):
        with pytest.raises(MissingImportError, match="no provider for interface 'test:demo/other"):
            linker.resolve(("test:demo/other@1.0.0", "f"))
    assert asked == [API, "test:demo/other@1.0.0", "test:demo/other@1.0.0"]
