"""Core instances: instantiating a module with given imports, and reaching its exports.

Explainer.md §"Instance definitions" (core).  An instance's exports are
wrapped as Python objects (:class:`~._core.CoreFunc`, :class:`~._memory.GuestMemory`,
...) only when asked for, once each.  :class:`~._pre.InstancePre` instantiates
a component's core instances without going through these wrappers.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any, TypeAlias, TypeVar

from polyengine.errors import LinkError

from . import _ffi as ffi
from ._core import CoreFunc
from ._errors import EngineError
from ._fiber import instantiate_blocking
from ._memory import CoreGlobal, CoreTable, CoreTag, GuestMemory
from ._module import CoreModule
from ._store import EngineStore, instantiation_failure
from ._values import VALTYPES

__all__ = ["CoreInstance", "Extern", "check_imports", "instantiate", "wrap_extern"]

_T = TypeVar("_T")

Extern: TypeAlias = CoreFunc | GuestMemory | CoreTable | CoreGlobal | CoreTag


def wrap_extern(
    store: EngineStore, ext: Any, signature: tuple[tuple[str, ...], tuple[str, ...]] | None = None
) -> Extern:
    """The Python wrapper of ``ext``; a function's ``signature`` (params, results),
    when the caller knows it, spares asking wasmtime for its type."""
    kind = int(ext.kind)
    if kind == ffi.EXTERN_FUNC:
        func = ffi.FuncStruct()
        ctypes.pointer(func)[0] = ext.of.func
        return CoreFunc._wrap(store, func, signature)
    if kind == ffi.EXTERN_MEMORY:
        return GuestMemory._wrap(store, ext.of.memory)
    if kind == ffi.EXTERN_TABLE:
        return CoreTable._wrap(store, ext.of.table)
    if kind == ffi.EXTERN_GLOBAL:
        return CoreGlobal._wrap(store, ext.of.global_)
    if kind == ffi.EXTERN_TAG:
        return CoreTag._wrap(store, ext.of.tag)
    raise EngineError(f"unsupported export kind {kind}")


class CoreInstance:
    """An instance of a core module in one store."""

    __slots__ = ("_cache", "_instance", "_signatures", "module_name", "store")

    store: EngineStore
    module_name: str
    _instance: Any  # wasmtime_instance_t
    _cache: dict[str, Extern]
    #: the module's exported functions' signatures as far as known (shared by its instances)
    _signatures: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]

    def __init__(self) -> None:
        raise TypeError("use instantiate() to create a CoreInstance")

    @classmethod
    def _wrap(cls, store: EngineStore, instance: Any, module: CoreModule) -> CoreInstance:
        self = object.__new__(cls)
        self.store = store
        self._instance = instance
        self.module_name = module.name
        self._signatures = module.export_signatures
        self._cache = {}
        return self

    def get(self, name: str) -> Extern | None:
        """The export called ``name``, or ``None``."""
        found = self._cache.get(name)
        if found is not None:
            return found
        ctx = self.store._ctx()
        ext = ffi.Extern()
        data = name.encode("utf-8")
        if not ffi.instance_export_get(
            ctx, ctypes.addressof(self._instance), data, len(data), ctypes.addressof(ext)
        ):
            return None
        signatures = self._signatures
        found = wrap_extern(self.store, ext, signatures.get(name))
        if type(found) is CoreFunc and name not in signatures:
            params, results = found.params, found.results
            if all(t in VALTYPES for t in params + results):
                # A numeric signature is the module's (no subtype can differ from it):
                # the module's other instances need not ask wasmtime again.
                signatures[name] = (params, results)
        self._cache[name] = found
        return found

    def export(self, name: str) -> Extern:
        """The export called ``name``; ``KeyError`` if there is none."""
        found = self.get(name)
        if found is None:
            raise KeyError(f"core module {self.module_name} has no export {name!r}")
        return found

    def func(self, name: str) -> CoreFunc:
        return _expect(self, name, CoreFunc)

    def memory(self, name: str) -> GuestMemory:
        return _expect(self, name, GuestMemory)

    def table(self, name: str) -> CoreTable:
        return _expect(self, name, CoreTable)

    def global_(self, name: str) -> CoreGlobal:
        return _expect(self, name, CoreGlobal)

    def __repr__(self) -> str:
        return f"<CoreInstance of {self.module_name}>"


def _expect(instance: CoreInstance, name: str, cls: type[_T]) -> _T:
    found = instance.export(name)
    if not isinstance(found, cls):
        raise TypeError(
            f"export {name!r} of {instance.module_name} is a {type(found).__name__}, "
            f"not a {cls.__name__}"
        )
    return found


_EXTERN_KIND_NAMES = {
    ffi.EXTERN_TAG: "tag",
    ffi.EXTERN_FUNC: "func",
    ffi.EXTERN_MEMORY: "memory",
    ffi.EXTERN_TABLE: "table",
    ffi.EXTERN_GLOBAL: "global",
}


def check_imports(store: EngineStore, module: CoreModule, imports: Sequence[Extern]) -> list[Any]:
    """The ``wasmtime_extern_t`` of each import, after checking store and kinds."""
    if module.engine is not store.engine:
        raise ValueError(f"core module {module.name} was compiled for a different engine")
    wanted = module.imports
    if len(imports) != len(wanted):
        raise LinkError(
            f"core module {module.name} has {len(wanted)} imports, {len(imports)} were given"
        )
    out = []
    for imp, desc in zip(imports, wanted, strict=True):
        as_extern = getattr(imp, "_as_extern", None)
        if as_extern is None:
            raise TypeError(
                f"import {desc.module!r} {desc.name!r} of {module.name}: "
                f"expected a core extern, got {type(imp).__name__}"
            )
        if getattr(imp, "store", None) is not store:
            raise ValueError(
                f"import {desc.module!r} {desc.name!r} of {module.name} belongs to another store"
            )
        ext = as_extern()
        kind = _EXTERN_KIND_NAMES.get(int(ext.kind), "?")
        if kind != desc.kind:
            raise LinkError(
                f"import {desc.module!r} {desc.name!r} of {module.name}: "
                f"expected a {desc.kind}, got a {kind}"
            )
        out.append(ext)
    return out


def instantiate(store: EngineStore, module: CoreModule, imports: Sequence[Extern]) -> CoreInstance:
    """Instantiate ``module`` in ``store`` with ``imports`` in the module's import order.

    Raises :class:`LinkError` if an import does not fit, :class:`CoreTrap` if
    the start function traps.
    """
    ctx = store._ctx()
    exts = check_imports(store, module, imports)
    state = store._state
    n = len(exts)
    arr = (ffi.Extern * max(n, 1))(*exts)
    if state.async_required and module.runs_start:
        # only a start function can reach an async host function (see ``_pre.py``)
        return CoreInstance._wrap(store, instantiate_blocking(store, module, arr), module)
    inst = ffi.InstanceStruct()
    trap = ctypes.c_void_p(0)
    err = ffi.instance_new(
        ctx, module._ptr, ctypes.addressof(arr), n, ctypes.addressof(inst), ctypes.addressof(trap)
    )
    if err or trap.value:
        instantiation_failure(state, module, trap.value or 0, err or 0)
    return CoreInstance._wrap(store, inst, module)
