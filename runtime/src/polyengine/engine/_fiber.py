"""Calls on call futures that must not park: the blocking half of the suspension seam.

architecture.md §4.  In an async-required store every entry into the guest
from the top runs on a call future of its own (``call_blocking``,
``instantiate_blocking``); ``_async.py`` builds parkable calls on the same
layout and poll (``_FutureCall``, ``_poll_future``).  See ``_async.py`` for
the guarantees.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

from polyengine.errors import LinkError

from . import _ffi as ffi
from ._errors import CoreTrap, EngineError
from ._store import EngineStore, _StoreState, instantiation_failure, raise_call_failure
from ._values import KIND, CoreValue, normalize, val_struct

if TYPE_CHECKING:
    from ._async import ParkableCall
    from ._core import CoreFunc
    from ._module import CoreModule

__all__ = ["call_blocking", "instantiate_blocking"]


class _CallLayout:
    """Per-function layout of a call future's memory, computed once.

    One buffer per call holds, in order: the ``wasm_trap_t*`` and
    ``wasmtime_error_t*`` out-cells, the arguments and the results (both as
    ``wasmtime_val_t``).  ``blocking`` is the function's buffer for calls that
    may not park: those nest strictly (the arguments are copied when the
    future is created, results and out-cells written when it completes), so
    one buffer serves them all.
    """

    __slots__ = (
        "args_struct",
        "blocking",
        "blocking_addr",
        "kinds",
        "nresults",
        "results_off",
        "results_struct",
        "size",
    )

    def __init__(self, func: CoreFunc) -> None:
        if func._params_struct is None:
            func._not_callable()
        n, m = len(func.params), len(func.results)
        self.kinds = [KIND[t] for t in func.params]
        self.args_struct = val_struct(func.params, with_kind=True)
        self.results_struct = val_struct(func.results, with_kind=False)
        self.nresults = m
        self.results_off = 16 + ffi.VAL_SIZE * n
        self.size = self.results_off + ffi.VAL_SIZE * max(m, 1)
        self.blocking = ffi.byte_array(self.size)
        self.blocking_addr = ctypes.addressof(self.blocking)

    def pack_args(
        self, buf: ctypes.Array[ctypes.c_ubyte], func: CoreFunc, args: Sequence[CoreValue]
    ) -> None:
        kinds = self.kinds
        n = len(kinds)
        if len(args) != n:
            normalize(func.params, args, "call")  # raises the arity error
        if not n:
            return
        flat: list[CoreValue] = [0] * (2 * n)
        flat[0::2] = kinds
        flat[1::2] = args
        try:
            self.args_struct.pack_into(buf, 16, *flat)
        except struct.error:
            flat[1::2] = normalize(func.params, args, "call")
            self.args_struct.pack_into(buf, 16, *flat)


def _layout(func: CoreFunc) -> _CallLayout:
    layout = func._call_layout
    if layout is None:
        layout = func._call_layout = _CallLayout(func)
    assert isinstance(layout, _CallLayout)
    return layout


_cells = struct.Struct("<QQ")


class _FutureCall:
    """The memory and the ``wasmtime_call_future_t*`` of one call on a fiber."""

    __slots__ = ("buf", "fut", "layout", "token")

    def __init__(self, func: CoreFunc, args: Sequence[CoreValue]) -> None:
        layout = func._call_layout
        if layout is None:
            layout = _layout(func)
        assert isinstance(layout, _CallLayout)
        self.layout = layout
        buf = self.buf = ffi.byte_array(layout.size)
        layout.pack_args(buf, func, args)
        n = len(layout.kinds)
        base = ctypes.addressof(buf)
        state = func._state
        fut = ffi.func_call_async(
            state.ctx,
            func._addr,
            base + 16,
            n,
            base + layout.results_off,
            len(func.results),
            base,
            base + 8,
        )
        if not fut:
            raise EngineError("wasmtime_func_call_async failed")
        self.fut: int = fut
        token = self.token = state.next_token
        state.next_token = token + 1
        state.futures[token] = fut

    def release(self, state: _StoreState) -> None:
        """Delete the future (idempotent; a no-op once the store deleted it)."""
        fut = state.futures.pop(self.token, 0)
        self.fut = 0
        if fut:
            ffi.call_future_delete(fut)

    def outcome(self, state: _StoreState) -> list[CoreValue]:
        buf = self.buf
        trap, err = _cells.unpack_from(buf)
        if trap or err:
            _cells.pack_into(buf, 0, 0, 0)
            raise_call_failure(state, trap, err)
        return list(self.layout.results_struct.unpack_from(buf, self.layout.results_off))


_last_depth = 0  # the stack depth the previous _frame_depth() found


def _frame_depth() -> int:
    """The number of Python frames on the stack, this function's own included.

    Polls from one place repeat the same depth, so the previous answer is
    checked first (one frame lookup done in C) before walking the stack.
    """
    global _last_depth
    guess = _last_depth
    if guess:
        try:
            outermost = sys._getframe(guess - 1)
        except ValueError:
            pass  # the stack is shallower now
        else:
            if outermost.f_back is None:
                return guess
    depth = 0
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    _last_depth = depth
    return depth


def _poll_future(state: _StoreState, fut: int, current: ParkableCall | None) -> bool:
    """Poll one call future; the guest (and its host functions) run on its fiber."""
    prev = state.current_call
    state.current_call = current
    state.depth += 1
    limit = sys.getrecursionlimit()
    budget = state.fiber_budget
    clamped = limit > budget
    if clamped:
        sys.setrecursionlimit(min(limit, _frame_depth() + budget))
    try:
        return bool(ffi.call_future_poll(fut))
    finally:
        if clamped:
            sys.setrecursionlimit(limit)
        state.depth -= 1
        state.current_call = prev


def call_blocking(func: CoreFunc, args: Sequence[CoreValue]) -> list[CoreValue]:
    """``call_raw`` in an async-required store: a call future that must not park.

    Nothing can close the store or poll another call while this one runs
    (both are refused inside a guest call), so the future is not registered:
    it is always deleted before returning.
    """
    state = func._state
    layout = func._call_layout
    if layout is None:
        layout = _layout(func)
    assert isinstance(layout, _CallLayout)
    buf = layout.blocking
    layout.pack_args(buf, func, args)
    base = layout.blocking_addr
    fut = ffi.func_call_async(
        state.ctx,
        func._addr,
        base + 16,
        len(layout.kinds),
        base + layout.results_off,
        layout.nresults,
        base,
        base + 8,
    )
    if not fut:
        raise EngineError("wasmtime_func_call_async failed")
    try:
        ready = _poll_future(state, fut, None)
    finally:
        ffi.call_future_delete(fut)
    trap, err = _cells.unpack_from(buf)
    if trap or err:
        _cells.pack_into(buf, 0, 0, 0)
        raise_call_failure(state, trap, err)
    if not ready:
        raise CoreTrap(
            "a synchronous call tried to suspend (an async host function was pending)",
            "cannot_block_sync_task",
        )
    return list(layout.results_struct.unpack_from(buf, layout.results_off))


_EXTERN_SIZE = ctypes.sizeof(ffi.Extern)
#: ``[(define_imports, address of wasmtime_linker_define)]`` of the compiled call path
#: once looked up (``[None]``: not built or not used)
_DEFINE_ALL: list[tuple[Any, int] | None] = []


def _define_all() -> tuple[Any, int] | None:
    if not _DEFINE_ALL:
        from ._accelerator import ACCEL

        found = getattr(ACCEL, "define_imports", None)
        address = ctypes.cast(ffi.linker_define, ctypes.c_void_p).value or 0
        _DEFINE_ALL.append((found, address) if found is not None and address else None)
    return _DEFINE_ALL[0]


def instantiate_blocking(store: EngineStore, module: CoreModule, exts: Any) -> Any:
    """``instantiate`` in an async-required store (the start function must not park).

    ``exts`` is an array of ``wasmtime_extern_t`` (ctypes) in the module's
    import order (an array of one for a module without imports). Returns
    the new ``wasmtime_instance_t``. The imports are defined in a linker of
    their own: wasmtime has no ``instance_new`` for async stores. The
    compiled call path defines them all in one call (a large guest module
    imports several hundred functions; architecture.md §5).
    """
    state = store._state
    ctx = store._ctx()
    linker = ffi.linker_new(store.engine._ptr) or 0
    if not linker:
        raise EngineError("wasmtime_linker_new failed")
    try:
        ffi.linker_allow_shadowing(linker, True)
        names, shared_keys = module.link_names
        if len(exts) < len(names):
            raise LinkError(
                f"cannot link {module.name}: {len(exts)} imports given, {len(names)} expected"
            )
        if shared_keys:
            _check_repeated_imports(module, exts)
        base = ctypes.addressof(exts)
        compiled = _define_all()
        if compiled is not None:
            define_imports, define_address = compiled
            refused = define_imports(define_address, linker, ctx, names, base, _EXTERN_SIZE)
            if refused is not None:
                _, err = refused
                raise LinkError(f"cannot link {module.name}: {ffi.take_error_message(err)}")
        else:
            define = ffi.linker_define
            for k, (m, lm, n, ln) in enumerate(names):
                err = define(linker, ctx, m, lm, n, ln, base + k * _EXTERN_SIZE)
                if err:
                    raise LinkError(f"cannot link {module.name}: {ffi.take_error_message(err)}")
        inst = ffi.InstanceStruct()
        trap, err_cell = ctypes.c_void_p(0), ctypes.c_void_p(0)
        fut = (
            ffi.linker_instantiate_async(
                linker,
                ctx,
                module._ptr,
                ctypes.addressof(inst),
                ctypes.addressof(trap),
                ctypes.addressof(err_cell),
            )
            or 0
        )
        if not fut:
            raise EngineError("wasmtime_linker_instantiate_async failed")
        token = state.token()
        state.futures[token] = fut
        try:
            ready = _poll_future(state, fut, None)
        finally:
            if state.futures.pop(token, 0):
                ffi.call_future_delete(fut)
        if not ready:
            raise CoreTrap(
                f"the start function of {module.name} tried to suspend", "cannot_block_sync_task"
            )
        if trap.value or err_cell.value:
            instantiation_failure(state, module, trap.value or 0, err_cell.value or 0)
        return inst
    finally:
        ffi.linker_delete(linker)


def _check_repeated_imports(module: CoreModule, exts: Any) -> None:
    """Refuse two definitions of one (module, field) import: a linker keeps only one."""
    seen: dict[tuple[str, str], bytes] = {}
    for desc, ext in zip(module.imports, exts, strict=True):
        key = (desc.module, desc.name)
        raw = bytes(ext)
        if key in seen and seen[key] != raw:
            raise LinkError(
                f"core module {module.name} imports {desc.module!r} {desc.name!r} twice "
                "with different definitions"
            )
        seen[key] = raw
