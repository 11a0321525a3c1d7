"""Link-time type checking of supplied imports (Explainer.md §"Instance definitions", §"Subtyping").

``instantiate`` checks, before any guest code runs, every supplied import
whose component-level type is known against the type the component declares
for it, by the spec's subtyping rules (:mod:`polyengine.types.subtype`):

- an instance's ``exports`` facade, one of its interface namespaces, one of
  its export functions or resource classes carries the type of the export it
  stands for (:func:`attach`);
- bytes of a core module supplied for a ``core module`` import are read for
  their import and export kinds;
- a plain Python provider (a module, an object, a mapping) has no type, but
  the members it hands over may (an export function of another instance
  given in a mapping, a guest resource class).

A mismatch raises :class:`~polyengine.errors.LinkError` naming the import
path and what was expected and found: ``expected func found instance``,
``export 'g' has the wrong type: ...``, ``mismatched resource types``,
``export 'g' was not found``.

Resource identity: the resources a supplied type mentions are numbered by
the identity of the runtime resource type behind them (``id()`` of the
runtime's ``ResourceType``, never a small integer); a resource the component
imports is bound, on first meeting, to the one supplied at its position, and
every later mention must be that very resource (Explainer.md §"Type
imports": a type import is bound by instantiation).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from polyengine.embed._names import parse_func_name, pascal, snake
from polyengine.embed._providers import Imports
from polyengine.errors import LinkError
from polyengine.memo import IdentityMemo
from polyengine.translate import plan as pln

__all__ = ["LINK_ATTR", "Known", "attach", "check_links", "known_type"]

#: the attribute under which a facade object carries its component-level type
LINK_ATTR = "_polyengine_link_type"

_CORE_MAGIC = b"\x00asm\x01\x00\x00\x00"


@dataclass(frozen=True, slots=True)
class Known:
    """A supplied item's type: ``desc``, whose resource indices ``rid`` maps to identities."""

    desc: pln.ExternDesc
    rid: Callable[[int], int]


def attach(obj: object, desc: pln.ExternDesc, rid: Callable[[int], int]) -> None:
    """Record on ``obj`` (a facade object) the type of the export it stands for."""
    setattr(obj, LINK_ATTR, Known(desc, rid))


def known_type(obj: object) -> Known | None:
    """The component-level type of a supplied import, or ``None`` when it has none."""
    found = getattr(obj, LINK_ATTR, None)
    if isinstance(found, Known):
        return found
    exports = getattr(obj, "exports", None)
    if exports is not None and not isinstance(obj, type):
        inner = getattr(exports, LINK_ATTR, None)
        if isinstance(inner, Known):
            return inner  # an Instance: the type of its exports
    if isinstance(obj, bytes | bytearray | memoryview) and bytes(obj[:8]) == _CORE_MAGIC:
        return Known(_module_desc(bytes(obj)), _no_resources)
    return None


def _no_resources(index: int) -> int:  # pragma: no cover - a module type names no resource
    raise AssertionError(f"core module types mention no resource ({index})")


def _module_desc(data: bytes) -> pln.ModuleDesc:
    """The import and export kinds of core module ``data`` (``LinkError`` when malformed)."""
    from polyengine.errors import TranslationError
    from polyengine.types.subtype import core_kind, core_signature
    from polyengine.validate import read_module_signature

    try:
        sig = read_module_signature(data)
    except TranslationError as exc:
        raise LinkError(f"the core module supplied is malformed: {exc}") from exc
    return pln.ModuleDesc(
        tuple((m, n, core_kind(t)) for m, n, t in sig.imports),
        tuple((n, core_kind(t)) for n, t in sig.exports),
        tuple(core_signature(t) for _, _, t in sig.imports),
        tuple(core_signature(t) for _, t in sig.exports),
    )


def _kind(desc: pln.ExternDesc) -> str:
    match desc:
        case pln.FuncDesc():
            return "func"
        case pln.TypeDesc(resource=r) if r is not None:
            return "resource"
        case pln.TypeDesc():
            return "type"
        case pln.InstanceDesc():
            return "instance"
        case pln.ComponentDesc():
            return "component"
        case pln.ModuleDesc():
            return "module"
        case pln.ValueDesc():
            return "value"
    raise AssertionError(desc)  # pragma: no cover


def _supplied_kind(obj: object) -> str:
    """What a supplied object of unknown component type is, in the spec's words."""
    return "func" if callable(obj) and not isinstance(obj, type) else type(obj).__name__


class _Checker:
    """One instantiation's check: the resource bindings grow as imports are met."""

    def __init__(self, plan: pln.Plan) -> None:
        self.bindable = {i for i, r in enumerate(plan.resources) if r.imported}
        self.bind: dict[int, int] = {}

    def fail(self, where: str, what: str) -> LinkError:
        return LinkError(f"import {where}: {what}")

    # -- one supplied item against one declared type --------------------------------

    def known(self, found: Known, expected: pln.ExternDesc, where: str, label: str) -> None:
        """Require ``found`` to be a subtype of ``expected`` (``label`` names it in errors)."""
        from polyengine.types.subtype import Mismatch, check_functype, check_valtype
        from polyengine.types.subtype import map_functype as _map_ft
        from polyengine.types.subtype import map_valtype as _map_vt

        ka, kb = _kind(found.desc), _kind(expected)
        if ka != kb and not {ka, kb} <= {"type", "resource"}:
            raise self.fail(where, f"expected {kb} found {ka}")
        a, b = found.desc, expected
        if isinstance(a, pln.FuncDesc) and isinstance(b, pln.FuncDesc):
            try:
                check_functype(_map_ft(a.type, found.rid), b.type, self.bind)
            except Mismatch as exc:
                raise self.fail(where, f"{label} has the wrong type: {exc}") from None
        elif isinstance(a, pln.TypeDesc) and isinstance(b, pln.TypeDesc):
            self.typedef(a, b, found.rid, where, label)
        elif isinstance(a, pln.InstanceDesc) and isinstance(b, pln.InstanceDesc):
            exports = dict(a.exports)
            for name, sub in b.exports:
                have = exports.get(name)
                if have is None:
                    raise self.fail(where, f"export '{name}' was not found")
                self.known(Known(have, found.rid), sub, f"{where}/{name}", f"export '{name}'")
        elif isinstance(a, pln.ModuleDesc) and isinstance(b, pln.ModuleDesc):
            self.module(a, b, where)
        elif isinstance(a, pln.ComponentDesc) and isinstance(b, pln.ComponentDesc):
            self.component(a, b, where)
        elif isinstance(a, pln.ValueDesc) and isinstance(b, pln.ValueDesc):
            try:
                check_valtype(_map_vt(a.type, found.rid), b.type, self.bind)
            except Mismatch as exc:
                raise self.fail(where, f"{label} has the wrong type: {exc}") from None

    def typedef(
        self, a: pln.TypeDesc, b: pln.TypeDesc, rid: Callable[[int], int], where: str, label: str
    ) -> None:
        from polyengine.types.subtype import Mismatch, check_functype, check_valtype
        from polyengine.types.subtype import map_functype as _map_ft
        from polyengine.types.subtype import map_valtype as _map_vt

        if b.resource is not None:
            if a.resource is None:
                raise self.fail(where, f"{label}: expected resource found type")
            have = rid(a.resource)
            if b.resource in self.bindable and b.resource not in self.bind:
                self.bind[b.resource] = have
            elif self.bind.get(b.resource, b.resource) != have:
                raise self.fail(where, f"{label}: mismatched resource types")
            return
        if a.resource is not None:
            raise self.fail(where, f"{label}: expected type found resource")
        try:
            if a.type is not None and b.type is not None:
                check_valtype(_map_vt(a.type, rid), b.type, self.bind)
            elif a.func is not None and b.func is not None:
                check_functype(_map_ft(a.func, rid), b.func, self.bind)
        except Mismatch as exc:
            raise self.fail(where, f"{label} has the wrong type: {exc}") from None

    def module(self, a: pln.ModuleDesc, b: pln.ModuleDesc, where: str) -> None:
        """Core module subtyping: ``a`` imports no more, exports no less than ``b``.

        By kind, and by type where both sides know their types (a module's
        binary, a declared module type): each import ``a`` needs must be met
        by the one ``b`` declares, each export ``b`` declares met by ``a``'s
        (core import matching, :func:`~polyengine.types.subtype.core_signature_mismatch`).
        """
        from polyengine.types.subtype import core_signature_mismatch

        typed = len(a.import_types) == len(a.imports) and len(b.import_types) == len(b.imports)
        offered = {
            (m, n): (k, b.import_types[i] if typed else None)
            for i, (m, n, k) in enumerate(b.imports)
        }
        for i, (m, n, k) in enumerate(a.imports):
            found = offered.get((m, n))
            if found is None:
                raise self.fail(where, f"module import '{m}::{n}' is not provided by the importer")
            want, sig = found
            if want != k:
                raise self.fail(where, f"module import '{m}::{n}': expected {k} found {want}")
            if typed and sig is not None:
                why = core_signature_mismatch(sig, a.import_types[i])
                if why is not None:
                    raise self.fail(where, f"module import '{m}::{n}' has the wrong type: {why}")
        typed = len(a.export_types) == len(a.exports) and len(b.export_types) == len(b.exports)
        exports = {
            n: (k, a.export_types[i] if typed else None) for i, (n, k) in enumerate(a.exports)
        }
        for i, (n, k) in enumerate(b.exports):
            have = exports.get(n)
            if have is None:
                raise self.fail(where, f"module export '{n}' was not found")
            if have[0] != k:
                raise self.fail(
                    where, f"module export '{n}' has the wrong type: expected {k} found {have[0]}"
                )
            if typed and have[1] is not None:
                why = core_signature_mismatch(have[1], b.export_types[i])
                if why is not None:
                    raise self.fail(where, f"module export '{n}' has the wrong type: {why}")

    def component(self, a: pln.ComponentDesc, b: pln.ComponentDesc, where: str) -> None:
        """Component subtyping, by kind: ``a`` needs no more imports, gives no fewer exports."""
        offered = dict(b.imports)
        for n, t in a.imports:
            have = offered.get(n)
            if have is None:
                raise self.fail(where, f"component import '{n}' is not provided by the importer")
            if _kind(have) != _kind(t):
                raise self.fail(
                    where, f"component import '{n}': expected {_kind(t)} found {_kind(have)}"
                )
        exports = dict(a.exports)
        for n, t in b.exports:
            have = exports.get(n)
            if have is None:
                raise self.fail(where, f"component export '{n}' was not found")
            if _kind(have) != _kind(t):
                raise self.fail(
                    where,
                    f"component export '{n}' has the wrong type: "
                    f"expected {_kind(t)} found {_kind(have)}",
                )

    # -- a supplied Python object against one declared type ---------------------------

    def supplied(self, obj: object, expected: pln.ExternDesc, where: str, label: str) -> None:
        """Check ``obj`` as far as its type is known (members of an untyped provider too)."""
        found = known_type(obj)
        if found is not None:
            self.known(found, expected, where, label)
            return
        if isinstance(expected, pln.FuncDesc):
            if isinstance(obj, type):
                return  # a class serves as a constructor
            # any other non-callable is refused by resolution, naming the import
            if _is_namespace(obj):
                raise self.fail(where, "expected func found instance")
            return
        if isinstance(expected, pln.InstanceDesc):
            if callable(obj) and not isinstance(obj, type) and not _is_namespace(obj):
                raise self.fail(where, f"expected instance found {_supplied_kind(obj)}")
            get = obj.get if isinstance(obj, Mapping) else None
            for name, attr, sub in _members_of(expected):
                if attr is None:
                    continue  # resource members are checked through their class's type
                member = get(attr) if get is not None else getattr(obj, attr, None)
                if member is None:
                    continue
                if _untyped(member, sub):
                    continue
                self.supplied(member, sub, f"{where}/{name}", f"export '{name}'")
            return
        if isinstance(expected, pln.ModuleDesc | pln.ComponentDesc):
            raise self.fail(
                where,
                f"expected {_kind(expected)} found {_supplied_kind(obj)} "
                "(a core module is supplied as its binary, bytes)",
            )


def _untyped(member: object, desc: pln.ExternDesc) -> bool:
    """Whether :meth:`_Checker.supplied` has nothing to check of ``member`` for ``desc``:
    a plain function for a function, a class carrying no type for a resource type
    (the common members, answered without the general walk)."""
    if isinstance(desc, pln.FuncDesc):
        return (
            type(member) in _PLAIN_CALLABLES
            and getattr(member, LINK_ATTR, None) is None
            and getattr(member, "exports", None) is None
        )
    if isinstance(desc, pln.TypeDesc):
        return isinstance(member, type) and not isinstance(getattr(member, LINK_ATTR, None), Known)
    return False


def _is_namespace(obj: object) -> bool:
    """A mapping or a module: something that stands for an instance, not a function."""
    if type(obj) in _PLAIN_CALLABLES:
        return False  # the common case, without the abstract class's check
    return isinstance(obj, Mapping | types.ModuleType)


#: callables that are never a mapping or a module
_PLAIN_CALLABLES = frozenset({types.FunctionType, types.MethodType, types.BuiltinFunctionType})


def _member_attr(name: str, desc: pln.ExternDesc) -> str | None:
    """The name under which an untyped provider serves export ``name`` (``None``: it is
    not looked up there: a resource member, a type, a value)."""
    if isinstance(desc, pln.FuncDesc):
        parsed = parse_func_name(name)
        if parsed.kind != "func":
            return None  # resource members are checked through their class's type
        return snake(parsed.name)
    if isinstance(desc, pln.TypeDesc) and desc.resource is not None:
        return pascal(name)
    if isinstance(desc, pln.InstanceDesc | pln.ModuleDesc | pln.ComponentDesc):
        return name
    return None


_Members = tuple[tuple[str, str | None, pln.ExternDesc], ...]

#: each instance type's exports with the provider member serving each: every
#: instance of a component checks the same types, so the names are worked out once
_MEMBERS: IdentityMemo[pln.InstanceDesc, _Members] = IdentityMemo(4096)


def _members_of(desc: pln.InstanceDesc) -> _Members:
    """``(export name, provider member name or None, type)`` of each export of ``desc``."""
    return _MEMBERS.get(desc, _work_out_members)


def _work_out_members(desc: pln.InstanceDesc) -> _Members:
    return tuple((name, _member_attr(name, sub), sub) for name, sub in desc.exports)


def _root_member(imports: Imports, imp: pln.Import) -> object | None:
    """The object supplied for root import ``imp``, or ``None`` when there is none."""
    desc = imp.desc
    if ":" in imp.name and not isinstance(desc, pln.FuncDesc):
        found = imports.interface(imp.name)
        return None if found is None else found[1]
    if isinstance(desc, pln.FuncDesc):
        parsed = parse_func_name(imp.name)
        if parsed.kind != "func":
            return None
        return imports.top_level(snake(parsed.name))
    if isinstance(desc, pln.TypeDesc):
        return imports.top_level(pascal(imp.name)) if desc.resource is not None else None
    for key in dict.fromkeys((imp.name, snake(imp.name))):
        found_top = imports.top_level(key)
        if found_top is not None:
            return found_top
    return None


def check_links(plan: pln.Plan, imports: Imports, *, require: Sequence[str] = ()) -> None:
    """Check every supplied root import of ``plan`` whose type is known.

    ``require`` lists root import kinds whose absence is itself a link error
    (``module`` and ``component``: the runtime has no other way to obtain
    them); a missing function or interface is left to the resolution of the
    imports the component actually calls.
    """
    checker = _Checker(plan)
    for imp in plan.imports:
        obj = _root_member(imports, imp)
        if obj is None:
            if _kind(imp.desc) in require:
                raise checker.fail(imp.name, f"{_kind(imp.desc)} '{imp.name}' was not found")
            continue
        checker.supplied(obj, imp.desc, imp.name, f"{_kind(imp.desc)} '{imp.name}'")
