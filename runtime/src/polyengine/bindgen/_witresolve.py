"""WIT packages resolved: files found, ``use``s and ``include``s followed.

WIT.md §"Name resolution", §"Filesystem structure", §"WIT Packages and ``use``".

:func:`load_packages` reads a root package (one ``.wit`` file, or a
directory of them with a ``deps/`` folder of dependency packages, each a file
or a directory) and :class:`Resolver` turns its interfaces and worlds into
:class:`Interface` and :class:`World` values whose types are :class:`TypeDef`
nodes: a ``use`` becomes an ``alias`` owned by the using interface, as in
the component the WIT describes (Explainer.md §"Type definitions": a used
type is an alias of the defining interface's export). Unknown names,
undefined interfaces, duplicate names and cyclic ``use``s raise
:class:`WitError` naming ``file:line:col``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

from polyengine.bindgen._witsyntax import (
    ExternItem,
    FuncItem,
    FuncSig,
    IncludeItem,
    InterfaceDecl,
    InterfaceMember,
    Name,
    PackageBody,
    PackageName,
    Span,
    TopUse,
    Ty,
    TyApp,
    TyNamed,
    TypeItem,
    UseItem,
    UsePath,
    WitError,
    WorldDecl,
    WorldMember,
    fail,
    parse_file,
)

# -- the resolved model ------------------------------------------------------------------


@dataclass(eq=False)
class TypeDef:
    """A named type: ``kind`` is record/variant/enum/flags/resource/alias."""

    name: str
    owner: Interface | World
    kind: str
    span: Span
    fields: list[tuple[str, RType]] = field(default_factory=list)
    cases: list[tuple[str, RType | None]] = field(default_factory=list)
    target: RType | None = None

    def base(self) -> TypeDef:
        """The definition an alias chain ends at (``self`` when not an alias)."""
        t: TypeDef = self
        while t.kind == "alias" and isinstance(t.target, TypeDef):
            t = t.target
        return t


#: A resolved type: a primitive's name, a named definition, or an anonymous
#: constructor ``(ctor, *args)``: ``("list", t, size)``, ``("option", t)``,
#: ``("result", ok, err)``, ``("tuple", (t, ...))``, ``("map", k, v)``,
#: ``("own", res)``, ``("borrow", res)``, ``("future", t)``, ``("stream", t)``.
RType: TypeAlias = "str | TypeDef | tuple[object, ...]"


@dataclass(eq=False)
class Func:
    """A function with its component-level name (``[method]r.m``, ``[static]r.s``, ...)."""

    name: str
    params: list[tuple[str, RType]]
    result: RType | None
    is_async: bool
    kind: str
    resource: TypeDef | None = None


@dataclass(eq=False)
class Interface:
    """A named interface (``package`` set) or an inline one of a world (``name`` its plain name)."""

    name: str
    package: PackageName | None
    types: dict[str, TypeDef] = field(default_factory=dict)
    funcs: list[Func] = field(default_factory=list)

    @property
    def id(self) -> str:
        if self.package is None:
            return self.name
        p = self.package
        return f"{p.namespace}:{p.name}/{self.name}" + (f"@{p.version}" if p.version else "")

    def direct_deps(self) -> list[Interface]:
        """Interfaces this one ``use``s types from, in the order of its types."""
        out: list[Interface] = []
        for t in self.types.values():
            dep = alias_dep(t)
            if dep is not None and dep is not self and dep not in out:
                out.append(dep)
        return out


def alias_dep(t: TypeDef) -> Interface | None:
    """The interface an alias (a ``use``) refers into, if any."""
    if t.kind == "alias" and isinstance(t.target, TypeDef):
        owner = t.target.owner
        if isinstance(owner, Interface) and owner is not t.owner:
            return owner
    return None


@dataclass(frozen=True, slots=True)
class Item:
    """A world import or export: an interface, a function or (imports only) a type."""

    kind: str  # "interface", "func", "type"
    iface: Interface | None = None
    func: Func | None = None
    type: TypeDef | None = None
    implements: str | None = None


@dataclass(eq=False)
class World:
    name: str
    package: PackageName
    span: Span
    imports: dict[str, Item] = field(default_factory=dict)
    exports: dict[str, Item] = field(default_factory=dict)


# -- finding and parsing files -----------------------------------------------------------


@dataclass
class _Source:
    """One package: the bodies (one per file, or nested block) that declare it."""

    name: PackageName
    bodies: list[PackageBody] = field(default_factory=list)


@dataclass
class Packages:
    """The parsed packages of a WIT root: ``root`` names the root package."""

    root: str
    sources: dict[str, _Source]
    files: list[tuple[str, bytes]]

    def sha256(self) -> str:
        """A digest of every WIT file read.

        The sha-256 of one ``relative-path NUL sha256(content)`` line per file, sorted.
        """
        h = hashlib.sha256()
        for rel, data in sorted(self.files):
            h.update(f"{rel}\0{hashlib.sha256(data).hexdigest()}\n".encode())
        return h.hexdigest()


def _read(
    path: Path, rel: str, files: list[tuple[str, bytes]]
) -> list[tuple[PackageBody, list[PackageBody]]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise WitError(f"{path}: cannot read: {exc.strerror or exc}") from None
    files.append((rel, data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WitError(f"{path}: not UTF-8 (byte {exc.start})") from None
    parsed = parse_file(text, str(path))
    return [(parsed.body, parsed.nested)]


def _add(sources: dict[str, _Source], body: PackageBody, merge: bool) -> None:
    assert body.name is not None
    key = body.name.key
    src = sources.get(key)
    if src is None:
        sources[key] = _Source(body.name, [body])
    elif merge:
        src.bodies.append(body)


def _package_of(bodies: list[PackageBody], where: Path) -> PackageName:
    names = [b.name for b in bodies if b.name is not None]
    if not names:
        first = where if where.is_file() else sorted(where.glob("*.wit"))[0]
        raise WitError(f"{first}:1:1: no 'package ns:name;' declaration")
    for other in names[1:]:
        if other.key != names[0].key:
            raise fail(
                other.span,
                f"package {other.key} differs from {names[0].key} declared at {names[0].span}",
            )
    for b in bodies:
        b.name = names[0]
    return names[0]


def _load_unit(
    path: Path, base: Path, sources: dict[str, _Source], files: list[tuple[str, bytes]]
) -> str:
    """Parse a file or a directory (its ``*.wit`` files) as one package; return its key."""
    paths = sorted(p for p in path.glob("*.wit") if p.is_file()) if path.is_dir() else [path]
    if not paths:
        raise WitError(f"{path}: no .wit files")
    bodies: list[PackageBody] = []
    nested: list[PackageBody] = []
    for p in paths:
        for body, inner in _read(p, p.relative_to(base).as_posix() if p != base else p.name, files):
            bodies.append(body)
            nested.extend(inner)
    name = _package_of(bodies, path)
    for b in nested:
        _add(sources, b, merge=False)
    for b in bodies:
        _add(sources, b, merge=True)
    return name.key


def load_packages(path: Path) -> Packages:
    """Parse the WIT root ``path``: a ``.wit`` file or a directory (with ``deps/``)."""
    if not path.exists():
        raise WitError(f"{path}: no such file or directory")
    sources: dict[str, _Source] = {}
    files: list[tuple[str, bytes]] = []
    base = path if path.is_dir() else path.parent
    if path.is_dir():
        deps = path / "deps"
        if deps.is_dir():
            for entry in sorted(deps.iterdir()):
                if entry.is_dir() or entry.suffix == ".wit":
                    _load_unit(entry, base, sources, files)
    root = _load_unit(path, base, sources, files)
    # The root package's own bodies win over a same-named dependency.
    return Packages(root, sources, files)


# -- resolution --------------------------------------------------------------------------


@dataclass
class _Decl:
    """Where a declaration lives: its package and the top-level ``use``s of its file."""

    package: _Source
    uses: list[TopUse]


class Resolver:
    """Resolves interfaces and worlds of :class:`Packages` on demand (with cycle detection)."""

    def __init__(self, packages: Packages) -> None:
        self.packages = packages
        self.ifaces: dict[str, dict[str, tuple[InterfaceDecl, _Decl]]] = {}
        self.worlds: dict[str, dict[str, tuple[WorldDecl, _Decl]]] = {}
        for key, src in packages.sources.items():
            ifs: dict[str, tuple[InterfaceDecl, _Decl]] = {}
            wds: dict[str, tuple[WorldDecl, _Decl]] = {}
            seen: dict[str, Span] = {}
            for body in src.bodies:
                decl = _Decl(src, body.uses)
                items: list[tuple[Name, InterfaceDecl | WorldDecl]] = [
                    *((i.name, i) for i in body.interfaces),
                    *((w.name, w) for w in body.worlds),
                ]
                for name, item in items:
                    if name.text in seen:
                        raise fail(
                            name.span,
                            f"name {name.text!r} is defined more than once "
                            f"(first at {seen[name.text]})",
                        )
                    seen[name.text] = name.span
                    if isinstance(item, InterfaceDecl):
                        ifs[name.text] = (item, decl)
                    else:
                        wds[name.text] = (item, decl)
            self.ifaces[key] = ifs
            self.worlds[key] = wds
        self._done: dict[tuple[str, str], Interface] = {}
        self._busy: set[tuple[str, str]] = set()
        self._worlds_done: dict[tuple[str, str], World] = {}
        self._worlds_busy: set[tuple[str, str]] = set()

    def resolve_all(self) -> None:
        """Resolve every interface and world of every package, so any error is reported."""
        for key, ifs in self.ifaces.items():
            for name, (ast, _) in ifs.items():
                self.interface(key, name, ast.name.span)
        for key, wds in self.worlds.items():
            for name, (wast, _) in wds.items():
                self.world(key, name, wast.name.span)

    # -- paths

    def _package(self, name: PackageName) -> _Source:
        src = self.packages.sources.get(name.key)
        if src is None and name.version is None:
            found = [
                s
                for s in self.packages.sources.values()
                if (s.name.namespace, s.name.name) == (name.namespace, name.name)
            ]
            if len(found) == 1:
                src = found[0]
        if src is None:
            known = ", ".join(sorted(self.packages.sources)) or "none"
            raise fail(
                name.span,
                f"package {name.key} is not defined (known packages: {known}; put it in deps/)",
            )
        return src

    def _lookup(self, path: UsePath, decl: _Decl) -> tuple[str, str, str]:
        """``(package key, name, kind)`` of the interface or world ``path`` names."""
        if path.package is None:
            for use in decl.uses:
                alias = use.alias.text if use.alias else use.path.name.text
                if alias == path.name.text:
                    return (
                        self._lookup(use.path, decl)
                        if use.path.package is not None
                        else self._lookup(use.path, _Decl(decl.package, []))
                    )
            key = decl.package.name.key
        else:
            key = self._package(path.package).name.key
        if path.name.text in self.ifaces[key]:
            return key, path.name.text, "interface"
        if path.name.text in self.worlds[key]:
            return key, path.name.text, "world"
        raise fail(path.name.span, f"interface {path.name.text!r} is not defined in package {key}")

    def interface_at(self, path: UsePath, decl: _Decl) -> Interface:
        key, name, kind = self._lookup(path, decl)
        if kind != "interface":
            raise fail(path.name.span, f"{name!r} is a world, not an interface")
        return self.interface(key, name, path.name.span)

    def interface(self, key: str, name: str, span: Span) -> Interface:
        done = self._done.get((key, name))
        if done is not None:
            return done
        if (key, name) in self._busy:
            raise fail(span, f"cyclic use: interface {name!r} of {key} uses itself")
        self._busy.add((key, name))
        ast, decl = self.ifaces[key][name]
        iface = Interface(name, decl.package.name)
        self._fill_interface(iface, ast.items, decl)
        self._busy.discard((key, name))
        self._done[(key, name)] = iface
        return iface

    # -- types

    def _define_types(
        self,
        owner: Interface | World,
        items: tuple[InterfaceMember, ...] | tuple[WorldMember, ...],
        decl: _Decl,
        scope: dict[str, TypeDef],
    ) -> None:
        """Resolve ``use``s, then the type definitions in dependency order.

        WIT.md §"Name resolution": definitions may come in any order, without cycles.
        """
        spans: dict[str, Span] = {}

        def claim(name: Name) -> None:
            if name.text in spans:
                raise fail(
                    name.span,
                    f"name {name.text!r} is defined more than once (first at {spans[name.text]})",
                )
            spans[name.text] = name.span

        for item in items:
            if isinstance(item, UseItem):
                src = self.interface_at(item.path, decl)
                for orig, alias in item.names:
                    target = src.types.get(orig.text)
                    if target is None:
                        raise fail(
                            orig.span, f"type {orig.text!r} is not defined in interface {src.id}"
                        )
                    local = alias or orig
                    claim(local)
                    scope[local.text] = TypeDef(
                        local.text, owner, "alias", local.span, target=target
                    )
        defs: dict[str, TypeItem] = {}
        for item in items:
            if isinstance(item, TypeItem):
                claim(item.name)
                defs[item.name.text] = item
        # Dependencies between local definitions; a smallest-index-first topological order.
        order = list(defs)
        deps: dict[str, list[Name]] = {}
        for name, item in defs.items():
            refs: list[Name] = []
            for ty in _tys_of(item):
                _collect(ty, refs)
            for ref in refs:
                if ref.text not in defs and ref.text not in scope:
                    raise fail(ref.span, f"unknown type {ref.text!r}")
            deps[name] = [r for r in refs if r.text in defs]
        placed: list[str] = []
        remaining = {n: {r.text for r in deps[n]} for n in order}
        while len(placed) < len(order):
            ready = [n for n in order if n not in placed and not (remaining[n] - set(placed))]
            if not ready:
                stuck = next(n for n in order if n not in placed)
                ref = next(r for r in deps[stuck] if r.text not in placed)
                raise fail(
                    ref.span, f"type {ref.text!r} depends on itself (a cycle through {stuck!r})"
                )
            placed.append(ready[0])
        for name in placed:
            item = defs[name]
            td = TypeDef(name, owner, item.kind, item.name.span)
            scope[name] = td
            if item.kind == "record":
                td.fields = [(f.text, self._ty(t, scope)) for f, t in item.fields]
                _unique([f for f, _ in item.fields], "field")
            elif item.kind == "variant":
                td.cases = [
                    (c.text, None if t is None else self._ty(t, scope)) for c, t in item.cases
                ]
                _unique([c for c, _ in item.cases], "case")
            elif item.kind in ("enum", "flags"):
                td.cases = [(c.text, None) for c, _ in item.cases]
                _unique([c for c, _ in item.cases], "label")
            elif item.kind == "alias":
                assert item.target is not None
                td.target = self._ty(item.target, scope)

    def _ty(self, ty: Ty, scope: dict[str, TypeDef]) -> RType:
        if isinstance(ty, TyNamed):
            td = scope.get(ty.name.text)
            if td is None:
                raise fail(ty.name.span, f"unknown type {ty.name.text!r}")
            return td
        if not isinstance(ty, TyApp):
            return ty.name
        sub = [None if a is None else self._ty(a, scope) for a in ty.args]
        if ty.ctor in ("own", "borrow"):
            target = sub[0]
            if not isinstance(target, TypeDef) or target.base().kind != "resource":
                arg = ty.args[0]
                assert isinstance(arg, TyNamed)
                raise fail(
                    arg.name.span,
                    f"{ty.ctor}<{arg.name.text}>: {arg.name.text!r} is not a resource",
                )
            return (ty.ctor, target)
        if ty.ctor == "list":
            return ("list", sub[0], ty.size)
        if ty.ctor == "tuple":
            return ("tuple", tuple(sub))
        return (ty.ctor, *sub)

    def _func(
        self, name: str, sig: FuncSig, scope: dict[str, TypeDef], kind: str, res: TypeDef | None
    ) -> Func:
        _unique([n for n, _ in sig.params], "parameter")
        params = [(n.text, self._ty(t, scope)) for n, t in sig.params]
        result = None if sig.result is None else self._ty(sig.result, scope)
        if res is not None and kind == "method":
            params.insert(0, ("self", ("borrow", res)))
        if res is not None and kind == "constructor" and result is None:
            result = res
        return Func(name, params, result, sig.is_async, kind, res)

    def _fill_interface(
        self, iface: Interface, items: tuple[InterfaceMember, ...], decl: _Decl
    ) -> None:
        scope: dict[str, TypeDef] = {}
        self._define_types(iface, items, decl, scope)
        iface.types = dict(scope)
        names: dict[str, Span] = {n: t.span for n, t in scope.items()}
        for item in items:
            if isinstance(item, FuncItem):
                if item.name.text in names:
                    raise fail(
                        item.name.span,
                        f"name {item.name.text!r} is defined more than once "
                        f"(first at {names[item.name.text]})",
                    )
                names[item.name.text] = item.name.span
                iface.funcs.append(self._func(item.name.text, item.sig, scope, "func", None))
            elif isinstance(item, TypeItem) and item.kind == "resource":
                res = scope[item.name.text]
                seen: dict[str, Span] = {}
                for f in item.funcs:
                    if f.name.text in seen:
                        raise fail(
                            f.name.span,
                            f"{f.name.text!r} is defined more than once in resource {res.name!r}",
                        )
                    seen[f.name.text] = f.name.span
                    if f.kind == "constructor":
                        full = f"[constructor]{res.name}"
                    else:
                        full = f"[{f.kind}]{res.name}.{f.name.text}"
                    iface.funcs.append(self._func(full, f.sig, scope, f.kind, res))
        # A resource's functions follow the resource, before the freestanding ones, as
        # in the instance type of the component.
        order = {t: i for i, t in enumerate(scope.values())}
        iface.funcs.sort(
            key=lambda f: order.get(f.resource, len(order)) if f.resource else len(order)
        )

    # -- worlds

    def world_named(self, spec: str | None) -> World:
        """The world ``spec`` names (a root-package world name or ``ns:pkg/world``)."""
        root = self.packages.root
        if spec is None:
            names = list(self.worlds[root])
            if len(names) != 1:
                listed = ", ".join(names) or "none"
                raise WitError(
                    f"package {root} has {len(names)} worlds ({listed}); choose one with --world"
                )
            return self.world(root, names[0], self.worlds[root][names[0]][0].name.span)
        if "/" in spec:
            pkg_text, _, wname = spec.partition("/")
            ns, _, rest = pkg_text.partition(":")
            pname, _, ver = rest.partition("@")
            if "@" in wname:
                wname, _, ver = wname.partition("@")
            src = self._package(PackageName(ns, pname, ver or None, Span("--world", 1, 1)))
            key = src.name.key
        else:
            key, wname = root, spec
        if wname not in self.worlds.get(key, {}):
            listed = ", ".join(self.worlds.get(key, {})) or "none"
            raise WitError(
                f"world {wname!r} is not defined in package {key} (its worlds: {listed})"
            )
        return self.world(key, wname, self.worlds[key][wname][0].name.span)

    def world(self, key: str, name: str, span: Span) -> World:
        done = self._worlds_done.get((key, name))
        if done is not None:
            return done
        if (key, name) in self._worlds_busy:
            raise fail(span, f"cyclic include: world {name!r} includes itself")
        self._worlds_busy.add((key, name))
        ast, decl = self.worlds[key][name]
        world = World(name, decl.package.name, ast.name.span)
        self._fill_world(world, ast, decl)
        self._worlds_busy.discard((key, name))
        self._worlds_done[(key, name)] = world
        return world

    def _fill_world(self, world: World, ast: WorldDecl, decl: _Decl) -> None:
        scope: dict[str, TypeDef] = {}
        self._define_types(world, ast.items, decl, scope)
        spans: dict[tuple[str, str], Span] = {}

        def put(direction: str, key: str, item: Item, span: Span) -> None:
            table = world.imports if direction == "import" else world.exports
            if (direction, key) in spans:
                if item.kind == "interface" and key == (item.iface.id if item.iface else None):
                    return
                raise fail(
                    span,
                    f"{direction} {key!r} is defined more than once "
                    f"(first at {spans[(direction, key)]})",
                )
            spans[(direction, key)] = span
            table[key] = item

        for t in scope.values():
            put("import", t.name, Item("type", type=t), t.span)
        for member in ast.items:
            if not isinstance(member, ExternItem):
                continue
            d = member.direction
            if member.func is not None:
                assert member.name is not None
                put(
                    d,
                    member.name.text,
                    Item(
                        "func", func=self._func(member.name.text, member.func, scope, "func", None)
                    ),
                    member.name.span,
                )
            elif member.inline is not None:
                assert member.name is not None
                inline = Interface(member.name.text, None)
                self._fill_interface(inline, member.inline, decl)
                put(d, member.name.text, Item("interface", iface=inline), member.name.span)
            else:
                assert member.path is not None
                iface = self.interface_at(member.path, decl)
                if member.name is None:
                    put(d, iface.id, Item("interface", iface=iface), member.path.name.span)
                else:
                    put(
                        d,
                        member.name.text,
                        Item("interface", iface=iface, implements=iface.id),
                        member.name.span,
                    )
        for member in ast.items:
            if not isinstance(member, IncludeItem):
                continue
            key, name, kind = self._lookup(member.path, decl)
            if kind != "world":
                raise fail(member.path.name.span, f"{name!r} is an interface, not a world")
            other = self.world(key, name, member.path.name.span)
            renames = {old.text: new.text for old, new in member.renames}
            for direction, table in (("import", other.imports), ("export", other.exports)):
                for k, item in table.items():
                    is_id = (
                        item.kind == "interface"
                        and item.iface is not None
                        and item.iface.package is not None
                        and k == item.iface.id
                    )
                    target = k if is_id else renames.get(k, k)
                    own = world.imports if direction == "import" else world.exports
                    if target in own:
                        if is_id:
                            continue
                        raise fail(
                            member.span,
                            f"include {name!r}: {direction} {target!r} conflicts with an existing "
                            f"{direction}; rename it with 'with {{ {target} as ... }}'",
                        )
                    own[target] = item


def _tys_of(item: TypeItem) -> list[Ty]:
    out: list[Ty] = [t for _, t in item.fields]
    out.extend(t for _, t in item.cases if t is not None)
    if item.target is not None:
        out.append(item.target)
    return out


def _collect(ty: Ty | None, out: list[Name]) -> None:
    if isinstance(ty, TyNamed):
        out.append(ty.name)
    elif isinstance(ty, TyApp):
        for a in ty.args:
            _collect(a, out)


def _unique(names: list[Name], what: str) -> None:
    seen: dict[str, Span] = {}
    for n in names:
        if n.text in seen:
            raise fail(
                n.span, f"{what} {n.text!r} is defined more than once (first at {seen[n.text]})"
            )
        seen[n.text] = n.span
