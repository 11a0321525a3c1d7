"""Thread built-ins and the activation seam (CanonicalABI.md §Threads, 🧵 built-ins)."""

from __future__ import annotations

import pytest

from polyengine.abi.trap import Trap
from polyengine.concurrency import (
    Block,
    Cancelled,
    GeneratorActivation,
    InstanceState,
    Store,
    run_activation,
    run_to_completion,
    start_host_call,
)
from polyengine.concurrency.builtins import (
    canon_thread_index,
    canon_thread_new_indirect,
    canon_thread_resume_later,
    canon_thread_suspend,
    canon_thread_suspend_then_resume,
    canon_thread_yield,
    canon_thread_yield_then_promote,
)
from polyengine.concurrency.fakes import py_core, py_lifted, returns, stackful
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.concurrency.thread import CoreVal, Suspends, Thread
from polyengine.types import model as m


def store() -> Store:
    return Store(SchedulePolicy(None))


def test_new_thread_starts_suspended_and_runs_when_resumed_later() -> None:
    inst = InstanceState(store())
    log: list[object] = []

    def child(thread: Thread, args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        log.append(("child", args[0], canon_thread_index(thread)[0]))
        return (yield from returns())

    def body(thread: Thread) -> Suspends[None]:
        me = canon_thread_index(thread)[0]
        idx = canon_thread_new_indirect(thread, py_core(child), 77)[0]
        assert isinstance(idx, int)
        log.append(("spawned", idx != me))
        assert thread.inst.threads.get(idx).suspended()
        canon_thread_resume_later(thread, idx)
        yield from canon_thread_yield(thread, False)
        log.append("parent again")

    run_to_completion(stackful(inst, body), [])
    assert log[0] == ("spawned", True)
    assert log[1][0:2] == ("child", 77)  # type: ignore[index]
    assert log[2] == "parent again"
    assert len(inst.threads) == 0


def test_suspend_then_resume_switches_immediately_and_back() -> None:
    inst = InstanceState(store())
    log: list[str] = []
    ids: dict[str, int] = {}

    def child(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        log.append("child runs")
        yield from canon_thread_suspend_then_resume(thread, False, ids["parent"])
        log.append("child resumed")
        return []

    def f(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        me = canon_thread_index(thread)[0]
        assert isinstance(me, int)
        ids["parent"] = me
        idx = canon_thread_new_indirect(thread, py_core(child), 0)[0]
        assert isinstance(idx, int)
        yield from canon_thread_suspend_then_resume(thread, False, idx)
        log.append("parent back")
        return [42]

    # a synchronous task may switch threads: suspend-then-resume is not blocking
    assert run_to_completion(py_lifted(inst, f, result=m.U32()), []) == [42]
    assert log == ["child runs", "parent back"]


def test_suspend_in_sync_task_with_nothing_ready_traps() -> None:
    inst = InstanceState(store())

    def f(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from canon_thread_suspend(thread, False)
        return []

    with pytest.raises(Trap, match="cannot block a synchronous task"):
        run_to_completion(py_lifted(inst, f), [])


def test_suspend_in_sync_task_is_allowed_when_another_thread_is_ready() -> None:
    inst = InstanceState(store())
    ids: dict[str, int] = {}

    def child(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        canon_thread_resume_later(thread, ids["parent"])
        return (yield from returns())

    def f(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        me = canon_thread_index(thread)[0]
        assert isinstance(me, int)
        ids["parent"] = me
        idx = canon_thread_new_indirect(thread, py_core(child), 0)[0]
        assert isinstance(idx, int)
        canon_thread_resume_later(thread, idx)
        yield from canon_thread_suspend(thread, False)
        return [1]

    assert run_to_completion(py_lifted(inst, f, result=m.U32()), []) == [1]


def test_yield_then_promote_runs_a_ready_thread_first() -> None:
    inst = InstanceState(store())
    log: list[str] = []

    def child(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        log.append("child")
        return (yield from returns())

    def body(thread: Thread) -> Suspends[None]:
        a = canon_thread_new_indirect(thread, py_core(child), 0)[0]
        assert isinstance(a, int)
        canon_thread_resume_later(thread, a)
        yield from canon_thread_yield_then_promote(thread, False, a)
        log.append("parent")

    run_to_completion(stackful(inst, body), [])
    assert log == ["child", "parent"]


def test_resume_later_of_running_thread_traps() -> None:
    inst = InstanceState(store())

    def body(thread: Thread) -> Suspends[None]:
        me = canon_thread_index(thread)[0]
        assert isinstance(me, int)
        canon_thread_resume_later(thread, me)
        yield from ()

    with pytest.raises(Trap, match="not suspended"):
        run_to_completion(stackful(inst, body), [])


def test_generator_activation_parks_and_finishes() -> None:
    seen: list[Cancelled] = []

    def guest() -> Suspends[list[CoreVal]]:
        seen.append((yield Block()))
        seen.append((yield Block()))
        return [5]

    act = GeneratorActivation(guest())
    assert not act.is_parked
    assert act.resume(Cancelled.FALSE) == Block()
    assert act.is_parked
    assert act.resume(Cancelled.TRUE) == Block()
    assert act.resume(Cancelled.FALSE) is None
    assert not act.is_parked and act.results == [5]
    assert seen == [Cancelled.TRUE, Cancelled.FALSE]


def test_run_activation_abandons_a_parked_activation_when_closed() -> None:
    closed: list[bool] = []

    def guest() -> Suspends[list[CoreVal]]:
        try:
            yield Block()
        finally:
            closed.append(True)
        return []

    act = GeneratorActivation(guest())
    outer = run_activation(act)
    assert next(outer) == Block()
    outer.close()
    assert closed == [True]
    assert not act.is_parked


def test_sync_task_blocking_with_only_a_sibling_ready_is_a_deadlock() -> None:
    st = store()
    inner, sibling = InstanceState(st, name="inner"), InstanceState(st, name="sibling")

    def never(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        raise AssertionError("a sibling's thread must not run during the sync call")
        yield from ()

    def arm(thread: Thread) -> Suspends[None]:
        idx = canon_thread_new_indirect(thread, py_core(never), 0)[0]
        assert isinstance(idx, int)
        canon_thread_resume_later(thread, idx)
        yield from ()

    call = start_host_call(stackful(sibling, arm), [])
    assert call.resolved

    def sync_block(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from canon_thread_suspend(thread, False)
        return []

    with pytest.raises(Trap, match="deadlock detected"):
        run_to_completion(py_lifted(inner, sync_block), [])


def test_store_close_abandons_parked_threads() -> None:
    st = store()
    inst = InstanceState(st)
    cleaned: list[str] = []

    def body(thread: Thread) -> Suspends[None]:
        try:
            yield from canon_thread_suspend(thread, True)
        finally:
            cleaned.append("unwound")

    call = start_host_call(stackful(inst, body), [])
    assert not call.settled
    st.close()
    assert cleaned == ["unwound"]
    assert not st.waiting
    assert not st.tick()
    st.close()
