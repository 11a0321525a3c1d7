"""Instance-pre: instantiating core modules in order, prepared once (architecture.md §5).

A component's core instances are instantiated in plan order, each with
imports that are exports of earlier instances or host functions
(Explainer.md §"Instance definitions").  :class:`InstancePre` takes that
wiring once per (engine, plan) and prepares everything that does not depend
on a store: the compiled modules, every import checked against what will be
given (kind, exporter, order), the export names encoded.  Per store only the
store-bound work remains (:meth:`InstancePre.link`): each import vector is
filled straight into a raw ``wasmtime_extern_t`` array (one
``wasmtime_instance_export_get`` per export, no Python object per extern: an
export several imports take is fetched once per linking and copied to the others),
host functions are created without a callback of their own (the shared
trampolines of ``_callpath.py``), and the module is instantiated from the
array.  Plain host functions (:class:`PlainHosts`: a signature per plan, a
body built on first call) cost one compiled call per core instance and no
Python object until they are first called.  Python wrappers
(:class:`~polyengine.engine.CoreFunc`, memories...) are made only for what
the caller asks :class:`CoreInstance.get` for.

Nothing wasmtime could abort on reaches it: every extern of an array comes
from the linking's own store, and every slot of an array is written before
the array is used. In a store with async host functions a module is
instantiated on a call future only when it has a start function (which could
call one, and an async host function called synchronously aborts the
process): without one, instantiation runs no guest code (Explainer.md §"Instance
definitions": a core instantiation is the core spec's, whose only code is
the start function), so the plain ``wasmtime_instance_new`` serves and no
linker is built and filled per module.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeAlias

from polyengine.errors import LinkError

from . import _ffi as ffi
from ._config import Engine
from ._core import CoreFunc, HostFunction, host_kind, new_host_func
from ._errors import EngineError, StoreClosedError
from ._fiber import instantiate_blocking
from ._instance import CoreInstance
from ._module import CoreModule
from ._store import (
    ENV_TAG_BITS,
    PLAIN_BUILDER,
    EngineStore,
    _StoreState,
    instantiation_failure,
    plain_host_base,
)
from ._values import check_valtypes

__all__ = ["DeferredHost", "ExportSource", "HostSource", "InstancePre", "Linking", "PlainHosts"]

_EXTERN_SIZE = ctypes.sizeof(ffi.Extern)
_OF_OFFSET: int = ffi.Extern.of.offset


#: ``[(fill_exports, address of wasmtime_instance_export_get)]`` of the compiled call
#: path once looked up (``[None]``: not built or not used)
_FILL_EXPORTS: list[tuple[Any, int] | None] = []


def _fill_exports() -> tuple[Any, int] | None:
    """The compiled fill of an import array from earlier instances' exports
    (one call per core instance instead of one per import; architecture.md §5)."""
    if not _FILL_EXPORTS:
        from ._accelerator import ACCEL

        found = getattr(ACCEL, "fill_exports", None)
        address = ctypes.cast(ffi.instance_export_get, ctypes.c_void_p).value or 0
        _FILL_EXPORTS.append((found, address) if found is not None and address else None)
    return _FILL_EXPORTS[0]


@dataclass(frozen=True, slots=True)
class ExportSource:
    """An import given the export ``name`` of the earlier core instance ``instance``."""

    instance: int
    name: str


@dataclass(frozen=True, slots=True)
class HostSource:
    """An import given host function ``index`` (supplied per store by :meth:`InstancePre.link`)."""

    index: int


Source: TypeAlias = ExportSource | HostSource


@dataclass(frozen=True, slots=True)
class DeferredHost:
    """A host function ``params -> results`` whose body ``build()`` makes on its first call."""

    params: tuple[str, ...]
    results: tuple[str, ...]
    build: Callable[[], HostFunction]


HostBinding: TypeAlias = "CoreFunc | DeferredHost"

Signature: TypeAlias = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class PlainHosts:
    """Host functions made without asking for a binding one at a time.

    For each index whose ``signatures[index]`` is a core type ``(params,
    results)`` and that is not in ``taken``, the linking makes a host
    function of that type whose body ``build(index)`` makes on its first
    call (what a :class:`DeferredHost` does, with nothing made per function
    before then); the other indices are bound through the linking's ``host``
    callback. ``signatures`` is best one object per plan: what is worked out
    from it is kept while the same object comes back.
    """

    signatures: Sequence[Signature | None]
    build: Callable[[int], HostFunction]
    taken: Collection[int] = ()


#: ``(host index, functype address, callback address, tag)`` of a plain host function
_PlainItem: TypeAlias = tuple[int, int, int, int]


class _Cells:
    """Prebuilt ctypes arguments shared by a pre's fast fills (one fill at a time)."""

    __slots__ = ("ctx", "instances", "lock")

    def __init__(self, n: int) -> None:
        self.ctx = ctypes.c_void_p(0)
        self.instances = [ctypes.c_void_p(0) for _ in range(n)]
        self.lock = threading.Lock()


class _Step:
    """One core instance of the pre: its module and how to fill its import array.

    ``scratch`` is an import array filled by the fast path, through ``calls``:
    one tuple of prebuilt ctypes arguments per export import (the shared
    context and instance cells, the name, its length, the slot's address),
    for the prototype without argument types. wasmtime copies the imports
    before the start function runs, so the array is free again once
    ``wasmtime_instance_new`` returns.
    """

    __slots__ = (
        "array_type",
        "calls",
        "exports",
        "hosts",
        "loads",
        "module",
        "n",
        "saves",
        "scratch",
        "users",
    )

    def __init__(
        self,
        module: CoreModule,
        sources: Sequence[Source],
        cells: _Cells,
        shared: dict[tuple[int, str], int],
        fetched: set[tuple[int, str]],
    ) -> None:
        self.module = module
        self.n = len(sources)
        self.array_type: Any = ffi.Extern * max(self.n, 1)
        self.scratch: Any = self.array_type()
        base = ctypes.addressof(self.scratch)
        #: the earlier instances this one imports from
        self.users = tuple(sorted({s.instance for s in sources if isinstance(s, ExportSource)}))
        exports: list[tuple[int, int, bytes]] = []
        #: (shared slot offset, slot index) of each export fetched here that later
        #: imports take again: kept in the linking's shared array
        saves: list[tuple[int, int]] = []
        #: (slot offset, shared slot index) of each export an earlier import fetched
        loads: list[tuple[int, int]] = []
        for k, s in enumerate(sources):
            if not isinstance(s, ExportSource):
                continue
            key = (s.instance, s.name)
            j = shared.get(key)
            if j is not None and key in fetched:
                loads.append((k * _EXTERN_SIZE, j))
                continue
            exports.append((k * _EXTERN_SIZE, s.instance, s.name.encode("utf-8")))
            if j is not None:
                fetched.add(key)
                saves.append((j * _EXTERN_SIZE, k))
        #: (slot offset, exporting instance, encoded name) per export import fetched
        self.exports: tuple[tuple[int, int, bytes], ...] = tuple(exports)
        self.saves: tuple[tuple[int, int], ...] = tuple(saves)
        self.loads: tuple[tuple[int, int], ...] = tuple(loads)
        #: (slot offset, host index) per host import
        self.hosts: tuple[tuple[int, int], ...] = tuple(
            (k * _EXTERN_SIZE, s.index) for k, s in enumerate(sources) if isinstance(s, HostSource)
        )
        self.calls: tuple[tuple[Any, ...], ...] = tuple(
            (
                cells.ctx,
                cells.instances[source],
                ctypes.c_char_p(name),
                ctypes.c_size_t(len(name)),
                ctypes.c_void_p(base + off),
            )
            for off, source, name in self.exports
        )


class InstancePre:
    """The store-independent part of instantiating ``modules`` as ``instances`` in order.

    ``instances[i]`` is ``(module index, sources)`` with one source per
    import of that module, in the module's import order.  ``hosts`` is the
    number of host functions sources may name.  Raises :class:`LinkError`
    for wiring that cannot work (a wrong count or kind, an export that does
    not exist or comes from a later instance).
    """

    __slots__ = (
        "_cells",
        "_kinds",
        "_plain_items",
        "engine",
        "hosts",
        "modules",
        "shared",
        "steps",
    )

    def __init__(
        self,
        engine: Engine,
        modules: Sequence[CoreModule],
        instances: Sequence[tuple[int, Sequence[Source]]],
        hosts: int,
    ) -> None:
        self.engine = engine
        self.modules = tuple(modules)
        self.hosts = hosts
        #: ``(callback, tag, functype address)`` of each checked plain-host signature,
        #: by (compiled call path, signature)
        self._kinds: dict[tuple[bool, Signature], tuple[Any, int, int]] = {}
        #: per (core instance, compiled call path): the signatures object they were
        #: worked out from, each plain host import's item and its callback object
        self._plain_items: dict[
            tuple[int, bool], tuple[object, tuple[_PlainItem, ...], tuple[Any, ...]]
        ] = {}
        for module in self.modules:
            if module.engine is not engine:
                raise ValueError(f"core module {module.name} was compiled for a different engine")
        steps: list[_Step] = []
        self._cells = cells = _Cells(len(instances))
        # An export several imports take is fetched once per linking, then copied.
        uses: dict[tuple[int, str], int] = {}
        for _, sources in instances:
            for source in sources:
                if isinstance(source, ExportSource):
                    key = (source.instance, source.name)
                    uses[key] = uses.get(key, 0) + 1
        shared = {key: j for j, key in enumerate(k for k, n in uses.items() if n > 1)}
        #: how many exports a linking keeps in its shared array
        self.shared = len(shared)
        fetched: set[tuple[int, str]] = set()
        for index, (module_index, sources) in enumerate(instances):
            module = self.modules[module_index]
            wanted = module.imports
            if len(sources) != len(wanted):
                raise LinkError(
                    f"core module {module.name} has {len(wanted)} imports, "
                    f"{len(sources)} were given"
                )
            for desc, source in zip(wanted, sources, strict=True):
                where = f"import {desc.module!r} {desc.name!r} of {module.name}"
                if isinstance(source, HostSource):
                    if not 0 <= source.index < hosts:
                        raise LinkError(f"{where}: there is no host function {source.index}")
                    kind = "func"
                else:
                    if not 0 <= source.instance < index:
                        raise LinkError(
                            f"{where}: core instance {source.instance} is not instantiated "
                            f"before core instance {index}"
                        )
                    exporter = self.modules[instances[source.instance][0]]
                    found = exporter.export_kinds.get(source.name)
                    if found is None:
                        raise LinkError(
                            f"core instance {source.instance} has no export {source.name!r}"
                        )
                    kind = found
                if kind != desc.kind:
                    raise LinkError(f"{where}: expected a {desc.kind}, got a {kind}")
            steps.append(_Step(module, sources, cells, shared, fetched))
        self.steps = tuple(steps)

    def link(
        self,
        store: EngineStore,
        host: Callable[[int], HostBinding],
        plain: PlainHosts | None = None,
    ) -> Linking:
        """Begin instantiating in ``store``; ``host(index)`` supplies host function ``index``.

        ``host`` is called once per host function, just before the first
        instance that imports it: a :class:`CoreFunc` of ``store`` is used
        as it is; a :class:`DeferredHost` becomes a host function of the
        store whose body is built on its first call. The indices ``plain``
        gives a signature are made from it instead, without calling ``host``.
        """
        if store.engine is not self.engine:
            raise ValueError("the store belongs to a different engine than the instance-pre")
        if plain is not None and len(plain.signatures) != self.hosts:
            raise ValueError(
                f"plain host signatures for {len(plain.signatures)} host functions, "
                f"the instance-pre has {self.hosts}"
            )
        if self.hosts >= PLAIN_BUILDER:
            plain = None  # more than a plain function's env can number: bound one by one
        return Linking(self, store, host, plain)

    def _items(
        self, index: int, state: _StoreState, signatures: Sequence[Signature | None]
    ) -> tuple[tuple[_PlainItem, ...], tuple[Any, ...]]:
        """The plain host imports of core instance ``index`` (worked out once per
        signatures object and call path)."""
        key = (index, state.compiled)
        found = self._plain_items.get(key)
        if found is not None and found[0] is signatures:
            return found[1], found[2]
        items: list[_PlainItem] = []
        callbacks: list[Any] = []
        for _, h in self.steps[index].hosts:
            sig = signatures[h]
            if sig is not None:
                cb, tag, ty_addr = self._kind(state, sig, h)
                items.append((h, ty_addr, ffi.address(cb), tag))
                callbacks.append(cb)
        self._plain_items[key] = (signatures, tuple(items), tuple(callbacks))
        return tuple(items), tuple(callbacks)

    def _kind(self, state: _StoreState, sig: Signature, index: int) -> tuple[Any, int, int]:
        """What a plain host function of type ``sig`` needs in ``state``'s store
        (the type checked once per instance-pre)."""
        key = (state.compiled, sig)
        found = self._kinds.get(key)
        if found is None:
            params = check_valtypes(sig[0], f"host function {index} params")
            results = check_valtypes(sig[1], f"host function {index} results")
            found = self._kinds[key] = host_kind(state, params, results)
        return found


class Linking:
    """One store's instantiation of an :class:`InstancePre` (see :meth:`InstancePre.link`)."""

    __slots__ = (
        "_host",
        "_host_exts",
        "_host_funcs",
        "_inst_addrs",
        "_instances",
        "_plain",
        "_plain_base",
        "_pre",
        "_ready",
        "_shared",
        "store",
    )

    def __init__(
        self,
        pre: InstancePre,
        store: EngineStore,
        host: Callable[[int], Any],
        plain: PlainHosts | None = None,
    ) -> None:
        self._pre = pre
        self.store = store
        self._host = host
        self._plain = plain
        #: the ``env`` base of this store's plain host functions (0: none made yet)
        self._plain_base = 0
        self._inst_addrs: list[int] = []
        #: the ``wasmtime_instance_t`` of each instance made so far (kept alive here)
        self._instances: list[Any] = []
        #: the materialized host functions, one ``wasmtime_extern_t`` each
        self._host_exts: Any = ffi.array_type(ffi.Extern, max(pre.hosts, 1))()
        self._ready = bytearray(pre.hosts)
        self._host_funcs: dict[int, CoreFunc] = {}
        #: the exports several imports take, each fetched once (``_Step.saves``)
        self._shared: Any = ffi.array_type(ffi.Extern, max(pre.shared, 1))()

    @property
    def next_index(self) -> int:
        """The index of the core instance :meth:`instantiate` makes next."""
        return len(self._inst_addrs)

    def instantiate(self, index: int) -> CoreInstance:
        """Instantiate core instance ``index`` (in order: 0, 1, ...).

        Raises :class:`LinkError` if wasmtime refuses the imports (a type
        that does not match), :class:`CoreTrap` if the start function traps.
        """
        if index != len(self._inst_addrs) or index >= len(self._pre.steps):
            raise EngineError(
                f"core instances are instantiated in order: expected {len(self._inst_addrs)}, "
                f"got {index}"
            )
        step = self._pre.steps[index]
        store = self.store
        ready = self._ready
        if self._plain is not None and step.hosts:
            self._make_plain(index, self._plain)
        for _, h in step.hosts:
            if not ready[h]:
                self._materialize(h)
        ctx = store._ctx()  # after the host callback, which may have run anything
        cells = self._pre._cells
        if cells.lock.acquire(blocking=False):
            try:
                return self._instantiate(step, ctx, step.scratch, cells)
            finally:
                cells.lock.release()
        # Another fill of the same pre is under way (a start function instantiating the
        # same component, or another thread): fill an array of its own.
        return self._instantiate(step, ctx, step.array_type(), None)

    def _instantiate(self, step: _Step, ctx: int, arr: Any, cells: _Cells | None) -> CoreInstance:
        store = self.store
        state = store._state
        base = ctypes.addressof(arr)
        addrs = self._inst_addrs
        compiled = _fill_exports()
        if compiled is not None:
            fill_exports, get_address = compiled
            missing = fill_exports(get_address, ctx, step.exports, addrs, base)
            if missing >= 0:
                _, source, name = step.exports[missing]
                raise LinkError(
                    f"core instance {source} has no export {name.decode('utf-8', 'replace')!r}"
                )
        elif cells is not None:
            cells.ctx.value = ctx
            for j in step.users:
                cells.instances[j].value = addrs[j]
            get = ffi.instance_export_get_untyped
            for args in step.calls:
                if not get(*args):
                    self._missing(step, args)
        else:
            get_typed = ffi.instance_export_get
            for off, source, name in step.exports:
                if not get_typed(ctx, addrs[source], name, len(name), base + off):
                    raise LinkError(
                        f"core instance {source} has no export {name.decode('utf-8', 'replace')!r}"
                    )
        if step.saves or step.loads:
            shared = ctypes.addressof(self._shared)
            copy = _copy_hosts()
            if copy is not None:
                if step.saves:
                    copy(step.saves, base, shared, _EXTERN_SIZE)
                if step.loads:
                    copy(step.loads, shared, base, _EXTERN_SIZE)
            else:
                for off, k in step.saves:
                    ctypes.memmove(shared + off, base + k * _EXTERN_SIZE, _EXTERN_SIZE)
                for off, j in step.loads:
                    ctypes.memmove(base + off, shared + j * _EXTERN_SIZE, _EXTERN_SIZE)
        if step.hosts:
            hosts_base = ctypes.addressof(self._host_exts)
            copy_hosts = _copy_hosts()
            if copy_hosts is not None:
                copy_hosts(step.hosts, hosts_base, base, _EXTERN_SIZE)
            else:
                for off, h in step.hosts:
                    ctypes.memmove(base + off, hosts_base + h * _EXTERN_SIZE, _EXTERN_SIZE)
        module = step.module
        if state.async_required and module.runs_start:
            # Its start function may reach an async host function, which must run
            # on a call future; a module without one runs no code while being
            # instantiated, and takes the synchronous path below.
            raw = instantiate_blocking(store, module, arr)
            self._instances.append(raw)
            addrs.append(ctypes.addressof(raw))
            return CoreInstance._wrap(store, raw, module)
        inst = ffi.InstanceStruct()
        trap = ctypes.c_void_p(0)
        err = ffi.instance_new(
            ctx, module._ptr, base, step.n, ctypes.addressof(inst), ctypes.addressof(trap)
        )
        if err or trap.value:
            instantiation_failure(state, module, trap.value or 0, err or 0)
        self._instances.append(inst)
        addrs.append(ctypes.addressof(inst))
        return CoreInstance._wrap(store, inst, module)

    @staticmethod
    def _missing(step: _Step, args: tuple[Any, ...]) -> NoReturn:
        for (_, source, name), call in zip(step.exports, step.calls, strict=True):
            if call is args:
                raise LinkError(
                    f"core instance {source} has no export {name.decode('utf-8', 'replace')!r}"
                )
        raise LinkError(f"core module {step.module.name}: an import is missing")

    def host_func(self, index: int) -> CoreFunc:
        """Host function ``index`` of this store as a :class:`CoreFunc` (made on demand)."""
        found = self._host_funcs.get(index)
        if found is not None:
            return found
        if not self._ready[index]:
            plain = self._plain
            if (
                plain is not None
                and plain.signatures[index] is not None
                and index not in plain.taken
            ):
                self._materialize_plain(index, plain)
            if not self._ready[index]:
                self._materialize(index)
        found = self._host_funcs.get(index)
        if found is None:
            ext = self._host_exts[index]
            func = ffi.FuncStruct()
            ctypes.pointer(func)[0] = ext.of.func
            found = self._host_funcs[index] = CoreFunc._wrap(self.store, func)
        return found

    def release(self) -> None:
        """Drop the host bindings once the store is closed (idempotent).

        The binding callback and the materialized host functions refer back to
        their owner, so holding them would keep a closed instance alive in a
        reference cycle; afterwards :meth:`host_func` refuses like any use of a
        closed store.
        """
        self._host = _closed_host
        self._plain = None
        self._host_funcs.clear()

    def _materialize(self, index: int) -> None:
        binding = self._host(index)
        store = self.store
        ctx = store._ctx()
        slot = ctypes.addressof(self._host_exts) + index * _EXTERN_SIZE
        if isinstance(binding, CoreFunc):
            if binding.store is not store:
                raise ValueError(f"host function {index} belongs to another store")
            ext = binding._as_extern()  # alive until copied
            ctypes.memmove(slot, ctypes.addressof(ext), _EXTERN_SIZE)
            self._host_funcs[index] = binding
        elif isinstance(binding, DeferredHost):
            params = check_valtypes(binding.params, f"host function {index} params")
            results = check_valtypes(binding.results, f"host function {index} results")
            ffi.Extern.from_address(slot).kind = ffi.EXTERN_FUNC
            new_host_func(
                store._state,
                ctx,
                params,
                results,
                None,
                out_addr=slot + _OF_OFFSET,
                build=binding.build,
            )
        else:
            raise TypeError(
                f"host function {index}: expected a CoreFunc or a DeferredHost, "
                f"got {type(binding).__name__}"
            )
        self._ready[index] = 1

    def _base(self, plain: PlainHosts) -> int:
        base = self._plain_base
        if not base:
            base = self._plain_base = plain_host_base(self.store._state, plain.build)
        return base

    def _make_plain(self, index: int, plain: PlainHosts) -> None:
        """Make the plain host functions core instance ``index`` imports (see
        :class:`PlainHosts`), in one call of the compiled path when it is built."""
        state = self.store._state
        items, callbacks = self._pre._items(index, state, plain.signatures)
        ready, taken = self._ready, plain.taken
        todo = tuple(it for it in items if not ready[it[0]] and it[0] not in taken)
        if not todo:
            return
        ctx = self.store._ctx()
        base = self._base(plain)
        exts = ctypes.addressof(self._host_exts)
        compiled = _new_host_funcs()
        if compiled is not None:
            new_host_funcs, new_address = compiled
            new_host_funcs(new_address, ctx, todo, base, ready, exts, _EXTERN_SIZE, _OF_OFFSET)
            return
        cbs = dict(zip((it[0] for it in items), callbacks, strict=True))
        for h, ty_addr, _, tag in todo:
            self._new_plain(ctx, base, h, (ty_addr, cbs[h], tag))

    def _materialize_plain(self, index: int, plain: PlainHosts) -> None:
        """Make plain host function ``index`` from its signature (see :class:`PlainHosts`)."""
        sig = plain.signatures[index]
        assert sig is not None
        state = self.store._state
        ctx = self.store._ctx()
        cb, tag, ty_addr = self._pre._kind(state, sig, index)
        self._new_plain(ctx, self._base(plain), index, (ty_addr, cb, tag))

    def _new_plain(self, ctx: int, base: int, index: int, kind: tuple[int, Any, int]) -> None:
        ty_addr, cb, tag = kind
        slot = ctypes.addressof(self._host_exts) + index * _EXTERN_SIZE
        ffi.Extern.from_address(slot).kind = ffi.EXTERN_FUNC
        env = base | index << ENV_TAG_BITS | tag
        ffi.func_new_unchecked(ctx, ty_addr, cb, env, None, slot + _OF_OFFSET)
        self._ready[index] = 1


#: ``[copy_hosts]`` of the compiled call path once looked up (``[None]``: not built)
_COPY_HOSTS: list[Any] = []


def _copy_hosts() -> Any:
    """The compiled copy of host externs into an import array (``None``: not built)."""
    if not _COPY_HOSTS:
        from ._accelerator import ACCEL

        _COPY_HOSTS.append(getattr(ACCEL, "copy_hosts", None))
    return _COPY_HOSTS[0]


#: ``[(new_host_funcs, address of wasmtime_func_new_unchecked)]`` of the compiled
#: call path once looked up (``[None]``: not built or not used)
_NEW_HOST_FUNCS: list[tuple[Any, int] | None] = []


def _new_host_funcs() -> tuple[Any, int] | None:
    if not _NEW_HOST_FUNCS:
        from ._accelerator import ACCEL

        found = getattr(ACCEL, "new_host_funcs", None)
        address = ffi.address(ffi.func_new_unchecked)
        _NEW_HOST_FUNCS.append((found, address) if found is not None and address else None)
    return _NEW_HOST_FUNCS[0]


def _closed_host(_index: int) -> NoReturn:
    raise StoreClosedError("the store is closed")
