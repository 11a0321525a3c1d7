"""Lift/lower built from the canonical ABI's compiled codecs: a string call between
two instances over the async ABI (parameters read at start, result written through
the out-pointer on return)."""

from __future__ import annotations

import struct

from polyengine.abi.compile import Compiler
from polyengine.abi.functions import LiftedFunc, LoweredFunc
from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.options import CanonicalOptions
from polyengine.concurrency import (
    EventCode,
    InstanceState,
    Store,
    Subtask,
    canon_lower,
    lift_func,
    run_to_completion,
)
from polyengine.concurrency.builtins import (
    canon_subtask_drop,
    canon_thread_yield,
    canon_waitable_join,
    canon_waitable_set_new,
    canon_waitable_set_wait,
)
from polyengine.concurrency.fakes import py_core, py_lifted
from polyengine.concurrency.glue import (
    canon_lift_from_abi,
    canon_lower_from_abi,
    task_return_builtin,
)
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.concurrency.thread import CoreVal, Suspends, Thread
from polyengine.types import model as m

GREET = m.FuncType((("name", m.String()),), m.String(), True)


def test_async_string_call_between_instances() -> None:
    store = Store(SchedulePolicy(None))
    a, b = InstanceState(store, name="a"), InstanceState(store, name="b")
    mem_a, mem_b = BytearrayMemory(), BytearrayMemory()
    mem_a.next = mem_b.next = 1024
    opts_b = CanonicalOptions(memory=mem_b, realloc=mem_b.realloc, is_async=True)
    ret = task_return_builtin(
        LiftedFunc.compile(Compiler(), m.FuncType((), m.String())),
        CanonicalOptions(memory=mem_b),
    )
    seen_by_b: list[str] = []

    def greet(thread: Thread, args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        ptr, n = (int(x) for x in args)
        name = mem_b.read(ptr, n).decode()
        seen_by_b.append(name)
        yield from canon_thread_yield(thread, False)
        reply = f"hello {name}".encode()
        p = mem_b.realloc(0, 0, 1, len(reply))
        mem_b.write(p, reply)
        ret(thread, [p, len(reply)])
        return []

    lift_b = canon_lift_from_abi(
        LiftedFunc.compile(Compiler(), GREET, is_async=True), opts_b, b, py_core(greet)
    )
    opts_a = CanonicalOptions(memory=mem_a, realloc=mem_a.realloc, is_async=True)
    lower = canon_lower_from_abi(
        LoweredFunc.compile(Compiler(), GREET, is_async=True), opts_a, a, lift_func(lift_b)
    )
    log: list[object] = []

    def main(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        mem_a.write(100, b"bob")
        status = (yield from canon_lower(lower, thread, [100, 3, 200]))[0]
        assert isinstance(status, int)
        log.append(status & 0xF)
        idx = status >> 4
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        canon_waitable_join(thread, idx, ws)
        code = (yield from canon_waitable_set_wait(thread, False, mem_a, ws, 0))[0]
        log.append((code, *struct.unpack_from("<II", mem_a.buf, 0)))
        canon_subtask_drop(thread, idx)
        p, n = struct.unpack_from("<II", mem_a.buf, 200)
        thread.task.return_([mem_a.read(p, n).decode()])
        return []

    lf_main = py_lifted(a, main, result=m.String(), is_async=True, async_=True)
    assert run_to_completion(lf_main, []) == ["hello bob"]
    assert seen_by_b == ["bob"]
    assert log == [Subtask.State.STARTED, (EventCode.SUBTASK, 1, Subtask.State.RETURNED)]
