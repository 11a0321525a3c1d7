"""Static layout of value types: predicates, alignment, size and flattening.

Follows CanonicalABI.md §"Type Predicates", §"Alignment", §"Element Size" and
§"Flattening" in order. Every function takes the memory's address type
``ptr_type`` (``"i32"``, or ``"i64"`` for 64-bit memories) which decides the
size of string and list pointers. Results are cached per (type, ptr_type):
value types are frozen dataclasses and hash structurally.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, TypeAlias

from polyengine.types.despecialize import despecialize
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
    Borrow,
    Case,
    Char,
    ErrorContext,
    Field,
    Flags,
    FuncType,
    Future,
    List,
    Own,
    Record,
    Stream,
    String,
    Tuple,
    ValType,
    Variant,
)

__all__ = [
    "MAX_FLAT_ASYNC_PARAMS",
    "MAX_FLAT_PARAMS",
    "MAX_FLAT_RESULTS",
    "CoreFuncType",
    "CoreValType",
    "PtrType",
    "align_to",
    "alignment",
    "alignment_flags",
    "contains",
    "contains_async_value",
    "contains_borrow",
    "discriminant_type",
    "elem_size",
    "elem_size_flags",
    "flatten_functype",
    "flatten_type",
    "flatten_types",
    "flatten_variant",
    "join",
    "max_case_alignment",
    "ptr_size",
]

PtrType: TypeAlias = Literal["i32", "i64"]
CoreValType: TypeAlias = Literal["i32", "i64", "f32", "f64"]

MAX_FLAT_PARAMS = 16
MAX_FLAT_ASYNC_PARAMS = 4
MAX_FLAT_RESULTS = 1


def ptr_size(ptr_type: PtrType) -> int:
    """Byte size of a pointer in a memory of address type ``ptr_type``."""
    return 4 if ptr_type == "i32" else 8


# --- CanonicalABI.md §"Type Predicates" -------------------------------------


def contains(t: ValType | None, p: Callable[[ValType], bool]) -> bool:
    """Whether ``t`` or any type nested in it satisfies ``p`` (§"Type Predicates")."""
    if t is None:
        return False
    d = despecialize(t)
    match d:
        case List(u) | Stream(u) | Future(u):
            return p(d) or contains(u, p)
        case Record(fields):
            return p(d) or any(contains(f.t, p) for f in fields)
        case Variant(cases):
            return p(d) or any(contains(c.t, p) for c in cases)
    return p(d)


def contains_borrow(t: ValType | FuncType | None) -> bool:
    """Whether a ``borrow`` occurs in ``t`` (§"Type Predicates")."""
    if isinstance(t, FuncType):
        return any(contains_borrow(u) for u in t.param_types() + t.result_types())
    return contains(t, lambda u: isinstance(u, Borrow))


def contains_async_value(t: ValType | FuncType | None) -> bool:
    """Whether a ``stream`` or ``future`` occurs in ``t`` (§"Type Predicates")."""
    if isinstance(t, FuncType):
        return any(contains_async_value(u) for u in t.param_types() + t.result_types())
    return contains(t, lambda u: isinstance(u, Stream | Future))


# --- CanonicalABI.md §"Alignment" --------------------------------------------


@lru_cache(maxsize=4096)
def alignment(t: ValType, ptr_type: PtrType = "i32") -> int:
    """Alignment in bytes of ``t`` in linear memory (CanonicalABI.md §"Alignment")."""
    d = despecialize(t)
    match d:
        case Bool() | S8() | U8():
            return 1
        case S16() | U16():
            return 2
        case S32() | U32() | F32() | Char() | ErrorContext():
            return 4
        case S64() | U64() | F64():
            return 8
        case String():
            return ptr_size(ptr_type)
        case List(et, length):
            return alignment(et, ptr_type) if length is not None else ptr_size(ptr_type)
        case Record(fields):
            return _alignment_record(fields, ptr_type)
        case Variant(cases):
            return max(
                alignment(discriminant_type(cases), ptr_type),
                max_case_alignment(cases, ptr_type),
            )
        case Flags(labels):
            return alignment_flags(labels)
        case Own() | Borrow() | Stream() | Future():
            return 4
    raise AssertionError(f"no alignment for {t!r}")


def _alignment_record(fields: Sequence[Field], ptr_type: PtrType) -> int:
    a = 1
    for f in fields:
        a = max(a, alignment(f.t, ptr_type))
    return a


def discriminant_type(cases: Sequence[Case]) -> ValType:
    """The smallest unsigned integer type numbering ``cases`` (§"Alignment")."""
    n = len(cases)
    assert 0 < n < (1 << 32), n
    if n <= 1 << 8:
        return U8()
    if n <= 1 << 16:
        return U16()
    return U32()


def max_case_alignment(cases: Sequence[Case], ptr_type: PtrType = "i32") -> int:
    """The largest alignment among the case payloads (§"Alignment")."""
    a = 1
    for c in cases:
        if c.t is not None:
            a = max(a, alignment(c.t, ptr_type))
    return a


def alignment_flags(labels: Sequence[str]) -> int:
    """Flags are packed bit vectors of 1, 2 or 4 bytes (§"Alignment")."""
    n = len(labels)
    assert 0 < n <= 32, n
    if n <= 8:
        return 1
    if n <= 16:
        return 2
    return 4


# --- CanonicalABI.md §"Element Size" -----------------------------------------


def align_to(ptr: int, a: int) -> int:
    """Round ``ptr`` up to a multiple of ``a`` (§"Element Size")."""
    return -(-ptr // a) * a


@lru_cache(maxsize=4096)
def elem_size(t: ValType, ptr_type: PtrType = "i32") -> int:
    """Size in bytes of ``t`` as a list element (CanonicalABI.md §"Element Size")."""
    d = despecialize(t)
    match d:
        case Bool() | S8() | U8():
            return 1
        case S16() | U16():
            return 2
        case S32() | U32() | F32() | Char() | ErrorContext():
            return 4
        case S64() | U64() | F64():
            return 8
        case String():
            return 2 * ptr_size(ptr_type)
        case List(et, length):
            if length is not None:
                return length * elem_size(et, ptr_type)
            return 2 * ptr_size(ptr_type)
        case Record(fields):
            s = 0
            for f in fields:
                s = align_to(s, alignment(f.t, ptr_type))
                s += elem_size(f.t, ptr_type)
            assert s > 0, "empty records are not valid value types"
            return align_to(s, _alignment_record(fields, ptr_type))
        case Variant(cases):
            s = elem_size(discriminant_type(cases), ptr_type)
            s = align_to(s, max_case_alignment(cases, ptr_type))
            cs = 0
            for c in cases:
                if c.t is not None:
                    cs = max(cs, elem_size(c.t, ptr_type))
            s += cs
            return align_to(s, alignment(d, ptr_type))
        case Flags(labels):
            return elem_size_flags(labels)
        case Own() | Borrow() | Stream() | Future():
            return 4
    raise AssertionError(f"no element size for {t!r}")


def elem_size_flags(labels: Sequence[str]) -> int:
    """Byte size of the packed bit vector of a ``flags`` type (§"Element Size")."""
    return alignment_flags(labels)


# --- CanonicalABI.md §"Flattening" -------------------------------------------


@dataclass(frozen=True, slots=True)
class CoreFuncType:
    """A core function signature produced by :func:`flatten_functype`."""

    params: tuple[CoreValType, ...]
    results: tuple[CoreValType, ...]


def flatten_functype(
    ft: FuncType,
    context: Literal["lift", "lower"],
    *,
    is_async: bool = False,
    callback: bool = False,
    ptr_type: PtrType = "i32",
) -> CoreFuncType:
    """The core signature of ``ft`` as ``canon lift``/``canon lower`` sees it.

    CanonicalABI.md §"Flattening" (``flatten_functype``). ``is_async`` and
    ``callback`` are the canonopts ``async`` and ``(callback ...)``: with
    ``async`` a lower spills params above :data:`MAX_FLAT_ASYNC_PARAMS`,
    passes an out-pointer whenever there is any result and returns an
    ``i32`` status; an async lift returns ``i32`` only with a callback.
    """
    flat_params = flatten_types(ft.param_types(), ptr_type)
    flat_results = flatten_types(ft.result_types(), ptr_type)
    if not is_async:
        if len(flat_params) > MAX_FLAT_PARAMS:
            flat_params = [ptr_type]
        if len(flat_results) > MAX_FLAT_RESULTS:
            if context == "lift":
                flat_results = [ptr_type]
            else:
                flat_params = [*flat_params, ptr_type]
                flat_results = []
        return CoreFuncType(tuple(flat_params), tuple(flat_results))
    if context == "lift":
        if len(flat_params) > MAX_FLAT_PARAMS:
            flat_params = [ptr_type]
        flat_results = ["i32"] if callback else []
    else:
        if len(flat_params) > MAX_FLAT_ASYNC_PARAMS:
            flat_params = [ptr_type]
        if flat_results:
            flat_params = [*flat_params, ptr_type]
        flat_results = ["i32"]
    return CoreFuncType(tuple(flat_params), tuple(flat_results))


def flatten_types(ts: Sequence[ValType], ptr_type: PtrType = "i32") -> list[CoreValType]:
    """Concatenated flattenings of ``ts`` (§"Flattening")."""
    return [ft for t in ts for ft in flatten_type(t, ptr_type)]


def flatten_type(t: ValType, ptr_type: PtrType = "i32") -> list[CoreValType]:
    """The core value types ``t`` is passed as (CanonicalABI.md §"Flattening")."""
    return list(_flatten_type(t, ptr_type))


@lru_cache(maxsize=4096)
def _flatten_type(t: ValType, ptr_type: PtrType) -> tuple[CoreValType, ...]:
    d = despecialize(t)
    match d:
        case (
            Bool()
            | U8()
            | U16()
            | U32()
            | S8()
            | S16()
            | S32()
            | Char()
            | ErrorContext()
            | Flags()
            | Own()
            | Borrow()
            | Stream()
            | Future()
        ):
            return ("i32",)
        case S64() | U64():
            return ("i64",)
        case F32():
            return ("f32",)
        case F64():
            return ("f64",)
        case String():
            return (ptr_type, ptr_type)
        case List(et, length):
            if length is not None:
                return _flatten_type(et, ptr_type) * length
            return (ptr_type, ptr_type)
        case Record(fields):
            return tuple(x for f in fields for x in _flatten_type(f.t, ptr_type))
        case Variant(cases):
            return tuple(flatten_variant(cases, ptr_type))
    raise AssertionError(f"cannot flatten {t!r}")


def flatten_variant(cases: Sequence[Case], ptr_type: PtrType = "i32") -> list[CoreValType]:
    """Discriminant then the per-position :func:`join` of all payloads (§"Flattening")."""
    flat: list[CoreValType] = []
    for c in cases:
        if c.t is not None:
            for i, ft in enumerate(_flatten_type(c.t, ptr_type)):
                if i < len(flat):
                    flat[i] = join(flat[i], ft)
                else:
                    flat.append(ft)
    return [*_flatten_type(discriminant_type(cases), ptr_type), *flat]


def join(a: CoreValType, b: CoreValType) -> CoreValType:
    """The tightest core type both ``a`` and ``b`` bit-cast into (§"Flattening")."""
    if a == b:
        return a
    if {a, b} == {"i32", "f32"}:
        return "i32"
    return "i64"


def tuple_of(ts: Sequence[ValType]) -> Tuple:
    """``tuple<ts...>``, the type a spilled parameter or result list is stored as."""
    return Tuple(tuple(ts))
