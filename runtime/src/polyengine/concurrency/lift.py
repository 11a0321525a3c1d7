"""``canon lift`` and ``canon lower`` with their async paths (CanonicalABI.md
§``canon lift``, §``canon lower``).

The per-function static parts (types, options, and the value lifters and
lowerers that the canonical ABI layer specializes once per type) are bundled
in :class:`CanonLift` and :class:`CanonLower`; the dynamic parts are the
spec's ``on_start``/``on_resolve`` callbacks. Core functions are started
through :data:`CoreFunc`, which the engine implements by starting a
parkable wasmtime call on the given thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from functools import partial
from typing import Any, TypeAlias

from polyengine.types.model import FuncType

from .ready import Gate
from .store import InstanceState
from .task import FuncInst, OnCancel, OnResolve, OnStart, Subtask, Task
from .thread import Activation, CoreVal, Suspends, Thread, first_step, run_activation
from .traps import Trap, TrapCode, ctrap, ctrap_if
from .waitable import EventCode, EventTuple, WaitableSet

__all__ = [
    "CallbackCode",
    "CoreFunc",
    "CanonLift",
    "CanonLower",
    "canon_lift",
    "canon_lower",
    "canon_lower_async",
    "lift_func",
    "start_task",
    "unpack_callback_result",
]

CoreFunc: TypeAlias = Callable[[Thread, list[CoreVal]], Activation]
"""Start a core function with flat arguments on ``thread``; the activation parks on blocks."""


class CallbackCode(IntEnum):
    """What a callback-lifted function asks for next (§``canon lift``)."""

    EXIT = 0
    YIELD = 1
    WAIT = 2
    MAX = 2


#: the codes by value (a tuple index, not an enum look-up, per callback result)
_CODES = (CallbackCode.EXIT, CallbackCode.YIELD, CallbackCode.WAIT)


def unpack_callback_result(packed: int) -> tuple[CallbackCode, int]:
    """Split the ``i32`` a callback returned into (code, waitable-set index)."""
    code = packed & 0xF
    if code > CallbackCode.MAX:
        ctrap(TrapCode.CALLBACK_CODE, "unsupported callback code")
    assert 0 <= packed < 2**32
    return _CODES[code], packed >> 4


@dataclass(slots=True)
class CanonLift:
    """A lifted function: core callee plus what ``canon lift`` fixed statically.

    ``lower_args(task, values)`` lowers the arguments into the callee
    (may call its ``realloc``); ``lift_results(task, flat)`` lifts a
    synchronous callee's results; ``return_key`` identifies the lift options
    that ``task.return`` must repeat.
    """

    ft: FuncType
    inst: InstanceState
    callee: CoreFunc
    lower_args: Callable[[Task, list[Any]], list[CoreVal]]
    lift_results: Callable[[Task, list[CoreVal]], list[Any]] = field(default=lambda _t, _f: [])
    async_: bool = False
    callback: CoreFunc | None = None
    post_return: CoreFunc | None = None
    return_key: object = None


def start_task(
    lf: CanonLift,
    on_start: OnStart,
    on_resolve: OnResolve,
    caller: InstanceState | None,
) -> Task:
    """Create the callee task and run it until it blocks (the body of ``canon_lift``).

    For a function whose type is not ``async``, keeps resuming the
    instance's ready threads until the task resolves; traps with
    "cannot block a synchronous task before returning" when nothing can run
    and no host operation is in flight. When host operations are in flight
    it returns early with the task unresolved, and the caller waits.
    """
    inst = lf.inst
    store = inst.store
    task = Task(
        lf.ft,
        inst,
        on_start,
        on_resolve,
        async_=lf.async_,
        callback=lf.callback is not None,
        return_key=lf.return_key,
    )

    thread = Thread(task, partial(_lift_body, lf, task))
    if caller is not None:
        caller_inst = caller

        def poison_caller(trap: Trap) -> None:
            store.poison(caller_inst, trap)

        task.on_trap = poison_caller
    thread.resume()
    if not lf.ft.is_async:
        while not task.resolved():
            cand = store.pick_ready(inst)
            if cand is None:
                if store.host_pending > 0:
                    break
                ctrap(TrapCode.DEADLOCK)
            cand.resume()
    return task


def _lift_body(lf: CanonLift, task: Task, thread: Thread) -> Suspends[None]:
    """The implicit thread of a ``canon lift`` call (§``canon lift``), for :func:`start_task`."""
    inst = lf.inst
    if lf.ft.is_async:
        entered = yield from task.enter_implicit_thread(thread)
        if not entered:
            return
    else:
        task.enter_implicit_thread_now(thread)  # nothing to wait for
    args = task.start()
    flat_args = lf.lower_args(task, args)
    if not lf.async_:
        act = lf.callee(thread, flat_args)
        block = first_step(act)
        if block is None:
            flat_results = act.results
        else:
            flat_results = yield from run_activation(act, block)
        task.return_(lf.lift_results(task, flat_results))
        if lf.post_return is not None:
            assert inst.may_leave
            inst.may_leave = False
            try:
                yield from run_activation(lf.post_return(thread, flat_results))
            finally:
                inst.may_leave = True
        task.exit_implicit_thread(thread)
        return
    if lf.callback is None:
        yield from run_activation(lf.callee(thread, flat_args))
        task.exit_implicit_thread(thread)
        return
    packed = yield from run_activation(lf.callee(thread, flat_args))
    code, si = unpack_callback_result(_single_i32(packed))
    while code is not CallbackCode.EXIT:
        assert inst._exclusive_thread is thread
        inst.exclusive_thread = None
        event: EventTuple
        if code is CallbackCode.YIELD:
            cancelled = yield from thread.wait_until(
                inst.lock_free,
                cancellable=True,
                yielding=True,
                gate=Gate.EXCLUSIVE,
            )
            event = (EventCode.TASK_CANCELLED if cancelled else EventCode.NONE, 0, 0)
        else:
            wset = inst.ci.handles.get(si)
            if not isinstance(wset, WaitableSet):
                ctrap(
                    TrapCode.HANDLE_TYPE_MISMATCH,
                    f"callback WAIT on handle {si}, which is not a waitable set",
                )
            assert isinstance(wset, WaitableSet)
            event = yield from wset.wait_for_event_and(thread, inst.lock_free, True, Gate.EXCLUSIVE)
        assert inst.exclusive_thread is None
        inst.exclusive_thread = thread
        code_, p1, p2 = event
        packed = yield from run_activation(lf.callback(thread, [int(code_), p1, p2]))
        code, si = unpack_callback_result(_single_i32(packed))
    task.exit_implicit_thread(thread)


def _single_i32(flat: list[CoreVal]) -> int:
    assert len(flat) == 1 and isinstance(flat[0], int), flat
    return flat[0] & 0xFFFF_FFFF


def canon_lift(
    lf: CanonLift, on_start: OnStart, on_resolve: OnResolve, caller: InstanceState | None
) -> OnCancel:
    """``canon lift`` (§``canon lift``): start the call, return its cancel request."""
    return start_task(lf, on_start, on_resolve, caller).request_cancellation


def lift_func(lf: CanonLift) -> FuncInst:
    """The callable component function of ``lf`` (§Embedding ``Store.lift``).

    Guards Component Invariant #2 (no reentrance: "cannot enter component
    instance") and poisons the instance when a trap escapes it.
    """
    inst = lf.inst

    def func_inst(
        on_start: OnStart, on_resolve: OnResolve, caller: InstanceState | None
    ) -> OnCancel:
        ctrap_if(not inst.may_enter_from(caller), TrapCode.CANNOT_ENTER)
        inst.enter_from(caller)
        try:
            return canon_lift(lf, on_start, on_resolve, caller)
        except Trap as trap:
            inst.store.poison(inst, trap)
            raise
        finally:
            inst.leave_to(caller)

    return func_inst


@dataclass(slots=True)
class CanonLower:
    """A lowered function: the callee plus what ``canon lower`` fixed statically.

    ``lift_params(subtask, flat_args)`` lifts the arguments out of the
    caller's memory (for an async lower, through the parameter pointer);
    ``lower_results(subtask, values, flat_args)`` lowers results into the
    caller (for an async lower, through the out-pointer, returning ``[]``).
    """

    callee: FuncInst
    ft: FuncType
    lift_params: Callable[[Subtask, list[CoreVal]], list[Any]]
    lower_results: Callable[[Subtask, list[Any], list[CoreVal]], list[CoreVal]]
    async_: bool = False


def canon_lower(
    lf: CanonLower, thread: Thread, flat_args: list[CoreVal]
) -> Suspends[list[CoreVal]]:
    """``canon lower`` (§``canon lower``): call ``lf.callee`` from ``thread``.

    Synchronous lowering waits for the callee to resolve; asynchronous
    lowering never blocks (see :func:`canon_lower_async`).
    """
    if lf.async_:
        return canon_lower_async(lf, thread, flat_args)
    inst = thread.inst
    inst.check_may_leave()
    if lf.ft.is_async:
        thread.check_may_block()
    subtask = Subtask()

    def on_start() -> list[Any]:
        assert subtask.state is Subtask.State.STARTING
        subtask.state = Subtask.State.STARTED
        return lf.lift_params(subtask, flat_args)

    def on_resolve(result: list[Any] | None) -> None:
        if result is None:
            assert subtask.cancellation_requested
            if subtask.state is Subtask.State.STARTING:
                subtask.resolve(Subtask.State.CANCELLED_BEFORE_STARTED, [])
            else:
                assert subtask.state is Subtask.State.STARTED
                subtask.resolve(Subtask.State.CANCELLED_BEFORE_RETURNED, [])
        else:
            assert subtask.state is Subtask.State.STARTED
            subtask.resolve(Subtask.State.RETURNED, lf.lower_results(subtask, result, flat_args))

    on_cancel = lf.callee(on_start, on_resolve, inst)
    if not subtask.resolved():
        subtask.on_cancel = on_cancel
    assert lf.ft.is_async or subtask.resolved() or inst.store.host_pending > 0
    if not subtask.resolved():
        subtask.waiter = thread
        try:
            if lf.ft.is_async:
                yield from thread.wait_until(subtask.resolved, notified=True)
            else:
                yield from thread.wait_for_host(subtask.resolved, notified=True)
        finally:
            subtask.waiter = None
    subtask.deliver_resolve()
    return subtask.flat_results


_STARTED = Subtask.State.STARTED
_RETURNED = Subtask.State.RETURNED
_RETURNED_CODE = int(_RETURNED)


def canon_lower_async(lf: CanonLower, thread: Thread, flat_args: list[CoreVal]) -> list[CoreVal]:
    """``canon lower ... async`` (§``canon lower``): start the call, never block.

    Returns ``RETURNED`` (2) when the callee resolved at once, or the
    subtask's state packed with its new handle index; later progress is
    reported as the subtask's events. A plain function (not a
    :data:`~.thread.Suspends` generator): the engine calls it as a host
    function that cannot park.
    """
    assert lf.async_
    inst = thread.task.inst
    if not inst.ci.may_leave or inst.record.poisoned is not None:
        inst.check_may_leave()  # traps
    subtask = Subtask()
    # the handle index, once the call outlived the built-in (events from then on)
    subtaski = 0

    def on_start() -> list[Any]:
        if subtaski:
            subtask.set_pending_event(subtask_event)
        assert subtask.state is Subtask.State.STARTING
        subtask.state = _STARTED
        return lf.lift_params(subtask, flat_args)

    def on_resolve(result: list[Any] | None) -> None:
        if subtaski:
            subtask.set_pending_event(subtask_event)
        if result is None:
            assert subtask.cancellation_requested
            if subtask.state is Subtask.State.STARTING:
                subtask.resolve(Subtask.State.CANCELLED_BEFORE_STARTED, [])
            else:
                assert subtask.state is _STARTED
                subtask.resolve(Subtask.State.CANCELLED_BEFORE_RETURNED, [])
        else:
            assert subtask.state is _STARTED
            subtask.resolve(_RETURNED, lf.lower_results(subtask, result, flat_args))

    on_cancel = lf.callee(on_start, on_resolve, inst)
    if subtask.state >= _RETURNED:
        # resolved at once (the results are in place): no handle, no event
        subtask.deliver_resolve()
        assert subtask.flat_results == []
        return [_RETURNED_CODE]
    subtask.on_cancel = on_cancel

    # (made only for a call that outlived the built-in: ``on_start`` and
    # ``on_resolve`` use it once ``subtaski`` is set)
    def subtask_event() -> EventTuple:
        if subtask.resolved():
            subtask.deliver_resolve()
        return (EventCode.SUBTASK, subtaski, int(subtask.state))

    subtaski = inst.handles.add(subtask)
    assert 0 < subtaski < 2**28
    return [int(subtask.state) | (subtaski << 4)]
