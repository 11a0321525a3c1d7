"""Type-level Canonical ABI facts for validation (CanonicalABI.md §"Flattening", §"Element Size").

``flatten_functype`` gives the core signature a ``canon lift``/``canon lower``
must have; ``elem_size`` enforces the maximum value size rule of Binary.md
(``elem_size(t, 'i64') < 2**28``). Flat lists are capped at :data:`FLAT_CAP`
entries: beyond ``MAX_FLAT_PARAMS`` only the count matters.
"""

from __future__ import annotations

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
    Char,
    Enum,
    ErrorContext,
    Flags,
    FuncType,
    Future,
    List,
    Map,
    Option,
    Own,
    Record,
    Result,
    Stream,
    String,
    Tuple,
    ValType,
    Variant,
)
from polyengine.types.subtype import CoreFuncT

MAX_FLAT_PARAMS = 16
MAX_FLAT_ASYNC_PARAMS = 4
MAX_FLAT_RESULTS = 1
FLAT_CAP = 64
MAX_VALUE_SIZE = 1 << 28


def _children(t: ValType) -> list[ValType]:
    match t:
        case List(et, _):
            return [et]
        case Record(fields):
            return [f.t for f in fields]
        case Tuple(ts):
            return list(ts)
        case Variant(cases):
            return [c.t for c in cases if c.t is not None]
        case Option(ot):
            return [ot]
        case Result(ok, err):
            return [x for x in (ok, err) if x is not None]
        case Map(k, v):
            return [k, v]
    return []


def contains(
    t: ValType, pred: type[ValType] | tuple[type[ValType], ...], *, deep_streams: bool = True
) -> bool:
    """True when ``t`` transitively contains a value of a type in ``pred``."""
    if isinstance(t, pred):
        return True
    if deep_streams and isinstance(t, Stream | Future) and t.t is not None:
        return contains(t.t, pred)
    return any(contains(c, pred, deep_streams=deep_streams) for c in _children(t))


def needs_pointer(t: ValType) -> bool:
    """True when ``t`` has a variable-length part in linear memory (a string or a list)."""
    if isinstance(t, String | Map) or (isinstance(t, List) and t.l is None):
        return True
    return any(needs_pointer(c) for c in _children(t))


# -- flattening ------------------------------------------------------------------------


def flatten_type(t: ValType, ptr: str = "i32") -> list[str]:
    match t:
        case Bool() | U8() | U16() | U32() | S8() | S16() | S32() | Char():
            return ["i32"]
        case S64() | U64():
            return ["i64"]
        case F32():
            return ["f32"]
        case F64():
            return ["f64"]
        case String() | Map():
            return [ptr, ptr]
        case List(et, n):
            if n is None:
                return [ptr, ptr]
            one = flatten_type(et, ptr)
            if not one:
                return []
            return (one * min(n, FLAT_CAP // len(one) + 1))[: FLAT_CAP + 1]
        case Record(fields):
            return _cat([flatten_type(f.t, ptr) for f in fields])
        case Tuple(ts):
            return _cat([flatten_type(x, ptr) for x in ts])
        case Variant(cases):
            return _flatten_variant([c.t for c in cases], ptr)
        case Enum(labels):
            return ["i32"] if labels else []
        case Option(ot):
            return _flatten_variant([None, ot], ptr)
        case Result(ok, err):
            return _flatten_variant([ok, err], ptr)
        case Flags(labels):
            return ["i32"] if labels else []
        case Own() | Borrow() | Stream() | Future() | ErrorContext():
            return ["i32"]
    raise AssertionError(f"cannot flatten {t!r}")


def _cat(parts: list[list[str]]) -> list[str]:
    out: list[str] = []
    for p in parts:
        out.extend(p)
        if len(out) > FLAT_CAP:
            return out[: FLAT_CAP + 1]
    return out


def _join(a: str, b: str) -> str:
    if a == b:
        return a
    if {a, b} == {"i32", "f32"}:
        return "i32"
    return "i64"


def _flatten_variant(payloads: list[ValType | None], ptr: str) -> list[str]:
    flat: list[str] = []
    for p in payloads:
        if p is None:
            continue
        for i, ft in enumerate(flatten_type(p, ptr)):
            if i < len(flat):
                flat[i] = _join(flat[i], ft)
            else:
                flat.append(ft)
    return ["i32", *flat][: FLAT_CAP + 1]


def flatten_functype(
    ft: FuncType, context: str, *, is_async: bool, callback: bool, ptr: str = "i32"
) -> CoreFuncT:
    """The core signature of a ``canon lift``/``lower`` (CanonicalABI.md §"Flattening")."""
    flat_params = _cat([flatten_type(t, ptr) for t in ft.param_types()])
    flat_results = _cat([flatten_type(t, ptr) for t in ft.result_types()])
    if not is_async:
        if len(flat_params) > MAX_FLAT_PARAMS:
            flat_params = [ptr]
        if len(flat_results) > MAX_FLAT_RESULTS:
            if context == "lift":
                flat_results = [ptr]
            else:
                flat_params = [*flat_params, ptr]
                flat_results = []
        return CoreFuncT(tuple(flat_params), tuple(flat_results))
    if context == "lift":
        if len(flat_params) > MAX_FLAT_PARAMS:
            flat_params = [ptr]
        flat_results = ["i32"] if callback else []
    else:
        if len(flat_params) > MAX_FLAT_ASYNC_PARAMS:
            flat_params = [ptr]
        if flat_results:
            flat_params = [*flat_params, ptr]
        flat_results = ["i32"]
    return CoreFuncT(tuple(flat_params), tuple(flat_results))


def flat_count(ts: list[ValType], ptr: str = "i32") -> int:
    return len(_cat([flatten_type(t, ptr) for t in ts]))


# -- sizes -----------------------------------------------------------------------------


def _align_to(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _discriminant_size(n: int) -> int:
    return 1 if n <= 256 else 2 if n <= 65536 else 4


def alignment(t: ValType, ptr_size: int) -> int:
    match t:
        case Bool() | S8() | U8():
            return 1
        case S16() | U16():
            return 2
        case (
            S32() | U32() | F32() | Char() | Own() | Borrow() | Stream() | Future() | ErrorContext()
        ):
            return 4
        case S64() | U64() | F64():
            return 8
        case String() | Map():
            return ptr_size
        case List(et, n):
            return ptr_size if n is None else alignment(et, ptr_size)
        case Record() | Tuple():
            return max((alignment(c, ptr_size) for c in _children(t)), default=1)
        case Variant(cases):
            return _variant_align([c.t for c in cases], ptr_size)
        case Option(ot):
            return _variant_align([None, ot], ptr_size)
        case Result(ok, err):
            return _variant_align([ok, err], ptr_size)
        case Enum(labels):
            return _discriminant_size(len(labels))
        case Flags(labels):
            return 1 if len(labels) <= 8 else 2 if len(labels) <= 16 else 4
    raise AssertionError(f"no alignment for {t!r}")


def _variant_align(payloads: list[ValType | None], ptr_size: int) -> int:
    a = _discriminant_size(len(payloads))
    for p in payloads:
        if p is not None:
            a = max(a, alignment(p, ptr_size))
    return a


def elem_size(t: ValType, ptr_size: int = 8) -> int:
    """``elem_size(t)`` with ``ptr_size``-byte pointers (CanonicalABI.md §"Element Size")."""
    match t:
        case Bool() | S8() | U8():
            return 1
        case S16() | U16():
            return 2
        case (
            S32() | U32() | F32() | Char() | Own() | Borrow() | Stream() | Future() | ErrorContext()
        ):
            return 4
        case S64() | U64() | F64():
            return 8
        case String() | Map():
            return 2 * ptr_size
        case List(et, n):
            if n is None:
                return 2 * ptr_size
            return n * elem_size(et, ptr_size)
        case Record() | Tuple():
            s = 0
            for c in _children(t):
                s = _align_to(s, alignment(c, ptr_size)) + elem_size(c, ptr_size)
            return _align_to(s, alignment(t, ptr_size))
        case Variant(cases):
            return _variant_size([c.t for c in cases], t, ptr_size)
        case Option(ot):
            return _variant_size([None, ot], t, ptr_size)
        case Result(ok, err):
            return _variant_size([ok, err], t, ptr_size)
        case Enum(labels):
            return _discriminant_size(len(labels))
        case Flags(labels):
            return 1 if len(labels) <= 8 else 2 if len(labels) <= 16 else 4
    raise AssertionError(f"no size for {t!r}")


def _variant_size(payloads: list[ValType | None], t: ValType, ptr_size: int) -> int:
    s = _discriminant_size(len(payloads))
    a = max((alignment(p, ptr_size) for p in payloads if p is not None), default=1)
    s = _align_to(s, a)
    s += max((elem_size(p, ptr_size) for p in payloads if p is not None), default=0)
    return _align_to(s, alignment(t, ptr_size))


def size_and_alignment(
    t: ValType, ptr_size: int, memo: dict[int, tuple[int, int]]
) -> tuple[int, int]:
    """``(elem_size(t), alignment(t))``, memoized by object identity in ``memo``.

    Type trees share subtrees (a type index used twice is one object), so the
    memo keeps this linear in the number of distinct objects. The caller
    keeps the objects alive for as long as ``memo`` is used.
    """
    hit = memo.get(id(t))
    if hit is not None:
        return hit
    match t:
        case List(et, n) if n is not None:
            s, a = size_and_alignment(et, ptr_size, memo)
            out = (n * s, a)
        case Record() | Tuple():
            s = 0
            a = 1
            for c in _children(t):
                cs, ca = size_and_alignment(c, ptr_size, memo)
                s = _align_to(s, ca) + cs
                a = max(a, ca)
            out = (_align_to(s, a), a)
        case Variant() | Option() | Result():
            payloads: list[ValType | None]
            if isinstance(t, Variant):
                payloads = [c.t for c in t.cases]
            elif isinstance(t, Option):
                payloads = [None, t.t]
            else:
                assert isinstance(t, Result)
                payloads = [t.ok, t.error]
            d = _discriminant_size(len(payloads))
            a = d
            biggest = 0
            for p in payloads:
                if p is not None:
                    ps, pa = size_and_alignment(p, ptr_size, memo)
                    a = max(a, pa)
                    biggest = max(biggest, ps)
            out = (_align_to(_align_to(d, a) + biggest, a), a)
        case _:
            out = (elem_size(t, ptr_size), alignment(t, ptr_size))
    memo[id(t)] = out
    return out
