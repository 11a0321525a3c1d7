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

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from polyengine.abi.resources import ComponentInstance, Table
from polyengine.abi.trap import escaped, fault, passes_through

from .sched import SchedulePolicy
from .traps import Trap, TrapCode, ctrap_if

if TYPE_CHECKING:
    from .thread import Thread

__all__ = ["HandleTable", "InstanceState", "Store"]


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
        "_entering_from",
        "backpressure",
        "ci",
        "exclusive_thread",
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
        self.backpressure = 0
        self.num_waiting_to_enter = 0
        self.exclusive_thread: Thread | None = None
        #: holds ``poisoned``: the instance's one state object, or a cell of its own
        self.record: PoisonRecord = record if record is not None else _PoisonCell()
        #: the entering set per caller (the instance tree never changes)
        self._entering_from: dict[InstanceState | None, tuple[ComponentInstance, ...]] = {}
        store.states[ci] = self

    def __repr__(self) -> str:
        return f"<InstanceState {self.ci.name or hex(id(self))}>"

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
        for ci in self._entering(caller):
            if not ci.may_enter:
                return False
            st = states.get(ci)
            if st is not None and st.poisoned is not None:
                return False
        return True

    def enter_from(self, caller: InstanceState | None) -> None:
        """``ComponentInstance.enter_from`` over the cached entering set."""
        for ci in self._entering(caller):
            assert ci.may_enter
            ci.may_enter = False

    def leave_to(self, caller: InstanceState | None) -> None:
        """``ComponentInstance.leave_to`` over the cached entering set."""
        for ci in self._entering(caller):
            assert not ci.may_enter
            ci.may_enter = True

    def check_may_leave(self) -> None:
        """``trap_if(not inst.may_leave)`` at the top of every built-in."""
        if self.ci.may_leave and self.poisoned is None:
            return
        ctrap_if(not self.ci.may_leave, TrapCode.CANNOT_LEAVE)
        ctrap_if(self.poisoned is not None, TrapCode.POISONED, "component instance is poisoned")


class Store:
    """Threads waiting to run, and the scheduling policy (§Embedding ``Store``).

    ``waiting`` keeps the order in which threads started waiting (an
    insertion-ordered dict: a thread stops waiting in O(1)), so the FIFO
    policy resumes the longest-waiting ready thread; the seeded profile
    chooses as :mod:`.sched` describes. ``current`` is the
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
        "nesting_depth",
        "on_poison",
        "on_wake",
        "policy",
        "ready_cache",
        "states",
        "waiting",
    )

    def __init__(self, policy: SchedulePolicy | None = None) -> None:
        self.policy = policy if policy is not None else SchedulePolicy.from_env()
        self.waiting: dict[Thread, None] = {}
        #: ready threads found by the last scan and not resumed yet (``tick_ready``)
        self.ready_cache: list[Thread] = []
        self.current: Thread | None = None
        self.nesting_depth = 0
        self.host_pending = 0
        self.states: dict[ComponentInstance, InstanceState] = {}
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
        """The next thread to resume: the first ready one, or the seeded choice.

        With ``inst``, only its threads other than the one holding its
        exclusive lock are eligible (the synchronous ``canon lift`` loop).
        The seeded choice follows :meth:`.sched.SchedulePolicy.choose_thread`.
        """
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
        thread = None
        if self.policy.deterministic:
            for t in self.waiting:
                if t.ready() and t.task.inst.may_enter_from(None):
                    thread = t
                    break
        else:
            thread = self.policy.choose_thread(
                [t for t in self.waiting if t.ready() and t.task.inst.may_enter_from(None)]
            )
        if thread is None:
            return False
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
        return True

    def tick_ready(self, limit: int | None = None) -> int:
        """Resume the threads ready now (at most ``limit``), in waiting order, in one pass.

        Returns how many resumed.

        Equivalent to calling :meth:`tick` until it returns ``False`` (each
        thread is tested again just before it resumes), without scanning
        every waiting thread per resumption: threads readied by the same
        event (N host results settled together) cost one pass, not N. A
        thread readied by one resumed here waits for the next pass. Traps
        only poison (as the driver's loop over :meth:`tick` treats them).
        """
        assert self.nesting_depth == 0
        if not self.policy.deterministic:
            n = 0
            while limit is None or n < limit:
                try:
                    if not self.tick():
                        return n
                except Trap:
                    pass
                n += 1
            return n
        n = self._resume_batch(self.ready_cache, limit)
        if n == 0:  # the threads left from the last scan are stale: scan again
            n = self._resume_batch([t for t in self.waiting if t.ready()], limit)
        return n

    def _resume_batch(self, batch: list[Thread], limit: int | None) -> int:
        """Resume the still-ready threads of ``batch`` (up to ``limit``); keep the rest."""
        self.ready_cache = []
        n = 0
        for k, thread in enumerate(batch):
            if limit is not None and n >= limit:
                self.ready_cache = batch[k:]
                break
            if thread not in self.waiting or not thread.ready():
                continue
            inst = thread.task.inst
            if not inst.may_enter_from(None):
                continue
            n += 1
            self.nesting_depth += 1
            inst.enter_from(None)
            try:
                thread.resume()
            except BaseException as exc:
                trap = escaped(exc)
                self.poison(inst, trap)
                thread.task.fail(trap)
                if trap is exc or passes_through(exc):
                    if isinstance(exc, Trap):
                        continue
                    raise
                continue
            finally:
                inst.leave_to(None)
                self.nesting_depth -= 1
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
        self.ready_cache = []

    def deadlocked(self) -> bool:
        """No ready thread and no host operation in flight."""
        return self.host_pending == 0 and not any(t.ready() for t in self.waiting)
