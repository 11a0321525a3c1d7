"""Validation of value and function type definitions (Binary.md §"Type Definitions").

Turns the reader's ``defvaltype``/``functype`` nodes into the structural
types of :mod:`polyengine.types.model`, enforcing their rules: non-empty
records, variants, tuples, enums and flags (at most 32 flags), kebab-case and
strongly-unique labels, ``own``/``borrow`` of resource types only, no
``borrow`` in results or stream/future payloads, no ``stream<char>``, fixed
lists longer than zero, and the maximum value size. Type indices are looked
up through a callback, so this module knows nothing of index spaces.
"""

from __future__ import annotations

from collections.abc import Callable

from polyengine.binary import ast
from polyengine.types import model as m
from polyengine.types.layout import MAX_VALUE_SIZE, contains_borrow, size_and_alignment
from polyengine.types.subtype import DefType, ResourceT
from polyengine.validate.names import NameError_, check_unique_labels

MAX_TYPE_WEIGHT = 100_000
MAX_TYPE_DEPTH = 100
"""Value types nest at most this deep (keeps every recursive walk of a type shallow)."""

_PRIM: dict[ast.PrimValType, m.ValType] = {
    ast.PrimValType.BOOL: m.Bool(),
    ast.PrimValType.S8: m.S8(),
    ast.PrimValType.U8: m.U8(),
    ast.PrimValType.S16: m.S16(),
    ast.PrimValType.U16: m.U16(),
    ast.PrimValType.S32: m.S32(),
    ast.PrimValType.U32: m.U32(),
    ast.PrimValType.S64: m.S64(),
    ast.PrimValType.U64: m.U64(),
    ast.PrimValType.F32: m.F32(),
    ast.PrimValType.F64: m.F64(),
    ast.PrimValType.CHAR: m.Char(),
    ast.PrimValType.STRING: m.String(),
    ast.PrimValType.ERROR_CONTEXT: m.ErrorContext(),
}


class TypeRuleError(ValueError):
    """A type definition breaks a validation rule."""


TypeLookup = Callable[[int], DefType]
"""Returns the type at a type index; raises ``TypeRuleError`` when out of bounds."""


class ValTypeBuilder:
    """Builds and checks value types against a type index space.

    ``weight`` accumulates the size of the type trees built, so that a chain
    of types doubling in size cannot make translation explode.
    """

    __slots__ = ("depths", "derive", "keep", "lookup", "sizes", "weights")

    def __init__(
        self, lookup: TypeLookup, derive: Callable[[object, m.ValType], None] | None = None
    ) -> None:
        self.lookup = lookup
        self.weights: dict[int, int] = {}
        self.sizes: dict[int, tuple[int, int]] = {}
        self.depths: dict[int, int] = {}
        self.keep: list[object] = []
        # called with (resource type object, handle type built from it)
        self.derive = derive

    def _weight(self, t: m.ValType) -> int:
        w = self.weights.get(id(t))
        return 1 if w is None else w

    def valtype(self, v: ast.ValType) -> m.ValType:
        if isinstance(v, ast.PrimValType):
            return _PRIM[v]
        t = self.lookup(v)
        if not isinstance(t, m.ValType):
            raise TypeRuleError(f"type index {v} is not a defined type")
        return t

    def resource(self, i: int) -> ResourceT:
        t = self.lookup(i)
        if not isinstance(t, ResourceT):
            raise TypeRuleError(f"type index {i} is not a resource type")
        return t

    def handle(self, i: int, cls: type[m.Own] | type[m.Borrow]) -> m.ValType:
        r = self.resource(i)
        h = cls(r.rid)
        if self.derive is not None:
            self.derive(r, h)
        return h

    def defvaltype(self, d: ast.DefValType) -> m.ValType:
        t = self._defvaltype(d)
        if not isinstance(d, ast.PrimValType):
            kids = _kids(t)
            weight = 1 + sum(self._weight(c) for c in kids)
            if weight > MAX_TYPE_WEIGHT:
                raise TypeRuleError("effective type size exceeds the limit")
            depth = 1 + max((self.depths.get(id(c), 1) for c in kids), default=0)
            if depth > MAX_TYPE_DEPTH:
                raise TypeRuleError("type nesting is too deep")
            self.weights[id(t)] = weight
            self.depths[id(t)] = depth
            self.keep.append(t)
            if size_and_alignment(t, "i64", self.sizes)[0] >= MAX_VALUE_SIZE:
                raise TypeRuleError("type exceeds maximum byte size")
        return t

    def _defvaltype(self, d: ast.DefValType) -> m.ValType:
        try:
            match d:
                case ast.PrimValType():
                    return _PRIM[d]
                case ast.RecordType(fields):
                    if not fields:
                        raise TypeRuleError("record type must have at least one field")
                    check_unique_labels([f.label for f in fields], "record field name")
                    return m.Record(tuple(m.Field(f.label, self.valtype(f.type)) for f in fields))
                case ast.VariantType(cases):
                    if not cases:
                        raise TypeRuleError("variant type must have at least one case")
                    check_unique_labels([c.label for c in cases], "variant case name")
                    return m.Variant(
                        tuple(
                            m.Case(c.label, None if c.type is None else self.valtype(c.type))
                            for c in cases
                        )
                    )
                case ast.ListType(element, length):
                    if length is not None and length == 0:
                        raise TypeRuleError("fixed-size list must have a length larger than 0")
                    return m.List(self.valtype(element), length)
                case ast.TupleType(types):
                    if not types:
                        raise TypeRuleError("tuple type must have at least one type")
                    return m.Tuple(tuple(self.valtype(x) for x in types))
                case ast.FlagsType(labels):
                    if not labels:
                        raise TypeRuleError("flags must have at least one entry")
                    if len(labels) > 32:
                        raise TypeRuleError("cannot have more than 32 flags")
                    check_unique_labels(list(labels), "flag name")
                    return m.Flags(tuple(labels))
                case ast.EnumType(labels):
                    if not labels:
                        raise TypeRuleError("enum type must have at least one variant")
                    check_unique_labels(list(labels), "enum tag name")
                    return m.Enum(tuple(labels))
                case ast.OptionType(ot):
                    return m.Option(self.valtype(ot))
                case ast.ResultType(ok, err):
                    return m.Result(
                        None if ok is None else self.valtype(ok),
                        None if err is None else self.valtype(err),
                    )
                case ast.OwnType(i):
                    return self.handle(i, m.Own)
                case ast.BorrowType(i):
                    return self.handle(i, m.Borrow)
                case ast.StreamType(e):
                    et = None if e is None else self.valtype(e)
                    if isinstance(et, m.Char):
                        raise TypeRuleError("`stream<char>` is not valid")
                    if et is not None and contains_borrow(et):
                        raise TypeRuleError("stream payload cannot contain a `borrow` type")
                    return m.Stream(et)
                case ast.FutureType(e):
                    et = None if e is None else self.valtype(e)
                    if et is not None and contains_borrow(et):
                        raise TypeRuleError("future payload cannot contain a `borrow` type")
                    return m.Future(et)
                case ast.MapType(k, v):
                    kt = self.valtype(k)
                    if not isinstance(
                        kt,
                        m.Bool
                        | m.S8
                        | m.U8
                        | m.S16
                        | m.U16
                        | m.S32
                        | m.U32
                        | m.S64
                        | m.U64
                        | m.Char
                        | m.String,
                    ):
                        raise TypeRuleError("map key must be a primitive type")
                    return m.Map(kt, self.valtype(v))
        except NameError_ as exc:
            raise TypeRuleError(str(exc)) from None
        raise TypeRuleError(f"unknown defined type {d!r}")

    def functype(self, f: ast.FuncType) -> m.FuncType:
        try:
            check_unique_labels([p.label for p in f.params], "function parameter name")
        except NameError_ as exc:
            raise TypeRuleError(str(exc)) from None
        params = tuple((p.label, self.valtype(p.type)) for p in f.params)
        result = None if f.result is None else self.valtype(f.result)
        if result is not None and contains_borrow(result):
            raise TypeRuleError("function result cannot contain a `borrow` type")
        return m.FuncType(params, result, f.is_async)


def _kids(t: m.ValType) -> list[m.ValType]:
    match t:
        case m.Record(fields):
            return [f.t for f in fields]
        case m.Variant(cases):
            return [c.t for c in cases if c.t is not None]
        case m.Tuple(ts):
            return list(ts)
        case m.List(et, _) | m.Option(et):
            return [et]
        case m.Result(ok, err):
            return [x for x in (ok, err) if x is not None]
        case m.Map(k, v):
            return [k, v]
        case m.Stream(et) | m.Future(et):
            return [] if et is None else [et]
    return []
