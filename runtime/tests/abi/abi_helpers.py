"""Helpers shared by the canonical ABI tests."""

from __future__ import annotations

import math
from typing import Any

from polyengine.abi.compile import Codec, Compiler
from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.options import CanonicalOptions, LiftLowerContext, StringEncoding
from polyengine.abi.resources import ComponentInstance
from polyengine.types.layout import PtrType
from polyengine.types.model import ValType


def make_cx(
    encoding: StringEncoding = "utf8",
    *,
    ptr_type: PtrType = "i32",
    size: int = 1 << 16,
    inst: ComponentInstance | None = None,
    borrow_scope: Any = None,
) -> tuple[LiftLowerContext, BytearrayMemory]:
    mem = BytearrayMemory(size)
    opts = CanonicalOptions(encoding, mem, mem.realloc, addrtype=ptr_type)
    cx = LiftLowerContext(opts, inst or ComponentInstance(), borrow_scope)
    return cx, mem


def same(a: Any, b: Any) -> bool:
    """Structural equality where NaN equals NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and a == b


def through_memory(codec: Codec, cx: LiftLowerContext, v: Any) -> Any:
    ptr = cx.allocate(codec.align, codec.size)
    codec.store(cx, v, ptr)
    return codec.load(cx, ptr)


def through_flat(codec: Codec, cx: LiftLowerContext, v: Any) -> Any:
    out: list[int | float] = []
    codec.lower_flat(cx, v, out)
    assert len(out) == len(codec.flat)
    for x, ft in zip(out, codec.flat, strict=True):
        if ft[0] == "i":
            assert isinstance(x, int) and 0 <= x < (1 << int(ft[1:])), (x, ft)
        else:
            assert isinstance(x, float), (x, ft)
    return codec.lift_flat(cx, out, 0)


def roundtrip(
    t: ValType,
    v: Any,
    expect: Any = None,
    *,
    encoding: StringEncoding = "utf8",
    ptr_type: PtrType = "i32",
) -> None:
    """Assert ``v`` survives store/load and lower_flat/lift_flat (as ``expect`` if given)."""
    want = v if expect is None else expect
    cx, _ = make_cx(encoding, ptr_type=ptr_type)
    codec = Compiler(encoding, ptr_type).codec(t)
    got = through_memory(codec, cx, v)
    assert same(got, want), (got, want)
    got = through_flat(codec, cx, v)
    assert same(got, want), (got, want)
