"""Threads and the suspension seam (CanonicalABI.md §Stack Switching, §Threads).

The spec defines concurrency on three layers: continuations (stack
switching), :class:`Thread` (a continuation plus scheduling state) and
``Task``. Here the bottom layer is a Python generator: every operation that
may block is a generator of type :data:`Suspends` that ``yield``\\ s a
:class:`Block` request and is resumed with a :class:`Cancelled` value. A
thread's body is such a generator; built-ins that may block are too, and the
guest code that calls them (a pure-Python guest in tests, or the engine's
parked wasm fiber) ``yield from``\\ s them.

Core wasm activations are behind :class:`Activation`: the engine seam
implements it on wasmtime fibers (a parked call future), and
:class:`GeneratorActivation` implements it on a generator for tests.
:func:`run_activation` turns an activation into a :data:`Suspends` so a
thread body can run a core call and pass its blocks up.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar

from .traps import TrapCode, ctrap

if TYPE_CHECKING:
    from .store import InstanceState, Store
    from .task import Task

__all__ = [
    "Activation",
    "Block",
    "Cancelled",
    "CoreVal",
    "GeneratorActivation",
    "Suspends",
    "Thread",
    "first_step",
    "run_activation",
]

T = TypeVar("T")

CoreVal: TypeAlias = int | float
"""A core wasm value as the canonical ABI passes it (i32/i64/f32/f64)."""


class Cancelled(IntEnum):
    """What a blocked thread is resumed with (definitions.py ``Cancelled``)."""

    FALSE = 0
    TRUE = 1


@dataclass(frozen=True, slots=True)
class Block:
    """A request to suspend the current thread (the spec's ``block(switch_to)``).

    ``switch_to`` names a thread to run immediately instead of returning to
    the scheduler (``thread.*-then-resume``).
    """

    switch_to: Thread | None = None


_TO_SCHEDULER = Block(None)  # immutable: one instance serves every plain block

Suspends: TypeAlias = Generator[Block, Cancelled, T]
"""An operation that may block: yields :class:`Block`, is sent :class:`Cancelled`."""


class Activation(Protocol):
    """A started core call that can park (the engine's suspension seam).

    ``resume`` runs the activation until it parks, returning the
    :class:`Block` it parked with, or until it finishes, returning ``None``
    (then ``results`` holds the core results). A trap propagates as
    :class:`~polyengine.abi.trap.Trap`. ``abandon`` discards a parked
    activation (instance poisoned, store closed); it is idempotent.
    """

    def resume(self, cancelled: Cancelled) -> Block | None: ...

    @property
    def is_parked(self) -> bool: ...

    @property
    def results(self) -> list[CoreVal]: ...

    def abandon(self) -> None: ...


class GeneratorActivation:
    """:class:`Activation` over a Python generator (pure-Python guests in tests)."""

    __slots__ = ("_gen", "_parked", "_results", "_started")

    def __init__(self, gen: Suspends[list[CoreVal]]) -> None:
        self._gen = gen
        self._parked = False
        self._started = False
        self._results: list[CoreVal] | None = None

    def resume(self, cancelled: Cancelled) -> Block | None:
        assert self._results is None, "resumed a finished activation"
        try:
            if not self._started:
                assert cancelled is Cancelled.FALSE
                self._started = True
                block = next(self._gen)
            else:
                assert self._parked
                block = self._gen.send(cancelled)
        except StopIteration as stop:
            self._parked = False
            self._results = list(stop.value or [])
            return None
        except BaseException:
            self._parked = False
            self._results = []
            raise
        self._parked = True
        return block

    @property
    def is_parked(self) -> bool:
        return self._parked

    @property
    def results(self) -> list[CoreVal]:
        assert self._results is not None, "activation has not finished"
        return self._results

    def abandon(self) -> None:
        self._parked = False
        self._gen.close()


def run_activation(act: Activation, first: Block | None = None) -> Suspends[list[CoreVal]]:
    """Run ``act`` to completion inside a thread body, passing its blocks up.

    ``first`` is the block its first step (:func:`first_step`) ended at, when
    the caller took that step itself.
    """
    finished = False
    try:
        block = act.resume(Cancelled.FALSE) if first is None else first
        while block is not None:
            cancelled = yield block
            block = act.resume(cancelled)
        finished = True
        return act.results
    finally:
        if not finished and act.is_parked:
            act.abandon()


def first_step(act: Activation) -> Block | None:
    """Start ``act``: ``None`` when it completed at once (the common case of a core
    call that never blocks, whose body then needs no :func:`run_activation`),
    else the block to continue from with ``run_activation(act, block)``."""
    try:
        return act.resume(Cancelled.FALSE)
    except BaseException:
        if act.is_parked:
            act.abandon()
        raise


ThreadBody = Callable[["Thread"], Suspends[None]]


def _always() -> bool:
    return True


class Thread:
    """A green thread of a task (CanonicalABI.md §Threads).

    Invariants: exactly one of *running* (being stepped), *suspended* (not
    running, no ``ready_func``), *waiting* (not running, has ``ready_func``,
    listed in ``store.waiting``) or *done* holds. ``index`` is the slot in the
    instance's thread table while the thread is registered with its task.
    ``storage`` holds the two ``context.{get,set}`` slots.
    """

    __slots__ = (
        "_body",
        "_done",
        "_gen",
        "_running",
        "cancellable",
        "gate",
        "index",
        "inst",
        "keep_alive",
        "notified",
        "ready_func",
        "storage",
        "store",
        "task",
        "wait_gen",
        "wake",
        "yielded",
    )

    def __init__(self, task: Task, body: ThreadBody, *, keep_alive: bool = True) -> None:
        self.task = task
        #: the task's instance and its store (neither changes): attributes, not
        #: properties, as the built-ins read them on every call
        self.inst: InstanceState = task.inst
        self.store: Store = task.inst.store
        self._body = body
        self._gen: Suspends[None] | None = None
        self._running = False
        self._done = False
        self.ready_func: Callable[[], bool] | None = None
        self.cancellable = False
        self.index: int | None = None
        self.storage = [0, 0]
        self.keep_alive = keep_alive
        self.yielded = False
        #: the ready queue's bookkeeping of the current wait (:mod:`.ready`): how
        #: many waits began, where the thread is, its gate, whether it is notified
        self.wait_gen = 0
        self.wake = 0
        self.gate = 0
        self.notified = False

    def __repr__(self) -> str:
        return f"<Thread {self.index} of {self.task!r} {self.status}>"

    # -- state predicates -------------------------------------------------

    @property
    def status(self) -> str:
        if self._done:
            return "done"
        if self._running:
            return "running"
        return "waiting" if self.ready_func is not None else "suspended"

    def running(self) -> bool:
        return self._running

    def done(self) -> bool:
        return self._done

    def suspended(self) -> bool:
        return not self._running and not self._done and self.ready_func is None

    def waiting(self) -> bool:
        return not self._running and self.ready_func is not None

    def ready(self) -> bool:
        return self.ready_func is not None and not self._running and self.ready_func()

    @property
    def is_parked(self) -> bool:
        """Started and not running nor finished (its body is parked at a block)."""
        return self._gen is not None and not self._running and not self._done

    # -- scheduler-side ---------------------------------------------------

    def start_waiting_internal(
        self,
        ready_func: Callable[[], bool],
        *,
        yielded: bool = False,
        gate: int = 0,
        notified: bool = False,
    ) -> None:
        """Wait until ``ready_func()``; how the ready queue learns of it (:mod:`.ready`):

        ``gate`` is the :class:`~.ready.Gate` that holds it back, ``notified``
        says that its event source calls ``ReadyQueue.notify``; a wait that is
        neither, nor a yield, is polled.
        """
        assert not self.waiting() and self.ready_func is None
        self.ready_func = ready_func
        self.yielded = yielded
        self.gate = gate
        self.notified = notified
        self.wait_gen += 1
        store = self.store
        store.waiting[self] = None
        store.ready.start_waiting(self)

    def stop_waiting_internal(self, cancelled: Cancelled) -> None:
        assert self.waiting()
        assert cancelled or self.ready()
        store = self.store
        store.ready.stop_waiting(self)
        self.ready_func = None
        self.yielded = False
        del store.waiting[self]

    def resume_later(self) -> None:
        assert self.suspended()
        self.start_waiting_internal(_always, notified=True)

    def resume(self, cancelled: Cancelled = Cancelled.FALSE) -> None:
        """Run this thread (and any thread it switches to) until it blocks or ends."""
        assert not self._running and not self._done
        assert self.cancellable or not cancelled
        if self.ready_func is not None:  # waiting (not running: asserted above)
            self.stop_waiting_internal(cancelled)
        thread: Thread | None = self
        while thread is not None:
            thread = thread._step(cancelled)
            cancelled = Cancelled.FALSE

    def _step(self, cancelled: Cancelled) -> Thread | None:
        store = self.store
        prev = store.current
        store.current = self
        self._running = True
        try:
            if self._gen is None:
                assert not cancelled
                self._gen = self._body(self)
                block = next(self._gen)
            else:
                block = self._gen.send(cancelled)
        except StopIteration:
            self._done = True
            self._gen = None  # the finished body: no cycle through its closure
            return None
        except BaseException:
            self._done = True
            self._gen = None
            raise
        finally:
            self._running = False
            store.current = prev
        return block.switch_to

    def run_inline(self) -> Callable[[], None]:
        """Mark this unstarted thread as the one running, for code the host
        drives directly (a start function); returns the function ending it."""
        assert self._gen is None and not self._running and not self._done
        store = self.store
        prev = store.current
        store.current = self
        self._running = True

        def end() -> None:
            assert store.current is self
            store.current = prev
            self._running = False
            self._done = True

        return end

    def abandon(self) -> None:
        """Discard a parked thread (its instance was poisoned or the store closed)."""
        if self.waiting():
            self.stop_waiting_internal(Cancelled.TRUE)
        self.ready_func = None
        if self._gen is not None and not self._running:
            self._gen.close()
        self._done = True

    # -- thread-side blocking operations (generators) -----------------------

    def check_may_block(self) -> None:
        """Trap when a synchronous task would block with nothing else to run.

        Concurrency.md §Blocking: a task whose function type is not ``async``
        may not block before returning a value. Blocking is still allowed when
        some other thread of the store is ready to use the stack; if none of
        the call's own instance can then run, the synchronous call loop of
        ``canon lift`` reports the deadlock.
        """
        if self.task.may_block():
            return
        if self.store.ready.any_ready(self):
            return
        ctrap(TrapCode.CANNOT_BLOCK_SYNC)

    def block_internal(self, cancellable: bool) -> Suspends[Cancelled]:
        self.cancellable = cancellable
        cancelled = yield _TO_SCHEDULER
        assert cancellable or not cancelled
        return cancelled

    def switch_to_internal(self, cancellable: bool, other: Thread) -> Suspends[Cancelled]:
        self.cancellable = cancellable
        cancelled = yield Block(other)
        assert cancellable or not cancelled
        return cancelled

    def suspend(self, cancellable: bool) -> Suspends[Cancelled]:
        assert self._running
        if self.task.deliver_pending_cancel(cancellable):
            return Cancelled.TRUE
        self.check_may_block()
        return (yield from self.block_internal(cancellable))

    def wait_until(
        self,
        ready_func: Callable[[], bool],
        cancellable: bool = False,
        *,
        yielding: bool = False,
        entering: bool = False,
        gate: int = 0,
        notified: bool = False,
    ) -> Suspends[Cancelled]:
        """Block until ``ready_func()`` holds (definitions.py ``Thread.wait_until``).

        ``yielding`` marks a voluntary yield (``thread.yield``, a callback's
        YIELD): it always goes through the scheduler, so other ready threads
        get to run, it is allowed in synchronous tasks, and the scheduler
        treats the thread as yielded (see :mod:`.sched`). ``entering`` marks
        the wait of a task held back from entering its instance
        (backpressure, the exclusive lock): it goes through the scheduler
        too, so the task does not overtake earlier ones, and is allowed in
        synchronous tasks, but it is an ordinary wait for a state change.
        ``gate`` and ``notified`` tell the ready queue how the wait ends
        (:meth:`start_waiting_internal`).
        """
        assert self._running
        assert not (yielding and entering)
        if self.task.deliver_pending_cancel(cancellable):
            return Cancelled.TRUE
        if not (yielding or entering):
            if ready_func():
                return Cancelled.FALSE  # never block when ready (rule 1 of .sched)
            self.check_may_block()
        self.start_waiting_internal(ready_func, yielded=yielding, gate=gate, notified=notified)
        # block_internal, inlined (one generator fewer per parked wait)
        self.cancellable = cancellable
        cancelled = yield _TO_SCHEDULER
        assert cancellable or not cancelled
        return cancelled

    def wait_for_host(
        self, ready_func: Callable[[], bool], *, notified: bool = False
    ) -> Suspends[None]:
        """Park until host work makes ``ready_func()`` true (a ``suspending`` import).

        This is host-defined blocking, not Component Model blocking, so the
        synchronous-task rule does not apply; the caller must have registered
        the host work with :meth:`Store.begin_host_work`.
        """
        if ready_func():
            return
        self.start_waiting_internal(ready_func, notified=notified)
        # block_internal(False), inlined (one generator fewer per parked wait)
        self.cancellable = False
        cancelled = yield _TO_SCHEDULER
        assert not cancelled

    def yield_(self, cancellable: bool) -> Suspends[Cancelled]:
        return (yield from self.wait_until(_always, cancellable, yielding=True))

    def suspend_then_resume(self, cancellable: bool, other: Thread) -> Suspends[Cancelled]:
        assert self._running and other.suspended()
        if self.task.deliver_pending_cancel(cancellable):
            return Cancelled.TRUE
        return (yield from self.switch_to_internal(cancellable, other))

    def yield_then_resume(self, cancellable: bool, other: Thread) -> Suspends[Cancelled]:
        assert self._running and other.suspended()
        if self.task.deliver_pending_cancel(cancellable):
            return Cancelled.TRUE
        self.start_waiting_internal(_always, yielded=True)
        return (yield from self.switch_to_internal(cancellable, other))

    def suspend_then_promote(self, cancellable: bool, other: Thread) -> Suspends[Cancelled]:
        assert self._running
        if self.task.deliver_pending_cancel(cancellable):
            return Cancelled.TRUE
        if other.ready():
            other.stop_waiting_internal(Cancelled.FALSE)
            return (yield from self.switch_to_internal(cancellable, other))
        return (yield from self.suspend(cancellable))

    def yield_then_promote(self, cancellable: bool, other: Thread) -> Suspends[Cancelled]:
        assert self._running
        if self.task.deliver_pending_cancel(cancellable):
            return Cancelled.TRUE
        if other.ready():
            other.stop_waiting_internal(Cancelled.FALSE)
            self.start_waiting_internal(_always, yielded=True)
            return (yield from self.switch_to_internal(cancellable, other))
        return (yield from self.yield_(cancellable))
