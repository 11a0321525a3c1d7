"""The asyncio scheduler of a store (architecture.md §4 "Scheduling").

:class:`Driver` is the asyncio path: one per store, it runs ready threads in
a background asyncio task and sleeps on an :class:`asyncio.Event` when
nothing is ready; host operations wake it from their done-callbacks (no
polling). A host operation started by :meth:`Driver.spawn_host` runs the
threads it readied in its own done-callback, so a guest waiting on a host
call resumes in the loop iteration the call settles in. A call that can
never finish (no ready thread, no host operation in flight) fails with the
"deadlock detected" trap, which poisons its instance. Calls from the host
are :mod:`.hostcall`'s, host functions :mod:`.hostfunc`'s (they answer
inside the call when they can).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import CoroutineType
from typing import Any, TypeVar

from polyengine.abi.trap import host_import_trap

from .engine_seam import EngineActivation
from .hostcall import HostCall, deadlock, run_to_completion, start_host_call, sync_scope, tick_all
from .hostfunc import CancelMode, host_func_inst
from .lift import CanonLift
from .store import Store
from .task import FuncInst
from .traps import Trap

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


class Driver:
    """The asyncio scheduler of one store.

    Install with ``Driver(store)`` (it becomes ``store.on_wake``, see ``_wake``). ``call``
    starts a guest export and returns an awaitable of its results;
    ``spawn_host`` runs a host awaitable as a host operation that keeps the
    store alive and runs what it readied when it settles. ``batch`` ticks run between
    yields to the event loop, so host callbacks interleave with guest work.
    """

    def __init__(self, store: Store, *, batch: int = 64) -> None:
        self.store = store
        self.batch = batch
        #: while the runner sleeps, the future the first wake resolves (what an
        #: ``asyncio.Event`` does, without its method calls on every wake)
        self._wake_fut: asyncio.Future[None] | None = None
        self._runner: asyncio.Task[None] | None = None
        #: the unsettled calls (each leaves when it settles)
        self._calls: dict[HostCall, asyncio.Future[list[Any] | None]] = {}
        #: what escaped a tick run from a done-callback, for the runner to raise
        self._escaped: BaseException | None = None
        #: a pass over the ready threads is scheduled (host results settled in one
        #: loop iteration are served by one pass, not one pass each)
        self._ready_scheduled = False
        #: one bound method for every call (no object per call)
        self._settle_call = self._settle
        #: ``store.on_wake`` while a wake has something to do (the runner sleeps or
        #: is not running), else ``None``: the many wakes while the runner is
        #: scheduled or running cost no call (:meth:`_on_wake` would do nothing)
        self._wake = self._on_wake
        #: the ``store.run_here`` installed (compared by identity: still driven by this)
        self._here = self._run_here
        store.on_wake = self._wake
        store.run_here = self._here

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

        call.on_settle = self._settle_call
        self._calls[call] = fut
        self._ensure_runner()
        return call, fut

    def _settle(self, call: HostCall) -> None:
        """A call settled: hand its outcome to its future."""
        fut = self._calls.pop(call, None)
        if fut is None:
            return  # failed by close() already
        if fut.done():
            # the caller gave up (the future was cancelled): a value the
            # callee returned anyway goes nowhere
            call.result = None
            return
        if call.trap is not None:
            fut.set_exception(call.trap)
        else:
            fut.set_result(call.result)

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
                self.run_ready()

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
        return host_func_inst(
            self, fn, name=name, has_result=has_result, cancel=cancel, on_fail=on_fail
        )

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
        self.store.run_here = None

    # -- the runner ---------------------------------------------------------------------

    def run_ready(self) -> None:
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
        if store.run_here is not self._here:
            store.wake()  # closed, or driven by someone else now
            return
        if self._escaped is None and store.current is None and store.nesting_depth == 0:
            self._tick_batch()
            return
        store.wake()

    def _run_here(self) -> bool:
        """Run the next ready thread in the caller: a host end about to wait for a guest.

        Only when the store is idle (no thread of it running, no guest call
        on the stack) and driven by this driver; whether it ran. The thread
        is the one the runner would run first one loop iteration later (the
        same ready queue and policy), so the host end whose operation it
        completes need not wait for it; one only, so that the caller's task
        does not take over the runner's work for the other threads.
        """
        store = self.store
        if (
            self._escaped is not None
            or store.current is not None
            or store.nesting_depth
            or EngineActivation._active
            or store.run_here is not self._here
        ):
            return False
        self._tick_batch(1)
        return True

    def _tick_batch(self, limit: int | None = None) -> None:
        """At most ``limit`` ticks (``batch``); the runner is woken when it has more to do."""
        store = self.store
        limit = self.batch if limit is None else limit
        try:
            ticks = store.tick_ready(limit)  # (tick_all)
        except BaseException as exc:
            self._escaped = exc
        else:
            # fewer ticks than the batch: the last one found nothing ready,
            # so only threads set aside for an entered instance can be
            # (what ``store.has_ready()`` would answer)
            if ticks < limit and store.host_pending > 0 and not store.ready.deferred:
                return
        store.wake()

    def _on_wake(self) -> None:
        fut = self._wake_fut
        if fut is not None:
            self._wake_fut = None
            if not fut.done():
                fut.set_result(None)
            store = self.store
            if store.on_wake is self._wake:
                store.on_wake = None  # the runner is scheduled (see _wake)
        if self._runner is None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return
            self._ensure_runner()

    def _ensure_runner(self) -> None:
        if self._runner is None or self._runner.done():
            self._runner = asyncio.get_running_loop().create_task(self._run())
            store = self.store
            if store.on_wake is self._wake:
                store.on_wake = None  # the runner is scheduled (see _wake)

    async def _run(self) -> None:
        store = self.store
        me = asyncio.current_task()
        try:
            while True:
                escaped, self._escaped = self._escaped, None
                if escaped is not None:
                    raise escaped
                while tick_all(store, self.batch) == self.batch:
                    await asyncio.sleep(0)
                if store.host_pending == 0 and not store.has_ready():
                    for call in list(self._calls):
                        deadlock(store, call)
                    self._calls.clear()
                    return
                if store.has_ready():
                    continue
                fut = asyncio.get_running_loop().create_future()
                self._wake_fut = fut
                if store.run_here is self._here:  # (not closed)
                    store.on_wake = self._wake  # asleep: a wake must reach it
                try:
                    await fut
                finally:
                    self._wake_fut = None
        finally:
            if self._runner is me:
                self._runner = None
                if store.run_here is self._here:
                    store.on_wake = self._wake  # gone: a wake starts a new one
