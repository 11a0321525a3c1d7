"""Stores: one wasmtime store per top-level instantiation.

:class:`EngineStore` owns the raw ``wasmtime_store_t`` and everything whose
lifetime is bound to it: host-function callbacks, the exceptions host
functions raised (keyed by a token carried in the trap message), the live
call futures of parked calls.  Closing (or collecting) the store deletes the
live futures first, then the store, so a parked call can never outlive the
store it runs in.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import threading
import time
import weakref
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn

from polyengine.errors import LinkError

from . import _ffi as ffi
from . import _interrupt
from ._config import Engine, get_engine
from ._errors import CoreTrap, EngineError, StoreClosedError
from ._pooling import pool_limit
from ._reaper import delete_store

if TYPE_CHECKING:
    from ._module import CoreModule

__all__ = ["EngineStore"]

_HOST_ERROR_TAG = "polyengine-host-error"
# Stack one Python recursion level may take on a fiber, counted generously
# (measured: a level of ``repr`` recursion takes well under 1 KiB on 3.11).
_BYTES_PER_LEVEL = 4096
_HOST_ERROR_RE = re.compile(r"\[" + _HOST_ERROR_TAG + r" (\d+)\]")

#: what each host function's ``env`` stands for: ``env -> (store state, body)``.
#: The C callbacks are shared by every host function of one core signature
#: (``_callpath.host_trampoline``); the entry of a function is removed when
#: its store is closed, after which no guest of that store can run.
HOST_ENTRIES: dict[int, tuple[_StoreState, Any]] = {}
_host_env_ids = itertools.count(1)


#: whether new stores take the compiled call path when it is active (a one-item
#: list so ``_callpath.pure_stores`` can switch it for the stores made meanwhile)
COMPILED_STORES = [True]

#: the low bits of an ``env`` carry the compiled trampoline's signature (0: none)
ENV_TAG_BITS = 16


def new_host_env(state: _StoreState, body: Any, tag: int = 0) -> int:
    """A fresh ``env`` for a host function of ``state``'s store running ``body``.

    ``tag`` (below ``1 << ENV_TAG_BITS``) is the signature index the compiled
    trampoline reads from the ``env`` (``_accel.c``); the pure one ignores it.
    """
    assert 0 <= tag < 1 << ENV_TAG_BITS
    env = (next(_host_env_ids) << ENV_TAG_BITS) | tag
    HOST_ENTRIES[env] = (state, body)
    state.host_envs.append(env)
    return env


#: Plain host functions (``_pre.py`` ``PlainHosts``) carry an ``env`` made of
#: this bit, the store's serial (bits 32-62), the host index (bits 16-31) and the
#: signature tag. Their entries are made on first call from the store's builder
#: entry (index ``PLAIN_BUILDER``): see :func:`plain_entry`.
PLAIN_KEY_BIT = 1 << 63
PLAIN_BUILDER = 0xFFFF
_PLAIN_SERIAL_MASK = 0x7FFF_FFFF
_plain_serials = itertools.count(1)


def plain_host_base(state: _StoreState, build: Any) -> int:
    """The ``env`` base of ``state``'s plain host functions; ``build(index)`` makes
    the body of plain host function ``index`` (its entry goes when the store closes)."""
    while True:
        serial = next(_plain_serials) & _PLAIN_SERIAL_MASK
        base = PLAIN_KEY_BIT | serial << 32
        key = base | PLAIN_BUILDER << ENV_TAG_BITS
        if serial and key not in HOST_ENTRIES:  # a serial of a store still open is skipped
            break
    HOST_ENTRIES[key] = (state, build)
    state.host_envs.append(key)
    return base


def plain_entry(env: int) -> tuple[_StoreState, Any] | None:
    """The entry of plain host function ``env`` on its first call (``None``: its
    store is closed, or ``env`` is not a plain host function's).

    Its body builds the real one on that first call and puts it in its place.
    """
    if not env & PLAIN_KEY_BIT:
        return None
    index = (env >> ENV_TAG_BITS) & 0xFFFF
    found = HOST_ENTRIES.get((env & ~0xFFFF_FFFF) | PLAIN_BUILDER << ENV_TAG_BITS)
    if found is None or index == PLAIN_BUILDER:
        return None
    state, build = found
    entry = (state, partial(_plain_first_call, env, build, index))
    HOST_ENTRIES[env] = entry
    state.host_envs.append(env)
    return entry


def _plain_first_call(env: int, build: Any, index: int, args: Any) -> Any:
    state, _ = HOST_ENTRIES[env]
    fn = build(index)
    HOST_ENTRIES[env] = (state, fn)
    return fn(args)


class _StoreState:
    """Everything that must live exactly as long as the raw store.

    Invariants: ``ctx`` is 0 iff the store is closed; ``direct`` is true iff
    ``ctx`` is set and ``async_required`` is not; every future in
    ``futures`` is a live ``wasmtime_call_future_t*`` of this store, deleted
    before the store is; ``keepalive`` holds the ctypes callbacks wasmtime
    may still call until the store is deleted.
    """

    __slots__ = (
        "__weakref__",
        "async_linker",
        "async_required",
        "blocking",
        "cell",
        "compiled",
        "ctx",
        "current_call",
        "deadline",
        "depth",
        "direct",
        "engine",
        "entry_task",
        "epoch_key",
        "fiber_budget",
        "futures",
        "host_depth",
        "host_envs",
        "host_errors",
        "interrupt_reason",
        "keepalive",
        "mapped",
        "memories",
        "next_token",
        "owner_thread",
        "store_ptr",
        "sync_window",
        "timeout",
        "views",
    )

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.store_ptr: int = ffi.store_new(engine._ptr, None, None) or 0
        if not self.store_ptr:
            raise EngineError("wasmtime_store_new failed")
        self.ctx: int = ffi.store_context(self.store_ptr) or 0
        #: the store is open and not async-required: a call may take the plain
        #: unchecked entry point (the one test of the call path's fast case)
        self.direct = True
        #: ``ctx`` while ``direct``, else 0: the same test for the compiled call
        #: path (``_accel.c``), which reads it by address; written with ``direct``
        self.cell = ctypes.c_uint64(self.ctx)
        #: calls and host functions of this store take the compiled call path when
        #: it is active (fixed at creation: see ``_callpath.pure_stores``)
        self.compiled = COMPILED_STORES[0]
        self.keepalive: list[object] = []
        #: the ``env`` of every host function of this store (see HOST_ENTRIES)
        self.host_envs: list[int] = []
        self.host_errors: dict[int, BaseException] = {}
        self.next_token = 1
        self.async_linker = 0
        self.async_required = False
        # token -> live call future pointer (parked or running calls).
        self.futures: dict[int, int] = {}
        # The parkable call being polled right now (innermost), if any.
        self.current_call: Any = None
        # How many call futures of this store are being polled right now.
        self.depth = 0
        # How many host functions of this store are running right now.
        self.host_depth = 0
        # How many of those are async host callbacks (entry or continuation):
        # they run inside wasmtime's blocking context, where a nested call
        # must get a fiber of its own.
        self.blocking = 0
        # How many synchronous calls run on a fiber without a future of their
        # own: while any does, an async host function may not park.
        self.sync_window = 0
        # Python recursion levels that fit on a fiber next to the guest's stack
        # (the recursion limit on a fiber is clamped to this, so host Python
        # raises RecursionError, a trap, before it can overflow the fiber).
        config = engine.config
        self.fiber_budget = max(
            50, (config.fiber_stack_size - config.max_wasm_stack) // _BYTES_PER_LEVEL
        )
        self.owner_thread = threading.get_ident()
        # Buffers handed out as memory views (weakly): the store's memory stays
        # mapped until the last of them is gone, even after close().
        self.views: list[weakref.ref[object]] = []
        # Memories whose cached view is dropped on close.
        self.memories: weakref.WeakSet[Any] = weakref.WeakSet()
        # Bytes of those memories when the store was closed (how deleting it is done).
        self.mapped = 0
        # Interruption (``_interrupt.py``): a pending request, the wall-clock
        # deadline of the running call (``time.monotonic``, 0 for none) and its
        # length, the asyncio task that entered the guest last.
        self.interrupt_reason: str | None = None
        self.deadline = 0.0
        self.timeout = 0.0
        self.entry_task: Any = None
        self.epoch_key = 0
        _interrupt.attach(self)

    def require_async(self) -> None:
        """From now on every entry into the guest runs on a call future (``_async.py``)."""
        self.async_required = True
        self.direct = False
        self.cell.value = 0

    def token(self) -> int:
        t = self.next_token
        self.next_token = t + 1
        return t

    def record_host_error(self, exc: BaseException) -> int:
        """Keep ``exc`` and return a new trap whose message names it."""
        return ffi.new_trap(self.host_error_text(exc))

    def host_error_text(self, exc: BaseException) -> str:
        """Keep ``exc`` and return the message that names it (see ``raise_from_message``)."""
        token = self.token()
        self.host_errors[token] = exc
        try:
            text = exc.__str__()
            text = text if type(text) is str else "<unprintable>"  # a __str__ may lie
        except BaseException:
            text = "<unprintable>"
        if len(text) > 200:
            text = text[:200] + "..."
        return f"host function raised {type(exc).__name__}: {text} [{_HOST_ERROR_TAG} {token}]"

    def track_view(self, buffer: object) -> None:
        views = self.views
        if len(views) >= 64:
            views[:] = [r for r in views if r() is not None]
        views.append(weakref.ref(buffer))

    def close(self) -> None:
        """Delete live futures, then the store once no memory view can reach it."""
        if not self.ctx:
            return
        futures = list(self.futures.values())
        self.futures.clear()
        for fut in reversed(futures):
            ffi.call_future_delete(fut)
        ctx = self.ctx
        self.mapped = sum(ffi.memory_data_size(ctx, m._addr) for m in self.memories)
        self.ctx = 0
        self.direct = False
        self.cell.value = 0
        _interrupt.detach(self)
        self.host_errors.clear()
        for env in self.host_envs:
            HOST_ENTRIES.pop(env, None)
        self.host_envs.clear()
        for memory in list(self.memories):
            memory._view = None
        live = [b for b in (r() for r in self.views) if b is not None]
        self.views.clear()
        if not live:
            self._delete()
            return
        remaining = [len(live)]

        def gone() -> None:
            remaining[0] -= 1
            if remaining[0] == 0:
                self._delete()

        for buffer in live:
            weakref.finalize(buffer, gone)

    def _delete(self) -> None:
        store, linker = self.store_ptr, self.async_linker
        self.store_ptr = 0
        self.async_linker = 0
        if store or linker:
            # Nothing of the store can run any more (``close``): the deletion may
            # overlap the caller's next work on a thread of its own (``_reaper.py``).
            delete_store(store, linker, self.mapped)
        self.keepalive.clear()

    def raise_closed(self) -> NoReturn:
        raise StoreClosedError("the store is closed")

    def check_outside(self, what: str) -> None:
        """Refuse ``what`` while a guest call of this store is running, or from another thread."""
        if self.depth or self.host_depth:
            raise EngineError(f"cannot {what} from inside a guest call of its store")
        if threading.get_ident() != self.owner_thread:
            raise EngineError("an EngineStore is used only from the thread that created it")

    def check_thread(self) -> None:
        """Refuse use from a thread other than the store's (polls release the GIL)."""
        if threading.get_ident() != self.owner_thread:
            raise EngineError("an EngineStore is used only from the thread that created it")


def raise_call_failure(state: _StoreState, trap: int, error: int) -> NoReturn:
    """Turn an owned trap or error pointer from a call into the right exception.

    A trap raised by a host function re-raises that function's exception:
    ``KeyboardInterrupt``/``SystemExit`` as themselves, a :class:`CoreTrap`
    from a nested call as the same object, anything else (including
    ``asyncio.CancelledError``) as a :class:`CoreTrap` carrying it.
    """
    if trap:
        message, code = ffi.take_trap(trap)
        if error:
            ffi.take_error_message(error)
    else:
        message, code = ffi.take_error_message(error), None
    raise_from_message(state, message, code)


def trap_summary(message: str) -> str:
    """The cause of a trap without wasmtime's backtrace (``"call stack exhausted"``)."""
    head, sep, tail = message.partition("Caused by:")
    text = tail if sep else head
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not sep and lines and lines[0].startswith("error while executing"):
        lines = lines[1:]
    summary = "; ".join(lines) or "trap"
    return summary.removeprefix("wasm trap: ")


def raise_from_message(state: _StoreState, message: str, code: str | None) -> NoReturn:
    """Raise the exception for a failed call's ``message`` (see ``raise_call_failure``)."""
    summary = trap_summary(message)
    if _interrupt.INTERRUPT_TAG in summary:
        why = summary[: summary.index(_interrupt.INTERRUPT_TAG)].rstrip()
        raise CoreTrap(f"interrupt ({why})", "interrupt", details=message)
    match = _HOST_ERROR_RE.search(summary)
    if match is not None:
        exc = state.host_errors.pop(int(match.group(1)), None)
        if exc is not None:
            if isinstance(exc, (CoreTrap, KeyboardInterrupt, SystemExit)):
                raise exc
            clean = summary[: match.start()].rstrip()
            raise CoreTrap(clean, None, exc, details=message) from exc
    pooled = pool_limit(summary)  # no fiber stack left in the engine's pool
    if pooled is not None:
        raise CoreTrap(str(pooled), code, details=message)
    raise CoreTrap(summary, code, details=message)


def _limit_code(message: str) -> str | None:
    """The limit code of an instantiation refused by the store's limiter, if it was."""
    text = message.lower()
    if "exceeds memory limits" in text or "memory count too high" in text:
        return "memory-limit"
    if "exceeds table limits" in text or "table count too high" in text:
        return "table-limit"
    if "instance count too high" in text:
        return "instance-limit"
    return None


def instantiation_failure(state: _StoreState, module: CoreModule, trap: int, err: int) -> NoReturn:
    """Raise for a failed instantiation: a trap in the start function, else a link error."""
    if trap:
        raise_call_failure(state, trap, err)
    message = ffi.take_error_message(err)
    if _HOST_ERROR_RE.search(message) or _interrupt.INTERRUPT_TAG in message:
        raise_from_message(state, message, None)
    limit = _limit_code(message)
    if limit is not None:
        lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
        raise CoreTrap(f"{module.name}: {'; '.join(lines)}", limit, details=message)
    pooled = pool_limit(message, f"core module {module.name}: ")
    if pooled is not None:
        raise pooled
    if "wasm trap" in message or "wasm backtrace" in message:
        raise CoreTrap(trap_summary(message), None, details=message)
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    raise LinkError(f"cannot instantiate core module {module.name}: {'; '.join(lines)}")


class EngineStore:
    """One wasmtime store: instances, host functions and parked calls live here.

    A store is used from one thread only.  ``suspend=False`` forbids async
    host functions and parkable calls, keeping every call on the plain
    synchronous path.  ``close()`` is idempotent; an unreachable store is
    closed by the garbage collector.
    """

    __slots__ = ("__weakref__", "_finalizer", "_state", "engine", "suspend")

    def __init__(self, engine: Engine | None = None, *, suspend: bool = True) -> None:
        self.engine = engine if engine is not None else get_engine()
        self.suspend = suspend
        self._state = _StoreState(self.engine)
        self._finalizer = weakref.finalize(self, _StoreState.close, self._state)

    @property
    def closed(self) -> bool:
        return not self._state.ctx

    @property
    def async_required(self) -> bool:
        """Whether calls must go through call futures (an async host func exists)."""
        return self._state.async_required

    @property
    def live_calls(self) -> int:
        """How many call futures (parked or running calls) are alive."""
        return len(self._state.futures)

    def close(self) -> None:
        """Cancel every live call, then delete the store (idempotent).

        Refused (``EngineError``) from inside one of the store's own calls.
        """
        state = self._state
        if state.ctx and (state.depth or state.host_depth):
            raise EngineError("cannot close a store from inside one of its calls")
        self._finalizer()

    def __enter__(self) -> EngineStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ctx(self) -> int:
        ctx = self._state.ctx
        if not ctx:
            self._state.raise_closed()
        return ctx

    def set_fuel(self, fuel: int) -> None:
        """Set the remaining fuel (needs ``EngineConfig.consume_fuel``)."""
        err = ffi.context_set_fuel(self._ctx(), fuel)
        if err:
            raise EngineError(ffi.take_error_message(err))

    def get_fuel(self) -> int:
        """The remaining fuel (needs ``EngineConfig.consume_fuel``)."""
        out = ctypes.c_uint64(0)
        err = ffi.context_get_fuel(self._ctx(), ctypes.byref(out))
        if err:
            raise EngineError(ffi.take_error_message(err))
        return int(out.value)

    def set_epoch_deadline(self, ticks: int) -> None:
        """Call the deadline callback once the epoch advances ``ticks`` past the current one."""
        if not isinstance(ticks, int) or not 0 <= ticks < 1 << 64:
            raise ValueError(f"epoch ticks must be an int in [0, 2**64), not {ticks!r}")
        ffi.context_set_epoch_deadline(self._ctx(), ticks)

    def set_limits(
        self,
        *,
        memory_size: int | None = None,
        table_elements: int | None = None,
        instances: int | None = None,
        tables: int | None = None,
        memories: int | None = None,
    ) -> None:
        """Install wasmtime's store limiter (``None`` keeps a limit at its default).

        ``memory_size`` caps each linear memory in bytes and ``table_elements``
        each table: growth beyond fails (``memory.grow``/``table.grow`` return
        -1), creation beyond fails the instantiation. ``instances``,
        ``tables`` and ``memories`` cap how many the store may create.
        """
        values = []
        for name, value in (
            ("memory_size", memory_size),
            ("table_elements", table_elements),
            ("instances", instances),
            ("tables", tables),
            ("memories", memories),
        ):
            if value is None:
                values.append(-1)
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 63:
                raise ValueError(f"{name} must be an int in [0, 2**63), not {value!r}")
            values.append(value)
        self._ctx()
        ffi.store_limiter(self._state.store_ptr, *values)

    def interrupt(self, reason: str = "interrupted by the host") -> None:
        """Interrupt the guest running in this store within one tick (any thread).

        The running call (or the next one to run guest code) traps with the
        code ``interrupt``; safe to call from a signal handler or another thread.
        """
        self._state.interrupt_reason = reason

    def arm(self, timeout: float | None, fuel: int | None) -> None:
        """Start a call from the host: its deadline ``timeout`` seconds from now, ``fuel`` set.

        A call made while a guest of this store runs (a host function calling
        back in) is part of the outer call and re-arms nothing. The asyncio
        task making the call is noted as the one whose cancellation
        interrupts the guest when it runs outside the task (``_interrupt.py``).
        """
        state = self._state
        if state.depth or state.host_depth:
            return
        if timeout is not None:
            state.timeout = timeout
            state.deadline = time.monotonic() + timeout
        if fuel is not None:
            self.set_fuel(fuel)
        self.note_task()

    def note_task(self) -> None:
        """Note the running asyncio task (if any) as the one the guest runs for."""
        import asyncio

        loop = asyncio._get_running_loop()
        self._state.entry_task = None if loop is None else asyncio.current_task(loop)

    def set_deadline(self, seconds: float | None) -> None:
        """Interrupt guest code of this store once ``seconds`` from now have passed."""
        state = self._state
        if seconds is None:
            state.deadline = 0.0
            return
        state.timeout = seconds
        state.deadline = time.monotonic() + seconds
