# ruff: noqa: PLR0124 - `x != x` is the fast NaN test on the hot path
"""The compiled value codec and the helpers every type family's compiler shares.

CanonicalABI.md §"Loading", §"Storing", §"Flat Lifting" and §"Flat Lowering":
a :class:`Codec` holds the four closures of one value type (see
:mod:`~polyengine.abi.compile`); the float conversions are the spec's
``decode_i32_as_float``/``encode_float_as_i32`` family and the coercions of
§"Flat Lifting" (``CoerceValueIter``). This module is the leaf that
:mod:`~polyengine.abi.lists`, :mod:`~polyengine.abi.variants` and
:mod:`~polyengine.abi.handles` build on, so that :mod:`~polyengine.abi.compile`
can import them without a cycle.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from polyengine.abi.bulk import CANONICAL_F32_NAN, CANONICAL_F64_NAN, NAN, f32_round
from polyengine.abi.errors import LowerError, LowerTypeError, describe
from polyengine.abi.options import LiftLowerContext
from polyengine.types.layout import CoreValType
from polyengine.types.model import Future, Stream, ValType

CoreVal: TypeAlias = int | float
Load: TypeAlias = Callable[[LiftLowerContext, int], Any]
Store: TypeAlias = Callable[[LiftLowerContext, Any, int], None]
LiftFlat: TypeAlias = Callable[[LiftLowerContext, Sequence[CoreVal], int], Any]
LowerFlat: TypeAlias = Callable[[LiftLowerContext, Any, list[CoreVal]], None]
LoadMany: TypeAlias = Callable[[LiftLowerContext, int, int], list[Any]]

MAX_LIST_BYTE_LENGTH = (1 << 28) - 1
M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF

U32_STRUCT = struct.Struct("<I")
F32_STRUCT = struct.Struct("<f")
U64_STRUCT = struct.Struct("<Q")
F64_STRUCT = struct.Struct("<d")


def snake(label: str) -> str:
    """The Python key for a WIT label: kebab-case to snake_case (python-mapping.md §1)."""
    return label.replace("-", "_")


@dataclass(frozen=True, slots=True, eq=False)
class Codec:
    """The compiled canonical ABI of one value type (see the module docstring)."""

    t: ValType
    size: int
    align: int
    flat: tuple[CoreValType, ...]
    load: Load
    store: Store
    lift_flat: LiftFlat
    lower_flat: LowerFlat
    #: ``load_many(cx, ptr, n)``: ``n`` consecutive elements at once, when faster than ``load``
    load_many: LoadMany | None = None


class AsyncValueHooks(Protocol):
    """How ``stream``, ``future`` and ``error-context`` values cross the ABI.

    They travel as ``i32`` indices into the instance's handle table; what a
    handle *is* belongs to the concurrency layer, which implements these
    (CanonicalABI.md §"Loading" ``lift_stream``/``lift_future``/
    ``lift_error_context`` and §"Storing" ``lower_*``).
    """

    def lift_stream(self, cx: LiftLowerContext, i: int, t: Stream) -> object: ...

    def lower_stream(self, cx: LiftLowerContext, v: object, t: Stream) -> int: ...

    def lift_future(self, cx: LiftLowerContext, i: int, t: Future) -> object: ...

    def lower_future(self, cx: LiftLowerContext, v: object, t: Future) -> int: ...

    def lift_error_context(self, cx: LiftLowerContext, i: int) -> object: ...

    def lower_error_context(self, cx: LiftLowerContext, v: object) -> int: ...


# --- core value conversions (§"Loading"/§"Storing" float helpers) --------------


def decode_i32_as_float(i: int) -> float:
    x: float = F32_STRUCT.unpack(U32_STRUCT.pack(i & M32))[0]
    return NAN if x != x else x


def decode_i64_as_float(i: int) -> float:
    x: float = F64_STRUCT.unpack(U64_STRUCT.pack(i & M64))[0]
    return NAN if x != x else x


def encode_float_as_i32(f: float) -> int:
    if f != f:
        return CANONICAL_F32_NAN
    r: int = U32_STRUCT.unpack(F32_STRUCT.pack(f32_round(f)))[0]
    return r


def encode_float_as_i64(f: float) -> int:
    if f != f:
        return CANONICAL_F64_NAN
    r: int = U64_STRUCT.unpack(F64_STRUCT.pack(f))[0]
    return r


def _wrap_i32(x: CoreVal) -> CoreVal:
    return int(x) & M32


def _identity(x: CoreVal) -> CoreVal:
    return x


LIFT_COERCE: dict[tuple[str, str], Callable[[Any], CoreVal]] = {
    ("i32", "f32"): decode_i32_as_float,
    ("i64", "i32"): _wrap_i32,
    ("i64", "f32"): decode_i32_as_float,
    ("i64", "f64"): decode_i64_as_float,
}
LOWER_COERCE: dict[tuple[str, str], Callable[[Any], CoreVal]] = {
    ("f32", "i32"): encode_float_as_i32,
    ("i32", "i64"): _identity,
    ("f32", "i64"): encode_float_as_i32,
    ("f64", "i64"): encode_float_as_i64,
}


def with_segment(e: LowerError, segment: str) -> LowerError:
    e.prefix(segment)
    return e


def need_mapping(v: Any, what: str) -> Mapping[str, Any]:
    if type(v) is dict or isinstance(v, Mapping):
        return v
    raise LowerTypeError(f"expected a dict for {what}, got {describe(v)}")


def need_sequence(v: Any, what: str) -> Sequence[Any]:
    if type(v) is list or type(v) is tuple:
        return v
    if isinstance(v, str) or not isinstance(v, Sequence):
        raise LowerTypeError(f"expected a sequence for {what}, got {describe(v)}")
    return v


def unsupported(what: str) -> Callable[..., Any]:
    def fail(*_args: Any) -> Any:
        raise NotImplementedError(f"{what} values need the concurrency layer's hooks")

    return fail
