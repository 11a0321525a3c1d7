"""Component, instance and core module type definitions (Binary.md §"Type Definitions").

Component and instance type declarators are validated in a fresh scope whose
parent is the enclosing one (for ``outer`` aliases). ``(sub resource)``
bounds introduce fresh abstract resource ids: those of imports are bound at
instantiation, those of exports are made fresh each time the type is
instantiated or imported.
"""

from __future__ import annotations

from collections.abc import Callable

from polyengine.binary import ast
from polyengine.binary.ast import Sort
from polyengine.translate._scope import Fail, Scope
from polyengine.translate._values import (
    Arena,
    ComponentV,
    CoreModuleV,
    FuncV,
    InstanceV,
    ResourceInfo,
    TypeV,
    Unavailable,
    Value,
    ValueV,
)
from polyengine.translate._visibility import (
    declarator_exports,
    declarator_imports,
    kind_text,
    name_extern,
    visible_extern,
)
from polyengine.types.model import FuncType, ValType
from polyengine.types.subtype import (
    ComponentT,
    CoreExternT,
    CoreFuncT,
    CoreGlobalT,
    CoreMemoryT,
    CoreModuleT,
    CoreTableT,
    CoreTagT,
    DefType,
    ExternT,
    InstanceT,
    ResourceT,
    TypeT,
    ValueT,
    resources_of,
    substitute,
)
from polyengine.validate.names import (
    NameError_,
    NameSet,
    full_version,
    is_canonversion,
    is_semver,
    parse_extern_name,
)
from polyengine.validate.typedefs import MAX_TYPE_WEIGHT, TypeRuleError, ValTypeBuilder

# -- core types --------------------------------------------------------------------------


def core_valtype(v: ast.CoreValType) -> str:
    if isinstance(v, ast.CoreNumType):
        return v.name.lower()
    heap = f"${v.heap}" if isinstance(v.heap, int) else v.heap.name.lower()
    if v.nullable and not v.shared and heap in ("func", "extern"):
        return f"{heap}ref"
    return f"(ref {'null ' if v.nullable else ''}{'shared ' if v.shared else ''}{heap})"


def core_functype(f: ast.CoreFuncType) -> CoreFuncT:
    return CoreFuncT(tuple(map(core_valtype, f.params)), tuple(map(core_valtype, f.results)))


def core_deftypes(
    d: ast.CoreDefType, scope: Scope, arena: Arena
) -> list[CoreFuncT | CoreModuleT | None]:
    """The core type index entries a ``core:type`` adds (several for a ``rec`` group)."""
    match d:
        case ast.CoreRecType(subtypes):
            return [_core_sub(s) for s in subtypes]
        case ast.CoreSubType():
            return [_core_sub(d)]
        case ast.CoreModuleType(decls):
            return [core_module_type(decls, scope, arena)]
    raise Fail(f"unknown core type {d!r}")


def _core_sub(s: ast.CoreSubType) -> CoreFuncT | None:
    return core_functype(s.comptype) if isinstance(s.comptype, ast.CoreFuncType) else None


def core_externtype(t: ast.CoreExternType, scope: Scope) -> CoreExternT:
    match t:
        case ast.CoreFuncExternType(i):
            ft = scope.get(Sort.CORE_TYPE, i)
            if not isinstance(ft, CoreFuncT):
                raise Fail(f"core type index {i} is not a function type")
            return ft
        case ast.CoreTableType(elem, lim):
            return CoreTableT(core_valtype(elem), lim.min, lim.max, lim.is64, lim.shared)
        case ast.CoreMemoryType(lim):
            page_log2 = 16 if lim.page_size_log2 is None else lim.page_size_log2
            limit = (1 << 64 if lim.is64 else 1 << 32) >> page_log2
            if lim.min > limit or (lim.max is not None and lim.max > limit):
                raise Fail(f"memory size must be at most {limit} pages")
            if lim.max is not None and lim.max < lim.min:
                raise Fail("size minimum must not be greater than maximum")
            return CoreMemoryT(lim.min, lim.max, lim.shared, lim.is64, lim.page_size_log2)
        case ast.CoreGlobalType(vt, mut, shared):
            return CoreGlobalT(core_valtype(vt), mut, shared)
        case ast.CoreTagType(i):
            ft = scope.get(Sort.CORE_TYPE, i)
            if not isinstance(ft, CoreFuncT):
                raise Fail(f"core type index {i} is not a function type")
            return CoreTagT(ft)
    raise Fail(f"unknown core extern type {t!r}")


def core_module_type(
    decls: tuple[ast.CoreModuleDecl, ...], parent: Scope, arena: Arena
) -> CoreModuleT:
    """Validate a ``core:moduletype`` (each with an initially empty type index space)."""
    s = Scope(parent, is_component=False)
    imports: list[tuple[str, str, CoreExternT]] = []
    exports: list[tuple[str, CoreExternT]] = []
    seen_imports: set[tuple[str, str]] = set()
    for d in decls:
        match d:
            case ast.CoreImport(module, name, t):
                if (module, name) in seen_imports:
                    raise Fail(f"duplicate import name `{module}:{name}`")
                seen_imports.add((module, name))
                imports.append((module, name, core_externtype(t, s)))
            case ast.CoreTypeDef(t):
                if isinstance(t, ast.CoreModuleType):
                    raise Fail("core module types cannot be nested")
                for e in core_deftypes(t, s, arena):
                    s.add(Sort.CORE_TYPE, e)
            case ast.CoreOuterAlias(count, index):
                v, _ = s.outer(count, Sort.CORE_TYPE, index)
                if isinstance(v, CoreModuleT):
                    raise Fail("outer alias of a core module type in a module type")
                s.add(Sort.CORE_TYPE, v)
            case ast.CoreExportDecl(name, t):
                if any(n == name for n, _ in exports):
                    raise Fail(f"export name `{name}` already defined")
                exports.append((name, core_externtype(t, s)))
    return CoreModuleT(tuple(imports), tuple(exports))


# -- component types ---------------------------------------------------------------------


MAX_TOTAL_WEIGHT = 1_000_000
"""Bound on the summed size of all types of one translation (hostile input stays fast)."""


class TypeContext:
    """What type conversion needs from the enclosing walk."""

    __slots__ = ("arena", "builder_weights", "depths", "sizes", "total_weight")

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self.builder_weights: dict[int, int] = {}
        self.sizes: dict[int, tuple[int, int]] = {}
        self.depths: dict[int, int] = {}
        self.total_weight = 0

    def builder(self, scope: Scope) -> ValTypeBuilder:
        def lookup(i: int) -> DefType:
            v = scope.get(Sort.TYPE, i)
            assert isinstance(v, TypeV)
            return v.t

        b = ValTypeBuilder(lookup, self.arena.derive)
        b.weights = self.builder_weights
        b.sizes = self.sizes
        b.depths = self.depths
        b.keep = self.arena.keep
        return b

    def deftype(self, d: ast.DefType, scope: Scope) -> DefType:
        """A ``deftype`` other than a resource type."""
        t = self._deftype(d, scope)
        self.total_weight += self.weight(t)
        if self.total_weight > MAX_TOTAL_WEIGHT:
            raise Fail("the component's types exceed the total size limit")
        return t

    def _deftype(self, d: ast.DefType, scope: Scope) -> DefType:
        try:
            match d:
                case ast.FuncType():
                    return self.builder(scope).functype(d)
                case ast.ComponentType(decls):
                    return self.declarators(decls, scope, is_component=True)
                case ast.InstanceType(decls):
                    return self.declarators(decls, scope, is_component=False)
                case ast.ResourceType():
                    raise Fail("resources can only be defined within a concrete component")
            return self.builder(scope).defvaltype(d)
        except TypeRuleError as exc:
            raise Fail(str(exc)) from None

    def externtype(self, et: ast.ExternType, scope: Scope, new_rid: Callable[[], int]) -> ExternT:
        match et:
            case ast.CoreModuleExternType(i):
                t = scope.get(Sort.CORE_TYPE, i)
                if not isinstance(t, CoreModuleT):
                    raise Fail(f"core type index {i} is not a module type")
                return t
            case ast.FuncExternType(i):
                t = scope.get(Sort.TYPE, i).t
                if not isinstance(t, FuncType):
                    raise Fail(f"type index {i} is not a function type")
                return t
            case ast.ValueExternType(bound):
                if isinstance(bound, ast.ValueEqBound):
                    v = scope.get(Sort.VALUE, bound.value_index)
                    assert isinstance(v, ValueV)
                    return v.t
                try:
                    return ValueT(self.builder(scope).valtype(bound))
                except TypeRuleError as exc:
                    raise Fail(str(exc)) from None
            case ast.TypeExternType(ast.EqBound(i)):
                return TypeT(scope.get(Sort.TYPE, i).t)
            case ast.TypeExternType(ast.SubResourceBound()):
                return TypeT(ResourceT(new_rid()))
            case ast.ComponentExternType(i):
                t = scope.get(Sort.TYPE, i).t
                if not isinstance(t, ComponentT):
                    raise Fail(f"type index {i} is not a component type")
                return t
            case ast.InstanceExternType(i):
                t = scope.get(Sort.TYPE, i).t
                if not isinstance(t, InstanceT):
                    raise Fail(f"type index {i} is not an instance type")
                return t
        raise Fail(f"unknown extern type {et!r}")

    def declarators(
        self, decls: tuple[ast.ComponentDecl, ...], parent: Scope, *, is_component: bool
    ) -> ComponentT | InstanceT:
        s = Scope(parent, is_component=False)
        owner = self.arena.new_owner()
        imports: list[tuple[str, ExternT]] = []
        exports: list[tuple[str, ExternT]] = []
        imported: list[int] = []
        exported: list[int] = []
        import_names = NameSet("import")
        export_names = NameSet("export")
        resource_names: dict[str, int] = {}
        for d in decls:
            match d:
                case ast.CoreTypeDef(t):
                    for e in core_deftypes(t, s, self.arena):
                        s.add(Sort.CORE_TYPE, e)
                case ast.TypeDef(t):
                    s.add(Sort.TYPE, TypeV(self.deftype(t, s)))
                case ast.AliasExport(sort, inst, name):
                    if sort not in (Sort.TYPE, Sort.INSTANCE):
                        raise Fail("export aliases in types may only refer to types or instances")
                    s.add(sort, alias_export(s, sort, inst, name))
                case ast.AliasCoreExport():
                    raise Fail("core export aliases are not valid in a type")
                case ast.AliasOuter(sort, count, index):
                    if sort not in (Sort.TYPE, Sort.CORE_TYPE):
                        raise Fail("outer aliases in types may only refer to types or core types")
                    s.add(sort, outer_alias(s, sort, count, index))
                case ast.ImportDecl(name, et) | ast.ExportDecl(name, et):
                    is_import = isinstance(d, ast.ImportDecl)
                    if is_import and not is_component:
                        raise Fail("instance types cannot have imports")
                    created = imported if is_import else exported
                    parsed = check_name(name, import_names if is_import else export_names)

                    def new_rid(
                        text: str = name.name, created: list[int] = created, imp: bool = is_import
                    ) -> int:
                        rid = self.arena.new_resource(ResourceInfo(None, imp, text))
                        created.append(rid)
                        return rid

                    xt = self.externtype(et, s, new_rid)
                    if isinstance(xt, InstanceT):
                        xt = freshen_instance(xt, new_rid, self.arena)
                    if is_component:
                        allowed = (declarator_imports if is_import else declarator_exports)(owner)
                        if not visible_extern(self.arena, xt, allowed):
                            where = "import" if is_import else "export"
                            raise Fail(f"{kind_text(xt)} not valid to be used as {where}")
                    how = ("cimport" if is_import else "cexport") if is_component else "iexport"
                    xt = name_extern(self.arena, xt, how, owner)
                    check_attributes(name, xt)
                    check_annotated(parsed.kind, parsed.resource, parsed.label, xt, resource_names)
                    if isinstance(xt, TypeT) and isinstance(xt.t, ResourceT):
                        resource_names[name.name] = xt.t.rid
                    (imports if is_import else exports).append((name.name, xt))
                    add_typed_value(s, xt, named=True)
        out: ComponentT | InstanceT
        if is_component:
            out = ComponentT(tuple(imports), tuple(exports), tuple(imported), tuple(exported))
        else:
            out = InstanceT(tuple(exports), tuple(exported))
        weight = 1 + sum(self.weight(t) for _, t in (*imports, *exports))
        if weight > MAX_TYPE_WEIGHT:
            raise Fail("effective type size exceeds the limit")
        self.builder_weights[id(out)] = weight
        self.arena.keep.append(out)
        return out

    def weight(self, t: object) -> int:
        """Size of a type tree, bounding the work any later traversal of it can take."""
        w = self.builder_weights.get(id(t))
        if w is not None:
            return w
        match t:
            case FuncType():
                return 1 + sum(self.weight(p) for p in (*t.param_types(), *t.result_types()))
            case TypeT(d):
                return 1 + self.weight(d)
            case ValueT(v):
                return 1 + self.weight(v)
        return 1


def freshen_instance(t: InstanceT, new_rid: Callable[[], int], arena: Arena) -> InstanceT:
    """``t`` with the abstract resources of its (nested) instance types made fresh."""
    rids: set[int] = set()

    def visit(x: ExternT) -> None:
        if isinstance(x, InstanceT):
            rids.update(x.abstract)
            for _, e in x.exports:
                visit(e)

    visit(t)
    if not rids:
        return t
    mapping = {r: new_rid() for r in sorted(rids)}
    out = substitute(t, mapping, arena.derive)
    assert isinstance(out, InstanceT)
    return out


def check_attributes(name: ast.ExternName, t: ExternT) -> None:
    """Rules of the ``implements`` name attribute.

    Explainer.md §"Import and Export Definitions".
    """
    suffixes = [a for a in name.attributes if isinstance(a, ast.VersionSuffixAttribute)]
    ids = [a for a in name.attributes if isinstance(a, ast.ExternalIdAttribute)]
    if len(suffixes) > 1:
        raise Fail("duplicate 'versionsuffix' option in name")
    if len(ids) > 1:
        raise Fail("duplicate 'external-id' option in name")
    if suffixes:
        _check_version_suffix(name.name, suffixes[0].suffix)
    impls = [a for a in name.attributes if isinstance(a, ast.ImplementsAttribute)]
    if not impls:
        return
    if len(impls) > 1:
        raise Fail("duplicate 'implements' option in name")
    target = impls[0].interface
    if target == "":
        raise Fail("`` is not a valid name for `implements`")
    try:
        parsed = parse_extern_name(target)
    except NameError_ as exc:
        raise Fail(f"`implements` value must be an interface name: {exc}") from None
    if not parsed.is_interface:
        raise Fail(f"`implements` value `{target}` must be an interface name")
    if not isinstance(t, InstanceT):
        raise Fail("only instances can have an `implements` attribute")
    try:
        own = parse_extern_name(name.name)
    except NameError_ as exc:
        raise Fail(str(exc)) from None
    if own.kind != "plain":
        raise Fail(f"name `{name.name}` is not valid with `implements`")


def _check_version_suffix(text: str, suffix: str) -> None:
    """A version suffix needs a canonical version it completes into a valid semver."""
    try:
        parsed = parse_extern_name(text)
    except NameError_ as exc:
        raise Fail(str(exc)) from None
    version = parsed.version
    if version is None or not is_canonversion(version):
        raise Fail(f"`versionsuffix` requires a canonical interface version in `{text}`")
    if not is_semver(full_version(version, suffix)):
        raise Fail(f"version `{version}` with suffix `{suffix}` is not a valid semver")


def check_name(name: ast.ExternName, names: NameSet) -> ParsedName:
    try:
        parsed = parse_extern_name(name.name)
        names.add(parsed)
    except NameError_ as exc:
        raise Fail(str(exc)) from None
    return ParsedName(parsed.kind, parsed.resource, parsed.label)


class ParsedName:
    __slots__ = ("kind", "label", "resource")

    def __init__(self, kind: str, resource: str, label: str) -> None:
        self.kind = kind
        self.resource = resource
        self.label = label


def check_annotated(
    kind: str, resource: str, label: str, t: ExternT, resources: dict[str, int]
) -> None:
    """The type rules of ``[constructor]``/``[method]``/``[static]`` names.

    Explainer.md §"Import and Export Definitions".
    """
    if kind not in ("constructor", "method", "static"):
        return
    if not isinstance(t, FuncType):
        raise Fail(f"`[{kind}]{resource}` is not a func")
    rid = resources.get(resource)
    if rid is None:
        if kind == "static":
            raise Fail(f"static resource name is not known in this context: `{resource}`")
        raise Fail(f"function does not match expected resource name `{resource}`")
    from polyengine.types.model import Borrow, Own, Result

    if kind == "constructor":
        r = t.result
        ok = isinstance(r, Own) and r.rt == rid
        if isinstance(r, Result) and isinstance(r.ok, Own) and r.ok.rt == rid:
            ok = True
        if not ok:
            raise Fail("function should return `(own $T)` or `(result (own $T))`")
    elif kind == "method":
        if not t.params:
            raise Fail("function should have at least one argument")
        pname, ptype = t.params[0]
        if pname != "self":
            raise Fail("function should have a first argument called `self`")
        if not (isinstance(ptype, Borrow) and ptype.rt == rid):
            raise Fail("function should take a first argument of `(borrow $T)`")


def value_from_type(t: ExternT, path: tuple[str, ...] | None) -> Value:
    """A value standing for an item of type ``t`` that is not defined here."""
    from polyengine.translate._values import HostFunc
    from polyengine.translate.plan import ImportedModule

    match t:
        case FuncType():
            return FuncV(t, HostFunc(path) if path is not None else Unavailable("declared only"))
        case InstanceT(exports):
            return InstanceV(
                {n: value_from_type(e, None if path is None else (*path, n)) for n, e in exports},
                path,
            )
        case ComponentT():
            return ComponentV(t, path=path)
        case TypeT(d):
            return TypeV(d, named=True)
        case CoreModuleT():
            return CoreModuleV(t, None if path is None else ImportedModule(path))
        case ValueT():
            return ValueV(t)


_SORT_OF = {
    FuncType: Sort.FUNC,
    InstanceT: Sort.INSTANCE,
    ComponentT: Sort.COMPONENT,
    TypeT: Sort.TYPE,
    CoreModuleT: Sort.CORE_MODULE,
    ValueT: Sort.VALUE,
}


def sort_of_type(t: ExternT) -> Sort:
    return _SORT_OF[type(t)]


def add_typed_value(s: Scope, t: ExternT, *, named: bool) -> None:
    v = value_from_type(t, None)
    if isinstance(v, TypeV):
        v = TypeV(v.t, named=named)
    s.add(sort_of_type(t), v)


_VALUE_SORT = {
    FuncV: Sort.FUNC,
    TypeV: Sort.TYPE,
    InstanceV: Sort.INSTANCE,
    ComponentV: Sort.COMPONENT,
    CoreModuleV: Sort.CORE_MODULE,
    ValueV: Sort.VALUE,
}


def sort_of_value(v: Value) -> Sort:
    return _VALUE_SORT[type(v)]


def alias_export(s: Scope, sort: Sort, inst: int, name: str) -> Value:
    iv = s.get(Sort.INSTANCE, inst)
    assert isinstance(iv, InstanceV)
    v = iv.exports.get(name)
    if v is None:
        raise Fail(f"instance {inst} has no export named `{name}`")
    if sort_of_value(v) is not sort:
        raise Fail(f"export `{name}` for instance {inst} is not a {sort.text}")
    return v


def outer_alias(s: Scope, sort: Sort, count: int, index: int) -> object:
    v, crossed = s.outer(count, sort, index)
    if crossed and sort is Sort.TYPE and isinstance(v, TypeV) and _has_resources(v.t):
        raise Fail("canonical outer alias of a type that transitively refers to resources")
    return v


def _has_resources(t: DefType) -> bool:
    match t:
        case ResourceT():
            return True
        case FuncType() | InstanceT() | ComponentT() | ValType():
            return bool(resources_of(t))
    return False
