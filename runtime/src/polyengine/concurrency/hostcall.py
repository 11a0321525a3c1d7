"""Calls from the host into lifted functions (CanonicalABI.md §Embedding; ``canon lift``).

:func:`start_host_call` starts a host→guest call (the embedding's
``Store.invoke``) and runs it until it blocks; :func:`run_to_completion` is
the synchronous path, ticking the store until the call resolves (a call
that can never finish fails with the "deadlock detected" trap, which poisons
its instance); :func:`sync_scope` runs host-driven core code (a start
function) as a synchronous task. The asyncio path is :class:`.driver.Driver`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from polyengine.abi.trap import escaped
from polyengine.types.model import FuncType

from .lift import CanonLift, start_task
from .store import InstanceState, Store
from .task import Task
from .thread import Suspends, Thread
from .traps import Trap, TrapCode, ctrap

__all__ = ["HostCall", "run_to_completion", "start_host_call", "sync_scope", "tick_all"]


class HostCall:
    """A call of a lifted function made by the host.

    ``task`` is the callee task (``None`` if the call trapped before it
    existed); ``resolved`` and ``result`` follow its ``task.return`` (``result``
    is ``None`` when the call was cancelled); ``trap`` is set when a trap
    escaped the callee, even after it returned (its instance is poisoned
    then). ``on_settle`` (if set) is called once, at the first of the two.
    """

    __slots__ = ("on_settle", "resolved", "result", "task", "trap")

    def __init__(self) -> None:
        self.task: Task | None = None
        self.resolved = False
        self.result: list[Any] | None = None
        self.trap: Trap | None = None
        self.on_settle: Callable[[HostCall], None] | None = None

    @property
    def settled(self) -> bool:
        return self.resolved or self.trap is not None

    def _resolve(self, result: list[Any] | None) -> None:
        if self.resolved or self.trap is not None:  # settled
            return
        self.resolved = True
        self.result = result
        cb = self.on_settle  # _notify, inline: every call resolves once
        if cb is not None:
            cb(self)

    def _fail(self, trap: Trap) -> None:
        was_settled = self.settled
        if self.trap is None:
            self.trap = trap
        if not was_settled:
            self._notify()

    def _notify(self) -> None:
        cb = self.on_settle
        if cb is not None:
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
    if not inst.may_enter_from(None):
        ctrap(TrapCode.CANNOT_ENTER)

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
    if task.threads:  # (a task whose threads all ended can trap no more)
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


def tick_all(store: Store, limit: int | None = None) -> int:
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
        if tick_all(store, 1):
            continue
        if store.host_pending > 0:
            raise RuntimeError("the call waits on host operations: drive it with Driver")
        deadlock(store, call)
    if call.trap is not None:
        raise call.trap
    return call.result


def deadlock(store: Store, call: HostCall) -> None:
    try:
        ctrap(TrapCode.DEADLOCK)
    except Trap as trap:
        if call.task is not None:
            store.poison(call.task.inst, trap)
        call._fail(trap)
