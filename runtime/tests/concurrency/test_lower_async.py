"""``canon lower ... async`` as a plain function (CanonicalABI.md §``canon lower``).

:func:`canon_lower_async` never blocks: a callee that resolves inside the
call gives ``RETURNED`` with no subtask handle; one that does not gives the
subtask's state packed with its handle, and its later progress arrives as
events.
"""

from __future__ import annotations

from typing import Any

import pytest

from polyengine.abi.trap import Trap
from polyengine.concurrency import InstanceState, Store, Subtask
from polyengine.concurrency.fakes import bare_thread, py_lowered
from polyengine.concurrency.lift import canon_lower, canon_lower_async
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.concurrency.task import OnCancel, OnResolve, OnStart
from polyengine.concurrency.waitable import EventCode
from polyengine.types import model as m

ASYNC_FT = m.FuncType((("x", m.U32()),), m.U32(), True)


def _no_cancel(_requester: object) -> None:
    pass


def test_a_callee_resolving_at_once_returns_returned_without_a_handle() -> None:
    inst = InstanceState(Store(SchedulePolicy(None)))
    thread = bare_thread(inst)
    got: list[list[Any]] = []

    def callee(on_start: OnStart, on_resolve: OnResolve, _caller: object) -> OnCancel:
        [x] = on_start()
        on_resolve([x + 1])
        return _no_cancel

    lower = py_lowered(callee, ft=ASYNC_FT, async_=True, results=got)
    before = len(inst.handles)
    assert canon_lower_async(lower, thread, [41]) == [int(Subtask.State.RETURNED)]
    assert got == [[42]]
    assert len(inst.handles) == before
    # the generator form answers the same
    gen = canon_lower(lower, thread, [1])
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value == [int(Subtask.State.RETURNED)]


def test_a_pending_callee_gives_a_handle_and_later_an_event() -> None:
    inst = InstanceState(Store(SchedulePolicy(None)))
    thread = bare_thread(inst)
    got: list[list[Any]] = []
    resolvers: list[OnResolve] = []

    def callee(on_start: OnStart, on_resolve: OnResolve, _caller: object) -> OnCancel:
        on_start()
        resolvers.append(on_resolve)
        return _no_cancel

    lower = py_lowered(callee, ft=ASYNC_FT, async_=True, results=got)
    [packed] = canon_lower_async(lower, thread, [7])
    assert isinstance(packed, int)
    assert packed & 0xF == Subtask.State.STARTED
    subtask = inst.handles.get(packed >> 4)
    assert isinstance(subtask, Subtask) and not subtask.has_pending_event()
    resolvers[0]([8])
    assert got == [[8]]
    assert subtask.get_pending_event() == (
        EventCode.SUBTASK,
        packed >> 4,
        int(Subtask.State.RETURNED),
    )


def test_may_not_leave_traps_before_the_callee_runs() -> None:
    inst = InstanceState(Store(SchedulePolicy(None)))
    thread = bare_thread(inst)
    called: list[int] = []

    def callee(on_start: OnStart, on_resolve: OnResolve, _caller: object) -> OnCancel:
        called.append(1)
        return _no_cancel

    lower = py_lowered(callee, ft=ASYNC_FT, async_=True)
    inst.ci.may_leave = False
    with pytest.raises(Trap):
        canon_lower_async(lower, thread, [1])
    assert called == []
