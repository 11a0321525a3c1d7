"""What the index spaces of a component hold during translation (Explainer.md §"Index Spaces").

Each definition of a component appends one *value* to the index space of its
sort. A value carries its type (for validation) and where it comes from (for
the Plan): a core item names a core instance export or a trampoline, a
component function is a lift or a root import, an instance is a bag of
named values. The :class:`Sink` collects the Plan's flat lists while a
component is walked; a throw-away sink is used when a nested component
definition is only being validated.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from polyengine.binary import ast
from polyengine.translate.plan import (
    ComponentInstance,
    CoreDef,
    CoreExport,
    CoreInstance,
    CoreModule,
    Lift,
    ModuleRef,
    Trampoline,
    TrampolineRef,
)
from polyengine.types.model import FuncType
from polyengine.types.subtype import (
    ComponentT,
    CoreExternT,
    CoreModuleT,
    DefType,
    ExternT,
    InstanceT,
    TypeT,
    ValueT,
    core_kind,
)

# -- core values -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CoreItem:
    """A core func/table/memory/global/tag: its type and where it lives (None when abstract)."""

    kind: str
    t: CoreExternT
    ref: CoreDef | None


@dataclass(frozen=True, slots=True)
class CoreModuleV:
    t: CoreModuleT
    ref: ModuleRef | None


@dataclass(frozen=True, slots=True)
class CoreInstanceV:
    exports: Mapping[str, CoreItem]


class CoreExports(Mapping[str, CoreItem]):
    """The exports of one core instantiation of a module, each made on first use.

    A language runtime's module exports thousands of functions of which a
    component uses a few, so the items are not built up front.
    """

    __slots__ = ("_instance", "_made", "_types")

    def __init__(self, types: dict[str, CoreExternT], instance: int) -> None:
        self._types = types
        self._instance = instance
        self._made: dict[str, CoreItem] = {}

    def get(self, name: str, default: CoreItem | None = None) -> CoreItem | None:  # type: ignore[override]
        item = self._made.get(name)
        if item is None:
            t = self._types.get(name)
            if t is None:
                return default
            kind = core_kind(t)
            item = self._made[name] = CoreItem(kind, t, CoreExport(self._instance, name, kind))
        return item

    def __getitem__(self, name: str) -> CoreItem:
        item = self.get(name)
        if item is None:
            raise KeyError(name)
        return item

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)


# -- component values --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HostFunc:
    """A function reached through a root import at ``path``."""

    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A function that cannot run (it comes from an imported component type)."""

    why: str


FuncSrc: TypeAlias = HostFunc | Lift | Unavailable


@dataclass(frozen=True, slots=True)
class FuncV:
    t: FuncType
    src: FuncSrc


@dataclass(frozen=True, slots=True)
class TypeV:
    """A type index entry; ``named``: introduced by an import or export (externally visible)."""

    t: DefType
    named: bool = False


@dataclass(slots=True)
class InstanceV:
    exports: dict[str, Value]
    path: tuple[str, ...] | None = None  # set when the instance is (part of) a root import


@dataclass(frozen=True, slots=True)
class ComponentV:
    """A component: a definition (``ast``, its enclosing ``scope``) or just a type (``t``)."""

    t: ComponentT | None
    ast: ast.Component | None = None
    scope: object = None  # the defining Scope (kept untyped to avoid a cycle)
    path: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class ValueV:
    t: ValueT


Value: TypeAlias = FuncV | TypeV | InstanceV | ComponentV | ValueV | CoreModuleV


def type_of(v: Value) -> ExternT:
    """The extern type of a component-level value."""
    match v:
        case FuncV():
            return v.t
        case TypeV():
            return TypeT(v.t)
        case InstanceV():
            return InstanceT(tuple((n, type_of(x)) for n, x in v.exports.items()))
        case ComponentV():
            assert v.t is not None
            return v.t
        case ValueV():
            return v.t
        case CoreModuleV():
            return v.t


# -- resources ---------------------------------------------------------------------------


@dataclass(slots=True)
class ResourceInfo:
    """Arena entry of one resource id; ``sink`` is the sink that created it (None: a type)."""

    sink: int | None
    imported: bool
    name: str = ""
    instance: int | None = None
    import_path: tuple[str, ...] | None = None
    rep: str = "i32"
    dtor: CoreDef | None = None


@dataclass(slots=True)
class Arena:
    """Global state of one translation: resource ids and caches."""

    resources: list[ResourceInfo] = field(default_factory=list)
    module_sigs: dict[int, CoreModuleT] = field(default_factory=dict)
    next_sink: int = 0
    # External visibility (Explainer.md §"External Visibility of Types"): type
    # objects introduced by an import ("import") or an export ("export"), by id.
    named: dict[int, set[tuple[str, int]]] = field(default_factory=dict)
    keep: list[object] = field(default_factory=list)
    parents: dict[int, list[object]] = field(default_factory=dict)
    next_owner: int = 0

    def new_resource(self, info: ResourceInfo) -> int:
        self.resources.append(info)
        return len(self.resources) - 1

    def new_owner(self) -> int:
        """A fresh id for a scope that can name types (a component walk or a declarator)."""
        self.next_owner += 1
        return self.next_owner

    def name_type(self, t: object, how: str, owner: int) -> None:
        names = self.named.get(id(t))
        if names is None:
            self.named[id(t)] = names = set()
            self.keep.append(t)
        names.add((how, owner))

    def derive(self, src: object, new: object) -> None:
        """``new`` was made from ``src`` and carries whatever names ``src`` has, now or later."""
        self.parents.setdefault(id(new), []).append(src)
        self.keep.append(new)

    def names_of(self, t: object) -> set[tuple[str, int]]:
        out: set[tuple[str, int]] = set()
        todo = [t]
        seen: set[int] = set()
        while todo:
            x = todo.pop()
            if id(x) in seen:
                continue
            seen.add(id(x))
            out |= self.named.get(id(x), set())
            todo.extend(self.parents.get(id(x), ()))
        return out


@dataclass(slots=True)
class Sink:
    """The Plan's flat lists under construction."""

    id: int
    modules: list[CoreModule] = field(default_factory=list)
    module_index: dict[int, int] = field(default_factory=dict)
    core_instances: list[CoreInstance] = field(default_factory=list)
    trampolines: list[Trampoline] = field(default_factory=list)
    component_instances: list[ComponentInstance] = field(default_factory=list)

    def add_trampoline(self, t: Trampoline) -> TrampolineRef:
        self.trampolines.append(t)
        return TrampolineRef(len(self.trampolines) - 1)

    def new_instance(self, parent: int | None, path: str) -> int:
        i = len(self.component_instances)
        self.component_instances.append(ComponentInstance(i, parent, path))
        return i
