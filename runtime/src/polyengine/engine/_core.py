"""Core functions and instances: the synchronous call path.

Flat core values cross this seam as Python numbers (``_values.py``).  Calls
use wasmtime's unchecked entry points: arguments and results are packed into
a preallocated ``wasmtime_val_raw_t`` buffer with one precompiled ``struct``
per signature, and the entry point is called through a prototype without
argument types over arguments each function builds once as ctypes objects
(``_call_args``), after the test that the store is open.  What layers above
call is the call-path interface of ``_callpath.py`` (``CoreFunc.specialize``,
``CoreFunc.flat_call``); host functions share one C callback per signature.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable, Sequence
from threading import get_ident
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias, TypeVar

import wasmtime

from . import _callpath
from . import _ffi as ffi
from ._errors import EngineError
from ._fiber import call_blocking
from ._store import (
    HOST_ENTRIES,
    EngineStore,
    _StoreState,
    new_host_env,
    raise_call_failure,
)
from ._values import VALTYPES, CoreValue, check_valtypes, functype, normalize, raw_struct

__all__ = ["CoreFunc", "CoreValue", "HostFunction", "define_host_func", "new_host_func"]

_T = TypeVar("_T")

#: the attributes of a :class:`CoreFunc` made on first use (``CoreFunc._build_call``)
_LAZY_CALL = frozenset(
    {
        "_buf",
        "_buf_addr",
        "_call_args",
        "_fast_raw",
        "_params_struct",
        "_results_struct",
        "_trap",
        "_trap_addr",
    }
)
HostFunction: TypeAlias = Callable[[Sequence[CoreValue]], Sequence[CoreValue]]


class CoreFunc:
    """A core function of one store: an export or a host function.

    ``call_raw`` runs it to completion and returns its flat results.  In a
    store that has async host functions, it runs on a call future instead
    (and refuses to park: use :func:`polyengine.engine.start` for that).
    """

    __slots__ = (
        "__weakref__",
        "_addr",
        "_buf",
        "_buf_addr",
        "_call_args",
        "_call_layout",
        "_fast_raw",
        "_func",
        "_nslots",
        "_params_struct",
        "_results_struct",
        "_state",
        "_trap",
        "_trap_addr",
        "params",
        "results",
        "store",
    )

    store: EngineStore
    params: tuple[str, ...]
    results: tuple[str, ...]
    _state: _StoreState
    _func: Any  # wasmtime_func_t, kept alive here
    _addr: int  # its address
    _nslots: int
    _buf: ctypes.Array[ctypes.c_ubyte]  # args in, results out (wasmtime_val_raw_t slots)
    _buf_addr: int
    _params_struct: struct.Struct | None  # None: not callable from Python
    _results_struct: struct.Struct | None
    _trap: ctypes.c_void_p  # wasm_trap_t* out-cell, reset after each trap
    _trap_addr: int
    #: the unchecked entry point's arguments as ctypes objects, built once (see
    #: :func:`_call_args`); valid while the store is open
    _call_args: tuple[Any, ...]
    _call_layout: object  # the call-future layout (see _async.py), built on first use
    #: ``call_raw``'s compiled fast case (``_callpath.raw_caller``), or ``None``
    _fast_raw: Callable[[Sequence[CoreValue]], list[CoreValue]] | None

    def __init__(self) -> None:
        raise TypeError("CoreFunc objects come from instances or define_host_func()")

    @classmethod
    def _wrap(
        cls,
        store: EngineStore,
        func: Any,
        signature: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
    ) -> CoreFunc:
        """Wrap ``func``; ``signature`` (params, results) when the caller defined it
        itself (checked core value types), else it is asked of wasmtime."""
        self = object.__new__(cls)
        self.store = store
        self._state = store._state
        self._func = func
        self._addr = ctypes.addressof(func)
        if signature is not None:
            params, results = list(signature[0]), list(signature[1])
        else:
            ty_ptr = ffi.func_type(store._ctx(), self._addr)
            ty = wasmtime.FuncType._from_ptr(
                ctypes.cast(ty_ptr, ctypes.POINTER(wasmtime._ffi.wasm_functype_t)), None
            )
            params = [str(t) for t in ty.params]
            results = [str(t) for t in ty.results]
        self.params = tuple(params)
        self.results = tuple(results)
        self._nslots = max(len(params), len(results), 1)
        self._call_layout = None
        store._ctx()  # refused on a closed store, as before the call machinery was lazy
        return self

    if not TYPE_CHECKING:  # the declared attributes stay the only ones mypy knows

        def __getattr__(self, name: str) -> Any:
            """The call machinery (:data:`_LAZY_CALL`), built on first use: a function
            that is only handed to the linker (a task-model trampoline, say) never
            needs it, and building it was most of the cost of a wrapper."""
            if name not in _LAZY_CALL:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            self._build_call()
            return object.__getattribute__(self, name)

    def _build_call(self) -> None:
        params, results = list(self.params), list(self.results)
        # Function references and other non-numeric types are not flat core
        # values of the canonical ABI; such functions can be passed around
        # (tables, imports) but not called from Python.
        numeric = all(t in VALTYPES for t in params + results)
        buf = ffi.byte_array(ffi.VAL_RAW_SIZE * self._nslots)
        trap = ctypes.c_void_p(0)
        call_args = _call_args(self.store._ctx(), self._addr, buf, self._nslots, trap)
        self._buf = buf
        self._buf_addr = ctypes.addressof(buf)
        self._params_struct = raw_struct(params) if numeric else None
        self._results_struct = raw_struct(results) if numeric else None
        self._trap = trap
        self._trap_addr = ctypes.addressof(trap)
        self._call_args = call_args
        self._fast_raw = None
        if self._params_struct is not None:
            self._fast_raw = _callpath.raw_caller(self)

    def __repr__(self) -> str:
        return f"<CoreFunc ({', '.join(self.params)}) -> ({', '.join(self.results)})>"

    def call_raw(self, args: Sequence[CoreValue]) -> list[CoreValue]:
        """Call with flat ``args``; return the flat results.

        Raises :class:`CoreTrap` if the guest traps (carrying a host
        function's exception if one raised), ``TypeError``/``ValueError`` for
        arguments that do not match the signature.
        """
        fast = self._fast_raw
        if fast is not None:
            return fast(args)  # the compiled path; every other case comes back below
        return self._call_raw_py(args)

    def _call_raw_py(self, args: Sequence[CoreValue]) -> list[CoreValue]:
        """``call_raw`` in Python: every case (the compiled fast case hands the others here)."""
        state = self._state
        ctx = state.ctx
        if not ctx:
            state.raise_closed()
        window = False
        if state.async_required:
            if (
                not state.depth
                or state.blocking
                or not state.host_depth
                or (get_ident() != state.owner_thread)
            ):
                return call_blocking(self, args)
            # Inside a synchronous host function on a fiber: the fiber can run
            # this call in place, as long as nothing parks meanwhile.
            window = True
        ps = self._params_struct
        if ps is None:
            self._not_callable()
        buf = self._buf
        try:
            ps.pack_into(buf, 0, *args)
        except struct.error:
            ps.pack_into(buf, 0, *normalize(self.params, args, "call_raw"))
        if window:
            state.sync_window += 1
            try:
                err = _call_unchecked(*self._call_args)
            finally:
                state.sync_window -= 1
        else:
            err = _call_unchecked(*self._call_args)
        trap = self._trap.value
        if err or trap:
            self._trap.value = 0
            raise_call_failure(state, trap or 0, err or 0)
        rs = self._results_struct
        assert rs is not None
        return list(rs.unpack_from(buf))

    def specialize(self, formats: str, rformats: str) -> Callable[..., Any]:
        """The call for one flat signature: ``call(*args)`` in ``formats``, result in ``rformats``.

        The call-path interface (see ``_callpath.export_caller``): each
        argument is written into its slot in the ``struct`` format the
        caller chose (``I``/``i``, ``Q``/``q``, ``f``, ``d``); a value out of
        its format's range raises ``ValueError`` before anything runs.  One
        result comes back as the value, none as ``None``, several as a
        tuple.  Traps raise :class:`CoreTrap`.
        """
        if self._params_struct is None:
            self._not_callable()
        return _callpath.export_caller(self, formats, rformats)

    def flat_call(self) -> Callable[[Sequence[CoreValue]], Sequence[CoreValue]]:
        """The general call: ``call(flat_args)`` returns the tuple of flat results."""
        return _callpath.flat_caller(self)

    def _call_failed(self, err: int | None) -> NoReturn:
        """Raise for a call whose entry point returned ``err`` or left a trap in the out-cell."""
        trap = self._trap.value
        self._trap.value = 0
        raise_call_failure(self._state, trap or 0, err or 0)

    def _not_callable(self) -> NoReturn:
        raise EngineError(
            f"cannot call a function of type ({', '.join(self.params)}) -> "
            f"({', '.join(self.results)}) from Python: only i32/i64/f32/f64 are supported"
        )

    def _as_extern(self) -> Any:
        ext = ffi.Extern()
        ext.kind = ffi.EXTERN_FUNC
        ext.of.func = self._func
        return ext


#: ``wasmtime_func_call_unchecked`` without argument types: only ever called as
#: ``_call_unchecked(*func._call_args)`` (see :func:`_call_args`)
_call_unchecked: Callable[..., int | None] = ffi.func_call_unchecked_untyped


def _call_args(
    ctx: int, addr: int, buf: ctypes.Array[ctypes.c_ubyte], nslots: int, trap: ctypes.c_void_p
) -> tuple[Any, ...]:
    """The arguments of one function's unchecked call as ctypes objects, built once.

    ``(store context, wasmtime_func_t*, slot buffer, slot count, trap out-cell)``:
    the types ``wasmtime_func_call_unchecked`` declares, so the prototype without
    argument types passes them exactly as the typed one would. The slot count
    is checked against the buffer here, once: wasmtime reads and writes that
    many 16-byte slots.
    """
    # Checked even under ``python -O``: either mistake would let wasmtime touch
    # memory it must not (a null store, slots past the buffer's end).
    if not ctx or not addr:
        raise EngineError("a core call needs an open store and a function")
    if nslots < 1 or ctypes.sizeof(buf) < nslots * ffi.VAL_RAW_SIZE:
        raise EngineError(f"a buffer of {ctypes.sizeof(buf)} bytes cannot hold {nslots} slots")
    return (
        ctypes.c_void_p(ctx),
        ctypes.c_void_p(addr),
        ctypes.c_void_p(ctypes.addressof(buf)),
        ctypes.c_size_t(nslots),
        ctypes.c_void_p(ctypes.addressof(trap)),
    )


def define_host_func(
    store: EngineStore,
    params: Sequence[str],
    results: Sequence[str],
    fn: HostFunction,
) -> CoreFunc:
    """A host function of ``store`` with core type ``params -> results``.

    ``fn`` receives the flat arguments as a sequence of Python numbers and
    returns the flat results as a sequence.  An exception from ``fn`` becomes
    a trap that unwinds the guest; the caller's ``call_raw`` then raises it
    again (see :class:`CoreTrap`).
    """
    p = check_valtypes(params, "define_host_func params")
    r = check_valtypes(results, "define_host_func results")
    ctx = store._ctx()
    func = ffi.FuncStruct()
    new_host_func(store._state, ctx, p, r, fn, out_addr=ctypes.addressof(func))
    return CoreFunc._wrap(store, func, (p, r))


def new_host_func(
    state: _StoreState,
    ctx: int,
    params: tuple[str, ...],
    results: tuple[str, ...],
    fn: HostFunction | None,
    *,
    out_addr: int,
    build: Callable[[], HostFunction] | None = None,
) -> None:
    """Create a host function of the store ``ctx`` in the ``wasmtime_func_t`` at ``out_addr``.

    It runs ``fn``, or, when ``fn`` is ``None``, the body ``build()`` makes
    on the first call.  No callback is made per function: the signature's
    shared trampoline finds the body from the function's ``env``.
    """
    if not ctx or not out_addr:
        raise EngineError("a host function needs an open store and a place to go")
    cb, tag, ty_addr = host_kind(state, params, results)
    env = new_host_env(state, fn, tag)
    if fn is None:
        if build is None:
            raise EngineError("a host function needs a body or a way to build one")
        HOST_ENTRIES[env] = (state, _callpath.deferred_body(env, build))
    ffi.func_new_unchecked(ctx, ty_addr, cb, env, None, out_addr)


def host_kind(
    state: _StoreState, params: tuple[str, ...], results: tuple[str, ...]
) -> tuple[Any, int, int]:
    """``(callback, signature tag, functype address)`` of a host function of
    ``state``'s store with the checked core type ``params -> results``."""
    key = (state.engine._ptr, state.compiled, params, results)
    kind = _HOST_KINDS.get(key)
    if kind is None:
        cb, tag = _callpath.host_callback(params, results, state)
        ty = functype(state.engine._ptr, params, results)
        kind = _HOST_KINDS[key] = (cb, tag, ffi.address(ty.ptr()))
    return kind


#: what a host function of one signature needs, by (engine, compiled path, params,
#: results): the C callback, its signature tag and the address of the functype (kept
#: alive by ``functype``'s cache, as the callback is by ``host_callback``'s and this)
_HOST_KINDS: dict[tuple[int, bool, tuple[str, ...], tuple[str, ...]], tuple[Any, int, int]] = {}
