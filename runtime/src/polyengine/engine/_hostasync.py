"""Async host functions: the continuation protocol of the suspension seam.

architecture.md §4.  An async host function is defined through a linker
(``wasmtime_linker_define_async_func``) and materialized into the store.
When the guest calls it, the entry callback sets the continuation first of
all, then runs the Python function, which either returns the flat results or
a pending awaitable.  wasmtime polls the continuation on the fiber: while the
awaitable is pending the fiber parks; once it settled, the poll writes the
results (or a trap carrying the exception) into the parked frame.  The
awaitable's done-callback wakes the :class:`~polyengine.engine.ParkableCall`
that parked.  Dropping the continuation (a cancelled call) cancels the
awaitable.
"""

from __future__ import annotations

import ctypes
import itertools
import struct
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from . import _callpath
from . import _ffi as ffi
from ._core import CoreFunc
from ._errors import CoreTrap, EngineError
from ._store import EngineStore, _StoreState
from ._values import KIND, CoreValue, check_valtypes, functype, normalize, val_struct

if TYPE_CHECKING:
    from ._async import ParkableCall

__all__ = ["AsyncHostFunction", "HostPending", "define_async_host_func"]


class HostPending(Protocol):
    """What an async host function may return instead of its results.

    An ``asyncio.Future``/``asyncio.Task`` fits; so does any object with these
    methods whose callbacks run on the thread that drives the store.
    """

    def done(self) -> bool: ...
    def result(self) -> Any: ...
    def cancel(self) -> bool: ...
    def add_done_callback(self, fn: Callable[[Any], object], /) -> Any: ...


AsyncHostFunction: TypeAlias = Callable[
    [Sequence[CoreValue]], "Sequence[CoreValue] | HostPending | Awaitable[Sequence[CoreValue]]"
]


_activations: dict[int, _Activation] = {}
_tokens = itertools.count(1)


class _Activation:
    """One invocation of an async host function, from entry to continuation drop.

    ``results_addr``/``trap_addr`` point into wasmtime's frame of the parked
    host call; they stay valid until the continuation reports ready or is
    dropped.  Exactly one of ``pending``/``ready``/``error`` drives the next
    continuation poll.
    """

    __slots__ = (
        "call",
        "error",
        "pending",
        "ready",
        "results_addr",
        "signature",
        "state",
        "trap_addr",
    )

    def __init__(
        self, state: _StoreState, signature: _Signature, results_addr: int, trap_addr: int
    ) -> None:
        self.state = state
        self.signature = signature
        self.results_addr = results_addr
        self.trap_addr = trap_addr
        self.pending: HostPending | None = None
        self.ready: Sequence[CoreValue] | None = None
        self.error: BaseException | None = None
        # The parked call, weakly: dropping a ParkableCall cancels it.
        self.call: weakref.ref[ParkableCall] | None = None

    def settled(self, _fut: object) -> None:
        """Done-callback of the host's awaitable: resume the parked call."""
        ref = self.call
        call = ref() if ref is not None else None
        if call is not None:
            call._wake()

    def poll(self) -> bool:
        """The continuation: ``False`` while pending, else write results or a trap."""
        state = self.state
        state.host_depth += 1
        state.blocking += 1
        try:
            if self.error is None and self.ready is None:
                pending = self.pending
                try:
                    if pending is None:
                        raise EngineError("async host function produced no result")
                    if not pending.done():
                        return False
                    self.ready = pending.result()
                except BaseException as exc:
                    self.error = exc
            if self.error is None:
                try:
                    self.signature.write_results(self.results_addr, self.ready)
                except BaseException as exc:
                    self.error = exc
            if self.error is not None:
                try:
                    trap = state.record_host_error(self.error)
                except BaseException:
                    trap = ffi.new_trap("async host function failed")
                ctypes.c_void_p.from_address(self.trap_addr).value = trap
            self.pending = None
            return True
        finally:
            state.blocking -= 1
            state.host_depth -= 1

    def dropped(self) -> None:
        pending = self.pending
        self.pending = None
        self.call = None
        if pending is not None and not pending.done():
            pending.cancel()


def _continuation_poll_py(env: int | None) -> bool:
    try:
        act = _activations.get(env or 0)
        if act is None:
            return True
        pending = act.pending
        if pending is not None and act.ready is None and act.error is None:
            try:
                if not pending.done():
                    return False  # still parked
            except BaseException:
                pass  # act.poll() turns it into a trap
        return act.poll()
    except BaseException:
        return True


def _continuation_drop_py(env: int | None) -> None:
    try:
        act = _activations.pop(env or 0, None)
        if act is not None:
            act.dropped()
    except BaseException:
        return


_continuation_poll = ffi.CONTINUATION_CALLBACK(_continuation_poll_py)
_continuation_drop = ffi.FINALIZER(_continuation_drop_py)

# A continuation with our callbacks and env 0, copied in with one memmove.
_template = ffi.Continuation()
_template.callback = _continuation_poll
_template.env = None
_template.finalizer = _continuation_drop
_TEMPLATE_ADDR = ctypes.addressof(_template)
_CONT_SIZE = ctypes.sizeof(ffi.Continuation)
_ENV_OFFSET: int = ffi.Continuation.env.offset

# The compiled call path's callbacks (``_accel_link.c``): the entry shim, and a
# template whose continuation callbacks are its poll and drop shims, which call
# the two functions above.
_compiled_entry: Any = None
_compiled_template: Any = None
_stream_entry: Any = None  # the same with a StreamCopy env (``_accel_streams.c``)
if _callpath._ACCEL is not None:
    _entry_addr, _poll_addr, _drop_addr = _callpath._ACCEL.async_addresses()
    _compiled_entry = ffi.ASYNC_CALLBACK(_entry_addr)
    _stream_entry = ffi.ASYNC_CALLBACK(_callpath._ACCEL.stream_entry_address())
    _compiled_template = ffi.Continuation()
    _compiled_template.callback = ffi.CONTINUATION_CALLBACK(_poll_addr)
    _compiled_template.env = None
    _compiled_template.finalizer = ffi.FINALIZER(_drop_addr)
    _callpath._ACCEL.init_async(
        ctypes.addressof(_compiled_template),
        _CONT_SIZE,
        _continuation_poll_py,
        _continuation_drop_py,
    )


class _Signature:
    __slots__ = ("buf_type", "kinds", "params", "params_struct", "results", "results_struct")

    def __init__(self, params: tuple[str, ...], results: tuple[str, ...]) -> None:
        self.params = params
        self.results = results
        self.params_struct = val_struct(params, with_kind=False)
        self.results_struct = val_struct(results, with_kind=True)
        self.kinds = tuple(KIND[t] for t in results)
        size = ffi.VAL_SIZE * max(len(params), len(results), 1)
        self.buf_type = ffi.array_type(ctypes.c_ubyte, size)

    def read_params(self, addr: int) -> tuple[CoreValue, ...]:
        if not self.params:
            return ()
        return self.params_struct.unpack_from(self.buf_type.from_address(addr))

    def write_results(self, addr: int, out: Sequence[CoreValue] | None) -> None:
        if out is None or isinstance(out, (str, bytes)):
            raise TypeError(f"async host function returned {type(out).__name__}, not results")
        kinds = self.kinds
        n = len(kinds)
        if n == 1 and out.__class__ is list and len(out) == 1:
            # one result (a built-in's status word): no flat list to build
            try:
                self.results_struct.pack_into(self.buf_type.from_address(addr), 0, kinds[0], out[0])
                return
            except (struct.error, ValueError, TypeError):
                pass  # normalized below, as any other results are
        flat: list[CoreValue] = [0] * (2 * n)
        flat[0::2] = kinds
        try:
            flat[1::2] = out
            if n:
                self.results_struct.pack_into(self.buf_type.from_address(addr), 0, *flat)
        except (struct.error, ValueError, TypeError):
            flat[1::2] = normalize(self.results, list(out), "async host function result")
            self.results_struct.pack_into(self.buf_type.from_address(addr), 0, *flat)


#: the signatures made so far: one per core type, shared by every store's functions
_SIGNATURES: dict[tuple[tuple[str, ...], tuple[str, ...]], _Signature] = {}


def _signature(params: tuple[str, ...], results: tuple[str, ...]) -> _Signature:
    """The (stateless) :class:`_Signature` of ``params -> results``, made once."""
    found = _SIGNATURES.get((params, results))
    if found is None:
        if len(_SIGNATURES) >= 4096:
            _SIGNATURES.clear()
        found = _SIGNATURES[(params, results)] = _Signature(params, results)
    return found


def _make_entry(
    state: _StoreState, sig: _Signature, fn: AsyncHostFunction, template: int
) -> Callable[..., int]:
    """The entry of one async host function; ``template`` is the continuation it sets first.

    ``template`` 0: the compiled shim (``_accel_link.c``) has set it already
    and stores the returned key as the continuation's env itself.
    """
    memmove = ctypes.memmove
    from_address = ctypes.c_void_p.from_address

    def entry(  # noqa: PLR0917 (the C callback's signature)
        env: int | None,
        caller: int | None,
        params_addr: int | None,
        nparams: int,
        results_addr: int | None,
        nresults: int,
        trap_addr: int | None,
        cont_addr: int | None,
    ) -> int:
        # First of all: a continuation wasmtime can poll, whatever happens next
        # (the template's callbacks and env 0, which completes at once).
        if template:
            memmove(cont_addr or 0, template, _CONT_SIZE)
        try:
            token = next(_tokens)
            act = _Activation(state, sig, results_addr or 0, trap_addr or 0)
            _activations[token] = act
            if template:
                from_address((cont_addr or 0) + _ENV_OFFSET).value = token
        except BaseException:
            return 0
        state.host_depth += 1
        state.blocking += 1
        try:
            out: Any = fn(sig.read_params(params_addr or 0))
            add = getattr(out, "add_done_callback", None)
            if add is None and hasattr(out, "__await__"):
                import asyncio

                out = asyncio.ensure_future(out)
                add = out.add_done_callback
            if add is None:
                act.ready = out
            elif state.sync_window and not out.done():
                # Python of a synchronous host function is live on this fiber:
                # it must not park.  Trap like a sync task that would block.
                out.cancel()
                act.error = CoreTrap(
                    "a synchronous call tried to suspend (an async host function was pending)",
                    "cannot_block_sync_task",
                )
            else:
                act.pending = out
                current = state.current_call
                if current is not None:
                    act.call = weakref.ref(current)
                add(act.settled)
        except BaseException as exc:
            act.error = exc
        finally:
            state.blocking -= 1
            state.host_depth -= 1
        return token

    return entry


def define_async_host_func(
    store: EngineStore,
    params: Sequence[str],
    results: Sequence[str],
    fn: AsyncHostFunction,
    *,
    stream_copy: Callable[[Any], None] | None = None,
) -> CoreFunc:
    """A host function that may park the calling guest.

    ``fn`` receives the flat arguments and returns either the flat results
    (no parking) or a pending awaitable (an ``asyncio`` future or task, or a
    coroutine, which is scheduled as a task) whose result is the flat
    results.  The call that reached it parks until the awaitable settles,
    then resumes; an exception becomes a trap carrying it.  The store
    becomes async-required (see ``_async.py``); this is refused from inside
    a guest call of the store.
    """
    if not store.suspend:
        raise EngineError("this store was created with suspend=False")
    p = check_valtypes(params, "define_async_host_func params")
    r = check_valtypes(results, "define_async_host_func results")
    state = store._state
    ctx = store._ctx()
    # Inside a synchronous guest call the new function could be reached
    # without a fiber underneath; the store must switch modes between calls.
    state.check_outside("define an async host function")
    if not state.async_linker:
        state.async_linker = ffi.linker_new(store.engine._ptr) or 0
        if not state.async_linker:
            raise EngineError("wasmtime_linker_new failed")
    sig = _signature(p, r)
    env: int | None = None
    if _compiled_entry is not None and _callpath.compiled_store(state):
        # The compiled shim calls the Python entry found at ``env``, kept alive
        # with the store's other callbacks.
        entry = _make_entry(state, sig, fn, 0)
        state.keepalive.append(entry)
        cb, env = _compiled_entry, id(entry)
        if stream_copy is not None and _stream_entry is not None:
            sc = _callpath._ACCEL.StreamCopy(entry, state)
            state.keepalive.append(sc)
            cb, env = _stream_entry, id(sc)
            stream_copy(sc)
    else:
        cb = ffi.ASYNC_CALLBACK(_make_entry(state, sig, fn, _TEMPLATE_ADDR))
        state.keepalive.append(cb)
    name = f"async-host-{state.token()}".encode()
    err = ffi.linker_define_async_func(
        state.async_linker, b"", 0, name, len(name), _functype_address(store, p, r), cb, env, None
    )
    if err:
        raise EngineError(f"cannot define async host function: {ffi.take_error_message(err)}")
    ext = ffi.Extern()
    if not ffi.linker_get(state.async_linker, ctx, b"", 0, name, len(name), ctypes.addressof(ext)):
        raise EngineError("cannot materialize async host function")
    state.require_async()
    func = ffi.FuncStruct()
    ctypes.memmove(ctypes.addressof(func), ctypes.addressof(ext) + _FUNC_OFFSET, _FUNC_SIZE)
    return CoreFunc._wrap(store, func, (p, r))


_FUNC_OFFSET: int = ffi.Extern.of.offset
_FUNC_SIZE = ctypes.sizeof(ffi.FuncStruct)
#: the address of each functype by (engine, params, results): ``functype`` keeps
#: the type itself alive for the engine's life
_FUNCTYPE_ADDRESSES: dict[tuple[int, tuple[str, ...], tuple[str, ...]], int] = {}


def _functype_address(store: EngineStore, params: tuple[str, ...], results: tuple[str, ...]) -> int:
    key = (store.engine._ptr, params, results)
    found = _FUNCTYPE_ADDRESSES.get(key)
    if found is None:
        ty = functype(store.engine._ptr, params, results)
        found = _FUNCTYPE_ADDRESSES[key] = ffi.address(ty.ptr())
    return found
