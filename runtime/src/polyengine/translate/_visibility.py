"""External visibility of types (Explainer.md §"External Visibility of Types").

Records, variants, enums, flags and resources used in the type of an import
or export must be reached through a type index that an import or export
introduced (a "name"). Type objects are compared by identity: an import or
export of a type makes a fresh, equal object and records in the arena how it
was named; handle types built from a named resource inherit the name. The
kinds of name are ``import``/``export`` (of a component), ``cimport``/
``cexport`` (declarators of a component type) and ``iexport`` (of an
instance type).
"""

from __future__ import annotations

import dataclasses

from polyengine.translate._values import Arena, FuncV, InstanceV, TypeV, Value
from polyengine.translate.plan import Lift
from polyengine.types.model import (
    Borrow,
    Enum,
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
    Tuple,
    ValType,
    Variant,
)
from polyengine.types.subtype import DefType, ExternT, InstanceT, ResourceT, TypeT

ALL_NAMES = frozenset({"import", "export", "cimport", "cexport", "iexport"})
IMPORT_NAMES = frozenset({"import", "cimport", "iexport"})
COMPONENT_TYPE_IMPORT_NAMES = frozenset({"import", "cimport", "iexport"})


def copy_type(t: DefType) -> DefType:
    """A new object equal to ``t``, so that it can carry its own name."""
    if isinstance(t, ResourceT):
        return ResourceT(t.rid)
    if isinstance(t, ValType) and dataclasses.fields(t):
        return dataclasses.replace(t)
    return t


def named_copy(arena: Arena, v: Value, how: str) -> Value:
    """The value behind a new import/export index: its types (and those of an
    instance, transitively) become names of kind ``how``."""
    match v:
        case TypeV():
            out = TypeV(copy_type(v.t), named=True)
            arena.name_type(out.t, how)
            return out
        case InstanceV():
            return InstanceV({n: named_copy(arena, x, how) for n, x in v.exports.items()}, v.path)
    return v


def name_extern(arena: Arena, t: ExternT, how: str) -> ExternT:
    """For a declarator: a copy of a type import/export that carries a name."""
    if isinstance(t, TypeT) and isinstance(t.t, ValType | ResourceT):
        out = TypeT(copy_type(t.t))
        arena.name_type(out.t, how)
        return out
    return t


def kind_text(t: ExternT) -> str:
    return {FuncType: "func", InstanceT: "instance", TypeT: "type"}.get(type(t), "item")


def _visible(arena: Arena, t: ValType, allowed: frozenset[str]) -> bool:
    how = arena.named.get(id(t))
    if how is not None:
        return how in allowed
    if isinstance(t, Record | Variant | Enum | Flags | Own | Borrow):
        return False
    return all(_visible(arena, c, allowed) for c in _kids(t))


def _kids(t: ValType) -> list[ValType]:
    match t:
        case Record(fields):
            return [f.t for f in fields]
        case Variant(cases):
            return [c.t for c in cases if c.t is not None]
        case Tuple(ts):
            return list(ts)
        case List(et, _) | Option(et):
            return [et]
        case Result(ok, err):
            return [x for x in (ok, err) if x is not None]
        case Map(k, v):
            return [k, v]
        case Stream(et) | Future(et):
            return [] if et is None else [et]
    return []


def visible_extern(arena: Arena, t: ExternT, allowed: frozenset[str]) -> bool:
    """Whether every named-kind type that ``t`` mentions has a name in ``allowed``."""
    match t:
        case FuncType():
            return all(_visible(arena, x, allowed) for x in (*t.param_types(), *t.result_types()))
        case TypeT(ValType() as vt):
            return all(_visible(arena, c, allowed) for c in _kids(vt))
        case TypeT(FuncType() as ft):
            return visible_extern(arena, ft, allowed)
        case TypeT(InstanceT() as it):
            return visible_extern(arena, it, allowed)
        case InstanceT(exports):
            return all(visible_extern(arena, e, allowed) for _, e in exports)
    return True


def visible_value(arena: Arena, v: Value) -> bool:
    """External visibility for an export: lifted functions, types, and instances of them."""
    match v:
        case FuncV(t, Lift()):
            return visible_extern(arena, t, ALL_NAMES)
        case TypeV(t):
            if isinstance(t, ValType | FuncType | InstanceT):
                return visible_extern(arena, TypeT(t), ALL_NAMES)
        case InstanceV(exports):
            return all(visible_value(arena, x) for x in exports.values())
    return True
