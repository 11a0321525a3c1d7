# ruff: noqa: PLR0124 - `x != x` is the fast NaN test on the hot path
"""Bulk moves of numeric lists between Python and guest memory.

CanonicalABI.md §"Loading"/§"Storing" define lists element by element; for
elements that are plain little-endian numbers (``bool``, integers, floats)
the same bytes move here with one slice copy and one ``array`` conversion,
never a Python-level loop per element (architecture.md §5). Floats get the
NaN canonicalization of §"Loading" and the deterministic-profile NaN of
§"Storing".
"""

from __future__ import annotations

import math
import struct
import sys
from array import array
from typing import Any

from polyengine.abi.errors import LowerOverflowError, LowerTypeError, describe

__all__ = [
    "CANONICAL_F32_NAN",
    "CANONICAL_F64_NAN",
    "NAN",
    "NUM_KINDS",
    "NumKind",
    "f32_round",
    "load_numbers",
    "numbers_to_bytes",
]

_BIG_ENDIAN = sys.byteorder == "big"

CANONICAL_F32_NAN = 0x7FC00000
CANONICAL_F64_NAN = 0x7FF8000000000000
NAN: float = struct.unpack("<d", struct.pack("<Q", CANONICAL_F64_NAN))[0]
assert math.isnan(NAN)

_F32 = struct.Struct("<f")
_F32_MAX = 3.4028234663852886e38


def f32_round(x: float) -> float:
    """``x`` rounded to the nearest f32 (overflow rounds to an infinity)."""
    try:
        return float(_F32.unpack(_F32.pack(x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


class NumKind:
    """How one numeric element type is laid out and range-checked."""

    __slots__ = ("code", "hi", "is_float", "lo", "name", "size")

    def __init__(
        self, name: str, code: str, size: int, *, lo: int, hi: int, is_float: bool
    ) -> None:
        self.name = name
        self.code = code
        self.size = size
        self.lo = lo
        self.hi = hi
        self.is_float = is_float
        assert array(code).itemsize == size, (name, code)


def _int_kind(name: str, code: str, size: int, signed: bool) -> NumKind:
    bits = size * 8
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return NumKind(name, code, size, lo=lo, hi=hi, is_float=False)


NUM_KINDS: dict[str, NumKind] = {
    "u8": _int_kind("u8", "B", 1, False),
    "s8": _int_kind("s8", "b", 1, True),
    "u16": _int_kind("u16", "H", 2, False),
    "s16": _int_kind("s16", "h", 2, True),
    "u32": _int_kind("u32", "I", 4, False),
    "s32": _int_kind("s32", "i", 4, True),
    "u64": _int_kind("u64", "Q", 8, False),
    "s64": _int_kind("s64", "q", 8, True),
    "f32": NumKind("f32", "f", 4, lo=0, hi=0, is_float=True),
    "f64": NumKind("f64", "d", 8, lo=0, hi=0, is_float=True),
}


def _canonicalize_nans(values: list[Any]) -> list[Any]:
    if any(map(math.isnan, values)):
        return [NAN if x != x else x for x in values]
    return values


def load_numbers(kind: NumKind, mv: memoryview, ptr: int, n: int) -> list[Any]:
    """The ``n`` numbers of ``kind`` at ``ptr`` as a Python list (bounds already checked)."""
    a = array(kind.code)
    a.frombytes(mv[ptr : ptr + n * kind.size])
    if _BIG_ENDIAN:
        a.byteswap()
    values = a.tolist()
    return _canonicalize_nans(values) if kind.is_float else values


def _first_bad_number(kind: NumKind, values: Any) -> None:
    """Raise the path-carrying error for the first element that does not fit ``kind``."""
    for i, x in enumerate(values):
        try:
            if isinstance(x, bool):
                raise LowerTypeError(f"expected {kind.name}, got {describe(x)}")
            if kind.is_float:
                if not isinstance(x, int | float):
                    raise LowerTypeError(f"expected {kind.name}, got {describe(x)}")
                float(x)
            elif not isinstance(x, int):
                raise LowerTypeError(f"expected {kind.name}, got {describe(x)}")
            elif not kind.lo <= x <= kind.hi:
                raise LowerOverflowError(
                    f"{x} is out of range for {kind.name} ({kind.lo}..{kind.hi})"
                )
        except OverflowError as e:
            if isinstance(e, LowerOverflowError):
                e.prefix(f"[{i}]")
                raise
            err = LowerOverflowError(f"{x} does not fit a float")
            err.prefix(f"[{i}]")
            raise err from None
        except LowerTypeError as e:
            e.prefix(f"[{i}]")
            raise


_INT_ONLY = frozenset({int})
_FLOAT_OK = frozenset({int, float})


def numbers_to_bytes(kind: NumKind, values: Any) -> bytes | bytearray | array[Any]:
    """The little-endian encoding of a sequence of numbers of ``kind``.

    Raises :class:`~polyengine.abi.errors.LowerTypeError` or
    :class:`~polyengine.abi.errors.LowerOverflowError` naming the index of the
    first bad element. ``bool`` elements are refused (python-mapping.md §2).
    """
    if kind.code == "B" and isinstance(values, bytes | bytearray):
        return values
    allowed = _FLOAT_OK if kind.is_float else _INT_ONLY
    if not set(map(type, values)) <= allowed:
        _first_bad_number(kind, values)
    try:
        a = array(kind.code, values)
    except (OverflowError, TypeError):
        _first_bad_number(kind, values)
        raise
    if kind.is_float and any(map(math.isnan, a)):
        # Stored through NAN, every NaN gets the canonical bit pattern.
        for i, x in enumerate(a):
            if x != x:
                a[i] = NAN
    if _BIG_ENDIAN:
        a.byteswap()
    return a
