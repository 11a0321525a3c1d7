"""Linear memories, tables and globals of a store.

A :class:`GuestMemory` hands out a writable ``memoryview`` over the guest's
bytes, built from the data pointer and length; it is re-derived only when
the memory's size changed (memories never move in our engine configuration,
so an older view stays valid but may be shorter than the memory).  A view
(or a slice of one) kept after the store is closed still points at mapped
memory: the store's deletion waits until the last view is gone.

Accesses through ``read``/``write``/``check`` are bounds-checked and trap
(``CoreTrap`` with code ``memory_out_of_bounds``) like a guest access would
(``CanonicalABI.md`` §"Loading": ``trap_if`` on out-of-range pointers).
"""

from __future__ import annotations

import ctypes
from typing import Any, ClassVar, Self

import wasmtime

from . import _ffi as ffi
from ._accelerator import register_guest_memory
from ._core import CoreFunc
from ._errors import CoreTrap, EngineError
from ._store import EngineStore, _StoreState
from ._values import VALTYPES, normalize

__all__ = ["CoreGlobal", "CoreTable", "GuestMemory", "new_global", "new_memory", "new_table"]


def _out_of_bounds(ptr: int, n: int, size: int) -> CoreTrap:
    return CoreTrap(
        f"out of bounds memory access: {n} bytes at {ptr} in a memory of {size} bytes",
        "memory_out_of_bounds",
    )


class _StoreItem:
    """What every memory, table, global and tag of a store shares.

    ``_item`` is our own copy of the C structure (``_STRUCT``) naming the item
    in its store, ``_addr`` its address; ``_as_extern`` hands it to an
    instantiation as the extern of kind ``_KIND`` (field ``_FIELD``).
    """

    __slots__ = ("_addr", "_item", "_state", "store")

    _STRUCT: ClassVar[Any]
    _KIND: ClassVar[int]
    _FIELD: ClassVar[str]

    store: EngineStore
    _state: _StoreState
    _item: Any
    _addr: int

    def __init__(self) -> None:
        raise TypeError(f"{type(self).__name__} objects come from instance exports")

    @classmethod
    def _wrap(cls, store: EngineStore, raw: Any) -> Self:
        self = object.__new__(cls)
        self.store = store
        self._state = store._state
        item = cls._STRUCT()
        ctypes.pointer(item)[0] = raw
        self._item = item
        self._addr = ctypes.addressof(item)
        return self

    def _ctx(self) -> int:
        ctx = self._state.ctx
        if not ctx:
            self._state.raise_closed()
        return ctx

    def _as_extern(self) -> Any:
        ext = ffi.Extern()
        ext.kind = self._KIND
        setattr(ext.of, self._FIELD, self._item)
        return ext


class GuestMemory(_StoreItem):
    """A core linear memory of one store."""

    __slots__ = ("__weakref__", "_is64", "_view", "_view_size")

    _STRUCT = ffi.MemoryStruct
    _KIND = ffi.EXTERN_MEMORY
    _FIELD = "memory"

    _view: memoryview | None  # cached view, valid for _view_size bytes
    _view_size: int
    _is64: bool | None  # the memory type's answer, asked once (a memory keeps its type)

    @classmethod
    def _wrap(cls, store: EngineStore, raw: Any) -> Self:
        self = super()._wrap(store, raw)
        self._view = None
        self._view_size = -1
        self._is64 = None
        store._state.memories.add(self)
        return self

    def _ctx(self) -> int:
        ctx = self._state.ctx
        if not ctx:
            self._view = None
            self._state.raise_closed()
        return ctx

    def size(self) -> int:
        """Current size in bytes."""
        return int(ffi.memory_data_size(self._ctx(), self._addr))

    def page_size(self) -> int:
        return int(ffi.memory_page_size(self._ctx(), self._addr))

    def is_64(self) -> bool:
        """Whether this is a 64-bit memory (memory64: ``i64`` addresses)."""
        found = self._is64
        if found is not None:
            return found
        ty = ffi.memory_type(self._ctx(), self._addr)
        if not ty:
            raise RuntimeError("wasmtime returned no type for a memory")
        try:
            found = self._is64 = bool(ffi.memorytype_is64(ty))
        finally:
            ffi.memorytype_delete(ty)
        return found

    def view(self) -> memoryview:
        """A writable byte view (format ``'B'``) of the whole memory, as of now."""
        ctx = self._ctx()
        n = _data_size(ctx, self._addr)
        mv = self._view
        if mv is not None and n == self._view_size:
            return mv
        if n == 0:
            mv = memoryview(bytearray())
        else:
            base = ffi.memory_data(ctx, self._addr)
            buffer = (ctypes.c_ubyte * n).from_address(base)
            self._state.track_view(buffer)
            mv = memoryview(buffer).cast("B")
        self._view = mv
        self._view_size = n
        return mv

    def check(self, ptr: int, n: int) -> None:
        """Trap unless ``[ptr, ptr + n)`` lies inside the memory."""
        size = ffi.memory_data_size(self._ctx(), self._addr)
        if ptr < 0 or n < 0 or ptr + n > size:
            raise _out_of_bounds(ptr, n, size)

    def read(self, ptr: int, n: int) -> bytes:
        """A copy of ``n`` bytes at ``ptr`` (bounds-checked)."""
        mv = self.view()
        if ptr < 0 or n < 0 or ptr + n > len(mv):
            raise _out_of_bounds(ptr, n, len(mv))
        return mv[ptr : ptr + n].tobytes()

    def write(self, ptr: int, data: bytes | bytearray | memoryview) -> None:
        """Copy ``data`` to ``ptr`` (bounds-checked)."""
        mv = self.view()
        n = len(data) if not isinstance(data, memoryview) else data.nbytes
        if ptr < 0 or ptr + n > len(mv):
            raise _out_of_bounds(ptr, n, len(mv))
        mv[ptr : ptr + n] = data

    def grow(self, delta_pages: int) -> int:
        """Grow by ``delta_pages``; return the previous size in pages, or -1 on failure."""
        if delta_pages < 0:
            raise ValueError("cannot grow a memory by a negative amount")
        prev = ctypes.c_uint64(0)
        err = ffi.memory_grow(self._ctx(), self._addr, delta_pages, ctypes.byref(prev))
        if err:
            ffi.take_error_message(err)
            return -1
        return int(prev.value)

    def __repr__(self) -> str:
        return "<GuestMemory>" if self.store.closed else f"<GuestMemory {self.size()} bytes>"


#: ``(ctx, memory address) -> size in bytes``: the compiled path's, else ctypes'
_data_size = register_guest_memory(GuestMemory)  # the compiled value codecs' memory access

_FUNCREF = 5  # WASMTIME_FUNCREF


class CoreTable(_StoreItem):
    """A core ``funcref`` table of one store (for the canonical ABI's indirect trampolines)."""

    __slots__ = ()

    _STRUCT = ffi.TableStruct
    _KIND = ffi.EXTERN_TABLE
    _FIELD = "table"

    def size(self) -> int:
        return int(ffi.table_size(self._ctx(), self._addr))

    def _funcref(self, func: CoreFunc | None) -> Any:
        val = ffi.Val()
        val.kind = _FUNCREF
        if func is not None:
            if not isinstance(func, CoreFunc):
                raise TypeError(
                    f"a funcref table holds CoreFunc or None, not {type(func).__name__}"
                )
            if func.store is not self.store:
                raise ValueError("the function belongs to another store")
            val.of.funcref = func._func
        return val

    def get(self, index: int) -> CoreFunc | None:
        """The function at ``index`` (``None`` for a null entry); trap if out of bounds."""
        ctx = self._ctx()
        val = ffi.Val()
        if index < 0 or not ffi.table_get(ctx, self._addr, index, ctypes.addressof(val)):
            raise CoreTrap(f"table index {index} out of bounds", "table_out_of_bounds")
        if int(val.kind) != _FUNCREF:
            raise EngineError("only funcref tables are supported")
        if val.of.funcref.store_id == 0:
            return None
        func = ffi.FuncStruct()
        ctypes.pointer(func)[0] = val.of.funcref
        return CoreFunc._wrap(self.store, func)

    def set(self, index: int, func: CoreFunc | None) -> None:
        """Store ``func`` (or null) at ``index``; trap if out of bounds."""
        ctx = self._ctx()
        val = self._funcref(func)
        if index < 0:
            raise CoreTrap(f"table index {index} out of bounds", "table_out_of_bounds")
        err = ffi.table_set(ctx, self._addr, index, ctypes.addressof(val))
        if err:
            message = ffi.take_error_message(err)
            raise CoreTrap(message.strip().splitlines()[0], "table_out_of_bounds")

    def grow(self, delta: int, init: CoreFunc | None = None) -> int:
        """Grow by ``delta`` entries set to ``init``; return the old size, or -1."""
        if delta < 0:
            raise ValueError("cannot grow a table by a negative amount")
        ctx = self._ctx()
        val = self._funcref(init)
        prev = ctypes.c_uint64(0)
        err = ffi.table_grow(ctx, self._addr, delta, ctypes.addressof(val), ctypes.byref(prev))
        if err:
            ffi.take_error_message(err)
            return -1
        return int(prev.value)


_GLOBAL_KINDS = {ffi.KIND_I32: "i32", ffi.KIND_I64: "i64", ffi.KIND_F32: "f32", ffi.KIND_F64: "f64"}


class CoreGlobal(_StoreItem):
    """A core global of a numeric type, read and written as a flat core value."""

    __slots__ = ()

    _STRUCT = ffi.GlobalStruct
    _KIND = ffi.EXTERN_GLOBAL
    _FIELD = "global_"

    def _read(self) -> Any:
        val = ffi.Val()
        ffi.global_get(self._ctx(), self._addr, ctypes.addressof(val))
        if int(val.kind) not in _GLOBAL_KINDS:
            raise EngineError("only numeric globals are supported")
        return val

    @property
    def valtype(self) -> str:
        return _GLOBAL_KINDS[int(self._read().kind)]

    def get(self) -> int | float:
        """The value (``i32``/``i64`` as unsigned ints)."""
        val = self._read()
        kind = int(val.kind)
        if kind == ffi.KIND_I32:
            return int(val.of.i32) & 0xFFFF_FFFF
        if kind == ffi.KIND_I64:
            return int(val.of.i64) & 0xFFFF_FFFF_FFFF_FFFF
        if kind == ffi.KIND_F32:
            return float(val.of.f32)
        return float(val.of.f64)

    def set(self, value: int | float) -> None:
        """Set a mutable global; ``EngineError`` if it is immutable."""
        t = _GLOBAL_KINDS[int(self._read().kind)]
        val = _numeric_val(t, normalize((t,), (value,), "global value")[0])
        err = ffi.global_set(self._ctx(), self._addr, ctypes.addressof(val))
        if err:
            raise EngineError(f"cannot set global: {ffi.take_error_message(err)}")


def new_memory(store: EngineStore, min_pages: int, max_pages: int | None = None) -> GuestMemory:
    """A host-created linear memory of ``store`` (64 KiB pages)."""
    ctx = store._ctx()
    if min_pages < 0 or (max_pages is not None and max_pages < min_pages):
        raise ValueError(f"bad memory limits {min_pages}..{max_pages}")
    ty = wasmtime.MemoryType(wasmtime.Limits(min_pages, max_pages))
    mem = ffi.MemoryStruct()
    err = ffi.memory_new(ctx, ffi.address(ty.ptr()), ctypes.addressof(mem))
    if err:
        raise EngineError(f"cannot create memory: {ffi.take_error_message(err)}")
    return GuestMemory._wrap(store, mem)


def new_table(
    store: EngineStore, size: int, maximum: int | None = None, init: CoreFunc | None = None
) -> CoreTable:
    """A host-created ``funcref`` table of ``store``, every entry ``init`` (or null)."""
    ctx = store._ctx()
    if size < 0 or (maximum is not None and maximum < size):
        raise ValueError(f"bad table limits {size}..{maximum}")
    ty = wasmtime.TableType(wasmtime.ValType.funcref(), wasmtime.Limits(size, maximum))
    val = ffi.Val()
    val.kind = _FUNCREF
    if init is not None:
        if not isinstance(init, CoreFunc) or init.store is not store:
            raise ValueError("init must be a CoreFunc of the same store")
        val.of.funcref = init._func
    table = ffi.TableStruct()
    err = ffi.table_new(ctx, ffi.address(ty.ptr()), ctypes.addressof(val), ctypes.addressof(table))
    if err:
        raise EngineError(f"cannot create table: {ffi.take_error_message(err)}")
    return CoreTable._wrap(store, table)


def new_global(
    store: EngineStore, valtype: str, value: int | float, mutable: bool = True
) -> CoreGlobal:
    """A host-created numeric global of ``store``."""
    ctx = store._ctx()
    if valtype not in VALTYPES:
        raise ValueError(f"unsupported global type {valtype!r}")
    ty = wasmtime.GlobalType(getattr(wasmtime.ValType, valtype)(), mutable)
    val = _numeric_val(valtype, normalize((valtype,), (value,), "global value")[0])
    glob = ffi.GlobalStruct()
    err = ffi.global_new(ctx, ffi.address(ty.ptr()), ctypes.addressof(val), ctypes.addressof(glob))
    if err:
        raise EngineError(f"cannot create global: {ffi.take_error_message(err)}")
    return CoreGlobal._wrap(store, glob)


def _numeric_val(valtype: str, v: int | float) -> Any:
    val = ffi.Val()
    if valtype == "i32":
        val.kind = ffi.KIND_I32
        val.of.i32 = int(v) - (1 << 32) if int(v) >= 1 << 31 else int(v)
    elif valtype == "i64":
        val.kind = ffi.KIND_I64
        val.of.i64 = int(v) - (1 << 64) if int(v) >= 1 << 63 else int(v)
    elif valtype == "f32":
        val.kind = ffi.KIND_F32
        val.of.f32 = float(v)
    else:
        val.kind = ffi.KIND_F64
        val.of.f64 = float(v)
    return val


class CoreTag(_StoreItem):
    """A core exception tag: passed between instances, never called or read."""

    __slots__ = ()

    _STRUCT = ffi.TagStruct
    _KIND = ffi.EXTERN_TAG
    _FIELD = "tag"

    def __repr__(self) -> str:
        return "<CoreTag>"
