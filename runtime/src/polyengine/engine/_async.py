"""The suspension seam: calls on wasmtime fibers that park and resume.

architecture.md §4.  libwasmtime's async C API runs a call started with
:func:`start` on a fiber.  When the guest calls an async host function (see
``_hostasync.py``) whose result is not ready, the fiber parks and
:meth:`ParkableCall.poll` returns ``False``; when the host's awaitable
settles, its done-callback polls the call again (or hands it to the
scheduler's waker), which resumes the fiber where it stopped.  Nothing polls
in a loop.

Guarantees (each one turns a process abort of the C API into a Python
error):

- every async host callback sets its continuation before doing anything else,
  and every ctypes callback returns a value of its declared type, whatever
  the Python code inside raised;
- a finished call future is deleted at once and never polled again; a wake
  that arrives during a poll of the same call is deferred, and a call is
  never started, polled or cancelled from inside a guest call of its store
  (nor from another thread);
- closing or collecting the store deletes its live call futures first, and
  closing from inside one of its calls is refused;
- Python never stays live on a fiber across a park: an async host function
  only starts the host's work and returns; a synchronous call made by a host
  function on a fiber runs in place, and while it does an async host
  function that would park traps instead (``cannot_block_sync_task``);
- the Python recursion limit is clamped while a fiber runs, so host code
  raises ``RecursionError`` (a trap) before it can overflow the fiber.

A store becomes "async-required" once it has an async host function; from
then on an entry into the guest from the top (``call_raw``, ``instantiate``)
runs on a call future of its own and traps rather than park.  A store
without one keeps the plain synchronous path.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from polyengine.errors import LinkError

from . import _ffi as ffi
from ._core import CoreFunc, CoreInstance, instantiation_failure
from ._errors import CoreTrap, EngineError
from ._module import CoreModule
from ._store import EngineStore, _StoreState, raise_call_failure
from ._values import KIND, CoreValue, normalize, val_struct

__all__ = ["CallCancelled", "ParkableCall", "start", "wait"]


class CallCancelled(EngineError):
    """The parkable call was cancelled before it finished."""


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
        if func._params_struct is None:
            func._not_callable()
        n, m = len(func.params), len(func.results)
        self.kinds = [KIND[t] for t in func.params]
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
    Nothing else keeps a parked call alive: dropping the last reference to
    one cancels it.
    """

    __slots__ = (
        "__weakref__",
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
        if isinstance(failure, (KeyboardInterrupt, SystemExit)):
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
        """Run every done-callback; the first exception one raised is re-raised after."""
        callbacks, self._callbacks = self._callbacks, []
        failure: BaseException | None = None
        for cb in callbacks:
            try:
                cb(self)
            except BaseException as exc:
                if failure is None:
                    failure = exc
        if failure is not None:
            raise failure

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
