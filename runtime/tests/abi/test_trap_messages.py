"""Trap messages start with the wording the official test suite expects."""

from __future__ import annotations

import struct

import pytest
from abi_helpers import make_cx

from polyengine.abi.compile import Compiler
from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.options import CanonicalOptions, LiftLowerContext
from polyengine.abi.resources import (
    CallBorrows,
    CallLenders,
    ComponentInstance,
    ResourceType,
    canon_resource_drop,
    canon_resource_new,
    lift_borrow,
)
from polyengine.abi.trap import Trap
from polyengine.types.model import U32, Case, Char, List, String, Variant


def _load_string(raw: bytes, ptr: int, n: int) -> None:
    cx, mem = make_cx()
    mem.write(8, raw)
    mem.write(0, struct.pack("<II", ptr, n))
    Compiler().codec(String()).load(cx, 0)


def test_string_load_wording() -> None:
    with pytest.raises(Trap, match=r"^invalid utf-8"):
        _load_string(b"\xff", 8, 1)
    with pytest.raises(Trap, match=r"^incomplete utf-8 byte sequence"):
        _load_string(b"\xc3", 8, 1)
    with pytest.raises(Trap, match=r"^string pointer/length out of bounds of memory"):
        _load_string(b"", 0xDEADBEEF, 0)
    with pytest.raises(Trap, match=r"^string pointer/length out of bounds of memory"):
        _load_string(b"", 65535, 2)
    cx, mem = make_cx("utf16")
    mem.write(0, struct.pack("<II", 9, 1))
    with pytest.raises(Trap, match=r"^unaligned pointer"):
        Compiler("utf16").codec(String()).load(cx, 0)


def _realloc_returning(ptr: int) -> LiftLowerContext:
    mem = BytearrayMemory()
    return LiftLowerContext(CanonicalOptions("utf8", mem, lambda *a: ptr), ComponentInstance())


def test_realloc_wording() -> None:
    lists = Compiler().codec(List(U32()))
    with pytest.raises(Trap, match=r"^realloc return: result not aligned"):
        lists.lower_flat(_realloc_returning(0xFFFFFFFF), [1, 2], [])
    with pytest.raises(Trap, match=r"^realloc return: beyond end of memory"):
        lists.lower_flat(_realloc_returning(65536), [1, 2], [])
    with pytest.raises(Trap, match="list content out-of-bounds"):
        lists.lower_flat(_realloc_returning(65537 * 4), [], [])
    with pytest.raises(Trap, match="string content out-of-bounds"):
        Compiler().codec(String()).lower_flat(_realloc_returning(65536), "x", [])


def test_value_wording() -> None:
    cx, mem = make_cx()
    mem.write(0, struct.pack("<I", 0xD800))
    with pytest.raises(Trap, match=r"^invalid `char` bit pattern"):
        Compiler().codec(Char()).load(cx, 0)
    with pytest.raises(Trap, match=r"^invalid variant discriminant"):
        Compiler().codec(Variant((Case("a", None),))).lift_flat(cx, [1], 0)


def test_handle_wording() -> None:
    inst = ComponentInstance()
    rt, other = ResourceType(inst), ResourceType(inst)
    for i in (0, 1, 4294967295):
        with pytest.raises(Trap, match=rf"^unknown handle index {i}$"):
            canon_resource_drop(inst, rt, i)
    h = canon_resource_new(inst, rt, 1)
    with pytest.raises(Trap, match=rf"^handle index {h} used with the wrong type") as info:
        canon_resource_drop(inst, other, h)
    # the two types are named deterministically, never by object address
    assert str(info.value) == (
        f"handle index {h} used with the wrong type, expected <ResourceType resource #1> "
        "but found <ResourceType resource #0>"
    )
    h = canon_resource_new(inst, rt, 1)
    lift_borrow(inst, h, rt, CallLenders())
    with pytest.raises(Trap, match=r"^cannot remove owned resource while borrowed"):
        canon_resource_drop(inst, rt, h)
    scope = CallBorrows()
    scope.num_borrows = 1
    with pytest.raises(Trap, match=r"^borrow handles still remain at the end of the call"):
        scope.exit()
    inst.may_leave = False
    with pytest.raises(Trap, match=r"^cannot leave component instance"):
        canon_resource_new(inst, rt, 2)
