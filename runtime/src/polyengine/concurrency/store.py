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

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from polyengine.abi.resources import ComponentInstance, Table
from polyengine.abi.trap import escaped, fault, passes_through

from .ready import ReadyQueue
from .sched import SchedulePolicy
from .traps import Trap, TrapCode, ctrap_if

if TYPE_CHECKING:
    from .thread import Thread

__all__ = ["DEFAULT_MAX_STACKFUL", "HandleTable", "InstanceState", "Store"]

DEFAULT_MAX_STACKFUL = 10_000
"""Live stackful activations a store allows by default (``Limits.max_stackful``).

Each parked one holds a fiber: its stack and guard page cost two memory
mappings, and a process has about 65,000 (``vm.max_map_count``), so some
32,000 parked fibers exhaust it.
"""


class HandleTable(Protocol):
    """What the task model needs of an instance's handle table (``handles``)."""

    def add(self, e: object) -> int: ...

    def get(self, i: int) -> object: ...

    def remove(self, i: int) -> object: ...


class PoisonRecord(Protocol):
    """Where an instance's ``poisoned`` trap lives (its one state object)."""

    poisoned: BaseException | None


class _PoisonCell:
    """The ``poisoned`` field of an instance whose runtime passed no state object."""

    __slots__ = ("poisoned",)

    def __init__(self) -> None:
        self.poisoned: BaseException | None = None


class InstanceState:
    """Concurrency state of one component instance (§Component Instances).

    Wraps the canonical ABI's :class:`~polyengine.abi.resources.ComponentInstance`
    (``ci``: the handle table shared by resources and waitables, and the
    ``may_enter``/``may_leave`` flags) and adds the task-model fields:
    ``threads`` (the thread table), ``backpressure`` (the
    ``backpressure.inc``/``dec`` counter), ``num_waiting_to_enter``,
    ``exclusive_thread`` (the implicit lock taken by sync-lifted and
    callback-lifted async exports). ``poisoned`` (the trap that escaped this
    instance, after which it can no longer be entered) is not a field of its
    own: it lives on ``record``, the one state object of the instance that
    the runtime passes in (any object with a ``poisoned`` attribute), so the
    synchronous path and the task model read and write the same field.
    """

    __slots__ = (
        "_backpressure",
        "_entering_from",
        "_exclusive_thread",
        "ci",
        "gate_released",
        "gated",
        "lock_free",
        "num_waiting_to_enter",
        "record",
        "store",
        "threads",
    )

    store: Store
    ci: ComponentInstance

    def __init__(
        self,
        store: Store,
        ci: ComponentInstance | None = None,
        *,
        parent: InstanceState | None = None,
        name: str = "",
        record: PoisonRecord | None = None,
    ) -> None:
        if ci is None:
            ci = ComponentInstance(parent.ci if parent is not None else None, name)
        else:
            assert parent is None or ci.parent is parent.ci
        assert ci not in store.states, "instance registered twice"
        self.store = store
        self.ci = ci
        self.threads: Table[Thread] = Table()
        self._backpressure = 0
        self.num_waiting_to_enter = 0
        self._exclusive_thread: Thread | None = None
        #: per :class:`~.ready.Gate` kind (index 1..3), the threads held at the
        #: gate while it is shut, in arrival order; ``gate_released[k]``: the
        #: first of them is on the ready queue (:mod:`.ready`)
        self.gated: tuple[deque[tuple[Thread, int, int]], ...] = (
            deque(),
            deque(),
            deque(),
            deque(),
        )
        self.gate_released = [False, False, False, False]
        #: ``exclusive_thread is None`` as a predicate, bound once (waits use it)
        self.lock_free: Callable[[], bool] = self._lock_free
        #: holds ``poisoned``: the instance's one state object, or a cell of its own
        self.record: PoisonRecord = record if record is not None else _PoisonCell()
        #: the entering set per caller (the instance tree never changes)
        self._entering_from: dict[InstanceState | None, tuple[ComponentInstance, ...]] = {}
        store.states[ci] = self

    def __repr__(self) -> str:
        return f"<InstanceState {self.ci.name or hex(id(self))}>"

    @property
    def backpressure(self) -> int:
        return self._backpressure

    @backpressure.setter
    def backpressure(self, n: int) -> None:
        self._backpressure = n
        if n == 0:
            gated = self.gated
            if gated[1] or gated[2] or gated[3]:
                self.store.ready.open_gates(self)

    def _lock_free(self) -> bool:
        return self._exclusive_thread is None

    @property
    def exclusive_thread(self) -> Thread | None:
        return self._exclusive_thread

    @exclusive_thread.setter
    def exclusive_thread(self, t: Thread | None) -> None:
        """Setting ``None`` (the lock released) releases a thread held at the gate."""
        self._exclusive_thread = t
        if t is None:
            gated = self.gated
            if gated[1] or gated[2] or gated[3]:
                self.store.ready.open_gates(self)

    @property
    def poisoned(self) -> BaseException | None:
        """The trap that escaped this instance, as the embedder sees it (:func:`fault`)."""
        return self.record.poisoned

    @poisoned.setter
    def poisoned(self, trap: BaseException) -> None:
        self.record.poisoned = fault(trap)

    @property
    def handles(self) -> HandleTable:
        return self.ci.handles

    @property
    def may_leave(self) -> bool:
        return self.ci.may_leave

    @may_leave.setter
    def may_leave(self, v: bool) -> None:
        self.ci.may_leave = v

    @property
    def may_enter(self) -> bool:
        return self.ci.may_enter

    @property
    def parent(self) -> InstanceState | None:
        p = self.ci.parent
        return None if p is None else self.store.states.get(p)

    def _entering(self, caller: InstanceState | None) -> tuple[ComponentInstance, ...]:
        """``ci.entering_set`` of the caller's ``ci``, computed once per caller."""
        found = self._entering_from.get(caller)
        if found is None:
            found = tuple(self.ci.entering_set(caller.ci if caller is not None else None))
            self._entering_from[caller] = found
        return found

    def may_enter_from(self, caller: InstanceState | None) -> bool:
        states = self.store.states
        for ci in self._entering_from.get(caller) or self._entering(caller):
            if not ci.may_enter:
                return False
            st = states.get(ci)
            if st is not None and st.record.poisoned is not None:
                return False
        return True

    def enter_from(self, caller: InstanceState | None) -> None:
        """``ComponentInstance.enter_from`` over the cached entering set."""
        for ci in self._entering_from.get(caller) or self._entering(caller):
            assert ci.may_enter
            ci.may_enter = False

    def leave_to(self, caller: InstanceState | None) -> None:
        """``ComponentInstance.leave_to`` over the cached entering set."""
        for ci in self._entering_from.get(caller) or self._entering(caller):
            assert not ci.may_enter
            ci.may_enter = True

    def check_may_leave(self) -> None:
        """``trap_if(not inst.may_leave)`` at the top of every built-in."""
        if self.ci.may_leave and self.record.poisoned is None:
            return
        ctrap_if(not self.ci.may_leave, TrapCode.CANNOT_LEAVE)
        ctrap_if(self.poisoned is not None, TrapCode.POISONED, "component instance is poisoned")


class Store:
    """Threads waiting to run, and the scheduling policy (§Embedding ``Store``).

    ``waiting`` holds every waiting thread (an insertion-ordered dict: a
    thread stops waiting in O(1)); ``ready`` is the ready queue, which finds
    the ready ones from the events that readied them (:mod:`.ready`) and
    orders them by the policy (:mod:`.sched`). ``current`` is the
    thread being stepped (the spec's ``current_thread()``). ``host_pending``
    counts host operations in flight that may still make a waiting thread
    ready; with none in flight and nothing ready, a call that has not
    finished is a deadlock. ``on_wake`` is called whenever state changed
    outside a tick (the asyncio driver installs it); ``run_here()``, when the
    driver installed it, runs the next ready thread at once if the store is idle
    (a host end about to wait for a guest: :mod:`.host_ends`). ``on_poison`` hooks are
    called with each instance a trap escapes from.

    ``fibers`` counts the live activations on fibers (started core calls
    that have not finished); ``max_stackful`` caps them for async tasks
    (``None``: no cap): a call beyond the cap waits in ``fiber_waiters``
    (in arrival order; threads abandoned meanwhile are dropped when they
    reach the front) for a fiber to finish instead of allocating one.
    """

    __slots__ = (
        "current",
        "fiber_waiters",
        "fibers",
        "host_pending",
        "max_stackful",
        "nesting_depth",
        "on_poison",
        "on_wake",
        "policy",
        "ready",
        "run_here",
        "states",
        "waiting",
    )

    def __init__(self, policy: SchedulePolicy | None = None) -> None:
        self.policy = policy if policy is not None else SchedulePolicy.from_env()
        self.waiting: dict[Thread, None] = {}
        self.ready = ReadyQueue(self.policy)
        self.current: Thread | None = None
        self.nesting_depth = 0
        self.host_pending = 0
        self.states: dict[ComponentInstance, InstanceState] = {}
        self.on_wake: Callable[[], None] | None = None
        self.run_here: Callable[[], bool] | None = None
        self.on_poison: list[Callable[[InstanceState, Trap], None]] = []
        self.fibers = 0
        self.max_stackful: int | None = DEFAULT_MAX_STACKFUL
        self.fiber_waiters: deque[Thread] = deque()

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

    # -- live stackful activations ----------------------------------------------

    def take_fiber(self, thread: Thread) -> bool:
        """Count a new fiber for ``thread``, or (at the cap) queue it and return ``False``.

        Only async tasks wait (a synchronous task may not block before
        returning, Concurrency.md §Blocking); they wait their turn in arrival
        order, woken by :meth:`fiber_done`.
        """
        cap = self.max_stackful
        if cap is None or not thread.task.may_block():
            self.fibers += 1
            return True
        if not self.fiber_waiters and self.fibers < cap:
            self.fibers += 1  # room, and nobody queued to go first or to wake
            return True
        waiters = self.fiber_waiters
        if self.fibers < cap:
            first = self._first_fiber_waiter()
            if first is None or first is thread:
                if first is thread:
                    waiters.popleft()
                self.fibers += 1
                if self.fibers < cap:
                    self._wake_fiber_waiter()
                return True
        if self._first_fiber_waiter() is not thread:  # (a woken head keeps its place)
            waiters.append(thread)
        return False

    def fiber_free_for(self, thread: Thread) -> bool:
        """Whether ``thread``, queued by :meth:`take_fiber`, may take a fiber now."""
        cap = self.max_stackful
        return cap is None or (self.fibers < cap and self._first_fiber_waiter() is thread)

    def fiber_done(self) -> None:
        """A counted fiber finished (or was discarded): the next waiter may go."""
        assert self.fibers > 0
        self.fibers -= 1
        if self.fiber_waiters:
            self._wake_fiber_waiter()

    def _first_fiber_waiter(self) -> Thread | None:
        waiters = self.fiber_waiters
        while waiters:
            t = waiters[0]
            if not t.done():
                return t
            waiters.popleft()  # abandoned while it waited
        return None

    def _wake_fiber_waiter(self) -> None:
        t = self._first_fiber_waiter()
        if t is not None:
            self.ready.notify(t)

    # -- scheduling ------------------------------------------------------------

    def ready_threads(self, inst: InstanceState | None = None) -> list[Thread]:
        """Ready threads, optionally only those of ``inst`` (a scan, for tests and checks)."""
        return self.ready.scan(inst, None)

    def has_ready(self) -> bool:
        """Whether some waiting thread is ready (O(1) amortized)."""
        return self.ready.has_ready()

    def pick_ready(self, inst: InstanceState) -> Thread | None:
        """The next thread of ``inst`` for the synchronous ``canon lift`` loop.

        Only ``inst``'s ready threads other than the one holding its
        exclusive lock are eligible; the first found, or the seeded choice
        (:meth:`.sched.SchedulePolicy.choose_thread`).
        """
        cands = self.ready.scan(inst, inst.exclusive_thread)
        return self.policy.choose_thread(cands)

    def tick(self) -> bool:
        """Resume one ready thread from the top level; ``False`` when none is ready.

        A trap escaping the thread poisons its instance (and fails the tasks
        of that instance's threads) and is re-raised. Any other exception
        (a fault in host code) is turned into a trap the same way;
        ``KeyboardInterrupt`` and ``SystemExit`` poison and propagate as
        themselves.
        """
        assert self.nesting_depth == 0
        ready = self.ready
        if ready.deferred:
            ready.retry_deferred()
        while True:
            thread = ready.take()
            if thread is None:
                return False
            if thread.task.inst.may_enter_from(None):
                break
            ready.put_back(thread)
        self._resume_top(thread)
        return True

    def _resume_top(self, thread: Thread) -> None:
        self.nesting_depth += 1
        inst = thread.task.inst
        inst.enter_from(None)
        try:
            thread.resume()
        except BaseException as exc:
            trap = escaped(exc)
            self.poison(inst, trap)
            # poison() skips the thread that was running; its task fails here
            thread.task.fail(trap)
            if trap is exc or passes_through(exc):
                raise
            raise trap from exc
        finally:
            inst.leave_to(None)
            self.nesting_depth -= 1

    def tick_ready(self, limit: int | None = None) -> int:
        """Resume ready threads (at most ``limit``) until none is ready; how many resumed.

        :meth:`tick` repeated, except that a trap only poisons (as the
        driver's loop over :meth:`tick` treats them).
        """
        n = 0
        while limit is None or n < limit:
            try:
                if not self.tick():
                    return n
            except Trap:
                pass
            n += 1
        return n

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

    def close(self) -> None:
        """Abandon every parked thread (their activations are cancelled); idempotent.

        Call before closing the engine store, so no parked call outlives it.
        """
        seen: set[int] = set()
        for st in list(self.states.values()):
            for t in list(st.threads):
                if not t.running() and id(t) not in seen:
                    seen.add(id(t))
                    t.abandon()
        for t in list(self.waiting):
            t.abandon()
        self.waiting.clear()
        self.ready.clear()
        self.fiber_waiters.clear()

    def deadlocked(self) -> bool:
        """No ready thread and no host operation in flight."""
        return self.host_pending == 0 and not self.has_ready()
