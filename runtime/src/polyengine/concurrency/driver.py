"""Driving tasks to completion: synchronously, or on asyncio (architecture.md
§4 "Scheduling").

:func:`run_to_completion` is the synchronous path: start a call and tick
the store until the call resolves (a sync call is a task driven to
completion). :class:`Driver` is the asyncio path: one per store, it runs
ready threads in a background asyncio task and sleeps on an
:class:`asyncio.Event` when nothing is ready; host operations wake it from
their done-callbacks (no polling). A host operation started by
:meth:`Driver.spawn_host` runs the threads it readied in its own
done-callback, so a guest waiting on a host call resumes in the loop
iteration the call settles in. A call that can never finish (no ready
thread, no host operation in flight) fails with the "deadlock detected"
trap, which poisons its instance. Host functions
(:meth:`Driver.host_func_inst`) answer inside the call when they can: a
plain result, or a coroutine that finishes in its first step (started
eagerly), never becomes a host operation.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import sys
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator
from contextlib import contextmanager
from types import CoroutineType
from typing import Any, Literal, TypeAlias, TypeVar, cast

from polyengine.abi.trap import escaped, host_import_trap
from polyengine.types.model import FuncType

from .lift import CanonLift, start_task
from .reentry import on_stack
from .store import InstanceState, Store
from .task import FuncInst, OnCancel, OnResolve, OnStart, Task
from .thread import Suspends, Thread
from .traps import Trap, TrapCode, ctrap, ctrap_if

__all__ = [
    "CancelMode",
    "Driver",
    "HostCall",
    "host_import_trap",
    "run_to_completion",
    "start_host_call",
    "sync_scope",
]

T = TypeVar("T")

CancelMode: TypeAlias = Literal["cancel", "discard", "abort", "ignore"]
"""How a host function answers a cancellation request (:meth:`Driver.host_func_inst`)."""

_CANCEL_MODES = ("cancel", "discard", "abort", "ignore")


class HostCall:
    """A call of a lifted function made by the host.

    ``task`` is the callee task (``None`` if the call trapped before it
    existed); ``resolved`` and ``result`` follow its ``task.return`` (``result``
    is ``None`` when the call was cancelled); ``trap`` is set when a trap
    escaped the callee, even after it returned (its instance is poisoned
    then). ``on_settle`` callbacks run once, at the first of the two.
    """

    __slots__ = ("on_settle", "resolved", "result", "task", "trap")

    def __init__(self) -> None:
        self.task: Task | None = None
        self.resolved = False
        self.result: list[Any] | None = None
        self.trap: Trap | None = None
        self.on_settle: list[Callable[[HostCall], None]] = []

    @property
    def settled(self) -> bool:
        return self.resolved or self.trap is not None

    def _resolve(self, result: list[Any] | None) -> None:
        if self.settled:
            return
        self.resolved = True
        self.result = result
        self._notify()

    def _fail(self, trap: Trap) -> None:
        was_settled = self.settled
        if self.trap is None:
            self.trap = trap
        if not was_settled:
            self._notify()

    def _notify(self) -> None:
        for cb in self.on_settle:
            cb(self)

    def cancel(self) -> None:
        """Request cancellation (the guest may still return a value).

        A trap raised by the callee meanwhile poisons its instance and fails
        the call.
        """
        task = self.task
        if task is None or self.settled:
            return
        try:
            task.request_cancellation(None)
        except Trap as trap:
            task.inst.store.poison(task.inst, trap)
            self._fail(trap)


def start_host_call(lf: CanonLift, args: list[Any]) -> HostCall:
    """Start a host→guest call of ``lf`` with lifted ``args``; run it until it blocks.

    Traps with "cannot enter component instance" when the instance is
    entered already or poisoned. A trap raised while starting poisons the
    instance and is recorded on the returned call (not raised).
    """
    call = HostCall()
    inst = lf.inst
    ctrap_if(not inst.may_enter_from(None), TrapCode.CANNOT_ENTER)

    def on_start() -> list[Any]:
        return args

    inst.enter_from(None)
    try:
        task = start_task(lf, on_start, call._resolve, None)
    except BaseException as exc:
        trap = escaped(exc)
        inst.store.poison(inst, trap)
        if not isinstance(exc, Exception):
            raise  # an interrupt reaches the embedder unchanged, the instance poisoned
        call._fail(trap)
        return call
    finally:
        inst.leave_to(None)
    call.task = task
    if task.failed is not None:
        call._fail(task.failed)
    task.on_trap = call._fail
    return call


@contextmanager
def sync_scope(inst: InstanceState) -> Iterator[Thread]:
    """Run host-driven core code of ``inst`` (a start function) as a synchronous task.

    Built-ins called meanwhile see a current thread whose task is
    synchronous and unreturned, so anything that would block traps with
    "cannot block a synchronous task before returning" (Concurrency.md
    §Interaction with the start function).
    """
    task = Task(FuncType((), None, False), inst, list, _ignore)
    task.state = Task.State.STARTED

    def body(_t: Thread) -> Suspends[None]:
        yield from ()

    thread = Thread(task, body)
    task.implicit_thread = thread
    task.register_thread(thread)
    end = thread.run_inline()
    try:
        yield thread
    finally:
        end()
        task.state = Task.State.RESOLVED
        task.unregister_thread(thread)


def _ignore(_result: list[Any] | None) -> None:
    pass


def _no_cancel(_requester: InstanceState | None) -> None:
    pass


def _tick_all(store: Store, limit: int | None = None) -> int:
    """Tick until nothing is ready (or ``limit`` ticks); traps only poison."""
    return store.tick_ready(limit)


def run_to_completion(lf: CanonLift, args: list[Any]) -> list[Any] | None:
    """Call ``lf`` from the host and drive the store until the call resolves.

    Returns the results (``None`` if the call was cancelled); raises the
    :class:`Trap` that failed the call, including "deadlock detected" when
    nothing can run and no host operation is in flight. Needs
    :class:`Driver` instead when host operations are in flight.
    """
    store = lf.inst.store
    call = start_host_call(lf, args)
    while not call.settled:
        if _tick_all(store, 1):
            continue
        if store.host_pending > 0:
            raise RuntimeError("the call waits on host operations: drive it with Driver")
        _deadlock(store, call)
    if call.trap is not None:
        raise call.trap
    return call.result


def _deadlock(store: Store, call: HostCall) -> None:
    try:
        ctrap(TrapCode.DEADLOCK)
    except Trap as trap:
        if call.task is not None:
            store.poison(call.task.inst, trap)
        call._fail(trap)


class Driver:
    """The asyncio scheduler of one store.

    Install with ``Driver(store)`` (it becomes ``store.on_wake``). ``call``
    starts a guest export and returns an awaitable of its results;
    ``spawn_host`` runs a host awaitable as a host operation that keeps the
    store alive and runs what it readied when it settles. ``batch`` ticks run between
    yields to the event loop, so host callbacks interleave with guest work.
    """

    def __init__(self, store: Store, *, batch: int = 64) -> None:
        self.store = store
        self.batch = batch
        self._event = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        #: the unsettled calls (each leaves when it settles)
        self._calls: dict[HostCall, asyncio.Future[list[Any] | None]] = {}
        #: what escaped a tick run from a done-callback, for the runner to raise
        self._escaped: BaseException | None = None
        #: a pass over the ready threads is scheduled (host results settled in one
        #: loop iteration are served by one pass, not one scan of the waiters each)
        self._ready_scheduled = False
        store.on_wake = self._on_wake

    # -- calls ------------------------------------------------------------------

    def call(self, lf: CanonLift, args: list[Any]) -> asyncio.Future[list[Any] | None]:
        """Start a host→guest call; the future gets its results or its trap."""
        return self.start(lf, args)[1]

    def start(
        self, lf: CanonLift, args: list[Any]
    ) -> tuple[HostCall | None, asyncio.Future[list[Any] | None]]:
        """Like :meth:`call`, also returning the :class:`HostCall` (to cancel it).

        The call is ``None`` when the instance could not be entered (the
        future then holds the trap).
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[list[Any] | None] = loop.create_future()
        try:
            call = start_host_call(lf, args)
        except Trap as trap:
            fut.set_exception(trap)
            return None, fut

        if call.settled:
            # finished at once (the common case of a synchronous export)
            if call.trap is not None:
                fut.set_exception(call.trap)
            else:
                fut.set_result(call.result)
            if self.store.waiting:
                # threads it left waiting (work after task.return) need the runner
                self._ensure_runner()
            return call, fut

        def settle(c: HostCall) -> None:
            self._calls.pop(c, None)
            if fut.done():
                # the caller gave up (the future was cancelled): a value the
                # callee returned anyway goes nowhere
                c.result = None
                return
            if c.trap is not None:
                fut.set_exception(c.trap)
            else:
                fut.set_result(c.result)

        call.on_settle.append(settle)
        self._calls[call] = fut
        self._ensure_runner()
        return call, fut

    async def run(self, lf: CanonLift, args: list[Any]) -> list[Any] | None:
        """``await`` a host→guest call to completion."""
        return await self.call(lf, args)

    # -- host operations ------------------------------------------------------------

    def spawn_host(
        self,
        aw: Awaitable[T],
        on_done: Callable[[asyncio.Future[T]], None],
    ) -> asyncio.Future[T]:
        """Run ``aw`` as a host operation; ``on_done(task)`` applies its outcome.

        The store counts it as in flight (no deadlock is declared meanwhile).
        When ``on_done`` has run, the threads it readied run at once, in the
        same loop callback (no wake-up of the runner task in between).
        """
        store = self.store
        if type(aw) is CoroutineType:
            # what ensure_future does for a coroutine, minus its type checks
            task: asyncio.Future[T] = asyncio.get_running_loop().create_task(aw)
        else:
            task = asyncio.ensure_future(aw)
        store.begin_host_work()

        def done(t: asyncio.Future[T]) -> None:
            try:
                on_done(t)
            finally:
                assert store.host_pending > 0
                store.host_pending -= 1
                self._run_ready()

        task.add_done_callback(done)
        return task

    def host_func_inst(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        has_result: bool,
        cancel: CancelMode = "cancel",
        on_fail: Callable[[list[Any], BaseException], None] | None = None,
    ) -> FuncInst:
        """A callable component function backed by the host callable ``fn``.

        ``fn(*args)`` may return the result or an awaitable of it. A result
        resolves the call at once; so does a coroutine that finishes in its
        first step, which runs at once (an eager start: in a copy of the
        current context, as the current task of a task that takes over if
        the coroutine suspends; only then is the call a host operation of
        the store). Another awaitable runs as a host operation and resolves
        the call when it settles.

        Anything ``fn`` raises traps the calling instance with a message
        naming ``name``, chained to the exception: a branded
        ``polyengine_protocol`` trap keeps its code (``host import <name>
        trapped: ...``), anything else is ``host import <name> raised
        <type>: ...``. Then ``on_fail(args, exc)`` is told (the embedder
        layer releases what the arguments handed over).

        ``cancel`` is the answer to a cancellation request of a pending call:

        * ``"cancel"``: the host task is cancelled one loop iteration later
          (never inside the ``subtask.cancel`` built-in); the call then
          resolves as cancelled, or with the value if the host returned one;
        * ``"discard"`` (embedder-api A23): the call resolves as cancelled at
          once; the host operation keeps running, no longer counts as host
          work the store waits on (deadlocks are detected without it) and
          its eventual outcome is dropped unreported;
        * ``"abort"`` (A23 with A24): ``"discard"``, and the host task is
          cancelled one loop iteration later;
        * ``"ignore"`` (``defer_cancel``): the request is accepted and
          ignored; the call runs to completion.
        """
        assert cancel in _CANCEL_MODES, cancel
        spec = _HostFuncSpec(self, name, has_result, cancel, on_fail)

        def func_inst(
            on_start: OnStart, on_resolve: OnResolve, caller: InstanceState | None
        ) -> OnCancel:
            args = on_start()
            try:
                out = fn(*args)
            except Exception as exc:
                raise spec.fail(caller, exc, args) from exc
            kind = type(out)
            if kind is CoroutineType:
                return spec.start_coroutine(out, on_resolve, caller, args)
            if kind in _PLAIN_RESULTS or not inspect.isawaitable(out):
                on_resolve([out] if has_result else [])
                return _no_cancel
            return spec.start_awaitable(out, on_resolve, caller, args)

        return func_inst

    def close(self, reason: str = "the store was closed") -> None:
        """Fail the calls still in flight with a trap and stop the runner (idempotent).

        Call before :meth:`Store.close`; nothing may be driven afterwards.
        """
        calls, self._calls = self._calls, {}
        for fut in calls.values():
            if not fut.done():
                fut.set_exception(Trap(reason, code="closed"))
        runner, self._runner = self._runner, None
        if runner is not None and not runner.done():
            runner.cancel()
        self.store.on_wake = None

    # -- the runner ---------------------------------------------------------------------

    def _run_ready(self) -> None:
        """Run :meth:`_run_ready_now`: at once with few waiting threads (no extra loop
        iteration per host result), else once after this loop iteration's done-callbacks."""
        if self._ready_scheduled:
            return
        if len(self.store.waiting) <= self.batch:
            self._run_ready_now()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._run_ready_now()
            return
        self._ready_scheduled = True
        loop.call_soon(self._run_ready_now)

    def _run_ready_now(self) -> None:
        """Tick the threads host operations readied (scheduled from their done-callbacks).

        Hands over to the runner (:meth:`_on_wake`) whenever it has more to
        do than go back to sleep: ticks left over after a batch, no host
        operation in flight (the deadlock check), a store in use, or an
        exception a tick let through (the runner raises it).
        """
        self._ready_scheduled = False
        store = self.store
        if store.on_wake != self._on_wake:
            store.wake()  # closed, or driven by someone else now
            return
        if self._escaped is None and store.current is None and store.nesting_depth == 0:
            try:
                ticks = _tick_all(store, self.batch)
            except BaseException as exc:
                self._escaped = exc
            else:
                if ticks < self.batch and store.host_pending > 0 and not store.has_ready():
                    return
        store.wake()

    def _on_wake(self) -> None:
        self._event.set()
        if self._runner is None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return
            self._ensure_runner()

    def _ensure_runner(self) -> None:
        if self._runner is None or self._runner.done():
            self._runner = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        store = self.store
        me = asyncio.current_task()
        try:
            while True:
                escaped, self._escaped = self._escaped, None
                if escaped is not None:
                    raise escaped
                while _tick_all(store, self.batch) == self.batch:
                    await asyncio.sleep(0)
                if store.host_pending == 0 and not store.has_ready():
                    for call in list(self._calls):
                        _deadlock(store, call)
                    self._calls.clear()
                    return
                self._event.clear()
                if store.has_ready():
                    continue
                await self._event.wait()
        finally:
            if self._runner is me:
                self._runner = None


# -- host functions ------------------------------------------------------------------

#: result types that are never awaitable (skips the awaitable test on the hot path)
_PLAIN_RESULTS = frozenset({int, float, bool, str, bytes, list, tuple, dict, type(None)})


class _HostFuncSpec:
    """What every call of one host function shares (:meth:`Driver.host_func_inst`)."""

    __slots__ = ("driver", "has_result", "mode", "name", "on_fail")

    def __init__(
        self,
        driver: Driver,
        name: str,
        has_result: bool,
        mode: CancelMode,
        on_fail: Callable[[list[Any], BaseException], None] | None,
    ) -> None:
        self.driver = driver
        self.name = name
        self.has_result = has_result
        self.mode = mode
        self.on_fail = on_fail

    def fail(
        self, caller: InstanceState | None, exc: BaseException, args: list[Any] | None
    ) -> Trap:
        """Poison ``caller`` with the trap for ``exc``; release what ``args`` handed over."""
        trap = host_import_trap(self.name, exc)
        if caller is not None:
            self.driver.store.poison(caller, trap)
        if self.on_fail is not None and args is not None:
            try:
                self.on_fail(args, exc)
            except Exception as failure:  # never hides the trap itself
                trap.add_note(f"releasing the arguments failed: {failure!r}")
        return trap

    def start_coroutine(
        self,
        coro: Coroutine[Any, Any, Any],
        on_resolve: OnResolve,
        caller: InstanceState | None,
        args: list[Any],
    ) -> OnCancel:
        """Run ``coro``'s first step now; it becomes a host operation only if it suspends."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        current = self.driver.store.current
        sync = current is not None and not current.task.ft.is_async
        with on_stack(caller, sync):
            started = _eager_start(loop, coro, self.name)
        if isinstance(started, _Finished):
            return self._finished(started, on_resolve, caller, args)
        task, cont = started
        return _PendingHostCall(self, task, cont, on_resolve, caller, args).cancel

    def start_awaitable(
        self, aw: Any, on_resolve: OnResolve, caller: InstanceState | None, args: list[Any]
    ) -> OnCancel:
        """Another awaitable: an asyncio future already done answers at once."""
        if isinstance(aw, asyncio.Future) and aw.done():
            if aw.cancelled():
                failure: BaseException = asyncio.CancelledError(
                    "the host returned a cancelled future"
                )
                return self._finished(_Finished(None, failure), on_resolve, caller, args)
            failure_or_none = aw.exception()
            value = aw.result() if failure_or_none is None else None
            return self._finished(_Finished(value, failure_or_none), on_resolve, caller, args)
        task = asyncio.ensure_future(aw)
        return _PendingHostCall(self, task, None, on_resolve, caller, args).cancel

    def _finished(
        self,
        done: _Finished,
        on_resolve: OnResolve,
        caller: InstanceState | None,
        args: list[Any],
    ) -> OnCancel:
        exc = done.exc
        if exc is None:
            on_resolve([done.value] if self.has_result else [])
            return _no_cancel
        raise self.fail(caller, exc, args) from exc


class _PendingHostCall:
    """A host function call that did not settle at once: a host operation of the store.

    It counts as host work (the store is not deadlocked while it runs)
    until it settles or, under ``discard``/``abort``, until the guest
    cancels it.
    """

    __slots__ = (
        "args",
        "caller",
        "cont",
        "context",
        "counted",
        "discarded",
        "on_resolve",
        "requested",
        "settled",
        "spec",
        "task",
    )

    def __init__(  # noqa: PLR0917 (one construction site, all state)
        self,
        spec: _HostFuncSpec,
        task: asyncio.Future[Any],
        cont: _Continuation | None,
        on_resolve: OnResolve,
        caller: InstanceState | None,
        args: list[Any],
    ) -> None:
        self.spec = spec
        self.task = task
        self.cont = cont
        self.on_resolve = on_resolve
        self.caller = caller
        # kept only for on_fail: the host holds them meanwhile anyway
        self.args: list[Any] | None = args if spec.on_fail is not None else None
        self.settled = False
        self.discarded = False
        self.requested = False
        self.counted = True
        spec.driver.store.begin_host_work()
        if cont is None:
            task.add_done_callback(self.done)
        else:
            # the coroutine's value is applied inside the task's last step
            # (:meth:`finish`); any other ending goes through ``done``
            cont.pending = self
            self.context = contextvars.copy_context()

    def done(self, t: asyncio.Future[Any]) -> None:
        """The host operation settled: resolve or fail the call, run what it readied."""
        spec = self.spec
        try:
            if self.discarded:
                if not t.cancelled():
                    t.exception()  # consumed: the guest renounced the call, nobody to tell
                return
            if self.settled:
                return  # applied by finish() already
            self.settled = True
            if t.cancelled():
                if self.requested:
                    self.on_resolve(None)
                    return
                exc: BaseException | None = asyncio.CancelledError(
                    "the host task was cancelled by someone else"
                )
            else:
                exc = t.exception()
                if exc is None:
                    self._resolve(t.result())
                    return
            assert exc is not None
            spec.fail(self.caller, exc, self.args)
        finally:
            self._release()

    def _resolve(self, value: Any) -> None:
        try:
            self.on_resolve([value] if self.spec.has_result else [])
        except Exception as failure:  # the result could not be lowered
            self.spec.fail(self.caller, failure, None)

    def _release(self) -> None:
        """No longer host work of the store: run the threads the outcome readied."""
        self.args = None
        if self.counted:
            self.counted = False
            driver = self.spec.driver
            store = driver.store
            assert store.host_pending > 0
            store.host_pending -= 1
            driver._run_ready()

    def finish(self, value: Any) -> None:
        """The coroutine returned ``value`` in a step of its task (called from that step).

        Resolves the call and runs the threads it readied right away, in the
        loop iteration the coroutine finished in (no done-callback hop):
        with no current task and in the context the call started in, as a
        done-callback of the task would have.
        """
        if self.discarded:
            return  # the guest renounced the call: the value goes nowhere
        if self.settled:
            return
        self.settled = True
        task: Any = self.task  # the coroutine's own asyncio.Task
        loop = task.get_loop()
        _leave_task(loop, task)
        try:
            self.context.run(self._finish_now, value)
        finally:
            _enter_task(loop, task)

    def _finish_now(self, value: Any) -> None:
        try:
            self._resolve(value)
        finally:
            self._release()

    def watch(self) -> None:
        """The coroutine ended otherwise (raised, cancelled): ``done`` applies it."""
        self.task.add_done_callback(self.done, context=self.context)

    def cancel(self, _requester: InstanceState | None) -> None:
        """The guest's cancellation request (see :meth:`Driver.host_func_inst`)."""
        if self.settled or self.discarded:
            return
        mode = self.spec.mode
        if mode == "ignore":
            return
        if mode == "cancel":
            if not self.requested:
                self.requested = True
                asyncio.get_running_loop().call_soon(self._cancel_task)
            return
        # discard (A23): resolved as cancelled now; the store no longer waits on it
        self.discarded = True
        self.args = None
        if self.counted:
            self.counted = False
            store = self.spec.driver.store
            assert store.host_pending > 0
            store.host_pending -= 1
        self.on_resolve(None)
        if mode == "abort":
            asyncio.get_running_loop().call_soon(self._cancel_task)

    def _cancel_task(self) -> None:
        cont = self.cont
        if cont is not None and not cont.started:
            # the task has not taken over the coroutine yet: a cancellation now
            # could never reach it, so ask again one iteration later
            asyncio.get_running_loop().call_soon(self._cancel_task)
            return
        self.task.cancel()


class _Finished:
    """A coroutine that finished in its eager first step."""

    __slots__ = ("exc", "value")

    def __init__(self, value: Any, exc: BaseException | None) -> None:
        self.value = value
        self.exc = exc


class _Continuation:
    """Drives a coroutine from where its eager first step left it (3.11, no eager tasks).

    The task created for the call runs this object as its coroutine (it is
    registered as a :class:`collections.abc.Coroutine`): the first step
    hands the task what the coroutine yielded in the eager step (a future to
    wait on), or resumes it at once after a bare yield (``asyncio.sleep(0)``:
    the loop has turned since); later steps forward what the task sends or
    throws, so cancellation reaches the host coroutine at its pending
    ``await``. When the coroutine returns, the pending call (``pending``) is
    settled from inside that same step; when it raises, the call is settled
    by a done-callback of the task.
    """

    __slots__ = ("coro", "finished", "first", "pending", "started")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.first: Any = None
        self.finished = False
        self.started = False
        self.pending: _PendingHostCall | None = None

    def send(self, sent: Any) -> Any:
        if not self.started:
            self.started = True
            if self.finished:
                raise StopIteration(None)
            first, self.first = self.first, None
            if first is not None:
                return first  # the future the eager step waits on
        try:
            return self.coro.send(sent)
        except StopIteration as stop:
            self._returned(stop.value)
            raise
        except BaseException:
            self._raised()
            raise

    def throw(self, exc: BaseException, *_legacy: Any) -> Any:
        assert not _legacy, "the task throws exception instances"
        self.started = True
        self.first = None
        try:
            return self.coro.throw(exc)
        except StopIteration as stop:
            self._returned(stop.value)
            raise
        except BaseException:
            self._raised()
            raise

    def close(self) -> None:
        self.coro.close()

    def __await__(self) -> Generator[Any, Any, Any]:
        raise TypeError("a host call continuation is run by its task, not awaited")

    # what asyncio's task repr reads: the host coroutine's name, code and frame
    @property
    def __name__(self) -> str:
        return str(getattr(self.coro, "__qualname__", None) or type(self.coro).__name__)

    @property
    def cr_code(self) -> Any:
        return getattr(self.coro, "cr_code", None)

    @property
    def cr_frame(self) -> Any:
        return getattr(self.coro, "cr_frame", None)

    @property
    def cr_running(self) -> bool:
        return bool(getattr(self.coro, "cr_running", False))

    def _returned(self, value: Any) -> None:
        self.finished = True
        pending = self.pending
        if pending is not None:
            self.pending = None
            pending.finish(value)

    def _raised(self) -> None:
        self.finished = True
        pending = self.pending
        if pending is not None:
            self.pending = None
            pending.watch()


Coroutine.register(_Continuation)  # asyncio.Task accepts it as its coroutine


def _eager_start(
    loop: asyncio.AbstractEventLoop | None, coro: Coroutine[Any, Any, Any], name: str
) -> _Finished | tuple[asyncio.Future[Any], _Continuation | None]:
    """Run the first step of a host coroutine now, as Python 3.12's eager tasks do.

    The step runs in a copy of the current context, with the task that will
    own the coroutine as the loop's current task (``asyncio.timeout`` and
    ``TaskGroup`` bind to it). A coroutine that finishes in that step needs
    no loop iteration: its value or exception is returned as
    :class:`_Finished` (``KeyboardInterrupt`` and ``SystemExit`` propagate).
    One that suspends continues in its task (named after the import).
    """
    if loop is None:
        # no event loop (a call driven synchronously): it must finish at once
        try:
            coro.send(None)
        except StopIteration as stop:
            return _Finished(stop.value, None)
        except Exception as exc:
            return _Finished(None, exc)
        coro.close()
        raise RuntimeError(f"host import {name} suspended, but no event loop is running")
    if _EAGER_TASKS:
        task: asyncio.Future[Any] = asyncio.Task(  # type: ignore[call-arg,unused-ignore]
            coro, loop=loop, name=name, eager_start=True
        )
        if not task.done():
            return task, None
        if task.cancelled():
            return _Finished(None, asyncio.CancelledError("the host coroutine cancelled itself"))
        failure = task.exception()
        return _Finished(None if failure is not None else task.result(), failure)
    cont = _Continuation(coro)
    ctx = contextvars.copy_context()
    task = asyncio.Task(cast("Coroutine[Any, Any, Any]", cont), loop=loop, name=name, context=ctx)
    outer = _current_task(loop)
    if outer is not None:
        _leave_task(loop, outer)
    _enter_task(loop, task)
    try:
        cont.first = ctx.run(coro.send, None)
    except StopIteration as stop:
        cont.finished = True
        return _Finished(stop.value, None)
    except (KeyboardInterrupt, SystemExit):
        cont.finished = True
        raise
    except BaseException as exc:
        cont.finished = True
        return _Finished(None, exc)
    finally:
        _leave_task(loop, task)
        if outer is not None:
            _enter_task(loop, outer)
    return task, cont


_EAGER_TASKS = sys.version_info >= (3, 12)
_current_task = asyncio.current_task
# private asyncio API (stable since 3.7): the eager step makes the task current
_enter_task = asyncio.tasks._enter_task
_leave_task = asyncio.tasks._leave_task
