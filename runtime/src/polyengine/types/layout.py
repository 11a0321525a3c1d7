"""Static layout of value types: predicates, alignment, size and flattening.

Follows CanonicalABI.md §"Type Predicates", §"Alignment", §"Element Size" and
§"Flattening" in order. Every function takes the memory's address type
``ptr_type`` (``"i32"``, or ``"i64"`` for 64-bit memories) which decides the
size of string and list pointers. Results are cached per (type, ptr_type):
value types are frozen dataclasses and hash structurally.

This is the one layout of the package: the canonical ABI (:mod:`polyengine.abi`)
builds its codecs from it and the validator checks ``canon`` signatures and the
maximum value size (Binary.md) with it, through :func:`size_and_alignment`,
which is memoized by object identity so that types sharing subtrees stay cheap.
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
    Flags,
    FuncType,
    Future,
    List,
    Own,
    Record,
    Stream,
    String,
    ValType,
    Variant,
)

__all__ = [
    "MAX_FLAT_ASYNC_PARAMS",
    "MAX_FLAT_PARAMS",
    "MAX_FLAT_RESULTS",
    "FLAT_CAP",
    "MAX_VALUE_SIZE",
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
    "needs_pointer",
    "ptr_size",
    "size_and_alignment",
]

PtrType: TypeAlias = Literal["i32", "i64"]
CoreValType: TypeAlias = Literal["i32", "i64", "f32", "f64"]

MAX_FLAT_PARAMS = 16
MAX_FLAT_ASYNC_PARAMS = 4
MAX_FLAT_RESULTS = 1
FLAT_CAP = 64
"""Flattenings are cut after this many entries (see :func:`flatten_type`)."""
MAX_VALUE_SIZE = 1 << 28
"""Binary.md's maximum value size: ``elem_size(t, 'i64')`` must stay below it."""


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


#: the answers of :func:`contains_borrow` and :func:`contains_async_value` by type
#: (every instance's codecs ask again about the same types)
_HAS_BORROW: dict[ValType, bool] = {}
_HAS_ASYNC_VALUE: dict[ValType, bool] = {}
_ANSWERS_LIMIT = 20_000


def _remembered(table: dict[ValType, bool], t: ValType, answer: Callable[[], bool]) -> bool:
    found = table.get(t)
    if found is None:
        found = answer()
        if len(table) >= _ANSWERS_LIMIT:
            table.clear()
        table[t] = found
    return found


def contains_borrow(t: ValType | FuncType | None) -> bool:
    """Whether a ``borrow`` occurs in ``t`` (§"Type Predicates")."""
    if isinstance(t, FuncType):
        return any(contains_borrow(u) for u in t.param_types() + t.result_types())
    if t is None:
        return False
    return _remembered(
        _HAS_BORROW, t, lambda: contains(t, lambda u: isinstance(u, Borrow))
    )


def contains_async_value(t: ValType | FuncType | None) -> bool:
    """Whether a ``stream`` or ``future`` occurs in ``t`` (§"Type Predicates")."""
    if isinstance(t, FuncType):
        return any(contains_async_value(u) for u in t.param_types() + t.result_types())
    if t is None:
        return False
    return _remembered(
        _HAS_ASYNC_VALUE, t, lambda: contains(t, lambda u: isinstance(u, Stream | Future))
    )


# --- CanonicalABI.md §"Alignment" and §"Element Size" -----------------------


def alignment(t: ValType, ptr_type: PtrType = "i32") -> int:
    """Alignment in bytes of ``t`` in linear memory (CanonicalABI.md §"Alignment")."""
    return _size_and_alignment(t, ptr_type)[1]


def elem_size(t: ValType, ptr_type: PtrType = "i32") -> int:
    """Size in bytes of ``t`` as a list element (CanonicalABI.md §"Element Size")."""
    return _size_and_alignment(t, ptr_type)[0]


@lru_cache(maxsize=4096)
def _size_and_alignment(t: ValType, ptr_type: PtrType) -> tuple[int, int]:
    return size_and_alignment(t, ptr_type, {})


def size_and_alignment(
    t: ValType, ptr_type: PtrType, memo: dict[int, tuple[int, int]]
) -> tuple[int, int]:
    """``(elem_size(t), alignment(t))`` (§"Alignment", §"Element Size"), memoized by identity.

    Type trees share subtrees (a type index used twice is one object), so
    ``memo`` keeps this linear in the number of distinct objects however
    large the tree they spell. The caller keeps the objects alive for as long
    as ``memo`` is used. :func:`alignment` and :func:`elem_size` are this with a
    fresh memo, cached by type.
    """
    hit = memo.get(id(t))
    if hit is not None:
        return hit
    d = despecialize(t)
    out: tuple[int, int]
    match d:
        case Bool() | S8() | U8():
            out = (1, 1)
        case S16() | U16():
            out = (2, 2)
        case (
            S32() | U32() | F32() | Char() | ErrorContext() | Own() | Borrow() | Stream() | Future()
        ):
            out = (4, 4)
        case S64() | U64() | F64():
            out = (8, 8)
        case String():
            p = ptr_size(ptr_type)
            out = (2 * p, p)
        case List(et, length):
            if length is None:
                p = ptr_size(ptr_type)
                out = (2 * p, p)
            else:
                s, a = size_and_alignment(et, ptr_type, memo)
                out = (length * s, a)
        case Record(fields):
            s = 0
            a = 1
            for f in fields:
                fs, fa = size_and_alignment(f.t, ptr_type, memo)
                s = align_to(s, fa) + fs
                a = max(a, fa)
            assert s > 0, "empty records are not valid value types"
            out = (align_to(s, a), a)
        case Variant(cases):
            n = len(cases)
            disc = 1 if n <= 1 << 8 else 2 if n <= 1 << 16 else 4
            a = disc
            biggest = 0
            for c in cases:
                if c.t is not None:
                    cs, ca = size_and_alignment(c.t, ptr_type, memo)
                    a = max(a, ca)
                    biggest = max(biggest, cs)
            # align_to(disc, max case alignment) equals align_to(disc, a): disc divides a
            out = (align_to(align_to(disc, a) + biggest, a), a)
        case Flags(labels):
            n = alignment_flags(labels)
            out = (n, n)
        case _:
            raise AssertionError(f"no layout for {t!r}")
    memo[id(t)] = out
    return out


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
    """Flags are packed bit vectors of 1, 2 or 4 bytes (§"Alignment", §"Element Size")."""
    n = len(labels)
    assert 0 < n <= 32, n
    if n <= 8:
        return 1
    if n <= 16:
        return 2
    return 4


elem_size_flags = alignment_flags


def align_to(ptr: int, a: int) -> int:
    """Round ``ptr`` up to a multiple of ``a`` (§"Element Size")."""
    return -(-ptr // a) * a


def needs_pointer(t: ValType) -> bool:
    """Whether ``t`` has a variable-length part in linear memory (a ``string`` or a ``list``).

    Such a type needs the ``memory`` canonopt to cross the boundary
    (Explainer.md §"Canonical ABI"); ``stream`` and ``future`` payloads are
    not looked into: they cross as handles.
    """
    d = despecialize(t)
    match d:
        case String():
            return True
        case List(et, length):
            return length is None or needs_pointer(et)
        case Record(fields):
            return any(needs_pointer(f.t) for f in fields)
        case Variant(cases):
            return any(c.t is not None and needs_pointer(c.t) for c in cases)
    return False


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

    Remembered per signature and options: every instance of a component asks
    for the signature of each of its trampolines.
    """
    key = (ft, context, is_async, callback, ptr_type)
    found = _FUNCTYPES.get(key)
    if found is None:
        found = _flatten_functype(ft, context, is_async, callback, ptr_type)
        if len(_FUNCTYPES) >= _FUNCTYPES_LIMIT:
            _FUNCTYPES.clear()
        _FUNCTYPES[key] = found
    return found


#: flatten_functype's results, by its arguments
_FUNCTYPES: dict[tuple[FuncType, str, bool, bool, str], CoreFuncType] = {}
_FUNCTYPES_LIMIT = 20_000


def _flatten_functype(
    ft: FuncType, context: str, is_async: bool, callback: bool, ptr_type: PtrType
) -> CoreFuncType:
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
    """Concatenated flattenings of ``ts`` (§"Flattening"), cut after :data:`FLAT_CAP` entries."""
    out: list[CoreValType] = []
    for t in ts:
        out.extend(_flatten_type(t, ptr_type))
        if len(out) > FLAT_CAP:
            return out[: FLAT_CAP + 1]
    return out


def flatten_type(t: ValType, ptr_type: PtrType = "i32") -> list[CoreValType]:
    """The core value types ``t`` is passed as (CanonicalABI.md §"Flattening").

    A flattening longer than :data:`FLAT_CAP` is cut to ``FLAT_CAP + 1``
    entries: past ``MAX_FLAT_PARAMS`` a value is passed in memory and only the
    fact that it is too long matters, and the cut keeps a fixed-length list of
    a billion elements from being spelled out.
    """
    return list(_flatten_type(t, ptr_type))


def _cap(flat: tuple[CoreValType, ...]) -> tuple[CoreValType, ...]:
    return flat if len(flat) <= FLAT_CAP else flat[: FLAT_CAP + 1]


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
            if length is None:
                return (ptr_type, ptr_type)
            one = _flatten_type(et, ptr_type)
            return _cap(one * min(length, FLAT_CAP + 1))
        case Record(fields):
            out: list[CoreValType] = []
            for f in fields:
                out.extend(_flatten_type(f.t, ptr_type))
                if len(out) > FLAT_CAP:
                    break
            return _cap(tuple(out))
        case Variant(cases):
            return _cap(tuple(flatten_variant(cases, ptr_type)))
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
