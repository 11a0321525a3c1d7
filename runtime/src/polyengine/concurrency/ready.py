"""The ready queue: waiting threads found from the event that readied them
(CanonicalABI.md §Embedding ``Store.tick``, §Threads; Concurrency.md §Nondeterminism).

The spec's ``Store.tick`` picks any waiting thread whose ``ready()`` holds;
read literally, that is a scan of every waiting thread per resumption, so N
parked calls cost O(N²). Here a waiting thread is *queued* only when
something that may make its condition true happens, and the scheduler tests
only queued threads (each once per notification):

* a **notified** wait (a waitable-set wait, a synchronous wait on one
  waitable, a synchronous ``canon lower`` waiting for its subtask) is queued
  by :meth:`ReadyQueue.notify`, which the event source calls (a pending
  event set or a waitable joined to the set waited on, a subtask resolved);
* a **gated** wait (a task held back from entering its instance by
  backpressure or by the exclusive lock, a callback-lifted task waiting for
  the lock after ``YIELD`` or ``WAIT``) waits in its instance's gate list
  while the gate is shut; when it opens, the list is released one thread at a
  time (the next one when the previous one was taken off the queue), so a
  lock handed from task to task costs O(1) per hand-over, not a test of every
  thread held at the gate;
* a **yield** (``thread.yield``, a callback's ``YIELD``, ``resume-later``) is
  queued at once;
* any other wait (a condition only its owner knows, as in the tests'
  pure-Python guests) is *polled*: tested on every pass, as the spec reads.

Order (the deterministic profile) is wasmtime's: woken threads in wake-up
order, and yielded threads, in yield order, only when no woken thread is
ready. The seeded profile draws among the woken threads, and among the
instances whose yielded threads wait (each instance's in yield order), as
:mod:`.sched` describes.

An entry is ``(thread, generation, gate)``: a thread's generation counts its
waits, so an entry left behind by a wait that ended otherwise (the thread was
resumed directly, cancelled, abandoned) is recognized and skipped; ``gate``
marks the entry that a gate release queued, whose removal releases the next
thread of that gate.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, TypeAlias

from .sched import SchedulePolicy

if TYPE_CHECKING:
    from .store import InstanceState
    from .thread import Thread

__all__ = ["Gate", "ReadyQueue", "Wake"]

Entry: TypeAlias = "tuple[Thread, int, int]"


class Wake:
    """Where a waiting thread is (``Thread.wake``)."""

    IDLE = 0  #: not queued: its event source will notify it
    QUEUED = 1  #: an entry of this wait is on the ready queue
    GATED = 2  #: in its instance's gate list
    POLLED = 3  #: tested on every pass


class Gate:
    """The conditions that hold a task back at its instance (``Thread.gate``).

    ``BACKPRESSURE``: an async task that takes no lock, entering
    (``backpressure == 0``); ``ENTER_EXCLUSIVE``: a task that takes the
    exclusive lock, entering (no backpressure and the lock free);
    ``EXCLUSIVE``: a callback-lifted task between callbacks (the lock free).
    """

    NONE = 0
    BACKPRESSURE = 1
    ENTER_EXCLUSIVE = 2
    EXCLUSIVE = 3
    KINDS = (1, 2, 3)


def gate_open(inst: InstanceState, gate: int) -> bool:
    # the instance's fields, not its properties: called for every gated wait
    if gate == Gate.EXCLUSIVE:
        return inst._exclusive_thread is None
    if gate == Gate.BACKPRESSURE:
        return inst._backpressure == 0
    assert gate == Gate.ENTER_EXCLUSIVE
    return inst._backpressure == 0 and inst._exclusive_thread is None


class ReadyQueue:
    """The ready queue of one store (see the module docs)."""

    __slots__ = ("_rng", "deferred", "polled", "woken", "yielded", "yielded_by_inst")

    def __init__(self, policy: SchedulePolicy) -> None:
        self._rng = policy._rng
        #: woken threads (deterministic: wake-up order; seeded: drawn from)
        self.woken: deque[Entry] = deque()
        #: yielded threads in yield order (deterministic profile)
        self.yielded: deque[Entry] = deque()
        #: yielded threads per instance, each in yield order (seeded profile)
        self.yielded_by_inst: dict[InstanceState, deque[Entry]] = {}
        #: threads whose condition nobody notifies, in waiting order
        self.polled: dict[Thread, None] = {}
        #: ready threads whose instance could not be entered (tried on the next pass)
        self.deferred: list[Entry] = []

    # -- the wait's side ----------------------------------------------------------

    def start_waiting(self, t: Thread) -> None:
        """``t`` started a wait (its ``ready_func``, ``gate``, ``notified`` are set)."""
        gate = t.gate
        if gate:
            inst = t.task.inst
            if not gate_open(inst, gate):
                t.wake = Wake.GATED
                inst.gated[gate].append((t, t.wait_gen, gate))
                return
        elif not (t.notified or t.yielded):
            t.wake = Wake.POLLED
            self.polled[t] = None
            return
        assert t.ready_func is not None
        if t.yielded or t.ready_func():
            self._push(t, 0)
        else:
            t.wake = Wake.IDLE

    def stop_waiting(self, t: Thread) -> None:
        """``t``'s wait ended (resumed, cancelled or abandoned); its entries go stale."""
        wake = t.wake  # a gate list entry goes stale with the wait (see _gate_head)
        if wake == Wake.POLLED:
            self.polled.pop(t, None)
        t.wake = Wake.IDLE

    def notify(self, t: Thread) -> None:
        """Something ``t`` waits on changed: queue it (once per wait)."""
        if t.wake == Wake.IDLE and t.ready_func is not None and not t.running():
            self._push(t, 0)

    def open_gates(self, inst: InstanceState) -> None:
        """A gate of ``inst`` may have opened (lock released, backpressure gone)."""
        gated = inst.gated
        released = inst.gate_released
        for gate in Gate.KINDS:
            if gated[gate] and not released[gate]:
                self._release(inst, gate)

    @staticmethod
    def _gate_head(inst: InstanceState, gate: int) -> Thread | None:
        """The first thread still held at ``inst``'s ``gate`` (stale entries dropped).

        A gate list is a deque of ``(thread, generation)`` entries in arrival
        order; an entry is stale once its wait ended (the thread's
        generation moved on, or it left the gate), and is dropped here, so
        leaving a gate costs O(1).
        """
        q = inst.gated[gate]
        while q:
            t, gen, _ = q[0]
            if t.wait_gen == gen and t.wake == Wake.GATED:
                return t
            q.popleft()
        return None

    def _release(self, inst: InstanceState, gate: int) -> None:
        """Queue the first thread of ``inst``'s ``gate`` list if the gate is open."""
        if inst.gate_released[gate] or not gate_open(inst, gate):
            return
        t = self._gate_head(inst, gate)
        if t is None:
            return
        inst.gate_released[gate] = True
        self._enqueue((t, t.wait_gen, gate), t.yielded)

    def _push(self, t: Thread, gate: int) -> None:
        t.wake = Wake.QUEUED
        self._enqueue((t, t.wait_gen, gate), t.yielded)

    def _enqueue(self, e: Entry, yielded: bool) -> None:
        if not yielded:
            self.woken.append(e)
        elif self._rng is None:
            self.yielded.append(e)
        else:
            inst = e[0].task.inst
            q = self.yielded_by_inst.get(inst)
            if q is None:
                q = self.yielded_by_inst[inst] = deque()
            q.append(e)

    # -- the scheduler's side -----------------------------------------------------

    def _pop(self) -> Entry | None:
        """The next entry by the policy (woken before yielded), or ``None``."""
        if self.woken:
            if self._rng is None:
                return self.woken.popleft()
            w = self.woken
            i = self._rng.randrange(len(w))
            e = w[i]
            w[i] = w[-1]
            w.pop()
            return e
        if self._rng is None:
            return self.yielded.popleft() if self.yielded else None
        by_inst = self.yielded_by_inst
        if not by_inst:
            return None
        insts = list(by_inst)
        inst = insts[self._rng.randrange(len(insts))]
        q = by_inst[inst]
        e = q.popleft()
        if not q:
            del by_inst[inst]
        return e

    def _validate(self, e: Entry) -> bool:
        """Whether the popped entry ``e`` is a thread ready to resume now.

        A stale entry is dropped; a thread whose gate is shut goes (back) to
        its gate list; one whose condition is false waits for its next
        notification. Removing a gate-release entry releases the next thread
        of that gate.
        """
        t, gen, gate = e
        ok = t.wait_gen == gen and t.ready_func is not None and not t.running()
        if ok:
            tg = t.gate
            inst = t.task.inst
            if tg and not gate_open(inst, tg):
                if t.wake != Wake.GATED:
                    t.wake = Wake.GATED
                    inst.gated[tg].append((t, gen, tg))
                ok = False
            else:
                if t.wake == Wake.GATED:
                    # released from the gate: the head of its list
                    assert self._gate_head(inst, tg) is t
                    inst.gated[tg].popleft()
                ready_func = t.ready_func
                assert ready_func is not None
                if ready_func():
                    t.wake = Wake.QUEUED  # held by the caller until it resumes it
                else:
                    t.wake = Wake.IDLE
                    ok = False
        if gate:
            inst = t.task.inst
            inst.gate_released[gate] = False
            self._release(inst, gate)
        return ok

    def _poll(self) -> None:
        """Queue the polled threads whose condition holds now (in waiting order)."""
        ready = [t for t in self.polled if t.ready_func is not None and t.ready_func()]
        for t in ready:
            del self.polled[t]
            self._push(t, 0)

    def take(self) -> Thread | None:
        """Remove and return the next ready thread, or ``None`` when none is ready."""
        if self.polled:
            self._poll()
        while True:
            e = self._pop()
            if e is None:
                return None
            if self._validate(e):
                return e[0]

    def put_back(self, t: Thread) -> None:
        """Return a taken thread that could not run (its instance is entered)."""
        self.deferred.append((t, t.wait_gen, 0))

    def retry_deferred(self) -> None:
        """Queue again the threads :meth:`put_back` set aside."""
        if self.deferred:
            entries, self.deferred = self.deferred, []
            for e in entries:
                if e[0].wait_gen == e[1]:
                    e[0].wake = Wake.IDLE
                    self.notify(e[0])

    def has_ready(self) -> bool:
        """Whether some thread is ready (stale entries at the front are dropped)."""
        t = self.take()
        if t is None:
            return bool(self.deferred)
        e = (t, t.wait_gen, 0)  # back at the front, as the thread still waits
        if not t.yielded:
            if self._rng is None:
                self.woken.appendleft(e)
            else:
                self.woken.append(e)
        elif self._rng is None:
            self.yielded.appendleft(e)
        else:
            self._enqueue(e, True)
        return True

    def scan(self, inst: InstanceState | None, exclude: Thread | None) -> list[Thread]:
        """Ready threads (optionally only ``inst``'s), without taking any off the queue.

        Includes ``inst``'s gated threads whose gate is open (the synchronous
        ``canon lift`` loop of ``inst`` may resume any of them). Order: woken,
        then yielded, then polled.
        """
        out: list[Thread] = []
        seen: set[int] = set()

        def consider(t: Thread, gen: int) -> None:
            if (
                t.wait_gen != gen
                or id(t) in seen
                or t is exclude
                or (inst is not None and t.task.inst is not inst)
                or t.ready_func is None
                or t.running()
            ):
                return
            if t.gate and not gate_open(t.task.inst, t.gate):
                return
            if t.ready_func():
                seen.add(id(t))
                out.append(t)

        for t, gen, _ in self.woken:
            consider(t, gen)
        for t, gen, _ in self.yielded:
            consider(t, gen)
        for q in self.yielded_by_inst.values():
            for t, gen, _ in q:
                consider(t, gen)
        for t in self.polled:
            consider(t, t.wait_gen)
        if inst is not None:
            for gate in Gate.KINDS:
                for t, gen, _ in inst.gated[gate]:
                    if t.wake == Wake.GATED:
                        consider(t, gen)
        return out

    def any_ready(self, exclude: Thread) -> bool:
        """Whether a thread other than ``exclude`` and the lock holders is ready."""
        return any(t is not t.task.inst.exclusive_thread for t in self.scan(None, exclude))

    def clear(self) -> None:
        self.woken.clear()
        self.yielded.clear()
        self.yielded_by_inst.clear()
        self.polled.clear()
        self.deferred = []
