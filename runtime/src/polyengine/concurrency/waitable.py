"""Waitables, waitable sets and events (CanonicalABI.md §Waitable State).

A :class:`Waitable` (a subtask or a stream/future end) holds at most one
pending event, produced lazily by a closure so that the state change it
describes happens when the event is delivered. A :class:`WaitableSet`
gathers waitables so a thread can wait for the first event among them.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import TYPE_CHECKING, TypeAlias

from .thread import Suspends
from .traps import TrapCode, ctrap

if TYPE_CHECKING:
    from .thread import Thread

__all__ = ["EventCode", "EventTuple", "Waitable", "WaitableSet"]


class EventCode(IntEnum):
    """Event codes delivered by ``waitable-set.wait``/``poll`` and callbacks."""

    NONE = 0
    SUBTASK = 1
    STREAM_READ = 2
    STREAM_WRITE = 3
    FUTURE_READ = 4
    FUTURE_WRITE = 5
    TASK_CANCELLED = 6


EventTuple: TypeAlias = tuple[EventCode, int, int]
"""``(code, index, payload)`` as passed to core wasm."""


class Waitable:
    """Something a thread can wait on (§Waitable State ``Waitable``).

    ``pending_event`` is a closure producing the event (and applying its
    state change) or ``None``; ``wset`` is the set it is joined to;
    ``has_sync_waiter`` is set while a thread waits on it synchronously, which
    forbids joining it to a set meanwhile; ``waiter`` is the thread to notify
    when its state changes (a synchronous waiter, or the caller waiting for a
    subtask to resolve), as the ready queue needs (:mod:`.ready`).
    """

    __slots__ = ("has_sync_waiter", "pending_event", "waiter", "wset")

    def __init__(self) -> None:
        self.pending_event: Callable[[], EventTuple] | None = None
        self.wset: WaitableSet | None = None
        self.has_sync_waiter = False
        self.waiter: Thread | None = None

    def set_pending_event(self, pending_event: Callable[[], EventTuple]) -> None:
        self.pending_event = pending_event
        if self.waiter is not None or self.wset is not None:  # (someone to notify)
            self.notify_waiters()

    def notify_waiters(self) -> None:
        """Queue the threads that wait on this waitable or on its set."""
        w = self.waiter
        if w is not None:
            w.task.inst.store.ready.notify(w)
        ws = self.wset
        if ws is not None and ws.waiters:
            for t in ws.waiters:
                t.task.inst.store.ready.notify(t)

    def has_pending_event(self) -> bool:
        return self.pending_event is not None

    def in_waitable_set(self) -> bool:
        return self.wset is not None

    def wait_for_pending_event(self, thread: Thread) -> Suspends[None]:
        """Block ``thread`` (not cancellably) until this waitable has an event."""
        assert not self.in_waitable_set() and not self.has_sync_waiter
        self.has_sync_waiter = True
        self.waiter = thread
        try:
            yield from thread.wait_until(self.has_pending_event, cancellable=False, notified=True)
        finally:
            self.has_sync_waiter = False
            self.waiter = None

    def get_pending_event(self) -> EventTuple:
        pending = self.pending_event
        assert pending is not None
        self.pending_event = None
        return pending()

    def join(self, wset: WaitableSet | None) -> None:
        assert not self.has_sync_waiter
        if self.wset is not None:
            self.wset.elems.remove(self)
        self.wset = wset
        if wset is not None:
            wset.elems.append(self)
            if self.pending_event is not None and wset.waiters:
                self.notify_waiters()

    def drop(self) -> None:
        assert not self.has_sync_waiter
        if self.wset is not None:  # (joined to none: nothing to leave)
            self.join(None)


class WaitableSet:
    """A set of waitables (§Waitable State ``WaitableSet``).

    ``elems`` keeps join order, which the FIFO policy uses to choose among
    several pending events; ``waiters`` are the threads blocked on it (the
    spec's ``num_waiting`` counts them), notified when an element gets an
    event.
    """

    __slots__ = ("elems", "waiters")

    def __init__(self) -> None:
        self.elems: list[Waitable] = []
        self.waiters: dict[Thread, None] = {}

    @property
    def num_waiting(self) -> int:
        return len(self.waiters)

    def has_pending_event(self) -> bool:
        for w in self.elems:  # noqa: SIM110 (a loop: no generator per call)
            if w.pending_event is not None:  # Waitable.has_pending_event, inlined
                return True
        return False

    def get_pending_event(self, thread: Thread) -> EventTuple:
        assert self.has_pending_event()
        policy = thread.store.policy
        # FIFO takes the first pending one in join order: no copy to shuffle
        for w in self.elems if policy.deterministic else policy.order(self.elems):
            assert w.wset is self
            if w.has_pending_event():
                return w.get_pending_event()
        raise AssertionError("no pending event")

    def wait_for_event_and(
        self, thread: Thread, ready_func: Callable[[], bool], cancellable: bool, gate: int = 0
    ) -> Suspends[EventTuple]:
        """Wait for an event while ``ready_func()`` holds (``gate`` guards it, :mod:`.ready`)."""
        self.waiters[thread] = None
        try:
            cancelled = yield from thread.wait_until(
                _Both(ready_func, self), cancellable, gate=gate, notified=True
            )
        finally:
            del self.waiters[thread]
        if cancelled:
            return (EventCode.TASK_CANCELLED, 0, 0)
        return self.get_pending_event(thread)

    def wait_for_event(self, thread: Thread, cancellable: bool) -> Suspends[EventTuple]:
        # wait_for_event_and with a condition that always holds, inlined
        self.waiters[thread] = None
        try:
            cancelled = yield from thread.wait_until(
                self.has_pending_event, cancellable, notified=True
            )
        finally:
            del self.waiters[thread]
        if cancelled:
            return (EventCode.TASK_CANCELLED, 0, 0)
        return self.get_pending_event(thread)

    def poll(self, thread: Thread, cancellable: bool) -> EventTuple:
        if thread.task.deliver_pending_cancel(cancellable):
            return (EventCode.TASK_CANCELLED, 0, 0)
        if not self.has_pending_event():
            return (EventCode.NONE, 0, 0)
        return self.get_pending_event(thread)

    def drop(self) -> None:
        if self.elems:
            ctrap(TrapCode.WAITABLE_SET, "cannot drop waitable set with members")
        if self.waiters:
            ctrap(TrapCode.WAITABLE_SET, "cannot drop waitable set with waiters")


class _Both:
    """``ready_func() and wset.has_pending_event()`` (one object, not a closure)."""

    __slots__ = ("ready_func", "wset")

    def __init__(self, ready_func: Callable[[], bool], wset: WaitableSet) -> None:
        self.ready_func = ready_func
        self.wset = wset

    def __call__(self) -> bool:
        return self.ready_func() and self.wset.has_pending_event()
