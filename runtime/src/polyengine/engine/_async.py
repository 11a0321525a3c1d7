"""The suspension seam: calls on wasmtime fibers that park and resume.

architecture.md §4.  libwasmtime's async C API runs a call started with
:func:`start` on a fiber.  When the guest calls an async host function (see
:func:`define_async_host_func`) whose result is not ready, the fiber parks and
:meth:`ParkableCall.poll` returns ``False``; when the host's awaitable
settles, its done-callback polls the call again (or hands it to the
scheduler's waker), which resumes the fiber where it stopped.  Nothing polls
in a loop.

Guarantees (each one turns a process abort of the C API into a Python
error):

- every async host callback sets its continuation before doing anything else,
  and every ctypes callback returns a value of its declared type, whatever
  the Python code inside raised;
- a finished call future is deleted at once and never polled again;
  re-entrant polls of one call are deferred, and a call is never polled from
  inside a guest call of its own store;
- closing or collecting the store deletes its live call futures first;
- Python never stays live on a fiber across a park: an async host function
  only starts the host's work and returns; a synchronous call made from a
  host function while on a fiber runs on its own nested future and traps
  rather than park.

A store becomes "async-required" once it has an async host function; from
then on every entry into the guest (``call_raw``, ``instantiate``) goes
through a call future.  A store without one keeps the plain synchronous
path.
"""

from __future__ import annotations

import ctypes
import itertools
import struct
import sys
from collections.abc import Awaitable, Callable, Sequence
from types import FrameType
from typing import Any, Protocol, TypeAlias

from polyengine.errors import LinkError

from . import _ffi as ffi
from ._core import (
    CoreFunc,
    CoreInstance,
    CoreValue,
    _functype,
    check_valtypes,
    instantiation_failure,
    normalize,
    val_struct,
    wrap_extern,
)
from ._errors import CoreTrap, EngineError
from ._module import CoreModule
from ._store import EngineStore, _StoreState, raise_call_failure

__all__ = [
    "AsyncHostFunction",
    "CallCancelled",
    "HostPending",
    "ParkableCall",
    "define_async_host_func",
    "start",
    "wait",
]


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


class CallCancelled(EngineError):
    """The parkable call was cancelled before it finished."""


# --------------------------------------------------------------------------
# Async host functions: the continuation protocol.

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
        self.call: ParkableCall | None = None

    def settled(self, _fut: object) -> None:
        """Done-callback of the host's awaitable: resume the parked call."""
        call = self.call
        if call is not None:
            call._wake()

    def poll(self) -> bool:
        """The continuation: ``False`` while pending, else write results or a trap."""
        state = self.state
        state.host_depth += 1
        state.blocking += 1
        try:
            return self._poll()
        finally:
            state.blocking -= 1
            state.host_depth -= 1

    def _poll(self) -> bool:
        if self.error is None and self.ready is None:
            pending = self.pending
            if pending is None:
                self.error = EngineError("async host function produced no result")
            elif not pending.done():
                return False
            else:
                try:
                    self.ready = pending.result()
                except BaseException as exc:
                    self.error = exc
        if self.error is None:
            try:
                self.signature.write_results(self.results_addr, self.ready)
            except BaseException as exc:
                self.error = exc
        if self.error is not None:
            ctypes.c_void_p.from_address(self.trap_addr).value = self.state.record_host_error(
                self.error
            )
        self.pending = None
        return True

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
        if pending is not None and act.ready is None and act.error is None and not pending.done():
            return False  # still parked
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


class _Signature:
    __slots__ = ("buf_type", "kinds", "params", "params_struct", "results", "results_struct")

    def __init__(self, params: tuple[str, ...], results: tuple[str, ...]) -> None:
        from ._core import _KIND

        self.params = params
        self.results = results
        self.params_struct = val_struct(params, with_kind=False)
        self.results_struct = val_struct(results, with_kind=True)
        self.kinds = tuple(_KIND[t] for t in results)
        size = ffi.VAL_SIZE * max(len(params), len(results), 1)
        self.buf_type = ctypes.c_ubyte * size

    def read_params(self, addr: int) -> tuple[CoreValue, ...]:
        if not self.params:
            return ()
        return self.params_struct.unpack_from(self.buf_type.from_address(addr))

    def write_results(self, addr: int, out: Sequence[CoreValue] | None) -> None:
        if out is None or isinstance(out, (str, bytes)):
            raise TypeError(f"async host function returned {type(out).__name__}, not results")
        kinds = self.kinds
        n = len(kinds)
        flat: list[CoreValue] = [0] * (2 * n)
        flat[0::2] = kinds
        try:
            flat[1::2] = out
            if n:
                self.results_struct.pack_into(self.buf_type.from_address(addr), 0, *flat)
        except (struct.error, ValueError, TypeError):
            flat[1::2] = normalize(self.results, list(out), "async host function result")
            self.results_struct.pack_into(self.buf_type.from_address(addr), 0, *flat)


def _make_entry(state: _StoreState, sig: _Signature, fn: AsyncHostFunction) -> Callable[..., None]:
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
    ) -> None:
        # First of all: a continuation wasmtime can poll, whatever happens next
        # (the template's callbacks and env 0, which completes at once).
        memmove(cont_addr or 0, _TEMPLATE_ADDR, _CONT_SIZE)
        try:
            token = next(_tokens)
            act = _Activation(state, sig, results_addr or 0, trap_addr or 0)
            _activations[token] = act
            from_address((cont_addr or 0) + _ENV_OFFSET).value = token
        except BaseException:
            return
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
                act.call = state.current_call
                add(act.settled)
        except BaseException as exc:
            act.error = exc
        finally:
            state.blocking -= 1
            state.host_depth -= 1

    return entry


def define_async_host_func(
    store: EngineStore,
    params: Sequence[str],
    results: Sequence[str],
    fn: AsyncHostFunction,
) -> CoreFunc:
    """A host function that may park the calling guest.

    ``fn`` receives the flat arguments and returns either the flat results
    (no parking) or a pending awaitable (an ``asyncio`` future or task, or a
    coroutine, which is scheduled as a task) whose result is the flat
    results.  The call that reached it parks until the awaitable settles,
    then resumes; an exception becomes a trap carrying it.  The store
    becomes async-required (see the module docstring).
    """
    if not store.suspend:
        raise EngineError("this store was created with suspend=False")
    p = check_valtypes(params, "define_async_host_func params")
    r = check_valtypes(results, "define_async_host_func results")
    state = store._state
    ctx = store._ctx()
    if not state.async_linker:
        state.async_linker = ffi.linker_new(store.engine._ptr) or 0
        if not state.async_linker:
            raise EngineError("wasmtime_linker_new failed")
    sig = _Signature(p, r)
    cb = ffi.ASYNC_CALLBACK(_make_entry(state, sig, fn))
    state.keepalive.append(cb)
    name = f"async-host-{state.token()}".encode()
    ty = _functype(p, r)
    err = ffi.linker_define_async_func(
        state.async_linker, b"", 0, name, len(name), ffi.address(ty.ptr()), cb, None, None
    )
    if err:
        raise EngineError(f"cannot define async host function: {ffi.take_error_message(err)}")
    ext = ffi.Extern()
    if not ffi.linker_get(state.async_linker, ctx, b"", 0, name, len(name), ctypes.addressof(ext)):
        raise EngineError("cannot materialize async host function")
    state.async_required = True
    found = wrap_extern(store, ext)
    assert isinstance(found, CoreFunc)
    return found


# --------------------------------------------------------------------------
# Calls on fibers.


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
        from ._core import _KIND

        if func._params_struct is None:
            func._not_callable()
        n, m = len(func.params), len(func.results)
        self.kinds = [_KIND[t] for t in func.params]
        self.args_struct = val_struct(func.params, with_kind=True)
        self.results_struct = val_struct(func.results, with_kind=False)
        self.nresults = m
        self.results_off = 16 + ffi.VAL_SIZE * n
        self.size = self.results_off + ffi.VAL_SIZE * max(m, 1)
        self.blocking = (ctypes.c_ubyte * self.size)()
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
        layout = _layout(func)
        self.layout = layout
        buf = self.buf = (ctypes.c_ubyte * layout.size)()
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


# Stack a Python recursion level may take on a fiber, counted generously
# (measured: a level of ``repr`` recursion takes well under 1 KiB on CPython
# 3.11).  The recursion limit on a fiber is clamped so that host Python
# raises RecursionError (a trap) before it can overflow the fiber's stack.
_BYTES_PER_LEVEL = 4096


def _frame_depth() -> int:
    depth = 0
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
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


def instantiate_blocking(store: EngineStore, module: CoreModule, exts: list[Any]) -> CoreInstance:
    """``instantiate`` in an async-required store (the start function must not park)."""
    state = store._state
    ctx = store._ctx()
    linker = ffi.linker_new(store.engine._ptr) or 0
    if not linker:
        raise EngineError("wasmtime_linker_new failed")
    try:
        ffi.linker_allow_shadowing(linker, True)
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
            m, n = desc.module.encode(), desc.name.encode()
            err = ffi.linker_define(linker, ctx, m, len(m), n, len(n), ctypes.addressof(ext))
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
        return CoreInstance._wrap(store, inst, module.name)
    finally:
        ffi.linker_delete(linker)


class ParkableCall:
    """A call running on a wasmtime fiber that may park (see :func:`start`).

    ``poll()`` resumes it once; ``done()`` tells whether it finished;
    ``result()`` returns its flat results or raises what it raised;
    ``cancel()`` abandons it (the fiber unwinds, pending host awaitables are
    cancelled).  By default a settled host awaitable polls the call from its
    done-callback; ``set_waker(fn)`` hands that decision to a scheduler
    (``fn(call)`` is called instead, and the scheduler calls ``poll()``).
    """

    __slots__ = (
        "_callbacks",
        "_exc",
        "_fc",
        "_polling",
        "_result",
        "_rewake",
        "_state",
        "_waker",
        "func",
        "store",
    )

    func: CoreFunc
    store: EngineStore
    _state: _StoreState
    _fc: _FutureCall | None  # None once finished (future deleted)
    _result: list[CoreValue] | None
    _exc: BaseException | None  # trap, host exception or cancellation
    _callbacks: list[Callable[[ParkableCall], object]]
    _waker: Callable[[ParkableCall], object] | None
    _polling: bool  # inside poll(): a wake is deferred, not re-entered
    _rewake: bool  # a wake arrived during poll(): poll once more

    def __init__(self) -> None:
        raise TypeError("use start() to begin a ParkableCall")

    def done(self) -> bool:
        return self._fc is None

    def poll(self) -> bool:
        """Resume the call until it parks again or finishes; return ``done()``.

        Raises ``KeyboardInterrupt``/``SystemExit`` at once if a host function
        raised one; other outcomes are kept for :meth:`result`.
        """
        fc = self._fc
        if fc is None:
            return True
        state = self._state
        if not state.ctx or fc.token not in state.futures:
            why = "the call was dropped" if state.ctx else "the store was closed"
            self._finish_cancelled(why)
            return True
        if self._polling:
            self._rewake = True
            return False
        state.check_outside("poll a parked call")
        self._polling = True
        try:
            while True:
                self._rewake = False
                ready = _poll_future(state, fc.fut, self)
                if ready or not self._rewake:
                    break
        finally:
            self._polling = False
        if not ready:
            return False
        fc.release(state)
        self._fc = None
        try:
            self._result = fc.outcome(state)
        except BaseException as exc:
            self._exc = exc
        self._run_callbacks()
        failure = self._exc
        if failure is not None and not isinstance(failure, Exception):
            raise failure
        return True

    def result(self) -> list[CoreValue]:
        """The flat results; raises the trap (or cancellation) if there was one."""
        if self._fc is not None:
            raise EngineError("the call has not finished (it is parked)")
        if self._exc is not None:
            raise self._exc
        assert self._result is not None
        return self._result

    def cancel(self) -> bool:
        """Abandon a call that has not finished; ``False`` if it already had."""
        fc = self._fc
        if fc is None:
            return False
        if self._polling:
            raise EngineError("cannot cancel a call from inside a guest call of its store")
        self._state.check_outside("cancel a call")
        fc.release(self._state)
        self._finish_cancelled("the call was cancelled")
        return True

    def set_waker(self, waker: Callable[[ParkableCall], object] | None) -> None:
        self._waker = waker

    def add_done_callback(self, fn: Callable[[ParkableCall], object]) -> None:
        """Call ``fn(call)`` when the call finishes (at once if it has)."""
        if self._fc is None:
            fn(self)
        else:
            self._callbacks.append(fn)

    def _finish_cancelled(self, why: str) -> None:
        self._fc = None
        self._exc = CallCancelled(why)
        self._run_callbacks()

    def _run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def _wake(self) -> None:
        if self._fc is None:
            return
        if self._polling:
            self._rewake = True
            return
        waker = self._waker
        if waker is not None:
            waker(self)
            return
        state = self._state
        if state.depth or state.host_depth:
            # Settled from inside a guest call of this store (a callback run at
            # once by a non-asyncio future): poll from the loop instead.
            import asyncio

            asyncio.get_running_loop().call_soon(self._wake)
            return
        self.poll()

    def __del__(self) -> None:
        fc = getattr(self, "_fc", None)
        if fc is not None:
            self._fc = None
            if self._state.ctx:
                fc.release(self._state)

    def __repr__(self) -> str:
        return f"<ParkableCall {'done' if self._fc is None else 'parked'} {self.func!r}>"


def start(func: CoreFunc, args: Sequence[CoreValue]) -> ParkableCall:
    """Begin a call of ``func`` on a fiber and run it until it parks or finishes."""
    store = func.store
    if not store.suspend:
        raise EngineError("this store was created with suspend=False")
    state = func._state
    if not state.ctx:
        state.raise_closed()
    state.check_outside("start a parkable call")
    call = object.__new__(ParkableCall)
    call.func = func
    call.store = store
    call._state = state
    call._callbacks = []
    call._waker = None
    call._polling = False
    call._rewake = False
    call._result = None
    call._exc = None
    call._fc = _FutureCall(func, args)
    call.poll()
    return call


async def wait(call: ParkableCall) -> list[CoreValue]:
    """Await the end of ``call`` on the running asyncio loop; cancel it if abandoned."""
    import asyncio

    if not call.done():
        loop = asyncio.get_running_loop()
        settled: asyncio.Future[None] = loop.create_future()

        def finished(_c: ParkableCall) -> None:
            if not settled.done():
                settled.set_result(None)

        call.add_done_callback(finished)
        try:
            await settled
        except asyncio.CancelledError:
            call.cancel()
            raise
    return call.result()
