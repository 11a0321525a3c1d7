"""Cancellation through the callback ABI, host-side cancellation, poisoning hooks,
and work that continues after a task returned."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.trap import Trap
from polyengine.concurrency import (
    CallbackCode,
    Driver,
    EventCode,
    InstanceState,
    Store,
    Subtask,
    canon_lower,
    run_to_completion,
    start_host_call,
)
from polyengine.concurrency.builtins import (
    canon_subtask_cancel,
    canon_task_cancel,
    canon_thread_yield,
    canon_waitable_join,
    canon_waitable_set_new,
    canon_waitable_set_poll,
    canon_waitable_set_wait,
)
from polyengine.concurrency.fakes import py_lifted, py_lowered, returns, stackful
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.concurrency.task import OnCancel, OnResolve, OnStart
from polyengine.concurrency.thread import CoreVal, Suspends, Thread
from polyengine.types import model as m


def fifo() -> Store:
    return Store(SchedulePolicy(None))


def test_callback_receives_task_cancelled_and_confirms() -> None:
    store = fifo()
    a, b = InstanceState(store, name="a"), InstanceState(store, name="b")
    events: list[tuple[int, int, int]] = []

    def start(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        return (yield from returns(CallbackCode.WAIT | (ws << 4)))

    def cb(thread: Thread, args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        events.append((int(args[0]), int(args[1]), int(args[2])))
        canon_task_cancel(thread)
        return (yield from returns(CallbackCode.EXIT))

    lower = py_lowered(py_lifted(b, start, is_async=True, async_=True, callback=cb), async_=True)
    got: list[object] = []

    def main(thread: Thread) -> Suspends[None]:
        status = (yield from canon_lower(lower, thread, []))[0]
        assert isinstance(status, int)
        got.append(status & 0xF)
        got.append((yield from canon_subtask_cancel(thread, False, status >> 4))[0])

    run_to_completion(stackful(a, main), [])
    assert events == [(EventCode.TASK_CANCELLED, 0, 0)]
    assert got == [Subtask.State.STARTED, Subtask.State.CANCELLED_BEFORE_RETURNED]
    assert b.exclusive_thread is None


def test_host_cancels_a_call_held_by_backpressure() -> None:
    store = fifo()
    inst = InstanceState(store)
    inst.backpressure = 1
    ran: list[str] = []

    def body(_t: Thread) -> Suspends[None]:
        ran.append("ran")
        yield from ()

    call = start_host_call(stackful(inst, body), [])
    assert not call.settled
    call.cancel()
    assert call.resolved and call.result is None
    assert ran == []


def test_poison_hooks_see_the_instance_and_trap() -> None:
    store = fifo()
    inst = InstanceState(store, name="p")
    seen: list[tuple[InstanceState, str]] = []
    store.on_poison.append(lambda i, t: seen.append((i, str(t))))

    def f(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        raise Trap("guest fault", code="test")
        yield from ()

    with pytest.raises(Trap, match="guest fault"):
        run_to_completion(py_lifted(inst, f), [])
    assert seen == [(inst, "guest fault")]
    with pytest.raises(Trap, match="cannot enter"):
        run_to_completion(py_lifted(inst, f), [])


def test_other_instances_stay_usable_after_a_poisoning() -> None:
    store = fifo()
    bad, good = InstanceState(store, name="bad"), InstanceState(store, name="good")

    def f(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        raise Trap("boom")
        yield from ()

    def ok(_t: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        return (yield from returns(1))

    with pytest.raises(Trap):
        run_to_completion(py_lifted(bad, f), [])
    assert run_to_completion(py_lifted(good, ok, result=m.U32()), []) == [1]


def test_work_after_return_continues_between_calls() -> None:
    async def main() -> list[str]:
        store = fifo()
        driver = Driver(store)
        inst = InstanceState(store)
        log: list[str] = []
        lower_host = py_lowered(
            _host_sleep(driver, 0.02), ft=m.FuncType((), None, True), async_=False
        )
        mem = BytearrayMemory(64)

        def body(thread: Thread) -> Suspends[None]:
            thread.task.return_([])
            log.append("returned")
            yield from canon_lower(lower_host, thread, [])
            log.append("after host work")
            _ = mem

        await driver.run(stackful(inst, body), [])
        log.append("call awaited")
        await asyncio.sleep(0.1)
        return log

    assert asyncio.run(main()) == ["returned", "call awaited", "after host work"]


def _host_sleep(driver: Driver, delay: float) -> Any:
    def fi(on_start: OnStart, on_resolve: OnResolve, _caller: object) -> OnCancel:
        on_start()

        def done(_f: asyncio.Future[None]) -> None:
            on_resolve([])

        driver.spawn_host(asyncio.sleep(delay), done)
        return lambda _c: None

    return fi


def test_host_cancel_is_delivered_to_a_cancellable_wait() -> None:
    store = fifo()
    inst = InstanceState(store)
    mem = BytearrayMemory(64)
    got: list[int] = []

    def first(thread: Thread) -> Suspends[None]:
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        code = (yield from canon_waitable_set_wait(thread, True, mem, ws, 0))[0]
        assert isinstance(code, int)
        got.append(code)
        canon_task_cancel(thread)

    call = start_host_call(stackful(inst, first), [])
    assert not call.settled
    call.cancel()
    assert got == [EventCode.TASK_CANCELLED]
    assert call.resolved and call.result is None


def test_host_code_failing_during_a_tick_becomes_a_trap() -> None:
    store = fifo()
    inst = InstanceState(store, name="h")

    def broken(_on_start: OnStart, _on_resolve: OnResolve, _caller: object) -> OnCancel:
        raise ValueError("host bug")

    lower = py_lowered(broken, ft=m.FuncType((), None, True))

    def body(thread: Thread) -> Suspends[None]:
        yield from canon_thread_yield(thread, False)
        yield from canon_lower(lower, thread, [])

    call = start_host_call(stackful(inst, body), [])
    with pytest.raises(Trap, match="host code raised ValueError: host bug") as info:
        store.tick()
    assert isinstance(info.value.__cause__, ValueError)
    assert call.trap is info.value
    assert inst.poisoned is info.value


def test_cancelled_callee_may_still_return_a_value() -> None:
    store = fifo()
    a, b = InstanceState(store, name="a"), InstanceState(store, name="b")
    mem = BytearrayMemory(64)
    trace: list[object] = []

    def callee(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        trace.append((yield from canon_waitable_set_wait(thread, True, mem, ws, 0))[0])
        # the request was delivered: a later cancellable yield is not cancelled again
        trace.append((yield from canon_thread_yield(thread, True))[0])
        thread.task.return_([43])
        return []

    lower = py_lowered(py_lifted(b, callee, result=m.U8(), is_async=True, async_=True), async_=True)

    def main(thread: Thread) -> Suspends[None]:
        st = (yield from canon_lower(lower, thread, []))[0]
        assert isinstance(st, int)
        trace.append((yield from canon_subtask_cancel(thread, False, st >> 4))[0])

    run_to_completion(stackful(a, main), [])
    assert trace == [EventCode.TASK_CANCELLED, 0, Subtask.State.RETURNED]


def test_cancel_requested_during_a_non_cancellable_wait_stays_pending() -> None:
    store = fifo()
    a, b = InstanceState(store, name="a"), InstanceState(store, name="b")
    mem = BytearrayMemory(64)
    trace: list[object] = []
    resolvers: list[OnResolve] = []

    def host(on_start: OnStart, on_resolve: OnResolve, _caller: object) -> OnCancel:
        on_start()
        store.begin_host_work()
        resolvers.append(on_resolve)
        return lambda _c: None

    host_lower = py_lowered(host, ft=m.FuncType((), None, True))

    def callee(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from canon_lower(host_lower, thread, [])  # synchronous: not cancellable
        with pytest.raises(Trap, match="no cancellation was delivered"):
            canon_task_cancel(thread)
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        trace.append((yield from canon_waitable_set_wait(thread, True, mem, ws, 0))[0])
        trace.append(canon_waitable_set_poll(thread, True, mem, ws, 0)[0])
        canon_task_cancel(thread)
        return []

    lower = py_lowered(py_lifted(b, callee, is_async=True, async_=True), async_=True)

    def main(thread: Thread) -> Suspends[None]:
        st = (yield from canon_lower(lower, thread, []))[0]
        assert isinstance(st, int)
        trace.append((yield from canon_subtask_cancel(thread, True, st >> 4))[0])
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        canon_waitable_join(thread, st >> 4, ws)
        yield from canon_waitable_set_wait(thread, False, mem, ws, 8)
        trace.append(int.from_bytes(mem.buf[12:16], "little"))

    call = start_host_call(stackful(a, main), [])
    assert trace == [0xFFFF_FFFF] and not call.settled
    resolvers[0]([])
    store.end_host_work()
    while store.tick():
        pass
    assert call.resolved
    assert trace == [
        0xFFFF_FFFF,
        EventCode.TASK_CANCELLED,
        EventCode.NONE,
        Subtask.State.CANCELLED_BEFORE_RETURNED,
    ]
