"""The task model on the engine's parkable calls (architecture.md §4).

:class:`EngineActivation` implements :class:`~.thread.Activation` over
:func:`polyengine.engine.start`: a core call on a wasmtime fiber.
:func:`builtin_host_func` turns a canonical built-in (or ``canon lower``)
into a core host function for that store. A built-in that completes at once
returns its results directly (no parking). One that blocks parks the
calling fiber: the host function hands the engine a :class:`_Parked`
placeholder, the activation reports the :class:`~.thread.Block` to the
thread that runs it, and the scheduler later resumes the thread, which
steps the built-in's generator outside any guest call and, once it
finishes, resolves the placeholder and polls the fiber onward.

Built-ins that run other threads synchronously (``canon lower`` starts the
callee, ``subtask.cancel`` resumes it) must not run on the caller's fiber,
because the engine never starts or polls a call from inside a guest call of
its store: they are *deferred* (the fiber parks first, the generator runs
outside). :data:`DEFERRED_BUILTINS` names them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from functools import partial
from types import GeneratorType
from typing import Any, ClassVar, NoReturn

from polyengine.abi.trap import fault
from polyengine.engine import (
    CoreFunc,
    CoreTrap,
    CoreValue,
    EngineError,
    EngineStore,
    ParkableCall,
    compiled_path,
    define_async_host_func,
    define_host_func,
    start,
)

from .lift import CoreFunc as TaskCoreFunc
from .store import Store
from .thread import Block, Cancelled, CoreVal, Suspends, Thread
from .traps import TrapCode, ctrap

__all__ = [
    "ASYNC_NONBLOCKING_KINDS",
    "DEFERRED_BUILTINS",
    "NONBLOCKING_KINDS",
    "BuiltinFn",
    "EngineActivation",
    "builtin_host_func",
    "engine_core",
    "never_parks",
]

DEFERRED_BUILTINS = frozenset({"canon_lower", "canon_subtask_cancel"})
"""Built-ins that must run outside the caller's fiber (they resume other threads)."""

NONBLOCKING_KINDS = frozenset(
    {
        "backpressure.inc",
        "backpressure.dec",
        "context.get",
        "context.set",
        "task.return",
        "task.cancel",
        "subtask.drop",
        "waitable-set.new",
        "waitable-set.drop",
        "waitable.join",
        "thread.index",
        "thread.resume-later",
        "error-context.drop",
        "stream.new",
        "future.new",
        "stream.drop-readable",
        "stream.drop-writable",
        "future.drop-readable",
        "future.drop-writable",
    }
)
"""Built-in kinds (``canon <kind>``) that always complete at once, never parking.

They become plain core host functions: a call costs one crossing instead of
the parking function's entry and continuation poll.
"""

ASYNC_NONBLOCKING_KINDS = frozenset(
    {
        "stream.read",
        "stream.write",
        "future.read",
        "future.write",
        "stream.cancel-read",
        "stream.cancel-write",
        "future.cancel-read",
        "future.cancel-write",
    }
)
"""Built-in kinds that never park when their ``async`` option or immediate is given.

An ``async`` copy (or cancel) that cannot complete at once returns ``BLOCKED``
(CanonicalABI.md §``stream.read``/``stream.write``, §``future.read``/``future.write``,
§``stream.cancel-read`` and the others): such a built-in is a plain core host
function too. ``waitable-set.poll`` never waits (§``waitable-set.poll``).
"""


def never_parks(kind: str, is_async: bool) -> bool:
    """Whether built-in ``kind`` (``is_async``: its ``async`` option or immediate)
    always completes at once, so that a plain host function can run it."""
    if kind in NONBLOCKING_KINDS or kind == "waitable-set.poll":
        return True
    return is_async and kind in ASYNC_NONBLOCKING_KINDS


BuiltinFn = Callable[[Thread, list[CoreVal]], "list[CoreVal] | Suspends[list[CoreVal]]"]
"""A built-in with its immediates bound: ``fn(current_thread, flat_args)``."""


class _Parked:
    """The placeholder a parked host function waits on (the engine's ``HostPending``).

    Its done-callbacks are not kept: the one the engine adds would wake the
    parked call through its waker, which is :func:`_no_wake` (the
    activation polls the call itself once the built-in finished,
    :meth:`EngineActivation.resume`); a callback added once it is done runs
    at once.
    """

    __slots__ = ("_cancelled", "_done", "_result")

    def __init__(self) -> None:
        self._done = False
        self._cancelled = False
        self._result: Sequence[CoreValue] = ()

    def done(self) -> bool:
        return self._done

    def result(self) -> Sequence[CoreValue]:
        assert self._done and not self._cancelled
        return self._result

    def cancel(self) -> bool:
        if self._done:
            return False
        self._done = True
        self._cancelled = True
        return True

    def add_done_callback(self, fn: Callable[[Any], object], /) -> None:
        if self._done:
            fn(self)

    def set_result(self, result: Sequence[CoreValue]) -> None:
        assert not self._done
        self._done = True
        self._result = result


_TO_SCHEDULER = Block(None)


def _no_wake(_call: ParkableCall) -> None:
    """The scheduler, not the placeholder's callback, decides when to poll."""


class EngineActivation:
    """A core call on a wasmtime fiber, as an :class:`~.thread.Activation`.

    ``_gen`` is the built-in the fiber is parked in (``_gen_started`` false
    for a deferred one not yet stepped), ``_pending`` its placeholder, and
    ``_block`` the block it yielded while stepped on the fiber.
    """

    _active: ClassVar[list[EngineActivation]] = []

    __slots__ = (
        "_block",
        "_call",
        "_counted",
        "_gen",
        "_gen_started",
        "_pending",
        "_results",
        "args",
        "func",
        "thread",
    )

    def __init__(
        self, func: CoreFunc, args: Sequence[CoreVal], thread: Thread | None = None
    ) -> None:
        self.func = func
        self.args = list(args)
        #: the thread it runs on: its store counts the live fibers (``Store.take_fiber``)
        self.thread = thread
        self._counted = False
        self._call: ParkableCall | None = None
        self._gen: Suspends[list[CoreVal]] | None = None
        self._gen_started = False
        self._pending: _Parked | None = None
        self._block: Block | None = None
        self._results: list[CoreVal] | None = None

    # -- Activation ---------------------------------------------------------------

    @property
    def is_parked(self) -> bool:
        return self._call is not None and not self._call.done()

    @property
    def results(self) -> list[CoreVal]:
        assert self._results is not None, "activation has not finished"
        return self._results

    def resume(self, cancelled: Cancelled) -> Block | None:
        if self._call is None:
            assert not cancelled and self._results is None
            thread = self.thread
            if thread is not None:
                store = thread.store
                if not store.take_fiber(thread):
                    # at the store's cap of live stackful activations: wait for
                    # a fiber to finish, then come back here (run_activation)
                    thread.cancellable = False
                    thread.start_waiting_internal(
                        partial(store.fiber_free_for, thread), notified=True
                    )
                    return _TO_SCHEDULER
                self._counted = True
            active = EngineActivation._active
            active.append(self)  # (_with_active, inline: once per core call)
            try:
                call: ParkableCall | None = start(self.func, self.args)
            except EngineError:
                call = None
            finally:
                popped = active.pop()
                assert popped is self
            if call is None:
                # Inside a guest call of this store (a start function, or a
                # host-driven call) the engine cannot start a parkable call:
                # run it as a plain call, in which nothing may block.
                self._uncount()
                self._results = self._call_plain()
                return None
            self._call = call
            call._waker = _no_wake  # (set_waker, without the call)
        else:
            assert self._gen is not None and self._gen_started, "parked outside a built-in"
            block = self._step(cancelled)
            if block is not None:
                return block
            active = EngineActivation._active
            active.append(self)
            try:
                self._call.poll()
            finally:
                popped = active.pop()
                assert popped is self
        return self._settle()

    def abandon(self) -> None:
        gen, self._gen = self._gen, None
        if gen is not None:
            gen.close()
        call = self._call
        if call is not None and not call.done():
            # inside a guest call of the store the engine refuses; closing the
            # store deletes the future then
            with contextlib.suppress(EngineError):
                call.cancel()
        self._uncount()

    # -- internals ------------------------------------------------------------------

    def _uncount(self) -> None:
        """The fiber is gone: give its slot back (once)."""
        if self._counted:
            self._counted = False
            assert self.thread is not None
            self.thread.store.fiber_done()

    def _call_plain(self) -> list[CoreVal]:
        saved = EngineActivation._active[:]
        EngineActivation._active.clear()
        try:
            out = self.func.call_raw(self.args)
        except CoreTrap as e:
            raise _unwound(e) from _cause_of(e)
        finally:
            EngineActivation._active[:] = saved
        return [v for v in out if isinstance(v, int | float)]

    def _with_active(self, fn: Callable[[], object]) -> None:
        EngineActivation._active.append(self)
        try:
            fn()
        finally:
            popped = EngineActivation._active.pop()
            assert popped is self

    def _settle(self) -> Block | None:
        while True:
            call = self._call
            assert call is not None
            if call.done():
                self._uncount()
                self._results = _outcome(call)
                return None
            assert self._gen is not None, "call parked outside the task model"
            if self._gen_started:
                block, self._block = self._block, None
                assert block is not None
                return block
            self._gen_started = True
            block = self._step(None)
            if block is not None:
                return block
            self._with_active(call.poll)

    def _step(self, value: Cancelled | None) -> Block | None:
        gen = self._gen
        assert gen is not None
        try:
            block = next(gen) if value is None else gen.send(value)
        except StopIteration as stop:
            self._gen = None
            pending, self._pending = self._pending, None
            assert pending is not None
            pending.set_result(list(stop.value))
            return None
        except BaseException:
            self._gen = None
            self._pending = None
            call = self._call
            if call is not None and not call.done():
                with contextlib.suppress(EngineError):
                    call.cancel()
            self._uncount()
            raise
        return block

    def park_on(self, gen: Suspends[list[CoreVal]], *, defer: bool) -> list[CoreVal] | _Parked:
        """Called by a built-in's host function on this activation's fiber."""
        assert self._gen is None
        if not defer:
            try:
                block = next(gen)
            except StopIteration as stop:
                return list(stop.value)
            self._block = block
            self._gen_started = True
        else:
            self._gen_started = False
        self._gen = gen
        self._pending = _Parked()
        return self._pending


def _outcome(call: ParkableCall) -> list[CoreVal]:
    try:
        return list(call.result())  # a lifted core function returns numbers only
    except CoreTrap as e:
        raise _unwound(e) from _cause_of(e)


def _unwound(e: CoreTrap) -> BaseException:
    """What a trap that unwound a core call becomes: the one door, :func:`fault`."""
    return fault(e)


def _cause_of(e: CoreTrap) -> BaseException | None:
    host = e.host_exception
    if host is not None and fault(e) is host:
        return host.__cause__
    return e


def _complete_or_trap(gen: Suspends[list[CoreVal]]) -> list[CoreVal]:
    try:
        next(gen)
    except StopIteration as stop:
        return list(stop.value)
    gen.close()
    ctrap(TrapCode.CANNOT_BLOCK_SYNC)


def engine_core(func: CoreFunc) -> TaskCoreFunc:
    """The task model's :data:`~.lift.CoreFunc` for a core function of the engine."""

    def start_on(thread: Thread, args: list[CoreVal]) -> EngineActivation:
        return EngineActivation(func, args, thread)

    return start_on


def no_current_task(what: str | None) -> NoReturn:
    """Trap: a built-in (or lowered import) ran where no task is current.

    Core code the host runs outside any task (a ``realloc`` called while
    the host lowers an export's arguments, say) has no current thread for
    the built-in to act on (CanonicalABI.md §"Canonical built-ins":
    ``current_thread()``).
    """
    ctrap(
        TrapCode.TASK_STATE,
        f"{what or 'a built-in'} was called where no task is current "
        "(core code the host runs outside any task)",
    )


def _compiled_write(estore: EngineStore, kind: str, fn: BuiltinFn) -> bool:
    """Whether the ``async`` built-in ``kind`` is a ``stream.write`` the compiled
    stream copy (``_accel_streams.c``) may complete: its store is on the compiled
    call path, and ``fn`` can arm it (``attach``, :func:`~.copy_builtins.arm_stream_copy`).

    Only writes: a guest's write usually meets a host reader already waiting
    (a server reading the body), which the compiled copy completes; a read more
    often finds nothing offered yet and returns ``BLOCKED``, which the plain
    host function does for less than the parking one.
    """
    return (
        kind == "stream.write"
        and estore.suspend  # (a task-model store always is)
        and compiled_path(estore)
        and hasattr(fn, "attach")
    )


def plain_in_bulk(kind: str, is_async: bool) -> bool:
    """Whether built-in ``kind`` may run as a plain host function made without its
    store (per plan, in bulk): it :func:`never_parks`, and it is not an ``async``
    ``stream.write``, whose host function carries the compiled stream copy on the
    compiled call path (:func:`builtin_host_func`)."""
    return never_parks(kind, is_async) and not (is_async and kind == "stream.write")


def plain_builtin_entry(
    store: Store, kind: str, fn: BuiltinFn
) -> Callable[[Sequence[CoreValue]], Any]:
    """The body of a plain host function running built-in ``fn`` (of ``kind``, one
    that :func:`never_parks`) on the store's current thread. A kind of
    :data:`NONBLOCKING_KINDS` returns its results as they are; another (an async
    copy or cancel, or ``waitable-set.poll``) may be written as a generator,
    which ends at its first step."""
    if kind in NONBLOCKING_KINDS:

        def nonblocking_entry(args: Sequence[CoreValue]) -> Any:
            thread = store.current
            if thread is None:
                no_current_task(kind)
            return fn(thread, list(args))

        return nonblocking_entry

    def plain_entry(args: Sequence[CoreValue]) -> Any:
        thread = store.current
        if thread is None:
            no_current_task(kind)
        out: Any = fn(thread, list(args))
        if isinstance(out, GeneratorType):
            return _complete_or_trap(out)  # returns at its first step: it never waits
        return out

    return plain_entry


def builtin_host_func(
    estore: EngineStore,
    store: Store,
    params: Sequence[str],
    results: Sequence[str],
    fn: BuiltinFn,
    *,
    defer: bool = False,
    kind: str | None = None,
    is_async: bool = False,
) -> CoreFunc:
    """A core host function running the built-in ``fn`` on the current thread.

    ``defer`` is required for the names in :data:`DEFERRED_BUILTINS`. A
    ``kind`` in :data:`NONBLOCKING_KINDS` gets a plain host function, as does
    one of :data:`ASYNC_NONBLOCKING_KINDS` with ``is_async`` (its ``async``
    option or immediate) and ``waitable-set.poll``: a generator such a
    built-in returns (a future copy is written as one) ends at its first step.

    The exception is an ``async`` ``stream.write`` on the compiled call path
    (:func:`_compiled_write`): its parking host function carries the compiled
    stream copy, which completes a write to a host reader (a response body
    read by the server) without running Python at all.
    """
    if kind is not None and not defer and never_parks(kind, is_async):
        if _compiled_write(estore, kind, fn):
            parking = plain_builtin_entry(store, kind, fn)
            attach = getattr(fn, "attach")  # noqa: B009 (_compiled_write checked it is there)
            return define_async_host_func(estore, params, results, parking, stream_copy=attach)
        return define_host_func(estore, params, results, plain_builtin_entry(store, kind, fn))

    def entry(args: Sequence[CoreValue]) -> Any:
        thread = store.current
        if thread is None:
            no_current_task(kind)
        out = fn(thread, list(args))  # a built-in's core types are all numbers
        if not isinstance(out, GeneratorType):
            return out
        if not EngineActivation._active:
            # host-driven code that cannot park (a start function, a plain call)
            return _complete_or_trap(out)
        return EngineActivation._active[-1].park_on(out, defer=defer)

    # a stream copy may be completed by the compiled path (``_accel_streams.c``)
    attach = getattr(fn, "attach", None) if kind in ("stream.read", "stream.write") else None
    return define_async_host_func(estore, params, results, entry, stream_copy=attach)
