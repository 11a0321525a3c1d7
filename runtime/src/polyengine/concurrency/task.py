"""Tasks and subtasks (CanonicalABI.md §Tasks, §Subtask State).

A :class:`Task` is the callee side of one call of a lifted function: it owns
1..N threads, enforces backpressure and the exclusive lock on entry, and
resolves exactly once (``task.return`` or ``task.cancel``). A
:class:`Subtask` is the caller side of one call of a lowered function: a
waitable whose events report the call's progress to the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum, IntEnum
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from polyengine.types.model import FuncType

from .ready import Gate
from .thread import Cancelled, CoreVal, Suspends, Thread
from .traps import Trap, TrapCode, ctrap, ctrap_if
from .waitable import Waitable

if TYPE_CHECKING:
    from .store import InstanceState

__all__ = [
    "FuncInst",
    "Lender",
    "OnCancel",
    "OnResolve",
    "OnStart",
    "Subtask",
    "Task",
]

OnStart: TypeAlias = Callable[[], list[Any]]
"""Called once the callee may start: returns the argument values."""
OnResolve: TypeAlias = Callable[[list[Any] | None], None]
"""Called once with the result values, or ``None`` when cancelled."""
OnCancel: TypeAlias = Callable[["InstanceState | None"], None]
"""Requests cancellation of a call; the argument is the requesting instance."""
FuncInst: TypeAlias = Callable[[OnStart, OnResolve, "InstanceState | None"], OnCancel]
"""A callable component function (§Embedding ``FuncInst``): lifted or host-defined."""


class Task:
    """The callee side of a call (§Tasks).

    ``state`` moves INITIAL → STARTED → (PENDING_CANCEL →) (CANCEL_DELIVERED →)
    RESOLVED. ``num_borrows`` counts borrowed handles lent to this task that
    are not yet dropped (maintained by the handle layer). ``threads`` are the
    live threads; ``implicit_thread`` is the one created for the call.
    ``return_key`` identifies the lift options of the callee, which
    ``task.return`` must match. ``on_start`` and ``on_resolve`` are dropped
    once called, ``on_trap`` once the last thread ended, ``implicit_thread``
    once it exited (no reference cycle outlives the call: a finished call is
    freed by reference counting, not by the garbage collector). ``on_trap``
    is told when the task fails
    because a trap escaped one of its threads or poisoned its instance.
    """

    class State(Enum):
        INITIAL = 1
        STARTED = 2
        PENDING_CANCEL = 3
        CANCEL_DELIVERED = 4
        RESOLVED = 5

    __slots__ = (
        "async_",
        "callback",
        "failed",
        "ft",
        "implicit_thread",
        "inst",
        "num_borrows",
        "on_resolve",
        "on_start",
        "on_trap",
        "return_key",
        "state",
        "threads",
    )

    def __init__(
        self,
        ft: FuncType,
        inst: InstanceState,
        on_start: OnStart,
        on_resolve: OnResolve,
        *,
        async_: bool = False,
        callback: bool = False,
        return_key: object = None,
    ) -> None:
        self.ft = ft
        self.inst = inst
        self.on_start = on_start
        self.on_resolve = on_resolve
        self.async_ = async_
        self.callback = callback
        self.return_key = return_key
        self.state = Task.State.INITIAL
        self.num_borrows = 0
        self.implicit_thread: Thread | None = None
        self.threads: list[Thread] = []
        self.on_trap: Callable[[Trap], None] | None = None
        self.failed: Trap | None = None

    def __repr__(self) -> str:
        return f"<Task {self.state.name} in {self.inst!r}>"

    def resolved(self) -> bool:
        return self.state is Task.State.RESOLVED

    def may_block(self) -> bool:
        """Whether a thread of this task may block (Concurrency.md §Blocking)."""
        return self.ft.is_async or self.state is Task.State.RESOLVED

    def needs_exclusive(self) -> bool:
        """Sync-lifted and callback-lifted async exports take the instance lock."""
        assert self.ft.is_async
        return not self.async_ or self.callback

    def has_backpressure(self) -> bool:
        inst = self.inst
        return inst.backpressure > 0 or (
            self.needs_exclusive() and inst.exclusive_thread is not None
        )

    def enter_implicit_thread(self, thread: Thread) -> Suspends[bool]:
        """Wait out backpressure, take the exclusive lock, register ``thread``.

        Returns ``False`` when the call was cancelled before it started.
        """
        assert self.state is Task.State.INITIAL
        self.implicit_thread = thread
        inst = self.inst
        if self.ft.is_async:
            # has_backpressure() and needs_exclusive(), inline: every async call enters here
            # (the fields under the ``backpressure`` and ``exclusive_thread`` properties)
            exclusive = not self.async_ or self.callback
            if (
                inst._backpressure > 0
                or (exclusive and inst._exclusive_thread is not None)
                or inst.num_waiting_to_enter > 0
            ):
                inst.num_waiting_to_enter += 1
                try:
                    cancelled = yield from thread.wait_until(
                        lambda: not self.has_backpressure(),
                        cancellable=True,
                        entering=True,
                        gate=Gate.ENTER_EXCLUSIVE if self.needs_exclusive() else Gate.BACKPRESSURE,
                    )
                finally:
                    inst.num_waiting_to_enter -= 1
                if cancelled:
                    self.cancel()
                    return False
            if exclusive:
                assert inst._exclusive_thread is None
                inst.exclusive_thread = thread
        # register_thread, inline
        assert thread not in self.threads and thread.task is self
        self.threads.append(thread)
        assert thread.index is None
        thread.index = inst.threads.add(thread)
        return True

    def enter_implicit_thread_now(self, thread: Thread) -> None:
        """:meth:`enter_implicit_thread` of a task whose type is not ``async``: it
        takes no lock and waits for no backpressure, so nothing can block."""
        assert self.state is Task.State.INITIAL and not self.ft.is_async
        self.implicit_thread = thread
        self.register_thread(thread)

    def register_thread(self, thread: Thread) -> None:
        assert thread not in self.threads and thread.task is self
        self.threads.append(thread)
        assert thread.index is None
        thread.index = self.inst.threads.add(thread)

    def exit_implicit_thread(self, thread: Thread) -> None:
        assert thread is self.implicit_thread
        self.unregister_thread(thread)
        if self.ft.is_async and (not self.async_ or self.callback):  # needs_exclusive()
            inst = self.inst
            assert inst._exclusive_thread is thread
            inst.exclusive_thread = None
        self.implicit_thread = None

    def unregister_thread(self, thread: Thread) -> None:
        assert thread in self.threads and thread.task is self
        self.threads.remove(thread)
        assert thread.index is not None
        self.inst.threads.remove(thread.index)
        if not self.threads:
            self.on_trap = None  # no thread left to trap
            if self.state is not Task.State.RESOLVED:
                ctrap(
                    TrapCode.TASK_STATE,
                    "task's last thread ended before task.return or task.cancel",
                )
            assert self.num_borrows == 0

    def request_cancellation(self, caller: InstanceState | None) -> None:
        """Deliver a cancellation request (§Tasks ``request_cancellation``)."""
        if self.state is Task.State.INITIAL:
            self.state = Task.State.CANCEL_DELIVERED
            assert self.implicit_thread is not None
            self.implicit_thread.resume(Cancelled.TRUE)
            return
        if self.state is not Task.State.STARTED:
            return  # already requested or resolved: nothing more to deliver
        inst = self.inst
        candidates = [t for t in self.threads if t.cancellable and t.is_parked]
        if (
            self.ft.is_async
            and self.needs_exclusive()
            and inst.exclusive_thread not in (None, self.implicit_thread)
            and self.implicit_thread in candidates
        ):
            candidates.remove(self.implicit_thread)
        if candidates and inst.may_enter_from(caller):
            self.state = Task.State.CANCEL_DELIVERED
            inst.enter_from(caller)
            try:
                inst.store.policy.pick(candidates).resume(Cancelled.TRUE)
            finally:
                inst.leave_to(caller)
        else:
            self.state = Task.State.PENDING_CANCEL

    def deliver_pending_cancel(self, cancellable: bool) -> bool:
        if cancellable and self.state is Task.State.PENDING_CANCEL:
            self.state = Task.State.CANCEL_DELIVERED
            return True
        return False

    def start(self) -> list[Any]:
        assert self.state is Task.State.INITIAL
        self.state = Task.State.STARTED
        on_start, self.on_start = self.on_start, _started
        return on_start()

    def return_(self, result: list[Any]) -> None:
        if self.state is Task.State.RESOLVED:
            ctrap(TrapCode.TASK_STATE, "task already returned or cancelled")
        if self.num_borrows > 0:
            ctrap(
                TrapCode.BORROWS_OUTSTANDING, "borrow handles still remain at the end of the call"
            )
        on_resolve, self.on_resolve = self.on_resolve, _resolved
        on_resolve(result)
        self.state = Task.State.RESOLVED

    def cancel(self) -> None:
        ctrap_if(
            self.state is not Task.State.CANCEL_DELIVERED,
            TrapCode.TASK_STATE,
            "task.cancel called when no cancellation was delivered",
        )
        ctrap_if(
            self.num_borrows > 0,
            TrapCode.BORROWS_OUTSTANDING,
            "borrow handles still remain at the end of the call",
        )
        on_resolve, self.on_resolve = self.on_resolve, _resolved
        on_resolve(None)
        self.state = Task.State.RESOLVED

    def fail(self, trap: Trap) -> None:
        """The task can never finish because ``trap`` escaped; tell its caller once."""
        if self.failed is not None:
            return
        self.failed = trap
        if self.on_trap is not None:
            self.on_trap(trap)


def _started() -> list[Any]:
    raise AssertionError("the task was started already")


def _resolved(_result: list[Any] | None) -> None:
    raise AssertionError("the task was resolved already")


class Lender(Protocol):
    """A handle lent to a subtask (the handle layer's ``ResourceHandle``)."""

    num_lends: int


class Subtask(Waitable):
    """The caller side of a call (§Subtask State).

    ``state`` is reported to the caller as the event payload; ``lenders``
    are the handles lent for the call (``None`` once the resolution was
    delivered and their lends released); ``flat_results`` are the lowered
    results of a synchronous call.
    """

    class State(IntEnum):
        STARTING = 0
        STARTED = 1
        RETURNED = 2
        CANCELLED_BEFORE_STARTED = 3
        CANCELLED_BEFORE_RETURNED = 4

    __slots__ = ("cancellation_requested", "flat_results", "lenders", "on_cancel", "state")

    def __init__(self) -> None:
        super().__init__()
        self.state = Subtask.State.STARTING
        self.on_cancel: OnCancel | None = None
        self.lenders: list[Lender] | None = []
        self.cancellation_requested = False
        self.flat_results: list[CoreVal] = []

    def resolved(self) -> bool:
        return self.state >= Subtask.State.RETURNED

    def add_lender(self, lending_handle: Lender) -> None:
        assert not self.resolve_delivered() and not self.resolved()
        assert self.lenders is not None
        lending_handle.num_lends += 1
        self.lenders.append(lending_handle)

    def resolve(self, state: Subtask.State, flat_results: list[CoreVal]) -> None:
        # (the asserts test ``resolved()`` inline: this runs on every lowered call)
        assert state is Subtask.State.RETURNED or flat_results == []
        assert self.state < Subtask.State.RETURNED <= state, (self.state, state)
        self.state = state
        self.flat_results = flat_results
        self.on_cancel = None  # nothing left to cancel
        w = self.waiter
        if w is not None:
            w.task.inst.store.ready.notify(w)

    def deliver_resolve(self) -> None:
        lenders = self.lenders
        assert lenders is not None and self.state >= Subtask.State.RETURNED
        for h in lenders:
            h.num_lends -= 1
        self.lenders = None

    def resolve_delivered(self) -> bool:
        assert self.lenders is not None or self.resolved()
        return self.lenders is None

    def drop(self) -> None:
        ctrap_if(
            not self.resolve_delivered(),
            TrapCode.SUBTASK,
            "cannot drop a subtask which has not yet resolved",
        )
        super().drop()
