# ruff: noqa: PLR0124 - `x != x` is the fast NaN test on the hot path
"""Fused loads of records and tuples whose fields are all plain scalars.

An optimization of CanonicalABI.md §"Loading" (``load_record``): when every
field is a ``bool``, integer, float or ``char``, the record's bytes are one
``struct`` layout (with the padding that §"Element Size" puts between
fields), so one ``unpack_from`` reads the whole record and one
``iter_unpack`` reads a whole list of them. Fields whose lifted value needs
more than the raw number (``bool``, NaN canonicalization, the ``char``
check) are fixed up afterwards.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from polyengine.abi.bulk import NAN
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

__all__ = ["Fixup", "scalar_struct"]

Fixup = tuple[int, Callable[[Any], Any]]


def _bool(x: int) -> bool:
    return x != 0


def _float(x: float) -> float:
    return NAN if x != x else x


def _char(i: int) -> str:
    if i >= 0x110000 or 0xD800 <= i <= 0xDFFF:
        trap(TrapCode.INVALID_CHAR, f"{i:#x} is not a Unicode scalar value")
    return chr(i)


_CODES: dict[type, tuple[str, Callable[[Any], Any] | None]] = {
    Bool: ("B", _bool),
    U8: ("B", None),
    S8: ("b", None),
    U16: ("H", None),
    S16: ("h", None),
    U32: ("I", None),
    S32: ("i", None),
    U64: ("Q", None),
    S64: ("q", None),
    F32: ("f", _float),
    F64: ("d", _float),
    Char: ("I", _char),
}


def scalar_struct(
    ts: Sequence[ValType], offsets: Sequence[int], size: int
) -> tuple[struct.Struct, list[Fixup]] | None:
    """The ``struct`` layout of fields ``ts`` at ``offsets`` in ``size`` bytes, or ``None``.

    ``None`` when some field is not a plain scalar. The fix-ups are
    ``(field index, function)`` pairs to apply to the unpacked numbers.
    """
    fmt = ["<"]
    fixups: list[Fixup] = []
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
        if fix is not None:
            fixups.append((i, fix))
    if size > pos:
        fmt.append(f"{size - pos}x")
    s = struct.Struct("".join(fmt))
    assert s.size == size, (ts, s.format, size)
    return s, fixups
