"""Tasks, subtasks, lift/lower and the callback event loop (CanonicalABI.md §Tasks,
§Subtask State, §``canon lift``, §``canon lower``)."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.trap import Trap
from polyengine.concurrency import (
    BLOCKED,
    CallbackCode,
    EventCode,
    InstanceState,
    Store,
    Subtask,
    Task,
    canon_lower,
    run_to_completion,
    start_host_call,
)
from polyengine.concurrency.builtins import (
    canon_backpressure_dec,
    canon_backpressure_inc,
    canon_context_get,
    canon_context_set,
    canon_subtask_cancel,
    canon_subtask_drop,
    canon_task_cancel,
    canon_task_return,
    canon_thread_yield,
    canon_waitable_join,
    canon_waitable_set_new,
    canon_waitable_set_poll,
    canon_waitable_set_wait,
)
from polyengine.concurrency.fakes import py_lifted, py_lowered, returns, stackful
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.concurrency.thread import CoreVal, Suspends, Thread
from polyengine.types import model as m

U32 = m.U32()


def fifo_store() -> Store:
    return Store(SchedulePolicy(None))


def event_at(mem: BytearrayMemory, ptr: int = 0) -> tuple[int, int]:
    p1, p2 = struct.unpack_from("<II", mem.buf, ptr)
    return p1, p2


def do_return(thread: Thread, *vals: Any) -> None:
    task = thread.task
    canon_task_return(thread, task.ft.result, task.return_key, lambda _t, f: list(f), list(vals))


def split(packed: CoreVal) -> tuple[int, int]:
    assert isinstance(packed, int)
    return packed & 0xF, packed >> 4


# -- synchronous and stackful calls ---------------------------------------------------


def test_sync_call_is_a_task_driven_to_completion() -> None:
    inst = InstanceState(fifo_store(), name="callee")

    def add_one(_t: Thread, args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from returns(int(args[0]) + 1))

    lf = py_lifted(inst, add_one, params=(U32,), result=U32)
    assert run_to_completion(lf, [41]) == [42]
    assert inst.may_enter


def test_post_return_runs_after_results_with_may_leave_cleared() -> None:
    inst = InstanceState(fifo_store())
    seen: list[object] = []

    def f(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from returns(5))

    def post(_t: Thread, flat: list[CoreVal]) -> Suspends[list[CoreVal]]:
        seen.append((list(flat), inst.may_leave))
        return (yield from returns())

    lf = py_lifted(inst, f, result=U32, post_return=post)
    assert run_to_completion(lf, []) == [5]
    assert seen == [([5], False)]
    assert inst.may_leave


def test_async_lower_of_blocking_callee_reports_subtask_events() -> None:
    store = fifo_store()
    a, b = InstanceState(store, name="a"), InstanceState(store, name="b")
    mem = BytearrayMemory(256)
    out: list[list[Any]] = []
    log: list[object] = []

    def slow(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from canon_thread_yield(thread, False)
        do_return(thread, 7)
        return []

    lower_slow = py_lowered(
        py_lifted(b, slow, result=U32, is_async=True, async_=True), async_=True, results=out
    )

    def main(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        state, idx = split((yield from canon_lower(lower_slow, thread, []))[0])
        log.append(("called", state))
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        canon_waitable_join(thread, idx, ws)
        code = (yield from canon_waitable_set_wait(thread, False, mem, ws, 0))[0]
        log.append(("event", code, *event_at(mem)))
        canon_subtask_drop(thread, idx)
        do_return(thread, out[0][0] + 1)
        return []

    lf = py_lifted(a, main, result=U32, is_async=True, async_=True)
    assert run_to_completion(lf, []) == [8]
    assert log[0] == ("called", Subtask.State.STARTED)
    assert log[1] == ("event", EventCode.SUBTASK, 1, Subtask.State.RETURNED)


def test_async_lower_of_eager_callee_returns_returned_without_subtask() -> None:
    store = fifo_store()
    a, b = InstanceState(store), InstanceState(store)
    out: list[list[Any]] = []

    def eager(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        do_return(thread, 3)
        return (yield from returns())

    lower = py_lowered(
        py_lifted(b, eager, result=U32, is_async=True, async_=True), async_=True, results=out
    )
    got: list[CoreVal] = []

    def main(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        got.extend((yield from canon_lower(lower, thread, [])))
        do_return(thread, 0)
        return []

    run_to_completion(py_lifted(a, main, result=U32, is_async=True, async_=True), [])
    assert got == [Subtask.State.RETURNED]
    assert out == [[3]]


def test_sync_lower_waits_for_async_callee() -> None:
    store = fifo_store()
    a, b = InstanceState(store), InstanceState(store)

    def slow(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from canon_thread_yield(thread, False)
        do_return(thread, 11)
        return []

    lower = py_lowered(py_lifted(b, slow, result=U32, is_async=True, async_=True))

    def main(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        r = yield from canon_lower(lower, thread, [])
        do_return(thread, int(r[0]) * 2)
        return []

    assert run_to_completion(py_lifted(a, main, result=U32, is_async=True, async_=True), []) == [22]


def test_subtask_drop_before_resolution_traps_and_poisons() -> None:
    store = fifo_store()
    a, b = InstanceState(store, name="a"), InstanceState(store, name="b")

    def slow(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from canon_thread_yield(thread, False)
        do_return(thread)
        return []

    lower = py_lowered(py_lifted(b, slow, is_async=True, async_=True), async_=True)

    def main(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        _state, idx = split((yield from canon_lower(lower, thread, []))[0])
        canon_subtask_drop(thread, idx)
        return []

    with pytest.raises(Trap, match="cannot drop a subtask which has not yet resolved"):
        run_to_completion(py_lifted(a, main, is_async=True, async_=True), [])
    assert a.poisoned is not None
    with pytest.raises(Trap, match="cannot enter component instance"):
        run_to_completion(stackful(a, lambda t: returns_none()), [])


def returns_none() -> Suspends[None]:
    yield from ()


# -- task.return / task.cancel -------------------------------------------------------


def test_task_return_twice_traps() -> None:
    inst = InstanceState(fifo_store())

    def body(thread: Thread) -> Suspends[None]:
        do_return(thread)
        do_return(thread)
        yield from ()

    with pytest.raises(Trap, match="already returned"):
        run_to_completion(stackful(inst, body), [])


def test_task_return_from_sync_lift_traps() -> None:
    inst = InstanceState(fifo_store())

    def f(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        do_return(thread)
        return (yield from returns())

    with pytest.raises(Trap, match="synchronously lifted"):
        run_to_completion(py_lifted(inst, f), [])


def test_task_return_with_other_options_traps() -> None:
    inst = InstanceState(fifo_store())

    def body(thread: Thread) -> Suspends[None]:
        canon_task_return(thread, None, "other options", lambda _t, f: [], [])
        yield from ()

    with pytest.raises(Trap, match=r"invalid task\.return signature or options"):
        run_to_completion(stackful(inst, body), [])


def test_task_return_type_check_remembers_only_equal_pairs() -> None:
    """An equal result type of another definition passes every time; an unequal one traps
    every time, before and after an equal pair was remembered."""
    from polyengine.concurrency.builtins import same_type

    a, b = m.List(m.Option(m.U8())), m.List(m.Option(m.U8()))
    other = m.List(m.Option(m.U16()))
    assert a is not b
    assert not same_type(a, other)
    assert same_type(a, b) and same_type(a, b) and same_type(a, a)
    assert not same_type(a, other) and not same_type(other, b)
    assert same_type(None, None) and not same_type(None, a) and not same_type(a, None)

    inst = InstanceState(fifo_store())
    resolved: list[Any] = []
    for result_type, ok in ((b, True), (b, True), (other, False), (b, True)):
        task = Task(m.FuncType((), a, True), inst, list, resolved.append, async_=True,
                    return_key="opts")
        task.state = Task.State.STARTED
        thread = Thread(task, lambda _t: iter(()))
        task.implicit_thread = thread
        task.register_thread(thread)
        if ok:
            assert canon_task_return(thread, result_type, "opts", lambda _t, f: ["v"], []) == []
        else:
            with pytest.raises(Trap, match="result type is not the lifted function's"):
                canon_task_return(thread, result_type, "opts", lambda _t, f: ["v"], [])
    assert resolved == [["v"]] * 3


def test_thread_ending_without_return_traps() -> None:
    inst = InstanceState(fifo_store())

    def core(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from returns())

    with pytest.raises(Trap, match=r"before task\.return"):
        run_to_completion(py_lifted(inst, core, is_async=True, async_=True), [])


# -- cancellation -------------------------------------------------------------------------


def test_cancel_before_start_under_backpressure() -> None:
    store = fifo_store()
    a, b = InstanceState(store), InstanceState(store)
    b.backpressure = 1
    ran: list[str] = []

    def callee(thread: Thread) -> Suspends[None]:
        ran.append("callee")
        yield from ()

    lower = py_lowered(stackful(b, callee), async_=True)
    got: list[object] = []

    def main(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        state, idx = split((yield from canon_lower(lower, thread, []))[0])
        got.append(state)
        r = yield from canon_subtask_cancel(thread, True, idx)
        got.append(r[0])
        canon_subtask_drop(thread, idx)
        do_return(thread)
        return []

    run_to_completion(py_lifted(a, main, is_async=True, async_=True), [])
    assert got == [Subtask.State.STARTING, Subtask.State.CANCELLED_BEFORE_STARTED]
    assert ran == []
    assert b.num_waiting_to_enter == 0


def test_cancel_delivered_to_cancellable_wait_then_task_cancel() -> None:
    store = fifo_store()
    a, b = InstanceState(store), InstanceState(store)
    bmem = BytearrayMemory(64)
    seen: list[object] = []

    def callee(thread: Thread) -> Suspends[None]:
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        code = (yield from canon_waitable_set_wait(thread, True, bmem, ws, 0))[0]
        seen.append(code)
        canon_task_cancel(thread)

    lower = py_lowered(stackful(b, callee), async_=True)
    got: list[object] = []

    def main(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        state, idx = split((yield from canon_lower(lower, thread, []))[0])
        got.append(state)
        got.append((yield from canon_subtask_cancel(thread, True, idx))[0])
        do_return(thread)
        return []

    run_to_completion(py_lifted(a, main, is_async=True, async_=True), [])
    assert seen == [EventCode.TASK_CANCELLED]
    assert got == [Subtask.State.STARTED, Subtask.State.CANCELLED_BEFORE_RETURNED]


def test_cancel_pending_until_next_cancellable_wait() -> None:
    store = fifo_store()
    a, b = InstanceState(store), InstanceState(store)
    bmem, amem = BytearrayMemory(64), BytearrayMemory(64)
    seen: list[object] = []

    def callee(thread: Thread) -> Suspends[None]:
        yield from canon_thread_yield(thread, False)  # not cancellable: request stays pending
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        seen.append(canon_waitable_set_poll(thread, True, bmem, ws, 0)[0])
        canon_task_cancel(thread)

    lower = py_lowered(stackful(b, callee), async_=True)

    def main(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        _state, idx = split((yield from canon_lower(lower, thread, []))[0])
        assert (yield from canon_subtask_cancel(thread, True, idx))[0] == BLOCKED
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        canon_waitable_join(thread, idx, ws)
        yield from canon_waitable_set_wait(thread, False, amem, ws, 0)
        seen.append(event_at(amem))
        do_return(thread)
        return []

    run_to_completion(py_lifted(a, main, is_async=True, async_=True), [])
    assert seen == [EventCode.TASK_CANCELLED, (1, Subtask.State.CANCELLED_BEFORE_RETURNED)]


def test_task_cancel_without_request_traps() -> None:
    inst = InstanceState(fifo_store())

    def body(thread: Thread) -> Suspends[None]:
        canon_task_cancel(thread)
        yield from ()

    with pytest.raises(Trap, match="no cancellation was delivered"):
        run_to_completion(stackful(inst, body), [])


# -- backpressure and the exclusive lock --------------------------------------------------


def test_backpressure_holds_new_async_calls_until_released() -> None:
    store = fifo_store()
    a, b = InstanceState(store), InstanceState(store)
    amem = BytearrayMemory(64)
    order: list[str] = []

    def callee(thread: Thread) -> Suspends[None]:
        order.append("callee runs")
        yield from ()

    lower = py_lowered(stackful(b, callee), async_=True)

    def main(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        bt = b.threads  # backpressure is set by the callee instance's own code
        assert len(bt) == 0
        b.backpressure = 1
        state, idx = split((yield from canon_lower(lower, thread, []))[0])
        order.append(f"state {state}")
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        canon_waitable_join(thread, idx, ws)
        assert canon_waitable_set_poll(thread, False, amem, ws, 0)[0] == EventCode.NONE
        b.backpressure = 0
        store.wake()
        while True:
            yield from canon_waitable_set_wait(thread, False, amem, ws, 0)
            _p1, p2 = event_at(amem)
            order.append(f"event {p2}")
            if p2 == Subtask.State.RETURNED:
                break
        do_return(thread)
        return []

    run_to_completion(py_lifted(a, main, is_async=True, async_=True), [])
    assert order == ["state 0", "callee runs", "event 2"]


def test_backpressure_counter_builtins() -> None:
    store = fifo_store()
    inst = InstanceState(store)

    def body(thread: Thread) -> Suspends[None]:
        canon_backpressure_inc(thread)
        canon_backpressure_inc(thread)
        assert inst.backpressure == 2
        canon_backpressure_dec(thread)
        canon_backpressure_dec(thread)
        with pytest.raises(Trap, match="underflow"):
            canon_backpressure_dec(thread)
        yield from ()

    run_to_completion(stackful(inst, body), [])


def test_sync_lifted_async_export_holds_exclusive_lock_until_it_returns() -> None:
    store = fifo_store()
    a, b = InstanceState(store, name="a"), InstanceState(store, name="b")
    order: list[str] = []

    def f(thread: Thread, args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        order.append(f"start {args[0]}")
        yield from canon_thread_yield(thread, False)
        order.append(f"end {args[0]}")
        return [args[0]]

    # async-typed, lifted without `async`: takes the exclusive lock
    lower = py_lowered(py_lifted(b, f, params=(U32,), result=U32, is_async=True), async_=True)
    states: list[int] = []

    def main(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        s1, _ = split((yield from canon_lower(lower, thread, [1]))[0])
        s2, _ = split((yield from canon_lower(lower, thread, [2]))[0])
        states.extend([s1, s2])
        for _ in range(6):
            yield from canon_thread_yield(thread, False)
        do_return(thread)
        return []

    run_to_completion(py_lifted(a, main, is_async=True, async_=True), [])
    assert states == [Subtask.State.STARTED, Subtask.State.STARTING]
    assert order == ["start 1", "end 1", "start 2", "end 2"]


# -- the callback event loop -----------------------------------------------------------------


def test_callback_loop_wait_yield_exit() -> None:
    store = fifo_store()
    a, b = InstanceState(store, name="a"), InstanceState(store, name="b")
    events: list[tuple[int, int, int]] = []
    state: dict[str, int] = {}

    def slow(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from canon_thread_yield(thread, False)
        do_return(thread, 5)
        return []

    lower = py_lowered(py_lifted(b, slow, result=U32, is_async=True, async_=True), async_=True)

    def start(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        _s, idx = split((yield from canon_lower(lower, thread, []))[0])
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        canon_waitable_join(thread, idx, ws)
        state["ws"] = ws
        return [CallbackCode.WAIT | (ws << 4)]

    def cb(thread: Thread, args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        code, p1, p2 = (int(x) for x in args)
        events.append((code, p1, p2))
        if code == EventCode.SUBTASK:
            canon_waitable_join(thread, p1, 0)
            canon_subtask_drop(thread, p1)
            return (yield from returns(CallbackCode.YIELD))
        do_return(thread, 99)
        return (yield from returns(CallbackCode.EXIT))

    lf = py_lifted(a, start, result=U32, is_async=True, async_=True, callback=cb)
    assert run_to_completion(lf, []) == [99]
    assert events == [(EventCode.SUBTASK, 1, Subtask.State.RETURNED), (EventCode.NONE, 0, 0)]
    assert a.exclusive_thread is None


@pytest.mark.parametrize("code", [3, 4, 15])
def test_invalid_callback_code_traps(code: int) -> None:
    inst = InstanceState(fifo_store())

    def start(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from returns(code | (1 << 4)))

    def cb(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        raise AssertionError("callback must not run")
        yield from ()

    lf = py_lifted(inst, start, is_async=True, async_=True, callback=cb)
    with pytest.raises(Trap, match="unsupported callback code"):
        run_to_completion(lf, [])


def test_callback_wait_on_non_set_traps() -> None:
    inst = InstanceState(fifo_store())

    def start(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from returns(CallbackCode.WAIT | (7 << 4)))

    lf = py_lifted(inst, start, is_async=True, async_=True, callback=start)
    with pytest.raises(Trap):
        run_to_completion(lf, [])


# -- blocking rules, deadlock, reentrance -----------------------------------------------------


def test_sync_task_cannot_block_with_nothing_else_to_run() -> None:
    inst = InstanceState(fifo_store())
    mem = BytearrayMemory(64)

    def f(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        yield from canon_waitable_set_wait(thread, False, mem, ws, 0)
        return []

    with pytest.raises(Trap, match="cannot block a synchronous task before returning"):
        run_to_completion(py_lifted(inst, f), [])


def test_sync_task_may_yield_and_poll() -> None:
    inst = InstanceState(fifo_store())
    mem = BytearrayMemory(64)

    def f(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from canon_thread_yield(thread, False)
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        assert canon_waitable_set_poll(thread, False, mem, ws, 0) == [EventCode.NONE]
        return [42]

    assert run_to_completion(py_lifted(inst, f, result=U32), []) == [42]


def test_deadlock_detected_when_nothing_can_progress() -> None:
    store = fifo_store()
    c, d = InstanceState(store, name="c"), InstanceState(store, name="d")

    def stuck(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        return [CallbackCode.WAIT | (ws << 4)]
        yield from ()

    lower = py_lowered(py_lifted(c, stuck, is_async=True, async_=True, callback=stuck))
    mem = BytearrayMemory(64)

    def g(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from canon_lower(lower, thread, [])
        _ = mem
        return []

    with pytest.raises(Trap, match="deadlock detected"):
        run_to_completion(py_lifted(d, g, is_async=True), [])
    assert d.poisoned is not None


def test_reentering_an_instance_on_the_stack_traps() -> None:
    store = fifo_store()
    a = InstanceState(store, name="a")
    b = InstanceState(store, name="b")
    lowers: dict[str, Any] = {}

    def a_export(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from canon_lower(lowers["b"], thread, []))

    def b_export(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from canon_lower(lowers["a"], thread, []))

    lf_a = py_lifted(a, a_export)
    lowers["b"] = py_lowered(py_lifted(b, b_export))
    lowers["a"] = py_lowered(lf_a)
    with pytest.raises(Trap, match="cannot enter component instance"):
        run_to_completion(lf_a, [])


# -- context ---------------------------------------------------------------------------------


def test_context_slots_are_per_thread() -> None:
    store = fifo_store()
    inst = InstanceState(store)
    seen: list[tuple[int, int]] = []

    def body_for(tag: int) -> Any:
        def body(thread: Thread) -> Suspends[None]:
            assert canon_context_get(thread, 0) == [0]
            canon_context_set(thread, 0, tag)
            canon_context_set(thread, 1, tag * 10)
            yield from canon_thread_yield(thread, False)
            v0, v1 = canon_context_get(thread, 0)[0], canon_context_get(thread, 1)[0]
            assert isinstance(v0, int) and isinstance(v1, int)
            seen.append((v0, v1))

        return body

    c1 = start_host_call(stackful(inst, body_for(1)), [])
    c2 = start_host_call(stackful(inst, body_for(2)), [])
    while store.tick():
        pass
    assert c1.resolved and c2.resolved
    assert sorted(seen) == [(1, 10), (2, 20)]


def test_task_states_follow_the_lifecycle() -> None:
    inst = InstanceState(fifo_store())
    states: list[Task.State] = []

    def body(thread: Thread) -> Suspends[None]:
        states.append(thread.task.state)
        do_return(thread)
        states.append(thread.task.state)
        yield from ()

    call = start_host_call(stackful(inst, body), [])
    assert call.resolved and call.result == []
    assert states == [Task.State.STARTED, Task.State.RESOLVED]
