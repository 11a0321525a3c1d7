"""``translate_component``: bytes in, a validated flat :class:`Plan` out.

Reads the binary (``polyengine.binary``), walks the root component (which
validates and inlines everything, see :mod:`._inline`), then renumbers the
resource ids the walk used into the Plan's resource table and describes the
root's imports and exports.
"""

from __future__ import annotations

import dataclasses
from time import perf_counter

from polyengine.binary.reader import read_component
from polyengine.errors import TranslationError
from polyengine.translate._cache import gc_paused
from polyengine.translate._inline import Translator, Walk
from polyengine.translate._values import (
    ComponentV,
    CoreModuleV,
    FuncV,
    HostFunc,
    InstanceV,
    Sink,
    TypeV,
    Value,
    ValueV,
)
from polyengine.translate.plan import (
    Adapter,
    Builtin,
    ComponentDesc,
    Export,
    ExportedInstance,
    ExportedModule,
    ExportedType,
    ExportItem,
    ExternDesc,
    FuncDesc,
    Import,
    ImportedItem,
    InstanceDesc,
    Lift,
    LowerImport,
    ModuleDesc,
    Opaque,
    Plan,
    ResourceType,
    Trampoline,
    TypeDesc,
    ValueDesc,
)
from polyengine.types.model import FuncType, ValType
from polyengine.types.subtype import (
    ComponentT,
    CoreModuleT,
    ExternT,
    InstanceT,
    ResourceT,
    TypeT,
    ValueT,
    core_kind,
    core_signature,
    map_functype,
    map_valtype,
)

PHASES = ("read", "core", "component", "inline", "plan")
"""Phases :func:`translate_component_timed` reports: reading the binary, core
modules (hashing, validation, signatures), checking component definitions,
inlining the root's instantiations, and building the Plan."""


def translate_component(data: bytes) -> Plan:
    """Read, validate and flatten the component binary ``data``.

    Raises :class:`TranslationError` (with a byte offset where one is known)
    for malformed or invalid input, and for nothing else.
    """
    return _translate(data, None)


def translate_component_timed(data: bytes) -> tuple[Plan, dict[str, float]]:
    """:func:`translate_component`, also returning seconds spent per phase (:data:`PHASES`)."""
    timings = dict.fromkeys(PHASES, 0.0)
    plan = _translate(data, timings)
    return plan, timings


def _translate(data: bytes, timings: dict[str, float] | None) -> Plan:
    with gc_paused():
        return _translate_unpaused(data, timings)


def _translate_unpaused(data: bytes, timings: dict[str, float] | None) -> Plan:
    try:
        start = perf_counter()
        data = bytes(data)
        comp = read_component(data)
        read_done = perf_counter()
        tr = Translator(data, timings)
        sink = tr.new_sink()
        walk = Walk(
            tr,
            comp,
            parent=None,
            parent_lens=None,
            sink=sink,
            args=None,
            parent_instance=None,
            path="",
        )
        walk.run()
        walk_done = perf_counter()
        plan = _Builder(tr, sink, walk).plan()
        if timings is not None:
            timings["read"] += read_done - start
            walked = walk_done - read_done
            timings["inline"] += walked - timings["core"] - timings["component"]
            timings["plan"] += perf_counter() - walk_done
        return plan
    except TranslationError:
        raise
    except RecursionError:
        raise TranslationError("component is nested too deeply") from None
    except Exception as exc:
        # a bug of ours, reached by some input: still report it as a translation
        # failure (with the cause chained) rather than let it escape
        raise TranslationError(
            f"invalid component (internal error {type(exc).__name__}: {exc})"
        ) from exc


class _Builder:
    def __init__(self, tr: Translator, sink: Sink, walk: Walk) -> None:
        self.tr = tr
        self.sink = sink
        self.walk = walk
        self.remap: dict[int, int] = {}
        for rid, info in enumerate(tr.arena.resources):
            if info.sink == sink.id:
                self.remap[rid] = len(self.remap)

    def rt(self, rid: int) -> int:
        r = self.remap.get(rid)
        if r is None:
            # an abstract resource of a type that is only described (never instantiated)
            return -1
        return r

    def vt(self, t: ValType) -> ValType:
        return map_valtype(t, self.rt)

    def ft(self, t: FuncType) -> FuncType:
        return map_functype(t, self.rt)

    def plan(self) -> Plan:
        arena = self.tr.arena
        resources = []
        for rid in self.remap:
            info = arena.resources[rid]
            resources.append(
                ResourceType(
                    name=info.name,
                    imported=info.imported,
                    instance=info.instance,
                    import_path=info.import_path,
                    rep=info.rep,
                    dtor=info.dtor,
                )
            )
        return Plan(
            modules=tuple(self.sink.modules),
            core_instances=tuple(self.sink.core_instances),
            trampolines=tuple(self.trampoline(t) for t in self.sink.trampolines),
            resources=tuple(resources),
            component_instances=tuple(self.sink.component_instances),
            imports=tuple(self.import_(n, t) for n, t in self.walk.imports),
            exports=tuple(self.export(n, v) for n, v in self.walk.exports.items()),
        )

    def lift(self, lf: Lift) -> Lift:
        return dataclasses.replace(lf, type=self.ft(lf.type))

    def trampoline(self, t: Trampoline) -> Trampoline:
        match t:
            case LowerImport():
                return dataclasses.replace(t, type=self.ft(t.type))
            case Adapter():
                return dataclasses.replace(t, lift=self.lift(t.lift), type=self.ft(t.type))
            case Builtin():
                return dataclasses.replace(
                    t,
                    resource=None if t.resource is None else self.rt(t.resource),
                    type=None if t.type is None else self.vt(t.type),
                    results=None if t.results is None else tuple(map(self.vt, t.results)),
                )

    def desc(self, t: ExternT) -> ExternDesc:
        match t:
            case FuncType():
                return FuncDesc(self.ft(t))
            case InstanceT(exports):
                return InstanceDesc(tuple((n, self.desc(e)) for n, e in exports))
            case ComponentT(imports, exports):
                return ComponentDesc(
                    tuple((n, self.desc(e)) for n, e in imports),
                    tuple((n, self.desc(e)) for n, e in exports),
                )
            case TypeT(d):
                if isinstance(d, ResourceT):
                    return TypeDesc(resource=self.rt(d.rid))
                if isinstance(d, ValType):
                    return TypeDesc(type=self.vt(d))
                if isinstance(d, FuncType):
                    return TypeDesc(func=self.ft(d))
                return TypeDesc()
            case CoreModuleT(imports, exports):
                return ModuleDesc(
                    tuple((m, n, core_kind(x)) for m, n, x in imports),
                    tuple((n, core_kind(x)) for n, x in exports),
                    tuple(core_signature(x) for _, _, x in imports),
                    tuple(core_signature(x) for _, x in exports),
                )
            case ValueT(v):
                return ValueDesc(self.vt(v))

    def import_(self, name: str, t: ExternT) -> Import:
        attrs = self.walk.attributes.get(("import", name))
        return Import(
            name,
            self.desc(t),
            None if attrs is None else attrs.version_suffix,
            None if attrs is None else attrs.implements,
        )

    def export(self, name: str, v: Value, top: bool = True) -> Export:
        from polyengine.translate._values import type_of

        desc = self.desc(type_of(v))
        item: ExportItem
        match v:
            case FuncV(_, src):
                if isinstance(src, Lift):
                    item = self.lift(src)
                elif isinstance(src, HostFunc):
                    item = ImportedItem(src.path)
                else:
                    item = Opaque("unavailable")
            case InstanceV(exports):
                item = ExportedInstance(
                    tuple(self.export(n, x, top=False) for n, x in exports.items())
                )
            case TypeV():
                assert isinstance(desc, TypeDesc)
                item = ExportedType(desc)
            case CoreModuleV(_, ref):
                item = ExportedModule(ref) if ref is not None else Opaque("module")
            case ComponentV():
                item = Opaque("component")
            case ValueV():
                item = Opaque("value")
        attrs = self.walk.attributes.get(("export", name)) if top else None
        if attrs is None:
            return Export(name, desc, item)
        return Export(name, desc, item, attrs.version_suffix, attrs.implements)
