"""Scheduling rules around synchronous calls, the exclusive lock and backpressure
(CanonicalABI.md §Tasks ``enter_implicit_thread``, §``canon lift``)."""

from __future__ import annotations

from typing import Any

import pytest

from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.trap import Trap
from polyengine.concurrency import (
    CallbackCode,
    InstanceState,
    Store,
    Subtask,
    canon_lower,
    run_to_completion,
    start_host_call,
)
from polyengine.concurrency.builtins import (
    canon_backpressure_dec,
    canon_backpressure_inc,
    canon_thread_index,
    canon_thread_new_indirect,
    canon_thread_resume_later,
    canon_thread_suspend,
    canon_thread_suspend_then_resume,
    canon_thread_yield,
    canon_thread_yield_then_resume,
    canon_waitable_join,
    canon_waitable_set_new,
    canon_waitable_set_wait,
)
from polyengine.concurrency.fakes import py_core, py_lifted, py_lowered, returns, stackful
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.concurrency.thread import CoreVal, Suspends, Thread
from polyengine.types import model as m


def fifo() -> Store:
    return Store(SchedulePolicy(None))


def test_sync_call_only_resumes_threads_of_its_own_instance() -> None:
    store = fifo()
    inner, sibling = InstanceState(store, name="inner"), InstanceState(store, name="sibling")
    ids: dict[str, int] = {}
    rounds: list[int] = []

    def x_start(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        for _ in range(4):
            canon_thread_resume_later(thread, ids["implicit"])
            yield from canon_thread_suspend(thread, False)
        return []

    def setup(thread: Thread) -> Suspends[None]:
        x = canon_thread_new_indirect(thread, py_core(x_start), 0)[0]
        assert isinstance(x, int)
        ids["x"] = x
        yield from ()

    assert start_host_call(stackful(inner, setup), []).resolved

    def never(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        raise AssertionError("a sibling thread ran during the synchronous call")
        yield from ()

    def arm(thread: Thread) -> Suspends[None]:
        for _ in range(8):
            t = canon_thread_new_indirect(thread, py_core(never), 0)[0]
            assert isinstance(t, int)
            canon_thread_resume_later(thread, t)
        yield from ()

    assert start_host_call(stackful(sibling, arm), []).resolved

    def inner_block(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        me = canon_thread_index(thread)[0]
        assert isinstance(me, int)
        ids["implicit"] = me
        for r in range(4):
            yield from canon_thread_suspend_then_resume(thread, False, ids["x"])
            rounds.append(r)
        return [42]

    assert run_to_completion(py_lifted(inner, inner_block, result=m.U32()), []) == [42]
    assert rounds == [0, 1, 2, 3]


def test_yield_then_resume_runs_the_other_thread_and_stays_ready() -> None:
    inst = InstanceState(fifo())
    log: list[str] = []

    def child(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        log.append("child")
        return (yield from returns())

    def body(thread: Thread) -> Suspends[None]:
        c = canon_thread_new_indirect(thread, py_core(child), 0)[0]
        assert isinstance(c, int)
        yield from canon_thread_yield_then_resume(thread, False, c)
        log.append("parent")

    run_to_completion(stackful(inst, body), [])
    assert log == ["child", "parent"]


def test_callback_tasks_share_the_instance_between_events() -> None:
    store = fifo()
    a, b = InstanceState(store, name="a"), InstanceState(store, name="b")
    order: list[str] = []

    def start(thread: Thread, args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        order.append(f"start {args[0]}")
        assert b.exclusive_thread is thread
        return (yield from returns(CallbackCode.YIELD))

    def cb(thread: Thread, _args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        assert b.exclusive_thread is thread
        order.append("callback")
        thread.task.return_([])
        return (yield from returns(CallbackCode.EXIT))

    lift = py_lifted(b, start, params=(m.U32(),), is_async=True, async_=True, callback=cb)
    lower = py_lowered(lift, async_=True)
    states: list[int] = []

    def main(thread: Thread) -> Suspends[None]:
        for i in (1, 2):
            st = (yield from canon_lower(lower, thread, [i]))[0]
            assert isinstance(st, int)
            states.append(st & 0xF)
        for _ in range(4):
            yield from canon_thread_yield(thread, False)

    run_to_completion(stackful(a, main), [])
    # the first call released the lock when it yielded back to the event loop,
    # so the second call started right away
    assert states == [Subtask.State.STARTED, Subtask.State.STARTED]
    assert order == ["start 1", "start 2", "callback", "callback"]


def test_backpressure_dec_admits_waiting_calls_in_arrival_order() -> None:
    store = fifo()
    a, b = InstanceState(store, name="a"), InstanceState(store, name="b")
    order: list[Any] = []
    mem = BytearrayMemory(64)

    def gate(thread: Thread) -> Suspends[None]:
        canon_backpressure_inc(thread)
        order.append("gate closed")
        yield from ()

    def work(thread: Thread, args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        order.append(f"work {args[0]}")
        thread.task.return_([])
        return (yield from returns())

    run_to_completion(stackful(b, gate), [])
    lower = py_lowered(
        py_lifted(b, work, params=(m.U32(),), is_async=True, async_=True), async_=True
    )

    def main(thread: Thread) -> Suspends[None]:
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        for i in (1, 2):
            st = (yield from canon_lower(lower, thread, [i]))[0]
            assert isinstance(st, int)
            order.append(("state", i, st & 0xF))
            canon_waitable_join(thread, st >> 4, ws)
        # a third call with id 0 cannot get in either: it queues behind 1 and 2
        st0 = (yield from canon_lower(lower, thread, [0]))[0]
        assert isinstance(st0, int)
        order.append(("state", 0, st0 & 0xF))
        canon_waitable_join(thread, st0 >> 4, ws)
        # the instance opens the gate (from one of its own threads)
        b_thread = next(iter(b.threads), None)
        assert b_thread is None
        canon_backpressure_dec(_thread_in(b))
        for _ in range(3):  # one RETURNED event per call (start and return coalesce)
            yield from canon_waitable_set_wait(thread, False, mem, ws, 0)

    run_to_completion(stackful(a, main), [])
    assert order == [
        "gate closed",
        ("state", 1, 0),
        ("state", 2, 0),
        ("state", 0, 0),
        "work 1",
        "work 2",
        "work 0",
    ]


def _thread_in(inst: InstanceState) -> Thread:
    from polyengine.concurrency.fakes import bare_thread

    return bare_thread(inst)


def test_sync_call_may_block_when_another_thread_is_ready() -> None:
    store = fifo()
    c, d = InstanceState(store, name="c"), InstanceState(store, name="d")

    def eager(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from returns(43))

    # async-typed, sync-lifted, completes at once
    lower = py_lowered(py_lifted(c, eager, result=m.U32(), is_async=True))

    def noop(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from returns())

    def arm_and_call(thread: Thread) -> Suspends[list[CoreVal]]:
        t = canon_thread_new_indirect(thread, py_core(noop), 0)[0]
        assert isinstance(t, int)
        canon_thread_resume_later(thread, t)
        return (yield from canon_lower(lower, thread, []))

    def sync_caller(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from arm_and_call(thread))

    assert run_to_completion(py_lifted(d, sync_caller, result=m.U32()), []) == [43]

    def unarmed(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from canon_lower(lower, thread, []))

    # with nothing else ready anywhere (a fresh store), the same call traps
    store2 = fifo()
    c2, d2 = InstanceState(store2, name="c2"), InstanceState(store2, name="d2")
    lower = py_lowered(py_lifted(c2, eager, result=m.U32(), is_async=True))
    with pytest.raises(Trap, match="cannot block a synchronous task before returning"):
        run_to_completion(py_lifted(d2, unarmed, result=m.U32()), [])
