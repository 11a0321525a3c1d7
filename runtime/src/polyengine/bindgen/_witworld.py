"""A resolved WIT world as the Plan of the component built from it (WIT.md §"Transitive imports
and worlds"; Explainer.md §"Import and export definitions").

Bindgen reads a world from a Plan's root imports and exports, so a WIT world
becomes the Plan a component targeting it translates to. The component is
the one ``wit-component`` builds when every function is used (as
``wasm-tools component embed --dummy`` + ``component new`` do), so that
``bindgen --wit`` and ``bindgen app.wasm`` write the same module:

* **Elaboration.** Interfaces an import ``use``s are imported before it; an
  exported interface's dependencies are exported if the world exports them,
  else imported. Imports are ordered interfaces, used types, types, functions;
  exports functions first, then interfaces.
* **Instance types.** An exported interface lists all its types, then its
  functions. An imported one lists the types the component needs, in the
  order they become needed (the world's types; each import's functions and
  resources in turn; the exports' foreign types), then its functions. An
  imported interface left with nothing is not imported.
* **Resources.** Imported resources are numbered in order of appearance in
  the imports; resources an exported interface defines follow in order of
  appearance in the exports.
"""

from __future__ import annotations

from pathlib import Path

from polyengine.bindgen._witresolve import (
    Func,
    Interface,
    Item,
    Resolver,
    RType,
    TypeDef,
    World,
    alias_dep,
    load_packages,
)
from polyengine.bindgen._witsyntax import WitError, fail
from polyengine.translate import Plan
from polyengine.translate.plan import (
    ComponentInstance,
    Export,
    ExportedInstance,
    ExternDesc,
    FuncDesc,
    Import,
    InstanceDesc,
    Opaque,
    ResourceType,
    TypeDesc,
)
from polyengine.types.model import (
    PRIMITIVES,
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

# -- elaboration -------------------------------------------------------------------------


def _class(item: Item) -> int:
    if item.kind == "interface":
        return 0
    if item.kind == "type":
        assert item.type is not None
        return (
            1
            if item.type.kind == "alias"
            and isinstance(item.type.target, TypeDef)
            and item.type.target.owner is not item.type.owner
            else 2
        )
    return 3


def _elaborate(world: World) -> tuple[dict[str, Item], dict[str, Item]]:
    imports: dict[str, Item] = {}

    def add_import(iface: Interface, key: str, item: Item) -> None:
        if key in imports:
            return
        for dep in iface.direct_deps():
            add_import(dep, dep.id, Item("interface", iface=dep))
        imports[key] = item

    for key, item in sorted(world.imports.items(), key=lambda kv: _class(kv[1])):
        if item.kind == "interface":
            assert item.iface is not None
            add_import(item.iface, key, item)
        elif item.kind == "type":
            assert item.type is not None
            dep = alias_dep(item.type)
            if dep is not None:
                add_import(dep, dep.id, Item("interface", iface=dep))
            imports[key] = item
        else:
            imports[key] = item
    exports: dict[str, Item] = {k: v for k, v in world.exports.items() if v.kind == "func"}
    by_id = {
        v.iface.id: v.iface
        for k, v in world.exports.items()
        if v.kind == "interface" and v.iface is not None and k == v.iface.id
    }
    required_imports: set[Interface] = set()

    def add_export(iface: Interface, key: str, required: bool) -> None:
        if required and key in exports:
            return
        if not required and iface in required_imports:
            return
        for dep in iface.direct_deps():
            dep_required = required and by_id.get(dep.id) is dep
            if not required and by_id.get(dep.id) is dep:
                raise fail(
                    world.span,
                    f"world {world.name!r}: interface {iface.id} is imported (an exported "
                    f"interface uses it) but uses the exported {dep.id}; export {iface.id} too",
                )
            add_export(dep, dep.id, dep_required)
        if required:
            exports[key] = world.exports[key]
        else:
            required_imports.add(iface)
            imports.setdefault(key, Item("interface", iface=iface))

    for key, item in world.exports.items():
        if item.kind == "interface" and item.iface is not None:
            add_export(item.iface, key, True)
    ordered = dict(sorted(imports.items(), key=lambda kv: _class(kv[1])))
    return ordered, exports


# -- liveness ----------------------------------------------------------------------------


class _Live:
    """Named types in the order they become needed (dependencies first)."""

    def __init__(self) -> None:
        self.order: dict[TypeDef, None] = {}

    def type_def(self, t: TypeDef) -> None:
        if t in self.order:
            return
        if t.kind == "alias":
            self.type(t.target)
        for _, ft in t.fields:
            self.type(ft)
        for _, ct in t.cases:
            self.type(ct)
        self.order[t] = None

    def type(self, t: object) -> None:
        if isinstance(t, TypeDef):
            self.type_def(t)
        elif isinstance(t, tuple):
            if t[0] == "tuple":
                for x in t[1]:
                    self.type(x)
            elif t[0] != "list":
                for x in t[1:]:
                    self.type(x)
            else:
                self.type(t[1])

    def func(self, f: Func) -> None:
        if f.kind == "static" and f.resource is not None:
            self.type_def(f.resource)
        for _, t in f.params:
            self.type(t)
        self.type(f.result)

    def interface(self, iface: Interface) -> None:
        for t in iface.types.values():
            self.type_def(t)
        for f in iface.funcs:
            self.func(f)


def _exports_used(exports: dict[str, Item]) -> dict[Interface, set[Interface]]:
    exported = {v.iface for v in exports.values() if v.iface is not None}
    used: dict[Interface, set[Interface]] = {}
    for item in exports.values():
        if item.iface is None:
            continue
        s: set[Interface] = set()
        for dep in item.iface.direct_deps():
            if dep in exported and dep not in s:
                s.add(dep)
                s |= used.get(dep, set())
        used[item.iface] = s
    return used


def _live_imports(
    imports: dict[str, Item], exports: dict[str, Item], used: dict[Interface, set[Interface]]
) -> _Live:
    live = _Live()
    for item in imports.values():
        if item.kind == "type" and item.type is not None:
            live.type_def(item.type)
    # The placeholder core module's imports, grouped by module as a component's are.
    groups: dict[object, list[tuple[str, Func | TypeDef]]] = {}
    for key, item in imports.items():
        if item.kind == "func" and item.func is not None:
            groups.setdefault("$root", []).append(("func", item.func))
        elif item.kind == "interface" and item.iface is not None:
            g = groups.setdefault(key, [])
            g.extend(("func", f) for f in item.iface.funcs)
            g.extend(("type", t) for t in item.iface.types.values() if t.kind == "resource")
        elif item.type is not None and item.type.kind == "resource":
            groups.setdefault("$root", []).append(("type", item.type))
    for key, item in exports.items():
        funcs = [item.func] if item.func is not None else (item.iface.funcs if item.iface else [])
        g = groups.setdefault(("export", key), [])
        g.extend(("result", f) for f in funcs if f is not None and f.is_async)
        if item.iface is not None:
            g.extend(("type", t) for t in item.iface.types.values() if t.kind == "resource")
    for events in groups.values():
        for kind, x in events:
            if isinstance(x, TypeDef):
                live.type_def(x)
            elif kind == "func":
                live.func(x)
            else:
                live.type(x.result)
    for item in exports.values():
        if item.func is not None:
            live.func(item.func)
            continue
        assert item.iface is not None
        mine = _Live()
        mine.interface(item.iface)
        for t in mine.order:
            owner = t.owner
            if (
                isinstance(owner, Interface)
                and owner is not item.iface
                and owner not in used.get(item.iface, set())
            ):
                live.type_def(t)
    return live


# -- the plan ----------------------------------------------------------------------------


class _Builder:
    def __init__(self, exports_used: dict[Interface, set[Interface]]) -> None:
        self.resources: list[ResourceType] = []
        self.imported_rt: dict[TypeDef, int] = {}
        self.defined_rt: dict[TypeDef, int] = {}
        self.used = exports_used
        self.context: Interface | None = None  # the exported interface being described

    def rt(self, res: TypeDef, path: tuple[str, ...] | None = None) -> int:
        owner = res.owner
        ctx = self.context
        if (
            ctx is not None
            and isinstance(owner, Interface)
            and (owner is ctx or owner in self.used.get(ctx, set()))
        ):
            found = self.defined_rt.get(res)
            if found is None:
                found = self.defined_rt[res] = len(self.resources)
                self.resources.append(ResourceType(res.name, False, instance=0))
            return found
        found = self.imported_rt.get(res)
        if found is None:
            found = self.imported_rt[res] = len(self.resources)
            self.resources.append(ResourceType(res.name, True, import_path=path or (res.name,)))
        return found

    def val(self, t: RType) -> ValType:
        if isinstance(t, str):
            return PRIMITIVES[t]()
        if isinstance(t, TypeDef):
            if t.kind == "alias":
                assert t.target is not None
                return self.val(t.target)
            if t.kind == "record":
                return Record(tuple(Field(n, self.val(ft)) for n, ft in t.fields))
            if t.kind == "variant":
                return Variant(
                    tuple(Case(n, None if ct is None else self.val(ct)) for n, ct in t.cases)
                )
            if t.kind == "enum":
                return Enum(tuple(n for n, _ in t.cases))
            if t.kind == "flags":
                return Flags(tuple(n for n, _ in t.cases))
            return Own(self.rt(t))
        ctor = t[0]
        args = t[1:]
        if ctor in ("own", "borrow"):
            res = args[0]
            assert isinstance(res, TypeDef)
            rt = self.rt(res.base())
            return Own(rt) if ctor == "own" else Borrow(rt)
        if ctor == "list":
            elem, size = args
            assert isinstance(size, int | None)
            return List(self.val(elem), size)  # type: ignore[arg-type]
        if ctor == "tuple":
            items = args[0]
            assert isinstance(items, tuple)
            return Tuple(tuple(self.val(x) for x in items))
        opt = [None if a is None else self.val(a) for a in args]  # type: ignore[arg-type]
        if ctor == "option":
            assert opt[0] is not None
            return Option(opt[0])
        if ctor == "result":
            return Result(opt[0], opt[1])
        if ctor == "map":
            assert opt[0] is not None and opt[1] is not None
            return Map(opt[0], opt[1])
        if ctor == "future":
            return Future(opt[0])
        return Stream(opt[0])

    def type_desc(self, t: TypeDef, path: tuple[str, ...]) -> TypeDesc:
        base = t.base()
        if base.kind == "resource":
            return TypeDesc(resource=self.rt(base, path))
        return TypeDesc(type=self.val(t))

    def func(self, f: Func) -> FuncDesc:
        params = tuple((n, self.val(t)) for n, t in f.params)
        result = None if f.result is None else self.val(f.result)
        return FuncDesc(FuncType(params, result, f.is_async))


def world_plan(world: World) -> Plan:
    """The Plan of the component ``wit-component`` builds for ``world`` (module docstring)."""
    imports, exports = _elaborate(world)
    used = _exports_used(exports)
    live = _live_imports(imports, exports, used)
    b = _Builder(used)
    plan_imports: list[Import] = []
    root_types: list[Import] = []
    root_funcs: list[Import] = []
    for key, item in imports.items():
        if item.kind == "interface":
            iface = item.iface
            assert iface is not None
            members: list[tuple[str, ExternDesc]] = [
                (t.name, b.type_desc(t, (key, t.name))) for t in live.order if t.owner is iface
            ]
            members.extend((f.name, b.func(f)) for f in iface.funcs)
            if members:
                plan_imports.append(
                    Import(key, InstanceDesc(tuple(members)), implements=item.implements)
                )
        elif item.kind == "type":
            assert item.type is not None
            root_types.append(Import(key, b.type_desc(item.type, (key,))))
        else:
            assert item.func is not None
            root_funcs.append(Import(key, b.func(item.func)))
    plan_imports.extend(root_types)
    plan_imports.extend(root_funcs)
    plan_exports: list[Export] = []
    for key, item in exports.items():
        if item.func is not None:
            plan_exports.append(Export(key, b.func(item.func), Opaque("func")))
            continue
        iface = item.iface
        assert iface is not None
        b.context = iface
        members = [(t.name, b.type_desc(t, (key, t.name))) for t in iface.types.values()]
        members.extend((f.name, b.func(f)) for f in iface.funcs)
        b.context = None
        items = tuple(
            Export(n, d, Opaque("func" if isinstance(d, FuncDesc) else "type")) for n, d in members
        )
        plan_exports.append(
            Export(
                key,
                InstanceDesc(tuple(members)),
                ExportedInstance(items),
                implements=item.implements,
            )
        )
    return Plan(
        modules=(),
        core_instances=(),
        trampolines=(),
        resources=tuple(b.resources),
        component_instances=(ComponentInstance(0, None, ""),),
        imports=tuple(plan_imports),
        exports=tuple(plan_exports),
    )


class WitWorld:
    """A world read from WIT: its Plan, and what to name it by in a bindings header."""

    def __init__(self, plan: Plan, world: World, source: str, sha256: str) -> None:
        self.plan = plan
        self.world = world
        self.source = source
        self.sha256 = sha256


def load_world(path: Path, world: str | None = None) -> WitWorld:
    """Parse and resolve the WIT at ``path`` (a ``.wit`` file or a directory with ``deps/``)
    and return ``world`` (a world of the root package, or ``ns:pkg/world``; the only world
    when ``None``) as a :class:`WitWorld`. Raises :class:`WitError` naming ``file:line:col``."""
    packages = load_packages(path)
    resolver = Resolver(packages)
    resolver.resolve_all()
    resolved = resolver.world_named(world)
    plan = world_plan(resolved)
    p = resolved.package
    wid = f"{p.namespace}:{p.name}/{resolved.name}" + (f"@{p.version}" if p.version else "")
    name = path.name + ("/" if path.is_dir() else "")
    return WitWorld(plan, resolved, f"{name} (world {wid})", packages.sha256())


__all__ = ["WitError", "WitWorld", "load_world", "world_plan"]
