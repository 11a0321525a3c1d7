"""Interrupting running guests: one epoch ticker per engine, one deadline callback per store.

Every engine enables wasmtime's epoch interruption. The first store of an
engine starts the engine's ticker, a daemon thread that advances the epoch
every :data:`TICK_SECONDS` (one thread per engine, never one per call); a
forked child starts its own for its parent's engines.
Every store has a deadline of one tick and the shared callback
:func:`_on_epoch`, so a guest that runs calls back into Python about every
tick, on the thread that runs it, and nowhere else. The callback decides
whether the guest goes on or is interrupted:

- an interruption requested for the store (:meth:`EngineStore.interrupt`,
  from any thread or a signal handler);
- the store's wall-clock deadline (``Limits.timeout``) having passed;
- the asyncio task running the guest being cancelled, or a due
  ``asyncio.timeout`` (or ``asyncio.wait_for``) timer of that task that
  the event loop cannot run because the guest holds its thread;
- a ``KeyboardInterrupt`` or ``SystemExit`` raised by a signal handler
  inside the callback (Python runs handlers there), which the entering
  call then raises again.

An interruption ends the guest with a trap whose code is ``interrupt``.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from ctypes import _Pointer, c_uint8, c_uint64
from typing import TYPE_CHECKING, Any

from . import _ffi as ffi

if TYPE_CHECKING:
    from ._config import Engine
    from ._store import _StoreState

__all__ = ["INTERRUPT_TAG", "TICK_SECONDS", "attach", "detach"]

#: how often every engine's epoch advances (the resolution of every deadline)
TICK_SECONDS = 0.01
#: carried in the error an interrupted guest fails with (``_store.raise_from_message``)
INTERRUPT_TAG = "[polyengine-interrupt]"

#: the stores that have the deadline callback, by the ``data`` word the callback gets
_STATES: dict[int, _StoreState] = {}
_keys = iter(range(1, 1 << 62))
_tickers: dict[int, threading.Thread] = {}
#: the engines that have a ticker, by id: kept alive (a native ticker advances one by
#: its pointer), and a forked child starts its own for them
_ticked: dict[int, Engine] = {}
_tick_lock = threading.Lock()


def _tick(engine: Engine) -> None:
    advance = engine.wasmtime_engine.increment_epoch
    sleep = time.sleep
    while True:
        sleep(TICK_SECONDS)
        advance()


def _ensure_ticker(engine: Engine) -> None:
    """Start ``engine``'s ticker: the compiled path's loop, which holds no GIL (a
    Python loop takes it every tick, from the thread running guests), else ``_tick``."""
    if id(engine) in _tickers:
        return
    with _tick_lock:
        if id(engine) in _tickers:
            return
        target: Any = _tick
        args: tuple[Any, ...] = (engine,)
        native = _native_ticker()
        if native is not None:
            target = native.epoch_ticker
            tick_ns = int(TICK_SECONDS * 1e9)
            args = (ffi.address(ffi.engine_increment_epoch), engine._ptr, tick_ns)
        thread = threading.Thread(target=target, args=args, name="polyengine-epoch", daemon=True)
        thread.start()
        _tickers[id(engine)] = thread
        _ticked[id(engine)] = engine
        if native is not None:
            _native_threads.append((thread, os.getpid()))


def _tickers_in_child() -> None:
    """In a forked child, which has none of its parent's threads: a ticker of its
    own for each engine that had one, so that deadlines and interruptions of the
    stores it inherited or makes go on working there."""
    global _tick_lock
    _tick_lock = threading.Lock()  # (the parent's may have been held at the fork)
    _tickers.clear()
    for engine in list(_ticked.values()):
        _ensure_ticker(engine)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_tickers_in_child)


#: the native tickers, with the process that started each (a forked child has none
#: of its parent's)
_native_threads: list[tuple[threading.Thread, int]] = []
#: ``[extension or None]``: the compiled path's tickers, once ``_accelerator.py``
#: has loaded it (``set_native``)
_NATIVE: list[Any] = [None]


def set_native(accel: Any) -> None:
    """Run the tickers on the extension ``accel``'s loop (``_accelerator.py`` calls
    this once it is loaded; ``None``, or one without it: the Python loop)."""
    found = accel if hasattr(accel, "epoch_ticker") else None
    if found is not None and _NATIVE[0] is None:
        atexit.register(_stop_native_tickers)
    _NATIVE[0] = found


def _native_ticker() -> Any:
    """The compiled path's ticker functions (``None``: not built, or pure Python)."""
    return _NATIVE[0]


def _stop_native_tickers() -> None:
    """At exit, before the engines go: every native ticker of this process returns."""
    native = _NATIVE[0]
    pid = os.getpid()
    mine = [thread for thread, started_by in _native_threads if started_by == pid]
    if native is None or not mine:
        return
    native.epoch_ticker_stop()
    for thread in mine:
        thread.join(timeout=1)


def _due_timer_cancels(loop: Any, task: Any) -> bool:
    """Whether a due timer of ``loop`` would cancel ``task`` (asyncio.timeout, wait_for)."""
    scheduled = getattr(loop, "_scheduled", None)
    if not scheduled:
        return False
    now = loop.time()
    if scheduled[0].when() > now:
        return False
    asyncio = sys.modules["asyncio"]
    timeout_type = getattr(asyncio, "Timeout", None)
    release = getattr(asyncio.tasks, "_release_waiter", None)
    waiters: list[object] | None = None
    for handle in scheduled:
        if handle.when() > now or handle.cancelled():
            continue
        callback = getattr(handle, "_callback", None)
        owner = getattr(callback, "__self__", None)
        if timeout_type is not None and isinstance(owner, timeout_type):
            if getattr(owner, "_task", None) is task:
                return True
            continue
        if release is not None and callback is release:
            # asyncio.wait_for (before 3.12): the waiter its timer releases is the one
            # the task running the guest will release when it finishes.
            if waiters is None:
                waiters = [
                    getattr(cb, "args", (None,))[0]
                    for cb, _ctx in getattr(task, "_callbacks", None) or ()
                    if getattr(cb, "func", None) is release
                ]
            args = getattr(handle, "_args", None) or (None,)
            if args[0] is not None and any(w is args[0] for w in waiters):
                return True
    return False


def _reason(state: _StoreState) -> str | None:
    """Why the guest running in ``state``'s store must stop now, or ``None``."""
    why = state.interrupt_reason
    if why is not None:
        state.interrupt_reason = None
        return why
    deadline = state.deadline
    if deadline and time.monotonic() >= deadline:
        state.deadline = 0.0
        return f"the call ran past its deadline of {state.timeout:g} s"
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    loop = asyncio._get_running_loop()
    if loop is None:
        return None
    current = asyncio.current_task(loop)
    if current is not None and getattr(current, "_must_cancel", False):
        return "the asyncio task running the guest was cancelled"
    entry = state.entry_task
    if entry is not None and entry is not current and not entry.done():
        # the task that called into the store, waiting while another task (the
        # task model's driver) runs the guest: a cancellation reached its waiter
        waiter = getattr(entry, "_fut_waiter", None)
        if waiter is not None and waiter.cancelled():
            return "the asyncio task that called the guest was cancelled"
    else:
        entry = None
    for task in (current, entry):
        if task is not None and _due_timer_cancels(loop, task):
            return "an asyncio timeout of the task running the guest expired"
    return None


def _on_epoch(_ctx: Any, data: Any, delta: _Pointer[c_uint64], kind: _Pointer[c_uint8]) -> int:
    """The deadline callback of every store: go on for one more tick, or interrupt."""
    state = None
    try:
        delta[0] = 1
        kind[0] = 0  # WASMTIME_UPDATE_DEADLINE_CONTINUE
        state = _STATES.get(data or 0)
        why = None if state is None else _reason(state)
        if why is None:
            return 0
        return int(ffi.error_new(f"{why} {INTERRUPT_TAG}".encode("utf-8", "replace")))
    except BaseException as exc:  # a signal handler's KeyboardInterrupt, SystemExit
        if state is None:
            return int(ffi.error_new(f"{type(exc).__name__} {INTERRUPT_TAG}".encode()))
        return int(ffi.error_new(state.host_error_text(exc).encode("utf-8", "replace")))


#: the one C callback of every store (ctypes keeps it alive with this module)
_EPOCH_CALLBACK = ffi.EPOCH_CALLBACK(_on_epoch)


def attach(state: _StoreState) -> None:
    """Give a new store the deadline callback and start its engine's ticker."""
    if not state.engine.config.epoch_interruption:
        return
    key = next(_keys)
    _STATES[key] = state
    state.epoch_key = key
    ffi.store_epoch_deadline_callback(state.store_ptr, _EPOCH_CALLBACK, key, None)
    ffi.context_set_epoch_deadline(state.ctx, 1)
    _ensure_ticker(state.engine)


def detach(state: _StoreState) -> None:
    """Forget a closed store (its callback is never called again)."""
    if state.epoch_key:
        _STATES.pop(state.epoch_key, None)
        state.epoch_key = 0
