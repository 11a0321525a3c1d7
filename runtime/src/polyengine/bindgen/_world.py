"""The world a set of bindings describes, read from a Plan's root imports and exports.

The Plan keeps, for every imported or exported instance, the instance
type's exports in order: its named types (``TypeDesc``), its resources
(``TypeDesc.resource``) and its functions with their annotated names
(Explainer.md §"Import and export names"). That is all bindgen needs: the
names of records, variants, enums and flags come from those type exports,
and everything else is spelled structurally.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from polyengine.bindgen._names import FuncName, parse_func_name
from polyengine.translate import Plan
from polyengine.translate.plan import ExternDesc, FuncDesc, InstanceDesc, TypeDesc
from polyengine.types.model import FuncType, ValType


@dataclass(frozen=True, slots=True)
class Func:
    """A function of an interface or of the world, with its parsed name."""

    wit_name: str
    name: FuncName
    type: FuncType


@dataclass(slots=True)
class Resource:
    """A resource type exported by an interface (or the world): ``rt`` indexes the plan's table."""

    wit_name: str
    rt: int
    funcs: list[Func] = field(default_factory=list)


@dataclass(slots=True)
class Interface:
    """One imported or exported item set: an interface (``key`` is its id) or the world.

    ``key`` is ``None`` for the world's bare items.
    """

    direction: str
    key: str | None
    types: list[tuple[str, ValType]] = field(default_factory=list)
    resources: list[Resource] = field(default_factory=list)
    funcs: list[Func] = field(default_factory=list)

    @property
    def short(self) -> str:
        """The interface name without namespace, package and version (``store``)."""
        if self.key is None:
            return "world"
        tail = self.key.rsplit("/", 1)[-1]
        return tail.split("@", 1)[0]

    @property
    def package(self) -> str:
        """The package name without namespace and version (``http`` of ``wasi:http/types``)."""
        if self.key is None or "/" not in self.key:
            return ""
        head = self.key.rsplit("/", 1)[0]
        return head.split(":", 1)[-1]

    def has_leaves(self) -> bool:
        return bool(self.funcs or any(r.funcs for r in self.resources) or self.resources)


@dataclass(slots=True)
class World:
    imports: list[Interface]
    exports: list[Interface]
    world_import: Interface
    world_export: Interface

    def all(self) -> list[Interface]:
        return [*self.imports, self.world_import, *self.exports, self.world_export]


def _fill(iface: Interface, items: list[tuple[str, ExternDesc]]) -> None:
    by_name: dict[str, Resource] = {}
    for name, desc in items:
        if isinstance(desc, TypeDesc):
            if desc.resource is not None:
                res = Resource(name, desc.resource)
                by_name[name] = res
                iface.resources.append(res)
            elif desc.type is not None:
                iface.types.append((name, desc.type))
    for name, desc in items:
        if not isinstance(desc, FuncDesc):
            continue
        fn = Func(name, parse_func_name(name), desc.type)
        if fn.name.resource is not None and fn.name.resource in by_name:
            by_name[fn.name.resource].funcs.append(fn)
        else:
            iface.funcs.append(fn)


def read_world(plan: Plan) -> World:
    """The :class:`World` of ``plan``'s root imports and exports."""
    world = World([], [], Interface("import", None), Interface("export", None))
    sections: tuple[tuple[str, list[tuple[str, ExternDesc]]], ...] = (
        ("import", [(i.name, i.desc) for i in plan.imports]),
        ("export", [(e.name, e.desc) for e in plan.exports]),
    )
    for direction, items in sections:
        bare: list[tuple[str, ExternDesc]] = []
        for name, desc in items:
            if isinstance(desc, InstanceDesc):
                iface = Interface(direction, name)
                _fill(iface, list(desc.exports))
                (world.imports if direction == "import" else world.exports).append(iface)
            else:
                bare.append((name, desc))
        _fill(world.world_import if direction == "import" else world.world_export, bare)
    return world
