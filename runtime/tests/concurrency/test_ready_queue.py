"""The ready queue finds ready threads from the events that readied them (``ready`` module).

Work is counted, never timed: how many times waiting threads' conditions are
tested while N parked threads are woken one event at a time. A scan of every
waiting thread per resumption tests O(N²) conditions; the ready queue tests
each thread a bounded number of times.
"""

from __future__ import annotations

from polyengine.concurrency import InstanceState, Store, start_host_call
from polyengine.concurrency.builtins import canon_backpressure_dec, canon_backpressure_inc
from polyengine.concurrency.fakes import bare_thread, py_lifted, stackful
from polyengine.concurrency.lift import CallbackCode
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.concurrency.thread import CoreVal, Suspends, Thread
from polyengine.concurrency.waitable import EventCode, EventTuple, Waitable, WaitableSet

N = 300


class CountingSet(WaitableSet):
    """A waitable set counting how often its pending-event test runs."""

    __slots__ = ("box",)

    def __init__(self, box: list[int]) -> None:
        super().__init__()
        self.box = box

    def has_pending_event(self) -> bool:
        self.box[0] += 1
        return super().has_pending_event()


def _event() -> EventTuple:
    return (EventCode.SUBTASK, 1, 2)


def _parked_waiters(policy: SchedulePolicy) -> tuple[Store, list[Waitable], list[int], list[int]]:
    store = Store(policy)
    inst = InstanceState(store)
    tests = [0]
    woken: list[int] = []
    waitables: list[Waitable] = []
    for k in range(N):
        wset = CountingSet(tests)
        w = Waitable()
        w.join(wset)
        waitables.append(w)

        def body(thread: Thread, wset: WaitableSet = wset, k: int = k) -> Suspends[None]:
            yield from wset.wait_for_event(thread, False)
            woken.append(k)

        assert not start_host_call(stackful(inst, body), []).settled
    return store, waitables, tests, woken


def test_waking_parked_threads_one_event_at_a_time_tests_each_a_bounded_number_of_times() -> None:
    for policy in (SchedulePolicy(None), SchedulePolicy(3)):
        store, waitables, tests, woken = _parked_waiters(policy)
        tests[0] = 0
        for w in waitables:
            w.set_pending_event(_event)
            while store.tick():
                pass
        assert sorted(woken) == list(range(N))
        assert not store.waiting
        # a scan per resumption would be about N * N / 2 = 45,000 tests
        assert tests[0] <= 4 * N, tests[0]


def test_threads_woken_together_resume_in_wake_order() -> None:
    store, waitables, _tests, woken = _parked_waiters(SchedulePolicy(None))
    order = list(range(N - 1, -1, -1))
    for k in order:
        waitables[k].set_pending_event(_event)
    while store.tick():
        pass
    assert woken == order


def test_a_waitable_joined_with_its_event_pending_wakes_the_set_waiter() -> None:
    store = Store(SchedulePolicy(None))
    inst = InstanceState(store)
    wset = WaitableSet()
    got: list[EventTuple] = []

    def body(thread: Thread) -> Suspends[None]:
        got.append((yield from wset.wait_for_event(thread, False)))

    call = start_host_call(stackful(inst, body), [])
    assert not call.settled
    w = Waitable()
    w.set_pending_event(_event)
    assert not store.has_ready()
    w.join(wset)
    assert store.has_ready()
    while store.tick():
        pass
    assert call.resolved and got == [_event()]


def test_lock_handed_over_among_many_callback_tasks_tests_each_a_bounded_number_of_times() -> None:
    """N callback-lifted tasks of one instance, all with an event, share the exclusive lock."""
    store = Store(SchedulePolicy(None))
    inst = InstanceState(store)
    tests = [0]
    waitables: list[Waitable] = []
    finished: list[int] = []

    def core(thread: Thread, _args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        wset = CountingSet(tests)
        w = Waitable()
        w.join(wset)
        waitables.append(w)
        i = thread.inst.handles.add(wset)
        yield from ()
        return [int(CallbackCode.WAIT) | (i << 4)]

    def callback(thread: Thread, _args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        thread.task.return_([])
        finished.append(1)
        yield from ()
        return [int(CallbackCode.EXIT)]

    lf = py_lifted(inst, core, is_async=True, async_=True, callback=callback)
    # a task holding the lock while parked keeps every other one at the gate
    holder = bare_thread(inst)
    inst.exclusive_thread = holder
    calls = [start_host_call(lf, []) for _ in range(N)]
    assert not any(c.settled for c in calls)
    inst.exclusive_thread = None
    while store.tick():
        pass
    assert len(waitables) == N
    tests[0] = 0
    for w in waitables:
        w.set_pending_event(_event)
    inst.exclusive_thread = holder
    assert not store.has_ready()
    inst.exclusive_thread = None
    while store.tick():
        pass
    assert all(c.resolved for c in calls) and len(finished) == N
    assert tests[0] <= 6 * N, tests[0]


def test_backpressure_released_lets_every_held_task_in() -> None:
    store = Store(SchedulePolicy(None))
    inst = InstanceState(store)
    ran: list[int] = []
    t = bare_thread(inst)
    canon_backpressure_inc(t)
    calls = []
    for k in range(5):

        def body(thread: Thread, k: int = k) -> Suspends[None]:
            ran.append(k)
            yield from ()

        calls.append(start_host_call(stackful(inst, body), []))
    assert ran == [] and not store.has_ready()
    canon_backpressure_dec(t)
    while store.tick():
        pass
    assert ran == [0, 1, 2, 3, 4]
    assert all(c.resolved for c in calls)
