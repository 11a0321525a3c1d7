"""The Plan: a component flattened for execution (Explainer.md §"Component Definitions").

Translation inlines every nested component instantiation of the root
component, so the Plan has no nesting left: a list of core modules (byte
ranges of the component binary), core instances in instantiation order whose
imports are resolved to *core definitions*, trampolines (the core functions the
``canon`` definitions make: lowered imports, adapters between two inner
component instances, and the canonical built-ins), the resource types table
that ``Own.rt``/``Borrow.rt`` index, the flattened component instances that
own per-instance state, and the root's imports and exports with full types.

Ordering contract: ``core_instances`` must be instantiated in order. A
trampoline may name, in its options, a memory or realloc of a core instance
that comes *later* than an instance importing the trampoline (the usual
shim/fixup table pattern), so options are resolved when the trampoline is
called, never when it is created.

Executing a plan:

1. compile ``modules[i]`` from ``component_bytes[offset:offset+length]``;
2. create one piece of per-instance state (handle tables, ``may_leave``,
   backpressure, poisoning) per ``component_instances`` entry;
3. for each ``core_instances`` entry in order, build its imports from
   ``args``: a :class:`CoreExport` is an export of an earlier core
   instance, a :class:`TrampolineRef` is a host function made for
   ``trampolines[index]`` (a :class:`LowerImport` calls the host import at
   ``path``; an :class:`Adapter` calls another instance's :class:`Lift`; a
   :class:`Builtin` is a canonical built-in acting on ``instance``);
4. the root's ``exports`` are :class:`Lift` items (call ``func`` with the
   canonical ABI under ``options``), re-exported imports, instances of
   those, and types.

Resource handles in types (``Own.rt``/``Borrow.rt``) index ``resources``;
``-1`` appears only inside the types of component-typed imports and
exports, whose resources are never instantiated.

Every class is a frozen dataclass made of ints, strs, bools, tuples, ``None``
and the value types of :mod:`polyengine.types.model`; :func:`plan_to_json`
and :func:`plan_from_json` convert losslessly and deterministically (a
dataclass becomes an object with its class name under ``"$"``; value and
function types use :func:`~polyengine.types.model.valtype_to_json` and
:func:`~polyengine.types.model.functype_to_json` under ``"$valtype"`` and
``"$functype"``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypeAlias

from polyengine.types.model import (
    FuncType,
    Json,
    ValType,
    functype_from_json,
    functype_to_json,
    valtype_from_json,
    valtype_to_json,
)

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes, made without compiling generated methods (start-up)
    from polyengine.types.record import frozen_dataclass as dataclass

PLAN_FORMAT_VERSION = 1


# -- core definitions -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CoreModule:
    """A core module embedded in the component: ``data[offset:offset+length]``."""

    offset: int
    length: int
    sha256: str


@dataclass(frozen=True, slots=True)
class CoreExport:
    """The export ``name`` (of kind ``kind``) of ``Plan.core_instances[instance]``."""

    instance: int
    name: str
    kind: str = "func"


@dataclass(frozen=True, slots=True)
class TrampolineRef:
    """The core function ``Plan.trampolines[index]``."""

    index: int


CoreDef: TypeAlias = CoreExport | TrampolineRef


@dataclass(frozen=True, slots=True)
class CoreArg:
    """One import of a core instantiation: ``(import "module" "name")`` bound to ``item``."""

    module: str
    name: str
    kind: str
    item: CoreDef


@dataclass(frozen=True, slots=True)
class StaticModule:
    """``Plan.modules[index]``."""

    index: int


@dataclass(frozen=True, slots=True)
class ImportedModule:
    """A core module the root component imports (``path`` names the import)."""

    path: tuple[str, ...]


ModuleRef: TypeAlias = StaticModule | ImportedModule


@dataclass(frozen=True, slots=True)
class CoreInstance:
    """A core instantiation, owned by flattened component instance ``component_instance``.

    ``args`` lists the module's imports in the module's import order.
    """

    module: ModuleRef
    args: tuple[CoreArg, ...]
    component_instance: int


# -- canonical definitions ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CanonOptions:
    """Canonical ABI options (CanonicalABI.md §"Canonical ABI Options").

    ``instance`` is the flattened component instance whose core code the
    options belong to (its handle tables, ``may_leave`` and poisoning apply).
    """

    instance: int
    string_encoding: str = "utf8"
    memory: CoreDef | None = None
    realloc: CoreDef | None = None
    post_return: CoreDef | None = None
    is_async: bool = False
    callback: CoreDef | None = None


@dataclass(frozen=True, slots=True)
class Lift:
    """``canon lift``: the core function ``func`` presented as a component function."""

    func: CoreDef
    type: FuncType
    options: CanonOptions


@dataclass(frozen=True, slots=True)
class LowerImport:
    """``canon lower`` of a root import: calls the host function at ``path``."""

    path: tuple[str, ...]
    type: FuncType
    options: CanonOptions


@dataclass(frozen=True, slots=True)
class Adapter:
    """``canon lower`` of a function lifted by a component instance (a fused call).

    ``lift.options.instance`` is the callee's instance, ``options.instance``
    the caller's; when they are equal the call must trap (a component
    instance may not call itself through its own lifted export).
    """

    lift: Lift
    type: FuncType
    options: CanonOptions


@dataclass(frozen=True, slots=True)
class Builtin:
    """A canonical built-in (CanonicalABI.md §"Canonical definitions").

    ``kind`` is the text-format name (``resource.new``, ``stream.read``,
    ``waitable-set.wait``, ``task.return``, ...), or ``unavailable`` for the
    lowering of a function that cannot run (an export of an instance of an
    imported component type): calling it traps. Only the fields relevant to
    the kind are set: ``resource`` (resource.*), ``type`` (stream.* and
    future.*: the ``Stream``/``Future`` type itself), ``results`` (task.return),
    ``options`` (task.return, stream/future read/write, error-context.new and
    debug-message), ``is_async`` (the cancel built-ins), ``cancellable``
    (waitable-set.wait/poll, thread.*), ``memory`` (waitable-set.wait/poll),
    ``context_type``/``index`` (context.get/set), ``table``/``core_type``
    (thread.new-indirect).
    """

    kind: str
    instance: int
    resource: int | None = None
    type: ValType | None = None
    results: tuple[ValType, ...] | None = None
    options: CanonOptions | None = None
    is_async: bool = False
    cancellable: bool = False
    memory: CoreDef | None = None
    context_type: str | None = None
    index: int | None = None
    table: CoreDef | None = None
    core_type: tuple[tuple[str, ...], tuple[str, ...]] | None = None


Trampoline: TypeAlias = LowerImport | Adapter | Builtin


# -- resources and instances ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One entry of the resource table (Explainer.md §"Resource types").

    A defined resource belongs to the flattened component instance
    ``instance`` that defined it (a new one per instantiation); an imported one
    comes from the host through the root import ``import_path``.
    """

    name: str
    imported: bool
    instance: int | None = None
    import_path: tuple[str, ...] | None = None
    rep: str = "i32"
    dtor: CoreDef | None = None
    dtor_async: bool = False
    dtor_callback: CoreDef | None = None


@dataclass(frozen=True, slots=True)
class ComponentInstance:
    """A flattened component instance (0 is the root); ``path`` names how it was reached."""

    id: int
    parent: int | None
    path: str


# -- types of imports and exports -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class FuncDesc:
    type: FuncType


@dataclass(frozen=True, slots=True)
class TypeDesc:
    """An exported/imported type: a value type, or a resource (``resource`` indexes the table)."""

    type: ValType | None = None
    resource: int | None = None
    func: FuncType | None = None


@dataclass(frozen=True, slots=True)
class InstanceDesc:
    exports: tuple[tuple[str, ExternDesc], ...]


@dataclass(frozen=True, slots=True)
class ComponentDesc:
    imports: tuple[tuple[str, ExternDesc], ...]
    exports: tuple[tuple[str, ExternDesc], ...]


@dataclass(frozen=True, slots=True)
class ModuleDesc:
    """A core module type: imports as (module, name, kind), exports as (name, kind).

    ``import_types`` and ``export_types`` give each import's and export's
    type in the same order, as :func:`polyengine.types.subtype.core_signature`
    spells it (plain tuples: ``("func", params, results)``, ``("memory", min,
    max, shared, is64, page_size_log2)`` ...); empty when not known.
    """

    imports: tuple[tuple[str, str, str], ...]
    exports: tuple[tuple[str, str], ...]
    import_types: tuple[tuple[Any, ...], ...] = ()
    export_types: tuple[tuple[Any, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class ValueDesc:
    type: ValType


ExternDesc: TypeAlias = FuncDesc | TypeDesc | InstanceDesc | ComponentDesc | ModuleDesc | ValueDesc


@dataclass(frozen=True, slots=True)
class Import:
    """A root import, by its full name (``wasi:cli/stdout@0.2.0``, ``f``, ...).

    ``version_suffix`` and ``implements`` are the name's attributes (Binary.md
    §"Import and Export Definitions"), when present.
    """

    name: str
    desc: ExternDesc
    version_suffix: str | None = None
    implements: str | None = None


@dataclass(frozen=True, slots=True)
class ImportedItem:
    """An export that re-exports (part of) a root import."""

    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ExportedInstance:
    items: tuple[Export, ...]


@dataclass(frozen=True, slots=True)
class ExportedType:
    desc: TypeDesc


@dataclass(frozen=True, slots=True)
class ExportedModule:
    module: ModuleRef


@dataclass(frozen=True, slots=True)
class Opaque:
    """An export execution cannot use directly (a component definition)."""

    kind: str


ExportItem: TypeAlias = (
    Lift | ImportedItem | ExportedInstance | ExportedType | ExportedModule | Opaque
)


@dataclass(frozen=True, slots=True)
class Export:
    """An export (of the root, or of an exported instance) with its type and what it is."""

    name: str
    desc: ExternDesc
    item: ExportItem
    version_suffix: str | None = None
    implements: str | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """A component flattened for execution (see the module docstring)."""

    modules: tuple[CoreModule, ...]
    core_instances: tuple[CoreInstance, ...]
    trampolines: tuple[Trampoline, ...]
    resources: tuple[ResourceType, ...]
    component_instances: tuple[ComponentInstance, ...]
    imports: tuple[Import, ...]
    exports: tuple[Export, ...]

    def uses_async(self) -> bool:
        """True when anything in the plan needs the async machinery."""
        for tr in self.trampolines:
            if isinstance(tr, Builtin):
                if tr.kind not in _SYNC_BUILTINS:
                    return True
            elif tr.options.is_async or tr.type.is_async:
                return True
        return any(
            isinstance(e.item, Lift) and (e.item.options.is_async or e.item.type.is_async)
            for e in _walk_exports(self.exports)
        )


_SYNC_BUILTINS = frozenset({"resource.new", "resource.drop", "resource.rep", "unavailable"})


def _walk_exports(exports: tuple[Export, ...]) -> list[Export]:
    out: list[Export] = []
    for e in exports:
        out.append(e)
        if isinstance(e.item, ExportedInstance):
            out.extend(_walk_exports(e.item.items))
    return out


# -- JSON ------------------------------------------------------------------------------

_CLASSES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        CoreModule,
        CoreExport,
        TrampolineRef,
        CoreArg,
        StaticModule,
        ImportedModule,
        CoreInstance,
        CanonOptions,
        Lift,
        LowerImport,
        Adapter,
        Builtin,
        ResourceType,
        ComponentInstance,
        FuncDesc,
        TypeDesc,
        InstanceDesc,
        ComponentDesc,
        ModuleDesc,
        ValueDesc,
        Import,
        ImportedItem,
        ExportedInstance,
        ExportedType,
        ExportedModule,
        Opaque,
        Export,
        Plan,
    )
}


def _to_json(v: object) -> Json:
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, tuple):
        return [_to_json(x) for x in v]
    if isinstance(v, FuncType):
        return {"$functype": functype_to_json(v)}
    if isinstance(v, ValType):
        return {"$valtype": valtype_to_json(v)}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        out: dict[str, Json] = {"$": type(v).__name__}
        for f in dataclasses.fields(v):
            out[f.name] = _to_json(getattr(v, f.name))
        return out
    raise AssertionError(f"not plan data: {v!r}")


def _from_json(j: Json) -> Any:
    if j is None or isinstance(j, bool | int | str):
        return j
    if isinstance(j, list):
        return tuple(_from_json(x) for x in j)
    if not isinstance(j, dict):
        raise ValueError(f"unexpected JSON value in plan: {j!r}")
    if "$functype" in j:
        return functype_from_json(j["$functype"])
    if "$valtype" in j:
        return valtype_from_json(j["$valtype"])
    name = j.get("$")
    cls = _CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"unknown plan node {name!r}")
    kwargs = {k: _from_json(v) for k, v in j.items() if k != "$"}
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"malformed plan node {name!r}: {exc}") from None


def plan_to_json(plan: Plan) -> dict[str, Json]:
    """The JSON form of ``plan`` (dicts, lists, strs, ints, bools, ``None``)."""
    out = _to_json(plan)
    assert isinstance(out, dict)
    return out


def plan_from_json(d: dict[str, Json]) -> Plan:
    """Inverse of :func:`plan_to_json`; raises ``ValueError`` on malformed input."""
    plan = _from_json(d)
    if not isinstance(plan, Plan):
        raise ValueError("JSON document is not a plan")
    return plan
