"""Hypothesis strategies for value types and their Python values (python-mapping.md §2)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from polyengine.abi.compile import snake
from polyengine.abi.options import StringEncoding
from polyengine.types.layout import PtrType
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
    Case,
    Char,
    Enum,
    Field,
    Flags,
    List,
    Map,
    Option,
    Record,
    Result,
    String,
    Tuple,
    ValType,
    Variant,
)

INT_BOUNDS: dict[type, tuple[int, int]] = {
    U8: (0, 2**8 - 1),
    S8: (-(2**7), 2**7 - 1),
    U16: (0, 2**16 - 1),
    S16: (-(2**15), 2**15 - 1),
    U32: (0, 2**32 - 1),
    S32: (-(2**31), 2**31 - 1),
    U64: (0, 2**64 - 1),
    S64: (-(2**63), 2**63 - 1),
}

labels = st.from_regex(r"[a-z][a-z0-9]{0,3}(-[a-z0-9]{1,3})?", fullmatch=True)
label_lists = st.lists(labels, min_size=1, max_size=4, unique=True)

primitives: st.SearchStrategy[ValType] = st.sampled_from(
    [Bool(), U8(), S8(), U16(), S16(), U32(), S32(), U64(), S64(), F32(), F64(), Char(), String()]
)


def compound(
    children: st.SearchStrategy[ValType], *, lists: bool = True
) -> st.SearchStrategy[ValType]:
    """Compound types over ``children``; without ``lists``, no ``list`` or ``map`` types."""
    opt_child = st.none() | children
    sequences = (
        [
            children.map(List),
            st.tuples(children, st.integers(1, 3)).map(lambda p: List(p[0], p[1])),
        ]
        if lists
        else []
    )
    return st.one_of(
        *sequences,
        st.lists(children, min_size=1, max_size=3).map(lambda ts: Tuple(tuple(ts))),
        st.tuples(label_lists, st.lists(children, min_size=4, max_size=4)).map(
            lambda p: Record(tuple(Field(lb, t) for lb, t in zip(p[0], p[1], strict=False)))
        ),
        st.tuples(label_lists, st.lists(opt_child, min_size=4, max_size=4)).map(
            lambda p: Variant(tuple(Case(lb, t) for lb, t in zip(p[0], p[1], strict=False)))
        ),
        label_lists.map(lambda ls: Enum(tuple(ls))),
        children.map(Option),
        st.tuples(opt_child, opt_child).map(lambda p: Result(p[0], p[1])),
        st.lists(labels, min_size=1, max_size=32, unique=True).map(lambda ls: Flags(tuple(ls))),
        *([st.tuples(children, children).map(lambda p: Map(p[0], p[1]))] if lists else []),
    )


types: st.SearchStrategy[ValType] = st.recursive(primitives, compound, max_leaves=6)

chars = st.characters(exclude_categories=["Cs"])


def values(t: ValType, boxed: bool = False) -> st.SearchStrategy[Any]:
    """Python values of ``t`` (python-mapping.md §2); ``boxed`` for an option inside an option."""
    match t:
        case Bool():
            return st.booleans()
        case F32():
            return st.floats(width=32)
        case F64():
            return st.floats()
        case Char():
            return chars
        case String():
            return st.text(chars, max_size=12)
        case List(U8(), None):
            return st.binary(max_size=12)
        case List(U8(), int(n)):
            return st.binary(min_size=n, max_size=n)
        case List(et, None):
            return st.lists(values(et), max_size=4)
        case List(et, int(n)):
            return st.lists(values(et), min_size=n, max_size=n)
        case Tuple(ts):
            return st.tuples(*[values(u) for u in ts])
        case Record(fields):
            return st.fixed_dictionaries({snake(f.label): values(f.t) for f in fields})
        case Variant(cases):
            return st.one_of(*[_case(c.label, c.t) for c in cases])
        case Enum(ls):
            return st.sampled_from(ls)
        case Option(u):
            inner = values(u, boxed=True)
            if boxed:
                return st.just({"kind": "none"}) | inner.map(lambda v: {"kind": "some", "value": v})
            return st.none() | inner
        case Result(ok, err):
            return _case("ok", ok) | _case("err", err)
        case Flags(ls):
            return st.fixed_dictionaries({snake(lb): st.booleans() for lb in ls})
        case Map(k, v):
            return st.lists(st.tuples(values(k), values(v)), max_size=3)
    lo, hi = INT_BOUNDS[type(t)]
    return st.integers(lo, hi)


def _case(label: str, t: ValType | None) -> st.SearchStrategy[Any]:
    if t is None:
        return st.just({"kind": label})
    return values(t).map(lambda v: {"kind": label, "value": v})


encodings: st.SearchStrategy[StringEncoding] = st.sampled_from(["utf8", "utf16", "latin1+utf16"])
ptr_types: st.SearchStrategy[PtrType] = st.sampled_from(["i32", "i64"])
