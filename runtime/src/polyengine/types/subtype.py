"""Component and core extern types, resource substitution and subtyping.

Explainer.md §"Type Definitions" and §"Subtyping": these are the types the
validator assigns to every definition of every index space. Resource types
are identified by integers ("resource ids"); instantiating a component type
substitutes the resources it imports by the ones supplied and replaces the
ones it exports (abstractly) by fresh ids. Value types are the structural
dataclasses of :mod:`polyengine.types.model` with ``Own.rt``/``Borrow.rt``
holding resource ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from polyengine.types.model import (
    Borrow,
    Case,
    Enum,
    Field,
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

# -- core types --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CoreFuncT:
    """A core function type; value types are spelled as in the text format (``i32``...)."""

    params: tuple[str, ...]
    results: tuple[str, ...]

    def __str__(self) -> str:
        return f"[{' '.join(self.params)}] -> [{' '.join(self.results)}]"


@dataclass(frozen=True, slots=True)
class CoreTableT:
    elem: str
    min: int
    max: int | None
    is64: bool = False
    shared: bool = False


@dataclass(frozen=True, slots=True)
class CoreMemoryT:
    min: int
    max: int | None
    shared: bool = False
    is64: bool = False
    page_size_log2: int | None = None


@dataclass(frozen=True, slots=True)
class CoreGlobalT:
    valtype: str
    mutable: bool
    shared: bool = False


@dataclass(frozen=True, slots=True)
class CoreTagT:
    func: CoreFuncT


CoreExternT: TypeAlias = CoreFuncT | CoreTableT | CoreMemoryT | CoreGlobalT | CoreTagT


def core_kind(t: CoreExternT) -> str:
    match t:
        case CoreFuncT():
            return "func"
        case CoreTableT():
            return "table"
        case CoreMemoryT():
            return "memory"
        case CoreGlobalT():
            return "global"
        case CoreTagT():
            return "tag"


def core_signature(t: CoreExternT) -> tuple[Any, ...]:
    """``t`` as plain data (a plan keeps it so): its kind first, then its parts."""
    match t:
        case CoreFuncT(params, results):
            return ("func", params, results)
        case CoreTableT(elem, mn, mx, is64, shared):
            return ("table", elem, mn, mx, is64, shared)
        case CoreMemoryT(mn, mx, shared, is64, page):
            return ("memory", mn, mx, shared, is64, page)
        case CoreGlobalT(valtype, mutable, shared):
            return ("global", valtype, mutable, shared)
        case CoreTagT(CoreFuncT(params, results)):
            return ("tag", params, results)
    raise AssertionError(f"not a core extern type: {t!r}")


def core_signature_mismatch(have: tuple[Any, ...], want: tuple[Any, ...]) -> str | None:
    """Why an extern of type ``have`` cannot stand where ``want`` is required, or ``None``.

    Core import matching (the core spec's "import subtyping"): functions, globals
    and tags match exactly; a table or memory matches when its other parts are
    equal and its limits lie within the required ones (a minimum at least, a
    maximum at most the required maximum, present when that one is).
    """
    kind = want[0]
    if have[0] != kind:
        return f"expected {kind}, found {have[0]}"
    if kind in ("table", "memory"):
        mn, mx = (have[2], have[3]) if kind == "table" else (have[1], have[2])
        wmn, wmx = (want[2], want[3]) if kind == "table" else (want[1], want[2])
        rest = (have[1], *have[4:]) if kind == "table" else have[3:]
        wrest = (want[1], *want[4:]) if kind == "table" else want[3:]
        if rest != wrest:
            return f"expected {_spell(want)}, found {_spell(have)}"
        if mn < wmn or (wmx is not None and (mx is None or mx > wmx)):
            return f"expected {_spell(want)}, found {_spell(have)} (limits)"
        return None
    if have != want:
        return f"expected {_spell(want)}, found {_spell(have)}"
    return None


def _spell(sig: tuple[Any, ...]) -> str:
    """A core signature in words: ``func [i32] -> [i32]``, ``memory 1..2``."""
    kind = sig[0]
    if kind in ("func", "tag"):
        return f"{kind} [{' '.join(sig[1])}] -> [{' '.join(sig[2])}]"
    if kind == "table":
        mx = "" if sig[3] is None else sig[3]
        return f"table {sig[1]} {sig[2]}..{mx}"
    if kind == "memory":
        mx = "" if sig[2] is None else sig[2]
        return f"memory {sig[1]}..{mx}{' i64' if sig[4] else ''}"
    return f"global {'mut ' if sig[2] else ''}{sig[1]}"


@dataclass(frozen=True, slots=True)
class CoreModuleT:
    imports: tuple[tuple[str, str, CoreExternT], ...]
    exports: tuple[tuple[str, CoreExternT], ...]

    def export(self, name: str) -> CoreExternT | None:
        for n, t in self.exports:
            if n == name:
                return t
        return None


# -- component types ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceT:
    """A resource type, by resource id."""

    rid: int


@dataclass(frozen=True, slots=True)
class InstanceT:
    """An instance type; ``abstract`` lists the resource ids its type exports introduce."""

    exports: tuple[tuple[str, ExternT], ...]
    abstract: tuple[int, ...] = ()

    def export(self, name: str) -> ExternT | None:
        for n, t in self.exports:
            if n == name:
                return t
        return None


@dataclass(frozen=True, slots=True)
class ComponentT:
    """A component type; ``imported``/``exported`` are the abstract resource ids it binds."""

    imports: tuple[tuple[str, ExternT], ...]
    exports: tuple[tuple[str, ExternT], ...]
    imported: tuple[int, ...] = ()
    exported: tuple[int, ...] = ()


DefType: TypeAlias = (
    ValType | ResourceT | FuncType | InstanceT | ComponentT | CoreModuleT | CoreFuncT
)


@dataclass(frozen=True, slots=True)
class TypeT:
    """The extern type of a ``type`` import/export: the type it is bound to."""

    t: DefType


@dataclass(frozen=True, slots=True)
class ValueT:
    t: ValType


ExternT: TypeAlias = FuncType | InstanceT | ComponentT | TypeT | CoreModuleT | ValueT


def extern_kind(t: ExternT) -> str:
    match t:
        case FuncType():
            return "func"
        case InstanceT():
            return "instance"
        case ComponentT():
            return "component"
        case TypeT():
            return "type"
        case CoreModuleT():
            return "module"
        case ValueT():
            return "value"


# -- substitution ------------------------------------------------------------------------


Note: TypeAlias = Callable[[object, object], None]
"""Called with (old, new) whenever a mapping makes a new type object for an old one."""


class _Mapper:
    """Rebuilds types with resource ids mapped; unchanged parts keep their identity."""

    __slots__ = ("f", "memo", "note")

    def __init__(self, f: Callable[[int], int], note: Note | None) -> None:
        self.f = f
        self.note = note
        self.memo: dict[int, ValType] = {}

    def vt(self, t: ValType) -> ValType:
        hit = self.memo.get(id(t))
        if hit is not None:
            return hit
        out = self._vt(t)
        if out is not t and self.note is not None:
            self.note(t, out)
        self.memo[id(t)] = out
        return out

    def _opt(self, t: ValType | None) -> ValType | None:
        return None if t is None else self.vt(t)

    def _vt(self, t: ValType) -> ValType:
        match t:
            case Own(rt):
                r = self.f(rt)
                return t if r == rt else Own(r)
            case Borrow(rt):
                r = self.f(rt)
                return t if r == rt else Borrow(r)
            case List(et, n):
                e2 = self.vt(et)
                return t if e2 is et else List(e2, n)
            case Record(fields):
                fs = [self.vt(x.t) for x in fields]
                if all(a is x.t for a, x in zip(fs, fields, strict=True)):
                    return t
                return Record(tuple(Field(x.label, a) for a, x in zip(fs, fields, strict=True)))
            case Tuple(ts):
                ts2 = [self.vt(x) for x in ts]
                if all(a is b for a, b in zip(ts2, ts, strict=True)):
                    return t
                return Tuple(tuple(ts2))
            case Variant(cases):
                cs = [self._opt(c.t) for c in cases]
                if all(a is c.t for a, c in zip(cs, cases, strict=True)):
                    return t
                return Variant(tuple(Case(c.label, a) for a, c in zip(cs, cases, strict=True)))
            case Option(ot):
                o2 = self.vt(ot)
                return t if o2 is ot else Option(o2)
            case Result(ok, err):
                ok2, err2 = self._opt(ok), self._opt(err)
                return t if ok2 is ok and err2 is err else Result(ok2, err2)
            case Map(k, v):
                k2, v2 = self.vt(k), self.vt(v)
                return t if k2 is k and v2 is v else Map(k2, v2)
            case Stream(st):
                s2 = self._opt(st)
                return t if s2 is st else Stream(s2)
            case Future(ft):
                f2 = self._opt(ft)
                return t if f2 is ft else Future(f2)
        return t

    def ft(self, t: FuncType) -> FuncType:
        ps = [self.vt(p) for _, p in t.params]
        r = self._opt(t.result)
        if r is t.result and all(a is b for a, (_, b) in zip(ps, t.params, strict=True)):
            return t
        out = FuncType(tuple((n, a) for a, (n, _) in zip(ps, t.params, strict=True)), r, t.is_async)
        if self.note is not None:
            self.note(t, out)
        return out

    def deftype(self, t: DefType) -> DefType:
        match t:
            case ResourceT(rid):
                r = self.f(rid)
                return t if r == rid else ResourceT(r)
            case FuncType():
                return self.ft(t)
            case InstanceT() | ComponentT():
                return self.extern(t)  # type: ignore[return-value]
            case CoreModuleT() | CoreFuncT():
                return t
        assert isinstance(t, ValType)
        return self.vt(t)

    def extern(self, t: ExternT) -> ExternT:
        f = self.f
        match t:
            case FuncType():
                return self.ft(t)
            case InstanceT(exports, abstract):
                return InstanceT(
                    tuple((n, self.extern(e)) for n, e in exports), tuple(map(f, abstract))
                )
            case ComponentT(imports, exports, imported, exported):
                return ComponentT(
                    tuple((n, self.extern(e)) for n, e in imports),
                    tuple((n, self.extern(e)) for n, e in exports),
                    tuple(map(f, imported)),
                    tuple(map(f, exported)),
                )
            case TypeT(d):
                nd = self.deftype(d)
                return t if nd is d else TypeT(nd)
            case ValueT(v):
                return ValueT(self.vt(v))
            case CoreModuleT():
                return t


def map_valtype(t: ValType, f: Callable[[int], int], note: Note | None = None) -> ValType:
    """``t`` with every resource id ``r`` replaced by ``f(r)``."""
    return _Mapper(f, note).vt(t)


def map_functype(t: FuncType, f: Callable[[int], int], note: Note | None = None) -> FuncType:
    return _Mapper(f, note).ft(t)


def map_extern(t: ExternT, f: Callable[[int], int], note: Note | None = None) -> ExternT:
    """``t`` with every resource id ``r`` replaced by ``f(r)``."""
    return _Mapper(f, note).extern(t)


def substitute(t: ExternT, mapping: Mapping[int, int], note: Note | None = None) -> ExternT:
    if not mapping:
        return t
    return map_extern(t, lambda r: mapping.get(r, r), note)


def resources_of(t: ExternT | ValType) -> set[int]:
    """Every resource id mentioned by ``t``."""
    out: set[int] = set()

    def note(r: int) -> int:
        out.add(r)
        return r

    if isinstance(t, ValType):
        map_valtype(t, note)
    else:
        map_extern(t, note)
    return out


# -- subtyping ---------------------------------------------------------------------------


class Mismatch(Exception):
    """A subtyping check failed; the message names the first difference."""


def _describe(t: object) -> str:
    if isinstance(t, ValType):
        name = type(t).__name__.lower()
        return {"s8": "s8", "errorcontext": "error-context"}.get(name, name)
    return type(t).__name__


_PRIMS = (
    "Bool",
    "S8",
    "U8",
    "S16",
    "U16",
    "S32",
    "U32",
    "S64",
    "U64",
    "F32",
    "F64",
    "Char",
    "String",
    "ErrorContext",
)


def check_valtype(a: ValType, b: ValType, bind: dict[int, int] | None = None) -> None:
    """Require value type ``a`` to be a subtype of (here: equal to) ``b``."""
    if a == b:
        return
    if bind:
        b = map_valtype(b, lambda r: bind.get(r, r))
        if a == b:
            return
    an, bn = type(a).__name__, type(b).__name__
    if an != bn:
        if an in _PRIMS and bn in _PRIMS:
            raise Mismatch(f"expected primitive `{_describe(b)}` found primitive `{_describe(a)}`")
        if bn in _PRIMS:
            raise Mismatch(f"expected primitive, found {_describe(a)}")
        raise Mismatch(f"expected {_describe(b)}, found {_describe(a)}")
    match a, b:
        case Record(fa), Record(fb):
            if len(fa) != len(fb):
                raise Mismatch(f"expected {len(fb)} fields, found {len(fa)}")
            for fx, fy in zip(fa, fb, strict=True):
                if fx.label != fy.label:
                    raise Mismatch(f"expected field name `{fy.label}`, found `{fx.label}`")
                _nested(fx.t, fy.t, bind, f"type mismatch in record field `{fx.label}`")
        case Tuple(ta), Tuple(tb):
            if len(ta) != len(tb):
                raise Mismatch(f"expected {len(tb)} types, found {len(ta)}")
            for i, (x, y) in enumerate(zip(ta, tb, strict=True)):
                _nested(x, y, bind, f"type mismatch in tuple field {i}")
        case Variant(ca), Variant(cb):
            if len(ca) != len(cb):
                raise Mismatch(f"expected {len(cb)} cases, found {len(ca)}")
            for cx, cy in zip(ca, cb, strict=True):
                if cx.label != cy.label:
                    raise Mismatch(f"expected case named `{cy.label}`, found `{cx.label}`")
                if cx.t is None and cy.t is not None:
                    raise Mismatch(f"expected case `{cx.label}` to have a type, found none")
                if cx.t is not None and cy.t is None:
                    raise Mismatch(f"expected case `{cx.label}` to have no type")
                if cx.t is not None and cy.t is not None:
                    _nested(cx.t, cy.t, bind, f"type mismatch in variant case `{cx.label}`")
        case Enum(la), Enum(lb):
            if la != lb:
                raise Mismatch("mismatch in enum elements")
        case Flags(la), Flags(lb):
            if la != lb:
                raise Mismatch("mismatch in flags elements")
        case Result(oa, ea), Result(ob, eb):
            _opt(oa, ob, bind, "ok")
            _opt(ea, eb, bind, "err")
        case Option(x), Option(y):
            _nested(x, y, bind, "type mismatch in option")
        case List(x, n), List(y, m):
            if n != m:
                raise Mismatch("mismatch in list length")
            _nested(x, y, bind, "type mismatch in list element")
        case (Own(x), Own(y)) | (Borrow(x), Borrow(y)):
            if x != y:
                raise Mismatch("resource types are not the same")
        case _:
            raise Mismatch(f"expected {_describe(b)}, found {_describe(a)}")


def _nested(a: ValType, b: ValType, bind: dict[int, int] | None, context: str) -> None:
    try:
        check_valtype(a, b, bind)
    except Mismatch as exc:
        raise Mismatch(f"{context}: {exc}") from None


def _opt(a: ValType | None, b: ValType | None, bind: dict[int, int] | None, what: str) -> None:
    if a is None and b is not None:
        raise Mismatch(f"expected {what} type, but found none")
    if a is not None and b is None:
        raise Mismatch(f"expected {what} type to not be present")
    if a is not None and b is not None:
        _nested(a, b, bind, f"type mismatch in {what} variant")


def check_functype(a: FuncType, b: FuncType, bind: dict[int, int] | None = None) -> None:
    """Require component function type ``a`` to be a subtype of ``b``."""
    if a.is_async != b.is_async:
        raise Mismatch("mismatch in async attribute of function")
    if len(a.params) != len(b.params):
        raise Mismatch(f"expected {len(b.params)} parameters, found {len(a.params)}")
    for (na, ta), (nb, tb) in zip(a.params, b.params, strict=True):
        if na != nb:
            raise Mismatch(f"expected parameter named `{nb}`, found `{na}`")
        _nested(ta, tb, bind, f"type mismatch in function parameter `{na}`")
    if a.result is None and b.result is not None:
        raise Mismatch("expected a result, found none")
    if a.result is not None and b.result is None:
        raise Mismatch("expected no result, found one")
    if a.result is not None and b.result is not None:
        _nested(a.result, b.result, bind, "type mismatch with result type")


def check_core_extern(a: CoreExternT, b: CoreExternT) -> None:
    """Require core extern type ``a`` to match ``b`` (core spec §"Import subtyping")."""
    ka, kb = core_kind(a), core_kind(b)
    if ka != kb:
        raise Mismatch(f"expected {kb}, found {ka}")
    match a, b:
        case CoreFuncT(), CoreFuncT():
            if a != b:
                raise Mismatch(f"expected: (func {b}), found (func {a})")
        case CoreTableT(), CoreTableT():
            if a.elem != b.elem:
                raise Mismatch(f"expected table element type {b.elem}, found {a.elem}")
            if a.is64 != b.is64 or not _limits_ok(a.min, a.max, b.min, b.max):
                raise Mismatch("mismatch in table limits")
        case CoreMemoryT(), CoreMemoryT():
            if a.shared != b.shared:
                raise Mismatch("mismatch in the shared flag for memories")
            if a.is64 != b.is64 or a.page_size_log2 != b.page_size_log2:
                raise Mismatch("mismatch in index type used for memories")
            if not _limits_ok(a.min, a.max, b.min, b.max):
                raise Mismatch("mismatch in memory limits")
        case CoreGlobalT(), CoreGlobalT():
            if a.mutable != b.mutable:
                raise Mismatch("global types differ in mutability")
            if a.valtype != b.valtype:
                raise Mismatch(f"expected global type {b.valtype}, found {a.valtype}")
        case CoreTagT(), CoreTagT():
            if a.func != b.func:
                raise Mismatch("tag types differ")


def _limits_ok(amin: int, amax: int | None, bmin: int, bmax: int | None) -> bool:
    if amin < bmin:
        return False
    if bmax is None:
        return True
    return amax is not None and amax <= bmax


def check_module(a: CoreModuleT, b: CoreModuleT) -> None:
    """Require core module type ``a`` to be a subtype of ``b``."""
    bimports = {(m, n): t for m, n, t in b.imports}
    for m, n, t in a.imports:
        bt = bimports.get((m, n))
        if bt is None:
            raise Mismatch(f"missing expected import `{m}::{n}`")
        try:
            check_core_extern(bt, t)
        except Mismatch as exc:
            raise Mismatch(f"type mismatch in import `{m}::{n}`: {exc}") from None
    for n, t in b.exports:
        at = a.export(n)
        if at is None:
            raise Mismatch(f"missing expected export `{n}`")
        try:
            check_core_extern(at, t)
        except Mismatch as exc:
            raise Mismatch(f"type mismatch in export `{n}`: {exc}") from None


def check_extern(a: ExternT, b: ExternT, bind: dict[int, int], bindable: set[int]) -> None:
    """Require ``a`` to be a subtype of ``b``.

    Resource ids of ``b`` in ``bindable`` that ``bind`` does not map yet are
    bound to the corresponding resources of ``a`` as they are met (type
    imports of a component being instantiated).
    """
    ka, kb = extern_kind(a), extern_kind(b)
    if ka != kb:
        raise Mismatch(f"expected {kb}, found {ka}")
    match a, b:
        case FuncType(), FuncType():
            check_functype(a, b, bind)
        case TypeT(da), TypeT(db):
            _check_deftype(da, db, bind, bindable)
        case InstanceT(), InstanceT():
            for n, tb in b.exports:
                ta = a.export(n)
                if ta is None:
                    raise Mismatch(f"missing expected export `{n}`")
                try:
                    check_extern(ta, tb, bind, bindable)
                except Mismatch as exc:
                    raise Mismatch(f"type mismatch in instance export `{n}`: {exc}") from None
        case ComponentT(), ComponentT():
            _check_component(a, b, bind, bindable)
        case CoreModuleT(), CoreModuleT():
            check_module(a, b)
        case ValueT(va), ValueT(vb):
            check_valtype(va, vb, bind)


def _check_deftype(a: DefType, b: DefType, bind: dict[int, int], bindable: set[int]) -> None:
    if isinstance(b, ResourceT):
        if not isinstance(a, ResourceT):
            raise Mismatch("expected resource, found defined type")
        if b.rid in bindable and b.rid not in bind:
            bind[b.rid] = a.rid
            return
        if bind.get(b.rid, b.rid) != a.rid:
            raise Mismatch("resource types are not the same")
        return
    if isinstance(a, ResourceT):
        raise Mismatch("expected defined type, found resource")
    if isinstance(a, ValType) and isinstance(b, ValType):
        check_valtype(a, b, bind)
    elif isinstance(a, FuncType) and isinstance(b, FuncType):
        check_functype(a, b, bind)
    elif isinstance(a, InstanceT | ComponentT) and isinstance(b, InstanceT | ComponentT):
        check_extern(a, b, bind, bindable)
    elif isinstance(a, CoreModuleT) and isinstance(b, CoreModuleT):
        check_module(a, b)
    elif type(a) is not type(b):
        raise Mismatch(f"expected {_describe(b)}, found {_describe(a)}")
    elif a != b:
        raise Mismatch("type mismatch")


def _check_component(
    a: ComponentT, b: ComponentT, bind: dict[int, int], bindable: set[int]
) -> None:
    # Everything a imports must be provided by b's imports (contravariant).
    bimports = dict(b.imports)
    inner_bind: dict[int, int] = {}
    for n, ta in a.imports:
        tb = bimports.get(n)
        if tb is None:
            raise Mismatch(f"missing expected import `{n}`")
        check_extern(tb, ta, inner_bind, set(a.imported))
    aexports = dict(a.exports)
    for n, tb in b.exports:
        found = aexports.get(n)
        if found is None:
            raise Mismatch(f"missing expected export `{n}`")
        check_extern(substitute(found, inner_bind), tb, bind, bindable | set(b.exported))
