"""Which call path is active: the compiled one (``_accel.c``) or pure Python.

architecture.md §5.  The extension ``polyengine.engine._accel`` is built at
install time when a C compiler and Python's headers are present; it is used
unless ``POLYENGINE_PURE=1`` is set.  It reaches libwasmtime through the
addresses of the functions the ``wasmtime`` package already loaded, handed to
it here once, so there is one copy of the library and no header beyond
Python's.  Both paths behave identically (``runtime/tests/engine`` checks it);
the compiled one is only faster.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import struct
from collections.abc import Callable
from types import ModuleType
from typing import Any

from . import _ffi as ffi
from . import _interrupt, _reaper
from ._store import HOST_ENTRIES, _StoreState, plain_entry
from ._values import normalize, raw_struct

__all__ = ["ACCEL", "call_path", "memory_parts", "value_kernels"]

#: the core type of each unsigned slot format
_TYPE_OF = {"I": "i32", "Q": "i64", "f": "f32", "d": "f64"}
#: values of ``POLYENGINE_PURE`` that force the pure path
_TRUE = frozenset({"1", "true", "yes", "on"})


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get("POLYENGINE_PURE", "").strip().lower() in _TRUE:
        return None, "pure Python (POLYENGINE_PURE=1)"
    try:
        _accel = importlib.import_module("polyengine.engine._accel")
    except ImportError:
        return None, "pure Python (the compiled call path is not built)"

    # The layouts the extension declares for itself, checked against the package's.
    if ffi.VAL_RAW_SIZE != 16 or ctypes.sizeof(ffi.FuncStruct) != 16:
        return None, "pure Python (unexpected wasmtime C layouts)"

    def address(fn: Any) -> int:
        return int(ctypes.cast(fn, ctypes.c_void_p).value or 0)

    try:
        _accel.init(
            1,
            address(ffi.func_call_unchecked),
            address(ffi.trap_new),
            HOST_ENTRIES,
            pack_results_slow,
            _StoreState,
            _StoreState.__dict__["host_depth"],
        )
        _accel.init_plain(plain_entry)
    except (AttributeError, ImportError, TypeError, ValueError) as exc:  # another version
        return None, f"pure Python (the compiled call path does not fit: {exc})"
    return _accel, "compiled (polyengine.engine._accel)"


def pack_results_slow(addr: int, rformats: str, out: Any) -> None:
    """A host body's results into the slots at ``addr``, exactly as the pure trampoline.

    The compiled trampoline packs plain results itself (exact ``int`` in
    range, ``float``) and hands everything else here.
    """
    results = tuple(_TYPE_OF[f] for f in rformats)
    rs = raw_struct(results)
    buf = (ctypes.c_ubyte * (ffi.VAL_RAW_SIZE * max(len(results), 1))).from_address(addr)
    try:
        rs.pack_into(buf, 0, *out)
    except (struct.error, TypeError):
        rs.pack_into(buf, 0, *normalize(results, list(out), "host function result"))


#: the extension module when the compiled path is active, else ``None``
ACCEL: ModuleType | None
ACCEL, _DESCRIPTION = _load()
_reaper.set_native(ACCEL)  # the reaper thread's loop in C when the extension has it
_interrupt.set_native(ACCEL)  # so are the epoch tickers' loops


def call_path() -> str:
    """Which call path this process uses, in words (``polyengine --version`` prints it)."""
    return _DESCRIPTION


def value_kernels() -> tuple[Any, Any] | None:
    """The compiled value codecs' types ``(Lower, LiftSpilled)`` (``_accel_values.c``).

    ``None`` on the pure path; ``abi/kernels.py`` builds their programs.
    """
    if ACCEL is None or not _GUEST_MEMORY:
        return None
    return ACCEL.Lower, ACCEL.LiftSpilled


def register_guest_memory(cls: type) -> Callable[[int, int], int]:
    """Give the compiled value codecs the engine memory type and its byte access;
    return how the memory reads its size: ``(ctx, memory address) -> bytes``.

    Called by ``_memory.py`` once ``GuestMemory`` exists: the codecs read such a
    memory's bytes through the addresses of ``wasmtime_memory_data`` and
    ``wasmtime_memory_data_size`` the ``wasmtime`` package loaded, and so does
    the returned function (the ctypes one on the pure path).
    """
    init = getattr(ACCEL, "init_values", None)
    size: Callable[[int, int], int] = ffi.memory_data_size
    if init is not None:

        def address(fn: Any) -> int:
            return int(ctypes.cast(fn, ctypes.c_void_p).value or 0)

        init(cls, address(ffi.memory_data), address(ffi.memory_data_size))
        size = getattr(ACCEL, "memory_size", size)
    _GUEST_MEMORY[:] = [cls]
    return size


def memory_parts(memory: object) -> tuple[Any, int] | None:
    """``(store state, address)`` of an engine memory, for the compiled value codecs.

    The compiled codecs read the memory's bytes through them (only while the
    state's ``ctx`` is set); ``None`` for any other memory object.
    """
    if not _GUEST_MEMORY or type(memory) is not _GUEST_MEMORY[0]:
        return None
    found: tuple[Any, int] = (memory._state, memory._addr)  # type: ignore[attr-defined]
    return found


#: the engine memory type, once registered (``_memory.py``), with the codecs' access to it
_GUEST_MEMORY: list[type] = []
