"""Walk a component's definitions, validating them and inlining nested instantiations.

Explainer.md §"Component Definitions" (and wasmtime's inliner as evidence):
every definition appends a value to an index space; instantiating a nested
component walks that component's definitions again with the arguments bound
to its imports, so the Plan ends up flat. A component definition is also
walked once on its own (its imports left abstract, into a throw-away sink)
so that it is validated even when it is never instantiated, and so that its
component type is known.
"""

from __future__ import annotations

import hashlib
from time import perf_counter

from polyengine.binary import ast
from polyengine.binary.ast import Sort
from polyengine.engine import validate_core_module
from polyengine.errors import TranslationError
from polyengine.translate import _canon
from polyengine.translate._cache import cached_signature, store_signature
from polyengine.translate._scope import Fail, Scope, fail_at
from polyengine.translate._typescope import (
    TypeContext,
    alias_export,
    check_annotated,
    check_attributes,
    check_name,
    core_deftypes,
    outer_alias,
    sort_of_type,
    sort_of_value,
    value_from_type,
)
from polyengine.translate._values import (
    Arena,
    ComponentV,
    CoreExports,
    CoreInstanceV,
    CoreItem,
    CoreModuleV,
    FuncV,
    InstanceV,
    ResourceInfo,
    Sink,
    TypeV,
    Unavailable,
    Value,
    type_of,
)
from polyengine.translate._visibility import (
    kind_text,
    name_members,
    named_copy,
    visible_extern,
    visible_value,
    walk_exports,
    walk_imports,
)
from polyengine.translate.plan import (
    CoreArg,
    CoreInstance,
    CoreModule,
    StaticModule,
)
from polyengine.types.model import FuncType, Result
from polyengine.types.subtype import (
    ComponentT,
    CoreExternT,
    CoreFuncT,
    CoreModuleT,
    ExternT,
    InstanceT,
    Mismatch,
    ResourceT,
    TypeT,
    check_core_extern,
    check_extern,
    core_kind,
    substitute,
)
from polyengine.validate import read_module_signature
from polyengine.validate.names import NameSet

_SECTION = {
    ast.CoreModule: "core module",
    ast.CoreInstantiate: "core instance",
    ast.CoreInstanceExports: "core instance",
    ast.CoreTypeDef: "core type",
    ast.Component: "component",
    ast.Instantiate: "instance",
    ast.InstanceExports: "instance",
    ast.AliasExport: "alias",
    ast.AliasCoreExport: "alias",
    ast.AliasOuter: "alias",
    ast.TypeDef: "type",
    ast.Start: "start",
    ast.Import: "import",
    ast.Export: "export",
    ast.Value: "value",
}

_CORE_SORT_KIND = {
    Sort.CORE_FUNC: "func",
    Sort.CORE_TABLE: "table",
    Sort.CORE_MEMORY: "memory",
    Sort.CORE_GLOBAL: "global",
    Sort.CORE_TAG: "tag",
}
_KIND_CORE_SORT = {v: k for k, v in _CORE_SORT_KIND.items()}

MAX_INSTANTIATIONS = 10_000

# Signatures of valid core modules by sha-256 (they depend on the bytes only).
_SIGNATURES: dict[str, CoreModuleT] = {}
_SIGNATURE_CACHE_LIMIT = 1024
SIGNATURE_DISK_MIN_SIZE = 256 * 1024
"""Core modules at least this large keep their signature in the disk cache too."""


class Translator:
    """One translation: the input bytes, the resource arena and the type context.

    ``timings``, when given, accumulates seconds spent per phase (see
    :data:`PHASES`); it is for benchmarks and costs a few clock reads.
    """

    def __init__(self, data: bytes, timings: dict[str, float] | None = None) -> None:
        self.data = data
        self.arena = Arena()
        self.types = TypeContext(self.arena)
        self.digests: dict[int, str] = {}
        self.export_maps: dict[int, dict[str, CoreExternT]] = {}
        self.component_types: dict[tuple[int, int], ComponentT] = {}
        self.walks = 0
        self.timings = timings
        self.checking = 0  # depth of definition-check walks under way

    def new_sink(self) -> Sink:
        self.arena.next_sink += 1
        return Sink(self.arena.next_sink)

    def export_types(self, sig: CoreModuleT) -> dict[str, CoreExternT]:
        """A module's exports by name (shared by all instances of the module)."""
        types = self.export_maps.get(id(sig))
        if types is None:
            types = self.export_maps[id(sig)] = dict(sig.exports)
            self.arena.keep.append(sig)
        return types

    def module_digest(self, m: ast.CoreModule) -> str:
        """Hex sha-256 of a core module's bytes, computed once per translation."""
        digest = self.digests.get(m.offset)
        if digest is None:
            digest = hashlib.sha256(m.data(self.data)).hexdigest()
            self.digests[m.offset] = digest
        return digest

    def module_sig(self, m: ast.CoreModule) -> CoreModuleT:
        sig = self.arena.module_sigs.get(m.offset)
        if sig is None:
            start = perf_counter() if self.timings is not None else 0.0
            sig = self._module_sig(m)
            self.arena.module_sigs[m.offset] = sig
            if self.timings is not None:
                self.timings["core"] = self.timings.get("core", 0.0) + perf_counter() - start
        return sig

    def _module_sig(self, m: ast.CoreModule) -> CoreModuleT:
        digest = self.module_digest(m)
        view = m.data(self.data)
        validate_core_module(view, m.offset, sha256=digest)
        sig = _SIGNATURES.get(digest)
        if sig is not None:
            return sig
        on_disk = m.length >= SIGNATURE_DISK_MIN_SIZE
        sig = cached_signature(digest) if on_disk else None
        if sig is not None:
            _SIGNATURES[digest] = sig
            return sig
        sig = read_module_signature(self.data, m.offset, m.offset + m.length)
        seen: set[tuple[str, str]] = set()
        for mod, name, _ in sig.imports:
            if (mod, name) in seen:
                raise TranslationError(
                    f"duplicate import name `{mod}:{name}` in core module",
                    m.offset,
                    "core module",
                )
            seen.add((mod, name))
        if len(_SIGNATURES) >= _SIGNATURE_CACHE_LIMIT:
            _SIGNATURES.clear()
        _SIGNATURES[digest] = sig
        if on_disk:
            store_signature(digest, sig)
        return sig

    def component_type(self, cv: ComponentV) -> ComponentT:
        """The type of a component definition, from an abstract walk."""
        if cv.t is not None:
            return cv.t
        assert cv.ast is not None and isinstance(cv.scope, tuple)
        parent, lens = cv.scope
        key = (cv.ast.offset, id(parent))
        t = self.component_types.get(key)
        if t is None:
            timings = self.timings
            outermost = timings is not None and not self.checking
            if outermost:
                assert timings is not None
                start, core = perf_counter(), timings.get("core", 0.0)
            self.checking += 1
            try:
                walk = Walk(
                    self,
                    cv.ast,
                    parent=parent,
                    parent_lens=lens,
                    sink=self.new_sink(),
                    args=None,
                    parent_instance=None,
                    path="",
                )
                walk.run()
                t = walk.component_type()
            finally:
                self.checking -= 1
                if outermost:
                    assert timings is not None
                    spent = perf_counter() - start - (timings.get("core", 0.0) - core)
                    timings["component"] = timings.get("component", 0.0) + spent
            self.component_types[key] = t
        return t


class Walk:
    """The walk of one component body (a definition check, the root, or one instantiation)."""

    def __init__(
        self,
        tr: Translator,
        comp: ast.Component,
        *,
        parent: Scope | None,
        parent_lens: dict[Sort, int] | None,
        sink: Sink,
        args: dict[str, Value] | None,
        parent_instance: int | None,
        path: str,
    ) -> None:
        self.tr = tr
        self.comp = comp
        self.scope = Scope(parent, is_component=True)
        if parent_lens is not None:
            self.scope.parent_lens = parent_lens
        self.sink = sink
        self.args = args
        self.instance = sink.new_instance(parent_instance, path)
        self.path = path
        self.imports: list[tuple[str, ExternT]] = []
        self.attributes: dict[tuple[str, str], ast.ExternName] = {}
        self.imported_rids: list[int] = []
        self.exports: dict[str, Value] = {}
        self.import_names = NameSet("import")
        self.export_names = NameSet("export")
        self.import_resources: dict[str, int] = {}
        self.export_resources: dict[str, int] = {}
        self.first_rid = len(tr.arena.resources)
        self.owner = tr.arena.new_owner()
        tr.walks += 1
        if tr.walks > MAX_INSTANTIATIONS:
            raise TranslationError("too many component instantiations", comp.offset, "component")

    # -- driver -------------------------------------------------------------------------

    def run(self) -> None:
        for d in self.comp.definitions:
            try:
                self.definition(d)
            except Fail as exc:
                offset = getattr(d, "offset", -1)
                raise fail_at(exc, offset, _SECTION.get(type(d), "canon")) from None

    def component_type(self) -> ComponentT:
        exported = [
            r
            for r in range(self.first_rid, len(self.tr.arena.resources))
            if r not in self.imported_rids and not self.tr.arena.resources[r].imported
        ]
        return ComponentT(
            tuple(self.imports),
            tuple((n, type_of(v)) for n, v in self.exports.items()),
            tuple(self.imported_rids),
            tuple(exported),
        )

    def definition(self, d: ast.Definition) -> None:
        s = self.scope
        match d:
            case ast.CoreModule():
                sig = self.tr.module_sig(d)
                idx = self.sink.module_index.get(d.offset)
                if idx is None:
                    digest = self.tr.module_digest(d)
                    self.sink.modules.append(CoreModule(d.offset, d.length, digest))
                    idx = len(self.sink.modules) - 1
                    self.sink.module_index[d.offset] = idx
                s.add(Sort.CORE_MODULE, CoreModuleV(sig, StaticModule(idx)))
            case ast.CoreInstantiate(module, args):
                s.add(Sort.CORE_INSTANCE, self.core_instantiate(module, args))
            case ast.CoreInstanceExports(exports):
                bag: dict[str, CoreItem] = {}
                for e in exports:
                    if e.name in bag:
                        raise Fail(f"export name `{e.name}` already defined")
                    kind = _CORE_SORT_KIND.get(e.sort)
                    if kind is None:
                        raise Fail(f"core instance export of sort {e.sort.text} is not allowed")
                    bag[e.name] = s.get(e.sort, e.index)
                s.add(Sort.CORE_INSTANCE, CoreInstanceV(bag))
            case ast.CoreTypeDef(t):
                for entry in core_deftypes(t, s, self.tr.arena):
                    s.add(Sort.CORE_TYPE, entry)
            case ast.Component():
                cv = ComponentV(None, d, (s, s.lens()))
                # validate the definition now, even if it is never instantiated
                ct = self.tr.component_type(cv)
                s.add(Sort.COMPONENT, ComponentV(ct, d, cv.scope))
            case ast.Instantiate(component, args):
                s.add(Sort.INSTANCE, self.instantiate(component, args))
            case ast.InstanceExports(exports):
                s.add(Sort.INSTANCE, self.bag(exports))
            case ast.AliasExport(sort, inst, name):
                s.add(sort, alias_export(s, sort, inst, name))
            case ast.AliasCoreExport(sort, inst, name):
                civ = s.get(Sort.CORE_INSTANCE, inst)
                assert isinstance(civ, CoreInstanceV)
                item = civ.exports.get(name)
                if item is None:
                    raise Fail(f"core instance {inst} has no export named `{name}`")
                want = _CORE_SORT_KIND.get(sort)
                if want != item.kind:
                    raise Fail(f"export `{name}` for core instance {inst} is not a {want}")
                s.add(sort, item)
            case ast.AliasOuter(sort, count, index):
                if sort not in (Sort.TYPE, Sort.CORE_TYPE, Sort.CORE_MODULE, Sort.COMPONENT):
                    raise Fail("outer aliases may only refer to types, modules or components")
                s.add(sort, outer_alias(s, sort, count, index))
            case ast.TypeDef(t):
                if isinstance(t, ast.ResourceType):
                    s.add(Sort.TYPE, TypeV(ResourceT(self.define_resource(t))))
                else:
                    s.add(Sort.TYPE, TypeV(self.tr.types.deftype(t, s)))
            case ast.CanonLift():
                s.add(Sort.FUNC, _canon.lift(self, d))
            case ast.CanonLower():
                s.add(Sort.CORE_FUNC, _canon.lower(self, d))
            case ast.Import():
                self.do_import(d)
            case ast.Export():
                self.do_export(d)
            case ast.Start():
                raise Fail("component start functions (values) are not supported")
            case ast.Value():
                raise Fail("component values are not supported")
            case _:
                s.add(Sort.CORE_FUNC, _canon.builtin(self, d))

    def bag(self, exports: tuple[ast.InlineExport, ...]) -> InstanceV:
        """An instance made of inline exports (Explainer.md §"Instance Definitions")."""
        names = NameSet("export")
        bag: dict[str, Value] = {}
        resources: dict[str, int] = {}
        for ie in exports:
            parsed = check_name(ie.name, names)
            if ie.sort.is_core and ie.sort is not Sort.CORE_MODULE:
                raise Fail(f"{ie.sort.text} is not valid to be used as an instance export")
            item = self.scope.get(ie.sort, ie.index)
            t = type_of(item)
            check_attributes(ie.name, t)
            check_annotated(parsed.kind, parsed.resource, parsed.label, t, resources)
            if isinstance(t, FuncType) and not _handle_is_named(self.tr.arena, parsed.kind, t):
                raise Fail("resource used in function does not have a name in this context")
            if isinstance(item, TypeV) and isinstance(item.t, ResourceT):
                resources[ie.name.name] = item.t.rid
            bag[ie.name.name] = item
        return InstanceV(bag)

    # -- core instances -----------------------------------------------------------------

    def core_instantiate(
        self, module: int, args: tuple[ast.CoreInstantiateArg, ...]
    ) -> CoreInstanceV:
        s = self.scope
        mv = s.get(Sort.CORE_MODULE, module)
        assert isinstance(mv, CoreModuleV)
        by_name: dict[str, CoreInstanceV] = {}
        for a in args:
            if a.name in by_name:
                raise Fail(f"duplicate module instantiation argument named `{a.name}`")
            iv = s.get(Sort.CORE_INSTANCE, a.instance)
            assert isinstance(iv, CoreInstanceV)
            by_name[a.name] = iv
        resolved: list[CoreArg] = []
        for mod, name, t in mv.t.imports:
            iv = by_name.get(mod)
            if iv is None:
                raise Fail(f"missing module instantiation argument named `{mod}`")
            item = iv.exports.get(name)
            if item is None:
                raise Fail(
                    f"module instantiation argument `{mod}` does not export an item named `{name}`"
                )
            try:
                check_core_extern(item.t, t)
            except Mismatch as exc:
                raise Fail(
                    f"type mismatch for export `{name}` of module instantiation "
                    f"argument `{mod}`: {exc}"
                ) from None
            assert item.ref is not None
            resolved.append(CoreArg(mod, name, core_kind(t), item.ref))
        if mv.ref is None:
            raise Fail("cannot instantiate an abstract module")
        self.sink.core_instances.append(CoreInstance(mv.ref, tuple(resolved), self.instance))
        idx = len(self.sink.core_instances) - 1
        return CoreInstanceV(CoreExports(self.tr.export_types(mv.t), idx))

    # -- resources ----------------------------------------------------------------------

    def define_resource(self, t: ast.ResourceType) -> int:
        from polyengine.translate._typescope import core_valtype

        rep = core_valtype(t.rep)
        if rep != "i32":
            raise Fail("resource representation must be i32")
        dtor = None
        if t.dtor is not None:
            item = self.scope.get(Sort.CORE_FUNC, t.dtor)
            assert isinstance(item, CoreItem)
            if item.t != CoreFuncT(("i32",), ()):
                raise Fail("wrong signature for a destructor")
            dtor = item.ref
        return self.tr.arena.new_resource(
            ResourceInfo(self.sink.id, False, "", self.instance, None, rep, dtor)
        )

    # -- component instances ------------------------------------------------------------

    def instantiate(self, component: int, args: tuple[ast.InstantiateArg, ...]) -> InstanceV:
        s = self.scope
        cv = s.get(Sort.COMPONENT, component)
        assert isinstance(cv, ComponentV)
        given: dict[str, Value] = {}
        for a in args:
            if a.name in given:
                raise Fail(
                    f"instantiation argument `{a.name}` conflicts with previous argument `{a.name}`"
                )
            given[a.name] = s.get(a.sort, a.index)
        if cv.ast is not None:
            assert isinstance(cv.scope, tuple)
            parent, lens = cv.scope
            walk = Walk(
                self.tr,
                cv.ast,
                parent=parent,
                parent_lens=lens,
                sink=self.sink,
                args=given,
                parent_instance=self.instance,
                path=f"{self.path}/{component}" if self.path else str(component),
            )
            walk.run()
            return InstanceV(dict(walk.exports))
        assert cv.t is not None
        return self.instantiate_type(cv.t, given)

    def instantiate_type(self, ct: ComponentT, given: dict[str, Value]) -> InstanceV:
        bind: dict[int, int] = {}
        bindable = set(ct.imported)
        for name, t in ct.imports:
            v = given.get(name)
            if v is None:
                raise Fail(f"missing import named `{name}`")
            try:
                check_extern(type_of(v), substitute(t, bind), bind, bindable)
            except Mismatch as exc:
                raise Fail(f"type mismatch in instantiation argument `{name}`: {exc}") from None
        fresh = {
            r: self.tr.arena.new_resource(ResourceInfo(self.sink.id, True, "", self.instance))
            for r in ct.exported
        }
        mapping = {**bind, **fresh}
        note = self.tr.arena.derive
        exports = {n: value_from_type(substitute(t, mapping, note), None) for n, t in ct.exports}
        for n, v in exports.items():
            if isinstance(v, FuncV):
                exports[n] = FuncV(v.t, Unavailable(f"export `{n}` of an imported component"))
        return InstanceV(exports)

    # -- imports and exports ------------------------------------------------------------

    def do_import(self, d: ast.Import) -> None:
        s = self.scope
        name = d.name.name
        parsed = check_name(d.name, self.import_names)
        created: list[int] = []
        arena = self.tr.arena

        def new_rid() -> int:
            rid = arena.new_resource(ResourceInfo(None, True, name))
            created.append(rid)
            return rid

        t = self.tr.types.externtype(d.type, s, new_rid)
        check_attributes(d.name, t)
        check_annotated(parsed.kind, parsed.resource, parsed.label, t, self.import_resources)
        if not visible_extern(arena, t, walk_imports(self.owner)):
            raise Fail(f"{kind_text(t)} not valid to be used as import")
        if self.args is None:
            value, t = self.abstract_import(name, t, created)
        else:
            arg = self.args.get(name)
            if arg is None:
                raise Fail(f"missing import named `{name}`")
            bindable = set(created) | _abstract_rids(t)
            bind: dict[int, int] = {}
            try:
                check_extern(type_of(arg), t, bind, bindable)
            except Mismatch as exc:
                raise Fail(f"type mismatch in import `{name}`: {exc}") from None
            value = arg
            if isinstance(arg, FuncV) and isinstance(t, FuncType):
                # the child sees the function with the type it declared
                declared = substitute(t, bind, arena.derive)
                assert isinstance(declared, FuncType)
                value = FuncV(declared, arg.src)
            t = type_of(value)
        if isinstance(t, TypeT) and isinstance(t.t, ResourceT):
            self.import_resources[name] = t.t.rid
        self.imports.append((name, t))
        self.attributes["import", name] = d.name
        value = named_copy(arena, value, "import", self.owner)
        s.add(sort_of_type(t) if not isinstance(value, ComponentV) else Sort.COMPONENT, value)

    def abstract_import(self, name: str, t: ExternT, created: list[int]) -> tuple[Value, ExternT]:
        """An import nobody supplies here: the root's (host) imports, or a definition check."""
        arena = self.tr.arena
        mapping: dict[int, int] = {}
        for r in sorted(_abstract_rids(t)):
            info = arena.resources[r]
            mapping[r] = arena.new_resource(ResourceInfo(self.sink.id, True, info.name, None, None))
        for r in created:
            info = arena.resources[r]
            info.sink = self.sink.id
            info.import_path = (name,)
            info.name = name
        t = substitute(t, mapping, arena.derive)
        _name_import_resources(arena, t, (name,), self.sink.id)
        self.imported_rids.extend(created)
        self.imported_rids.extend(mapping.values())
        return value_from_type(t, (name,)), t

    def do_export(self, d: ast.Export) -> None:
        s = self.scope
        name = d.name.name
        parsed = check_name(d.name, self.export_names)
        if d.sort.is_core and d.sort is not Sort.CORE_MODULE:
            raise Fail(f"{d.sort.text} is not valid to be used as export")
        v = s.get(d.sort, d.index)
        if d.type is not None:
            arena = self.tr.arena
            created: list[int] = []

            def new_rid() -> int:
                rid = arena.new_resource(ResourceInfo(None, False, name))
                created.append(rid)
                return rid

            want = self.tr.types.externtype(d.type, s, new_rid)
            bind: dict[int, int] = {}
            try:
                check_extern(type_of(v), want, bind, set(_abstract_rids(want)))
            except Mismatch as exc:
                raise Fail(
                    f"ascribed type of export is not compatible with item's type: {exc}"
                ) from None
            if isinstance(v, FuncV) and isinstance(want, FuncType):
                v = FuncV(want, v.src)
            elif isinstance(v, TypeV) and isinstance(want, TypeT) and isinstance(want.t, ResourceT):
                # `(sub resource)` ascription: a new abstract type for the outside
                old_info = arena.resources[v.t.rid] if isinstance(v.t, ResourceT) else None
                if old_info is not None and created:
                    new_info = arena.resources[created[0]]
                    new_info.sink, new_info.imported = old_info.sink, old_info.imported
                    new_info.instance, new_info.dtor = old_info.instance, old_info.dtor
                    new_info.import_path = old_info.import_path
                v = TypeV(want.t, named=True)
            elif isinstance(v, InstanceV) and isinstance(want, InstanceT):
                # the ascribed type is what the outside sees
                v = InstanceV({n: v.exports[n] for n, _ in want.exports}, v.path)
        t = type_of(v)
        check_attributes(d.name, t)
        check_annotated(parsed.kind, parsed.resource, parsed.label, t, self.export_resources)
        name_members(self.tr.arena, v, "export", self.owner)
        if not visible_value(self.tr.arena, v, walk_exports(self.owner)):
            raise Fail(f"{kind_text(t)} not valid to be used as export")
        v = named_copy(self.tr.arena, v, "export", self.owner)
        if isinstance(v, TypeV) and isinstance(v.t, ResourceT):
            self.export_resources[name] = v.t.rid
            info = self.tr.arena.resources[v.t.rid]
            if not info.name:
                info.name = name
        self.exports[name] = v
        self.attributes["export", name] = d.name
        s.add(sort_of_value(v), v)


def _handle_is_named(arena: Arena, kind: str, t: FuncType) -> bool:
    """For an annotated function in a bag: its resource handle must come from a named index."""
    handle: object = None
    if kind == "constructor":
        handle = t.result.ok if isinstance(t.result, Result) else t.result
    elif kind == "method" and t.params:
        handle = t.params[0][1]
    return handle is None or bool(arena.names_of(handle))


def _abstract_rids(t: ExternT) -> set[int]:
    out: set[int] = set()

    def visit(x: ExternT) -> None:
        if isinstance(x, InstanceT):
            out.update(x.abstract)
            for _, e in x.exports:
                visit(e)

    visit(t)
    return out


def _name_import_resources(arena: Arena, t: ExternT, path: tuple[str, ...], sink: int) -> None:
    """Give resources introduced by an import's type their import path and name."""
    match t:
        case TypeT(ResourceT(rid)):
            info = arena.resources[rid]
            if info.sink == sink and info.imported and info.import_path is None:
                info.import_path = path
                info.name = path[-1]
        case InstanceT(exports):
            for n, e in exports:
                _name_import_resources(arena, e, (*path, n), sink)
        case _:
            pass


__all__ = ["Translator", "Walk"]
