"""ctypes prototypes over the libwasmtime shipped in the ``wasmtime`` package.

The package's own bindings (``wasmtime._bindings``) type every pointer, which
makes each foreign call pay for argument checks.  The functions on our call
paths are declared again here as fresh function-pointer objects taking plain
addresses (``c_void_p``), so the package's own declarations stay untouched.
Everything that is not on a hot path keeps using the package's bindings.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    c_bool,
    c_char_p,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint64,
    c_void_p,
)
from typing import Any

from wasmtime import _ffi as wffi

__all__ = ["WASMTIME_VERSION"]



def _wasmtime_version() -> str:
    """The installed wasmtime-py's version (it keys the caches of compiled code).

    Read from the name of its one ``wasmtime-<version>.dist-info`` folder
    beside the package: importing :mod:`importlib.metadata` would cost every
    process ~10 ms of start-up. Anything else (no folder, several) asks
    :mod:`importlib.metadata`.
    """
    site = os.path.dirname(os.path.dirname(os.path.abspath(wffi.__file__)))
    try:
        found = [
            name[len("wasmtime-") : -len(".dist-info")]
            for name in os.listdir(site)
            if name.startswith("wasmtime-") and name.endswith(".dist-info")
        ]
    except OSError:
        found = []
    if len(found) == 1:
        return found[0]
    from importlib import metadata

    return metadata.version("wasmtime")


WASMTIME_VERSION: str = _wasmtime_version()

dll: Any = wffi.dll

# Layout of the C structures (checked against the package's declarations).
VAL_RAW_SIZE = ctypes.sizeof(wffi.wasmtime_val_raw_t)

#: array types by (item type, length), kept: ctypes remembers an array type only
#: while it is alive, and one made again per instance costs a class each time
#: (and leaves a class, freed only by the cyclic collector, per instance)
_ARRAY_TYPES: dict[tuple[Any, int], Any] = {}
_ARRAY_TYPES_LIMIT = 1024


def array_type(item: Any, length: int) -> Any:
    """``item * length``, the same type object every time."""
    key = (item, length)
    found = _ARRAY_TYPES.get(key)
    if found is None:
        found = item * length
        if len(_ARRAY_TYPES) < _ARRAY_TYPES_LIMIT:
            _ARRAY_TYPES[key] = found
    return found


def byte_array(length: int) -> Any:
    """A new zeroed ``c_ubyte`` array of ``length`` bytes (its type made once)."""
    return array_type(ctypes.c_ubyte, length)()
VAL_SIZE = ctypes.sizeof(wffi.wasmtime_val_t)
VAL_PAYLOAD = wffi.wasmtime_val_t.of.offset
assert VAL_RAW_SIZE == 16 and VAL_SIZE == 32 and VAL_PAYLOAD == 8

# wasmtime_valkind_t values.
KIND_I32 = 0
KIND_I64 = 1
KIND_F32 = 2
KIND_F64 = 3

# wasmtime_extern_kind_t values.
EXTERN_FUNC = 0
EXTERN_GLOBAL = 1
EXTERN_TABLE = 2
EXTERN_MEMORY = 3
EXTERN_TAG = 5

# The C structures, typed loosely: their field annotations in the package's
# bindings do not describe what ctypes returns.
Extern: Any = wffi.wasmtime_extern_t
FuncStruct: Any = wffi.wasmtime_func_t
MemoryStruct: Any = wffi.wasmtime_memory_t
TableStruct: Any = wffi.wasmtime_table_t
GlobalStruct: Any = wffi.wasmtime_global_t
TagStruct: Any = wffi.wasmtime_tag_t
InstanceStruct: Any = wffi.wasmtime_instance_t
Val: Any = wffi.wasmtime_val_t
ByteVec: Any = wffi.wasm_byte_vec_t
Continuation: Any = wffi.wasmtime_async_continuation_t


def _fn(name: str, restype: Any, *argtypes: Any) -> Any:
    """A new foreign function object for ``name`` (GIL released while it runs)."""
    f = dll._FuncPtr((name, dll))
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


def _untyped(name: str, restype: Any) -> Any:
    """A foreign function object for ``name`` that declares no argument types.

    ctypes passes each argument of a call as it is: a ctypes object by its
    value, a Python ``int`` as a C ``int`` (truncated to 32 bits). Only for
    calls whose every argument is a prebuilt ctypes object of the right type.
    """
    f = dll._FuncPtr((name, dll))
    f.restype = restype
    return f


def _untyped_holding_gil(name: str, restype: Any) -> Any:
    """:func:`_untyped`, but the GIL stays held for the call (for short calls
    that never call back into Python: releasing and retaking the GIL would
    cost more than the call)."""
    lib = ctypes.PyDLL(dll._name, handle=dll._handle)
    f = lib._FuncPtr((name, lib))
    f.restype = restype
    return f


P = c_void_p

# Host callbacks.  The unchecked callback returns a ``wasm_trap_t*`` (0 = ok).
UNCHECKED_CALLBACK = CFUNCTYPE(c_size_t, P, P, P, c_size_t)
FINALIZER = CFUNCTYPE(None, P)
ASYNC_CALLBACK = CFUNCTYPE(None, P, P, P, c_size_t, P, c_size_t, P, P)
CONTINUATION_CALLBACK = CFUNCTYPE(c_bool, P)

store_new = _fn("wasmtime_store_new", P, P, P, P)
store_context = _fn("wasmtime_store_context", P, P)
store_delete = _fn("wasmtime_store_delete", None, P)
context_set_fuel = _fn("wasmtime_context_set_fuel", P, P, c_uint64)
context_get_fuel = _fn("wasmtime_context_get_fuel", P, P, POINTER(c_uint64))
context_set_epoch_deadline = _fn("wasmtime_context_set_epoch_deadline", None, P, c_uint64)
# ``(context, data, *delta, *kind) -> wasmtime_error_t*``: called when a store's epoch
# deadline is reached; a NULL error continues with the deadline ``delta`` ticks on.
EPOCH_CALLBACK = CFUNCTYPE(c_size_t, P, P, POINTER(c_uint64), POINTER(c_uint8))
store_epoch_deadline_callback = _fn(
    "wasmtime_store_epoch_deadline_callback", None, P, EPOCH_CALLBACK, P, P
)
# (store, memory_size, table_elements, instances, tables, memories); -1 keeps the default.
store_limiter = _fn("wasmtime_store_limiter", None, P, c_int64, c_int64, c_int64, c_int64, c_int64)
error_new = _fn("wasmtime_error_new", c_size_t, c_char_p)

func_new_unchecked = _fn("wasmtime_func_new_unchecked", None, P, P, UNCHECKED_CALLBACK, P, P, P)
func_call_unchecked = _fn("wasmtime_func_call_unchecked", P, P, P, P, c_size_t, P)
# The same entry point for the hot path: called only as
# ``func_call_unchecked_untyped(*args)`` with the tuple of prebuilt ctypes
# arguments a CoreFunc builds for itself (``CoreFunc._call_args``), which ctypes
# passes without a conversion or a type check per argument and call.
func_call_unchecked_untyped = _untyped("wasmtime_func_call_unchecked", P)
func_type = _fn("wasmtime_func_type", P, P, P)
func_call_async = _fn("wasmtime_func_call_async", P, P, P, P, c_size_t, P, c_size_t, P, P)
call_future_poll = _fn("wasmtime_call_future_poll", c_bool, P)
call_future_delete = _fn("wasmtime_call_future_delete", None, P)

instance_new = _fn("wasmtime_instance_new", P, P, P, P, c_size_t, P, P)
instance_export_get = _fn("wasmtime_instance_export_get", c_bool, P, P, c_char_p, c_size_t, P)
# The same entry point for filling import vectors (``_pre.py``): called only
# with tuples of prebuilt ctypes arguments of exactly the declared types.
instance_export_get_untyped = _untyped_holding_gil("wasmtime_instance_export_get", c_bool)

linker_new = _fn("wasmtime_linker_new", P, P)
linker_delete = _fn("wasmtime_linker_delete", None, P)
linker_allow_shadowing = _fn("wasmtime_linker_allow_shadowing", None, P, c_bool)
linker_define = _fn("wasmtime_linker_define", P, P, P, c_char_p, c_size_t, c_char_p, c_size_t, P)
linker_define_async_func = _fn(
    "wasmtime_linker_define_async_func",
    P,
    P,
    c_char_p,
    c_size_t,
    c_char_p,
    c_size_t,
    P,
    ASYNC_CALLBACK,
    P,
    P,
)
linker_get = _fn("wasmtime_linker_get", c_bool, P, P, c_char_p, c_size_t, c_char_p, c_size_t, P)
linker_instantiate_async = _fn("wasmtime_linker_instantiate_async", P, P, P, P, P, P, P)

memory_data = _fn("wasmtime_memory_data", c_size_t, P, P)
memory_data_size = _fn("wasmtime_memory_data_size", c_size_t, P, P)
engine_increment_epoch = _fn("wasmtime_engine_increment_epoch", None, P)
memory_grow = _fn("wasmtime_memory_grow", P, P, P, c_uint64, POINTER(c_uint64))
memory_page_size = _fn("wasmtime_memory_page_size", c_uint64, P, P)
memory_type = _fn("wasmtime_memory_type", P, P, P)
memorytype_is64 = _fn("wasmtime_memorytype_is64", c_bool, P)
memorytype_delete = _fn("wasm_memorytype_delete", None, P)

table_new = _fn("wasmtime_table_new", P, P, P, P, P)
memory_new = _fn("wasmtime_memory_new", P, P, P, P)
global_new = _fn("wasmtime_global_new", P, P, P, P, P)
table_get = _fn("wasmtime_table_get", c_bool, P, P, c_uint64, P)
table_set = _fn("wasmtime_table_set", P, P, P, c_uint64, P)
table_size = _fn("wasmtime_table_size", c_uint64, P, P)
table_grow = _fn("wasmtime_table_grow", P, P, P, c_uint64, P, POINTER(c_uint64))

global_get = _fn("wasmtime_global_get", None, P, P, P)
global_set = _fn("wasmtime_global_set", P, P, P, P)

trap_new = _fn("wasmtime_trap_new", c_size_t, c_char_p, c_size_t)
trap_code = _fn("wasmtime_trap_code", c_bool, P, POINTER(c_uint8))
trap_message = _fn("wasm_trap_message", None, P, P)
trap_delete = _fn("wasm_trap_delete", None, P)
error_message = _fn("wasmtime_error_message", None, P, P)
error_delete = _fn("wasmtime_error_delete", None, P)
byte_vec_delete = _fn("wasm_byte_vec_delete", None, P)


def address(obj: Any) -> int:
    """The address held by a ctypes pointer object (0 for NULL)."""
    value = ctypes.cast(obj, c_void_p).value
    return int(value or 0)


def _vec_text(vec: Any, strip_nul: bool) -> str:
    size = int(vec.size)
    if not size or not vec.data:
        return ""
    raw = ctypes.string_at(vec.data, size)
    if strip_nul and raw.endswith(b"\0"):
        raw = raw[:-1]
    return raw.decode("utf-8", "replace")


def take_error_message(err: int) -> str:
    """The message of an owned ``wasmtime_error_t*``, deleting the error."""
    vec = ByteVec()
    error_message(err, ctypes.byref(vec))
    try:
        return _vec_text(vec, strip_nul=False)
    finally:
        byte_vec_delete(ctypes.byref(vec))
        error_delete(err)


_TRAP_CODE_NAMES: dict[int, str] = {
    member.value: member.name.removeprefix("WASMTIME_TRAP_CODE_").lower()
    for member in wffi.wasmtime_trap_code_enum
}
# Shorter spellings for the two most common ones, and the limit codes of ``Limits``.
_TRAP_CODE_NAMES[wffi.wasmtime_trap_code_enum.WASMTIME_TRAP_CODE_OUT_OF_FUEL.value] = "out-of-fuel"

_TRAP_CODE_NAMES[wffi.wasmtime_trap_code_enum.WASMTIME_TRAP_CODE_UNREACHABLE_CODE_REACHED.value] = (
    "unreachable"
)


def take_trap(trap: int) -> tuple[str, str | None]:
    """Message and code name of an owned ``wasm_trap_t*``, deleting the trap."""
    vec = ByteVec()
    trap_message(trap, ctypes.byref(vec))
    try:
        message = _vec_text(vec, strip_nul=True)
    finally:
        byte_vec_delete(ctypes.byref(vec))
    code = c_uint8(0)
    name: str | None = None
    if trap_code(trap, ctypes.byref(code)):
        name = _TRAP_CODE_NAMES.get(code.value, f"code_{code.value}")
    trap_delete(trap)
    return message, name


def new_trap(message: str) -> int:
    """A new owned ``wasm_trap_t*`` carrying ``message``."""
    data = message.encode("utf-8", "replace")
    return int(trap_new(data, len(data)))
