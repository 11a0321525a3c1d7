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
from collections.abc import Callable

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

Allowed = Callable[[str, int], bool]
"""Decides whether a name of a kind, made by an owner, counts in some context."""

_DECLARATOR_KINDS = frozenset({"iexport", "cimport", "cexport"})


def walk_imports(owner: int) -> Allowed:
    """What an import of component walk ``owner`` may mention."""
    return lambda how, o: (how == "import" and o == owner) or how in _DECLARATOR_KINDS


def walk_exports(owner: int) -> Allowed:
    """What an export of component walk ``owner`` may mention."""
    return lambda how, o: (how in ("import", "export") and o == owner) or how in _DECLARATOR_KINDS


def declarator_imports(owner: int) -> Allowed:
    """What an import declarator of component type ``owner`` may mention."""
    return lambda how, o: (how == "cimport" and o == owner) or how in ("import", "iexport")


def declarator_exports(owner: int) -> Allowed:
    """What an export declarator of component type ``owner`` may mention."""
    return lambda how, o: (
        (how in ("cimport", "cexport") and o == owner)
        or how
        in (
            "import",
            "export",
            "iexport",
        )
    )


def copy_type(t: DefType) -> DefType:
    """A new object equal to ``t``, so that it can carry its own name."""
    if isinstance(t, ResourceT):
        return ResourceT(t.rid)
    if isinstance(t, ValType) and dataclasses.fields(t):
        return dataclasses.replace(t)
    return t


def named_copy(arena: Arena, v: Value, how: str, owner: int) -> Value:
    """The value behind a new import/export index: its types (and those of an
    instance, transitively) become names of kind ``how``."""
    match v:
        case TypeV():
            out = TypeV(copy_type(v.t), named=True)
            if how == "import":
                arena.derive(v.t, out.t)  # an argument keeps the names it had outside
            arena.name_type(out.t, how, owner)
            return out
        case InstanceV():
            # an instance's members get no new indices: its types are named in place
            name_members(arena, v, how, owner)
    return v


def name_members(arena: Arena, v: Value, how: str, owner: int) -> None:
    """Name the types an instance carries, before its export is checked: they are
    exported together, so they may refer to one another."""
    if isinstance(v, InstanceV):
        for x in v.exports.values():
            if isinstance(x, TypeV):
                arena.name_type(x.t, how, owner)
            else:
                name_members(arena, x, how, owner)


def name_extern(arena: Arena, t: ExternT, how: str, owner: int) -> ExternT:
    """For a declarator: a copy of a type import/export that carries a name."""
    if isinstance(t, TypeT) and isinstance(t.t, ValType | ResourceT):
        out = TypeT(copy_type(t.t))
        arena.name_type(out.t, how, owner)
        return out
    return t


def kind_text(t: ExternT) -> str:
    return {FuncType: "func", InstanceT: "instance", TypeT: "type"}.get(type(t), "item")


def _visible(arena: Arena, t: ValType, allowed: Allowed) -> bool:
    names = arena.names_of(t)
    if names:
        return any(allowed(how, owner) for how, owner in names)
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


def visible_extern(arena: Arena, t: ExternT, allowed: Allowed) -> bool:
    """Whether every named-kind type that ``t`` mentions has a name in ``allowed``."""
    match t:
        case FuncType():
            return all(_visible(arena, x, allowed) for x in (*t.param_types(), *t.result_types()))
        case TypeT(ValType() as vt):
            # ``(type (eq T))`` where T is an earlier type import of this component
            # is valid whatever T's own parts are named: T passed this check when it
            # was imported (in a shim instantiated with arguments, T is bound to the
            # argument, whose parts carry the names of the component it came from)
            if any(how == "import" and allowed(how, owner) for how, owner in arena.names_of(vt)):
                return True
            return all(_visible(arena, c, allowed) for c in _kids(vt))
        case TypeT(FuncType() as ft):
            return visible_extern(arena, ft, allowed)
        case TypeT(InstanceT() as it):
            return visible_extern(arena, it, allowed)
        case InstanceT(exports):
            return all(visible_extern(arena, e, allowed) for _, e in exports)
    return True


def visible_value(arena: Arena, v: Value, allowed: Allowed) -> bool:
    """External visibility for an export: lifted functions, types, and instances of them."""
    match v:
        case FuncV(t, Lift()):
            return visible_extern(arena, t, allowed)
        case TypeV(t):
            if isinstance(t, ValType | FuncType | InstanceT):
                return visible_extern(arena, TypeT(t), allowed)
        case InstanceV(exports):
            return all(visible_value(arena, x, allowed) for x in exports.values())
    return True
