"""Despecialization of value types (CanonicalABI.md §"Despecialization").

The specialized types ``tuple``, ``enum``, ``option``, ``result`` and ``map``
have the canonical ABI of their expansion, so layout and flattening rewrite
them with :func:`despecialize` before matching on the type. ``string`` and
``flags`` keep their own representation and are not rewritten.

Labels produced here are the spec's: tuple fields are named ``"0"``, ``"1"``,
...; option cases are ``none``/``some``; result cases are ``ok``/``error``.
The Python value shapes (python-mapping.md §2) are chosen by ``polyengine.abi``
from the *specialized* type, so these labels never reach a user.
"""

from __future__ import annotations

from polyengine.types.model import (
    Case,
    Enum,
    Field,
    List,
    Map,
    Option,
    Record,
    Result,
    Tuple,
    ValType,
    Variant,
)

__all__ = ["despecialize"]


def despecialize(t: ValType) -> ValType:
    """Replace a specialized type by its expansion; other types are returned unchanged.

    CanonicalABI.md §"Despecialization". Only the outermost constructor is
    rewritten (the expansion's component types stay as they are), except for
    ``map<k, v>`` whose expansion ``list<tuple<k, v>>`` has its element tuple
    despecialized too, as in the spec.
    """
    match t:
        case Tuple(ts):
            return Record(tuple(Field(str(i), u) for i, u in enumerate(ts)))
        case Enum(labels):
            return Variant(tuple(Case(label, None) for label in labels))
        case Option(u):
            return Variant((Case("none", None), Case("some", u)))
        case Result(ok, error):
            return Variant((Case("ok", ok), Case("error", error)))
        case Map(k, v):
            return List(despecialize(Tuple((k, v))))
    return t
