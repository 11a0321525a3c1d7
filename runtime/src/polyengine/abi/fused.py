"""Fused loads of records and tuples whose fields are all plain scalars.

An optimization of CanonicalABI.md §"Loading" (``load_record``): when every
field is a ``bool``, integer, float or ``char``, the record's bytes are one
``struct`` layout (with the padding that §"Element Size" puts between
fields), so one ``unpack_from`` reads the whole record and one
``iter_unpack`` reads a whole list of them. Fields whose lifted value needs
more than the raw number (``bool``, NaN canonicalization, the ``char``
check) get that fix-up inlined in the generated builder.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from polyengine.abi.bulk import NAN, NUM_KINDS
from polyengine.abi.codegen import display, make_function
from polyengine.abi.trap import TrapCode, trap
from polyengine.types.model import (
    F32,
    F64,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    Char,
    ValType,
)

__all__ = ["fused_loads", "fused_store"]


def _char(i: int) -> str:
    if i >= 0x110000 or 0xD800 <= i <= 0xDFFF:
        trap(
            TrapCode.INVALID_CHAR,
            f"invalid `char` bit pattern: {i:#x} is not a Unicode scalar value",
        )
    return chr(i)


_CODES: dict[type, tuple[str, str]] = {
    Bool: ("B", "{0} != 0"),
    U8: ("B", "{0}"),
    S8: ("b", "{0}"),
    U16: ("H", "{0}"),
    S16: ("h", "{0}"),
    U32: ("I", "{0}"),
    S32: ("i", "{0}"),
    U64: ("Q", "{0}"),
    S64: ("q", "{0}"),
    F32: ("f", "(NAN if {0} != {0} else {0})"),
    F64: ("d", "(NAN if {0} != {0} else {0})"),
    Char: ("I", "_char({0})"),
}


def fused_loads(
    ts: Sequence[ValType], offsets: Sequence[int], size: int, keys: Sequence[str] | None
) -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """``load(cx, ptr)`` and ``load_many(cx, ptr, n)`` for a record (``keys``) or tuple.

    ``None`` when some field is not a plain scalar. Fields are read with one
    ``struct`` whose padding matches §"Element Size"; the value is built by
    a generated display with each field's fix-up inlined.
    """
    fmt = ["<"]
    exprs: list[str] = []
    pos = 0
    for i, (t, off) in enumerate(zip(ts, offsets, strict=True)):
        entry = _CODES.get(type(t))
        if entry is None:
            return None
        code, fix = entry
        if off > pos:
            fmt.append(f"{off - pos}x")
        fmt.append(code)
        pos = off + struct.calcsize("<" + code)
        exprs.append(fix.format(f"r[{i}]"))
    if size > pos:
        fmt.append(f"{size - pos}x")
    s = struct.Struct("".join(fmt))
    assert s.size == size, (ts, s.format, size)
    env = {
        "unpack_from": s.unpack_from,
        "iter_unpack": s.iter_unpack,
        "NAN": NAN,
        "_char": _char,
    }
    value = display(keys, exprs)
    load = make_function("load", "cx, ptr", ["r = unpack_from(cx.mv, ptr)", f"return {value}"], env)
    load_many = make_function(
        "load_many",
        "cx, ptr, n",
        [f"return [{value} for r in iter_unpack(cx.mv[ptr : ptr + n * {size}])]"],
        env,
    )
    return load, load_many


class _Fallback(Exception):
    """Raised inside a fused store to hand the value to the field-by-field path."""


def _fallback() -> Any:
    raise _Fallback


def _fast_field(t: ValType, i: int, get: str) -> str | None:
    """A fast-path expression for field ``i`` read by ``get``; anything unusual falls back."""
    x = f"x{i}"
    match t:
        case Bool():
            return f"(1 if ({x} := {get}) is True else 0 if {x} is False else _fallback())"
        case F32() | F64():
            return f"({x} if type({x} := {get}) is float and {x} == {x} else _fallback())"
        case Char():
            return (
                f"(o{i} if type({x} := {get}) is str and len({x}) == 1"
                f" and not 0xD800 <= (o{i} := ord({x})) <= 0xDFFF else _fallback())"
            )
    kind = NUM_KINDS.get(type(t).__name__.lower())
    if kind is None or kind.is_float:
        return None
    return f"({x} if type({x} := {get}) is int and {kind.lo} <= {x} <= {kind.hi} else _fallback())"


def fused_store(
    ts: Sequence[ValType],
    offsets: Sequence[int],
    size: int,
    keys: Sequence[str] | None,
    slow: Callable[..., None],
) -> Callable[..., None] | None:
    """``store(cx, v, ptr)`` packing a record (``keys``) or tuple of scalars in one call.

    Values of exactly the expected Python types and ranges take the fast
    path; anything else (an ``int`` for a float field, a missing key, an
    out-of-range number, a non-dict mapping) is stored by ``slow``, the
    field-by-field store, which also produces the path-carrying errors.
    """
    fmt = ["<"]
    exprs: list[str] = []
    pos = 0
    for i, (t, off) in enumerate(zip(ts, offsets, strict=True)):
        entry = _CODES.get(type(t))
        expr = _fast_field(t, i, f"v[{keys[i]!r}]" if keys is not None else f"v[{i}]")
        if entry is None or expr is None:
            return None
        if off > pos:
            fmt.append(f"{off - pos}x")
        fmt.append(entry[0])
        pos = off + struct.calcsize("<" + entry[0])
        exprs.append(expr)
    if size > pos:
        fmt.append(f"{size - pos}x")
    s = struct.Struct("".join(fmt))
    assert s.size == size
    guard = "type(v) is dict" if keys is not None else f"type(v) is tuple and len(v) == {len(ts)}"
    env = {
        "pack_into": s.pack_into,
        "slow": slow,
        "_fallback": _fallback,
        "_Fallback": _Fallback,
        "struct_error": struct.error,
    }
    body = [
        f"if {guard}:",
        "    try:",
        f"        pack_into(cx.mv, ptr, {', '.join(exprs)})",
        "        return",
        "    except (_Fallback, LookupError, OverflowError, struct_error):",
        "        pass",
        "slow(cx, v, ptr)",
    ]
    store: Callable[..., None] = make_function("store", "cx, v, ptr", body, env)
    return store
