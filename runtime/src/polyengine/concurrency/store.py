"""Per-store and per-instance scheduling state (CanonicalABI.md §Component
Instances, §Embedding, §Table State).

:class:`Store` holds the threads that wait to be resumed and makes the
scheduling choices through its :class:`~.sched.SchedulePolicy`.
:class:`InstanceState` is the concurrency part of a component instance: the
entry/exit flags, backpressure, the exclusive lock, the thread table, and the
handle table that waitables share with resource handles (the canonical ABI's
handle table is passed in, so both layers index one table).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from .sched import SchedulePolicy
from .traps import Trap, TrapCode, ctrap, ctrap_if

if TYPE_CHECKING:
    from .thread import Thread

__all__ = ["HandleTable", "InstanceState", "Store", "Table"]

E = TypeVar("E")


class HandleTable(Protocol):
    """What the task model needs of an instance's handle table (``handles``)."""

    def add(self, e: object) -> int: ...

    def get(self, i: int) -> object: ...

    def remove(self, i: int) -> object: ...


class Table(Generic[E]):
    """A slot table with index 0 reserved and freed slots reused (§Table State)."""

    MAX_LENGTH = 2**28 - 1

    __slots__ = ("array", "free")

    def __init__(self) -> None:
        self.array: list[E | None] = [None]
        self.free: list[int] = []

    def __iter__(self) -> Iterator[E]:
        return (e for e in list(self.array) if e is not None)

    def __len__(self) -> int:
        return len(self.array) - 1 - len(self.free)

    def get(self, i: int) -> E:
        ctrap_if(not 0 <= i < len(self.array), TrapCode.INVALID_HANDLE, f"unknown handle index {i}")
        e = self.array[i]
        if e is None:
            ctrap(TrapCode.INVALID_HANDLE, f"unknown handle index {i}")
        return e

    def add(self, e: E) -> int:
        if self.free:
            i = self.free.pop()
            assert self.array[i] is None
            self.array[i] = e
        else:
            i = len(self.array)
            ctrap_if(i > Table.MAX_LENGTH, TrapCode.INVALID_HANDLE, "handle table full")
            self.array.append(e)
        return i

    def remove(self, i: int) -> E:
        e = self.get(i)
        self.array[i] = None
        self.free.append(i)
        return e


class InstanceState:
    """Concurrency state of one component instance (§Component Instances).

    ``may_enter``/``may_leave`` guard Component Invariant #2 and the
    no-leave windows (realloc, post-return); ``backpressure`` is the
    ``backpressure.inc``/``dec`` counter; ``exclusive_thread`` holds the
    implicit lock taken by sync-lifted and callback-lifted async exports;
    ``poisoned`` is the trap that escaped this instance, after which it can
    no longer be entered.
    """

    __slots__ = (
        "backpressure",
        "exclusive_thread",
        "handles",
        "may_enter",
        "may_leave",
        "name",
        "num_waiting_to_enter",
        "parent",
        "poisoned",
        "store",
        "threads",
    )

    store: Store
    parent: InstanceState | None

    def __init__(
        self,
        store: Store,
        handles: HandleTable | None = None,
        parent: InstanceState | None = None,
        name: str = "",
    ) -> None:
        assert parent is None or parent.store is store
        self.store = store
        self.parent = parent
        self.name = name
        self.handles: HandleTable = handles if handles is not None else Table[object]()
        self.threads: Table[Thread] = Table()
        self.may_enter = True
        self.may_leave = True
        self.backpressure = 0
        self.num_waiting_to_enter = 0
        self.exclusive_thread: Thread | None = None
        self.poisoned: Trap | None = None
        store.instances.append(self)

    def __repr__(self) -> str:
        return f"<InstanceState {self.name or hex(id(self))}>"

    def self_and_ancestors(self) -> set[InstanceState]:
        s = {self}
        a = self.parent
        while a is not None:
            s.add(a)
            a = a.parent
        return s

    def entering_set(self, caller: InstanceState | None) -> set[InstanceState]:
        if caller is not None:
            return self.self_and_ancestors() - caller.self_and_ancestors()
        return self.self_and_ancestors()

    def may_enter_from(self, caller: InstanceState | None) -> bool:
        return all(i.may_enter and i.poisoned is None for i in self.entering_set(caller))

    def enter_from(self, caller: InstanceState | None) -> None:
        for i in self.entering_set(caller):
            assert i.may_enter
            i.may_enter = False

    def leave_to(self, caller: InstanceState | None) -> None:
        for i in self.entering_set(caller):
            assert not i.may_enter
            i.may_enter = True

    def check_may_leave(self) -> None:
        """``trap_if(not inst.may_leave)`` at the top of every built-in."""
        ctrap_if(not self.may_leave, TrapCode.CANNOT_LEAVE)
        ctrap_if(self.poisoned is not None, TrapCode.POISONED, "component instance is poisoned")


class Store:
    """Threads waiting to run, and the scheduling policy (§Embedding ``Store``).

    ``waiting`` keeps the order in which threads started waiting, so the FIFO
    policy resumes the longest-waiting ready thread. ``current`` is the
    thread being stepped (the spec's ``current_thread()``). ``host_pending``
    counts host operations in flight that may still make a waiting thread
    ready; with none in flight and nothing ready, a call that has not
    finished is a deadlock. ``on_wake`` is called whenever state changed
    outside a tick (the asyncio driver installs it). ``on_poison`` hooks are
    called with each instance a trap escapes from.
    """

    __slots__ = (
        "current",
        "host_pending",
        "instances",
        "nesting_depth",
        "on_poison",
        "on_wake",
        "policy",
        "waiting",
    )

    def __init__(self, policy: SchedulePolicy | None = None) -> None:
        self.policy = policy if policy is not None else SchedulePolicy.from_env()
        self.waiting: list[Thread] = []
        self.current: Thread | None = None
        self.nesting_depth = 0
        self.host_pending = 0
        self.instances: list[InstanceState] = []
        self.on_wake: Callable[[], None] | None = None
        self.on_poison: list[Callable[[InstanceState, Trap], None]] = []

    # -- host work accounting ------------------------------------------------

    def begin_host_work(self) -> None:
        """Record a host operation in flight (it will call :meth:`end_host_work`)."""
        self.host_pending += 1

    def end_host_work(self) -> None:
        """A host operation settled; its state change may have readied threads."""
        assert self.host_pending > 0
        self.host_pending -= 1
        self.wake()

    def wake(self) -> None:
        """Tell the driver that waiting threads may have become ready."""
        if self.on_wake is not None:
            self.on_wake()

    # -- scheduling ------------------------------------------------------------

    def ready_threads(self, inst: InstanceState | None = None) -> list[Thread]:
        """Ready threads in waiting order, optionally only those of ``inst``."""
        out = []
        for t in self.waiting:
            if inst is not None and t.task.inst is not inst:
                continue
            if t.ready():
                out.append(t)
        return out

    def pick_ready(self, inst: InstanceState | None = None) -> Thread | None:
        """The next thread to resume: the first ready one, or a seeded choice."""
        if self.policy.deterministic:
            for t in self.waiting:
                if (inst is None or t.task.inst is inst) and t.ready():
                    if inst is not None and t is inst.exclusive_thread:
                        continue
                    return t
            return None
        cands = [
            t for t in self.ready_threads(inst) if inst is None or t is not inst.exclusive_thread
        ]
        return self.policy.pick(cands) if cands else None

    def tick(self) -> bool:
        """Resume one ready thread from the top level; ``False`` when none is ready.

        A trap escaping the thread poisons its instance (and fails the tasks
        of that instance's threads) and is re-raised.
        """
        assert self.nesting_depth == 0
        thread = None
        for t in self.waiting if self.policy.deterministic else self.policy.order(self.waiting):
            if t.ready() and t.task.inst.may_enter_from(None):
                thread = t
                break
        if thread is None:
            return False
        self.nesting_depth += 1
        inst = thread.task.inst
        inst.enter_from(None)
        try:
            thread.resume()
        except Trap as trap:
            self.poison(inst, trap)
            raise
        finally:
            if not inst.may_enter:
                inst.leave_to(None)
            self.nesting_depth -= 1
        return True

    def poison(self, inst: InstanceState, trap: Trap) -> None:
        """Mark ``inst`` unusable after ``trap`` escaped it; fail its pending tasks."""
        if inst.poisoned is not None:
            return
        inst.poisoned = trap
        for t in list(inst.threads):
            if t.running():
                continue
            t.abandon()
            t.task.fail(trap)
        for w in list(self.waiting):
            if w.task.inst is inst:
                w.abandon()
                w.task.fail(trap)
        for hook in list(self.on_poison):
            hook(inst, trap)
        self.wake()

    def deadlocked(self) -> bool:
        """No ready thread and no host operation in flight."""
        return self.host_pending == 0 and not any(t.ready() for t in self.waiting)
