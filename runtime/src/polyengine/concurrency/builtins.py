"""Task, waitable, thread, context and error-context built-ins
(CanonicalABI.md §Canonical Definitions, the 🔀 🧵 📝 sections).

Each built-in is a plain function ``canon_<name>(thread, *immediates,
*flat_args)`` where ``thread`` is the current thread (the spec's
``current_thread()``; its task and instance follow from it), the
immediates are what the ``canon`` definition fixed statically (bind them
once with ``functools.partial``), and the flat arguments are the core
values the guest passed. Non-blocking built-ins return the flat results;
the ones listed in :data:`BLOCKING_BUILTINS` return a :data:`~.thread.Suspends`
generator producing them, which the caller drives (``yield from`` in a
thread body; the engine parks the wasm fiber on each block).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from polyengine.abi.memory import Memory
from polyengine.types.model import ValType

from .lift import CoreFunc
from .task import Subtask, Task
from .thread import CoreVal, Suspends, Thread, run_activation
from .traps import TrapCode, ctrap, ctrap_if
from .waitable import EventCode, EventTuple, Waitable, WaitableSet

__all__ = [
    "BLOCKED",
    "BLOCKING_BUILTINS",
    "ErrorContext",
    "canon_backpressure_dec",
    "canon_backpressure_inc",
    "canon_context_get",
    "canon_context_set",
    "canon_error_context_debug_message",
    "canon_error_context_drop",
    "canon_error_context_new",
    "canon_subtask_cancel",
    "canon_subtask_drop",
    "canon_task_cancel",
    "canon_task_return",
    "canon_thread_index",
    "canon_thread_new_indirect",
    "canon_thread_resume_later",
    "canon_thread_suspend",
    "canon_thread_suspend_then_promote",
    "canon_thread_suspend_then_resume",
    "canon_thread_yield",
    "canon_thread_yield_then_promote",
    "canon_thread_yield_then_resume",
    "canon_waitable_join",
    "canon_waitable_set_drop",
    "canon_waitable_set_new",
    "canon_waitable_set_poll",
    "canon_waitable_set_wait",
    "get_handle",
    "same_type",
    "unpack_event",
]

BLOCKED = 0xFFFF_FFFF
"""Returned by asynchronous copies and cancels that did not complete at once."""

BLOCKING_BUILTINS = frozenset(
    {
        "canon_waitable_set_wait",
        "canon_subtask_cancel",
        "canon_thread_suspend",
        "canon_thread_yield",
        "canon_thread_suspend_then_resume",
        "canon_thread_yield_then_resume",
        "canon_thread_suspend_then_promote",
        "canon_thread_yield_then_promote",
        "canon_stream_read",
        "canon_stream_write",
        "canon_future_read",
        "canon_future_write",
        "canon_stream_cancel_read",
        "canon_stream_cancel_write",
        "canon_future_cancel_read",
        "canon_future_cancel_write",
        "canon_lower",
    }
)
"""Names of the built-ins that return a :data:`~.thread.Suspends` generator."""


#: pairs of distinct but equal types already compared, by identity (each pair is held,
#: so the identities stay theirs; cleared when full)
_EQUAL_TYPES: dict[tuple[int, int], tuple[object, object]] = {}
_EQUAL_TYPES_MAX = 4096


def same_type(a: object, b: object) -> bool:
    """``a == b`` for types (immutable): identical, or once compared equal.

    The checks of ``task.return`` and of a lifted stream or future compare a
    built-in's type with one the lift or the end was made with: equal
    objects of two definitions, compared structurally on every call otherwise.
    """
    if a is b:
        return True
    key = (id(a), id(b))
    if key in _EQUAL_TYPES:
        return True
    if a != b:
        return False
    if len(_EQUAL_TYPES) >= _EQUAL_TYPES_MAX:
        _EQUAL_TYPES.clear()
    _EQUAL_TYPES[key] = (a, b)
    return True


def get_handle(thread: Thread, i: int, kind: type[Any], what: str) -> Any:
    """``inst.handles.get(i)`` checked to be a ``kind`` (trap naming ``what`` otherwise)."""
    e = thread.task.inst.ci.handles.get(i)  # thread.inst.handles, without the properties
    if not isinstance(e, kind):
        article = "an" if what[:1] in ("a", "e", "i", "o", "u") else "a"
        ctrap(TrapCode.HANDLE_TYPE_MISMATCH, f"handle {i} is not {article} {what}")
    return e


# -- context (🔀 context.get / context.set) --------------------------------------


def canon_context_get(thread: Thread, i: int) -> list[CoreVal]:
    """``context.get i``: read slot ``i`` of the current thread's storage."""
    assert 0 <= i < len(thread.storage)
    return [thread.storage[i]]


def canon_context_set(thread: Thread, i: int, v: int) -> list[CoreVal]:
    """``context.set i``: write slot ``i`` of the current thread's storage."""
    assert 0 <= i < len(thread.storage)
    thread.storage[i] = v
    return []


# -- backpressure ----------------------------------------------------------------


def canon_backpressure_inc(thread: Thread) -> list[CoreVal]:
    """``backpressure.inc``: one more reason to hold new async calls back."""
    inst = thread.inst
    inst.backpressure += 1
    ctrap_if(inst.backpressure >= 2**16, TrapCode.BACKPRESSURE, "backpressure counter overflow")
    return []


def canon_backpressure_dec(thread: Thread) -> list[CoreVal]:
    """``backpressure.dec``: one reason fewer; traps below zero."""
    inst = thread.inst
    ctrap_if(inst.backpressure == 0, TrapCode.BACKPRESSURE, "backpressure counter underflow")
    inst.backpressure -= 1
    if inst.backpressure == 0:
        inst.store.wake()
    return []


# -- task.return / task.cancel -----------------------------------------------------


def canon_task_return(
    thread: Thread,
    result_type: ValType | None,
    return_key: object,
    lift: Callable[[Task, list[CoreVal]], list[Any]],
    flat_args: list[CoreVal],
) -> list[CoreVal]:
    """``task.return``: lift the results with ``lift`` and resolve the current task.

    ``result_type`` and ``return_key`` (the lift options' identity) must
    match those of the task's ``canon lift``.
    """
    task = thread.task
    inst = task.inst
    if not inst.ci.may_leave or inst.record.poisoned is not None:
        inst.check_may_leave()  # traps
    if not task.async_:
        ctrap(TrapCode.TASK_STATE, "task.return called by a synchronously lifted task")
    ft_result = task.ft.result
    if result_type is not ft_result and not same_type(result_type, ft_result):
        ctrap(
            TrapCode.TASK_STATE,
            "invalid task.return signature or options: its result type is not the lifted "
            "function's",
        )
    if return_key is not task.return_key and return_key != task.return_key:
        ctrap(
            TrapCode.TASK_STATE,
            "invalid task.return signature or options: its string encoding or memory is not "
            "the lift's (LiftOptions.equal)",
        )
    task.return_(lift(task, flat_args))
    return []


def canon_task_cancel(thread: Thread) -> list[CoreVal]:
    """``task.cancel``: confirm a delivered cancellation and resolve the task."""
    task = thread.task
    task.inst.check_may_leave()
    ctrap_if(
        not task.async_, TrapCode.TASK_STATE, "task.cancel called by a synchronously lifted task"
    )
    task.cancel()
    return []


# -- waitable sets -------------------------------------------------------------------


def canon_waitable_set_new(thread: Thread) -> list[CoreVal]:
    """``waitable-set.new``: a new empty set in the handle table."""
    inst = thread.inst
    inst.check_may_leave()
    return [inst.handles.add(WaitableSet())]


def unpack_event(memory: Memory, ptr: int, e: EventTuple) -> list[CoreVal]:
    """Store an event's index and payload at ``ptr``; return its code."""
    code, p1, p2 = e
    view = memory.view()
    if ptr % 4 != 0:
        ctrap(TrapCode.MISALIGNED, f"event pointer {ptr:#x} misaligned")
    if ptr + 8 > len(view):
        ctrap(TrapCode.OUT_OF_BOUNDS, f"event pointer {ptr:#x} out of bounds")
    struct.pack_into("<II", view, ptr, p1 & 0xFFFF_FFFF, p2 & 0xFFFF_FFFF)
    return [int(code)]


def canon_waitable_set_wait(
    thread: Thread, cancellable: bool, memory: Memory, si: int, ptr: int
) -> Suspends[list[CoreVal]]:
    """``waitable-set.wait``: block until a member has an event; store it at ``ptr``."""
    inst = thread.inst
    inst.check_may_leave()
    thread.check_may_block()
    wset: WaitableSet = get_handle(thread, si, WaitableSet, "waitable set")
    event = yield from wset.wait_for_event(thread, cancellable)
    return unpack_event(memory, ptr, event)


def canon_waitable_set_poll(
    thread: Thread, cancellable: bool, memory: Memory, si: int, ptr: int
) -> list[CoreVal]:
    """``waitable-set.poll``: like wait, but returns ``NONE`` instead of blocking."""
    inst = thread.inst
    inst.check_may_leave()
    wset: WaitableSet = get_handle(thread, si, WaitableSet, "waitable set")
    return unpack_event(memory, ptr, wset.poll(thread, cancellable))


def canon_waitable_set_drop(thread: Thread, i: int) -> list[CoreVal]:
    """``waitable-set.drop``: traps while it has members or waiters."""
    inst = thread.inst
    inst.check_may_leave()
    wset: WaitableSet = get_handle(thread, i, WaitableSet, "waitable set")
    wset.drop()
    inst.handles.remove(i)
    return []


def canon_waitable_join(thread: Thread, wi: int, si: int) -> list[CoreVal]:
    """``waitable.join``: move waitable ``wi`` into set ``si`` (0: out of any set)."""
    thread.task.inst.check_may_leave()
    w: Waitable = get_handle(thread, wi, Waitable, "waitable")
    if w.has_sync_waiter:
        ctrap(TrapCode.WAITABLE_SET, "cannot join a waitable that a thread waits on")
    if si == 0:
        w.join(None)
    else:
        wset: WaitableSet = get_handle(thread, si, WaitableSet, "waitable set")
        w.join(wset)
    return []


# -- subtasks -----------------------------------------------------------------------------


def canon_subtask_cancel(thread: Thread, async_: bool, i: int) -> Suspends[list[CoreVal]]:
    """``subtask.cancel``: request cancellation; report the resolved state or ``BLOCKED``."""
    inst = thread.inst
    inst.check_may_leave()
    if not async_:
        thread.check_may_block()
    subtask: Subtask = get_handle(thread, i, Subtask, "subtask")
    ctrap_if(subtask.resolve_delivered(), TrapCode.SUBTASK, "subtask already resolved")
    ctrap_if(
        subtask.cancellation_requested, TrapCode.SUBTASK, "subtask cancellation already requested"
    )
    ctrap_if(
        subtask.in_waitable_set() and not async_,
        TrapCode.WAITABLE_SET,
        "waitable cannot be used synchronously while added to a waitable set",
    )
    if subtask.resolved():
        assert subtask.has_pending_event()
    else:
        subtask.cancellation_requested = True
        assert subtask.on_cancel is not None
        subtask.on_cancel(inst)
        if not subtask.resolved():
            if not async_:
                yield from subtask.wait_for_pending_event(thread)
            else:
                return [BLOCKED]
    code, index, payload = subtask.get_pending_event()
    assert code is EventCode.SUBTASK and index == i and payload == subtask.state
    assert subtask.resolve_delivered()
    return [int(subtask.state)]


def canon_subtask_drop(thread: Thread, i: int) -> list[CoreVal]:
    """``subtask.drop``: only once its resolution was delivered."""
    inst = thread.inst
    inst.check_may_leave()
    s: Subtask = get_handle(thread, i, Subtask, "subtask")
    s.drop()
    inst.handles.remove(i)
    return []


# -- threads ------------------------------------------------------------------------------


def canon_thread_index(thread: Thread) -> list[CoreVal]:
    """``thread.index``: the current thread's index in the thread table."""
    thread.inst.check_may_leave()
    assert thread.index is not None
    return [thread.index]


def canon_thread_new_indirect(thread: Thread, start: CoreFunc, c: int) -> list[CoreVal]:
    """``thread.new-indirect``: a new suspended thread of the current task.

    ``start`` is the table entry already resolved and type-checked by the
    caller (the engine); it is started with the closure value ``c``.
    """
    task = thread.task
    task.inst.check_may_leave()

    def body(new_thread: Thread) -> Suspends[None]:
        yield from run_activation(start(new_thread, [c]))
        task.unregister_thread(new_thread)

    new_thread = Thread(task, body, keep_alive=False)
    task.register_thread(new_thread)
    assert new_thread.index is not None
    return [new_thread.index]


def _other_thread(thread: Thread, i: int) -> Thread:
    other = thread.inst.threads.get(i)
    return other


def canon_thread_resume_later(thread: Thread, i: int) -> list[CoreVal]:
    """``thread.resume-later``: make a suspended thread ready."""
    thread.inst.check_may_leave()
    other = _other_thread(thread, i)
    if not other.suspended():
        ctrap(TrapCode.THREAD, f"thread {i} is not suspended")
    other.resume_later()
    return []


def canon_thread_suspend(thread: Thread, cancellable: bool) -> Suspends[list[CoreVal]]:
    """``thread.suspend``: suspend until another thread resumes this one."""
    thread.inst.check_may_leave()
    cancelled = yield from thread.suspend(cancellable)
    return [int(cancelled)]


def canon_thread_yield(thread: Thread, cancellable: bool) -> Suspends[list[CoreVal]]:
    """``thread.yield``: let other ready threads run, stay ready."""
    thread.inst.check_may_leave()
    cancelled = yield from thread.yield_(cancellable)
    return [int(cancelled)]


def canon_thread_suspend_then_resume(
    thread: Thread, cancellable: bool, i: int
) -> Suspends[list[CoreVal]]:
    """``thread.suspend-then-resume``: switch to thread ``i``, staying suspended."""
    thread.inst.check_may_leave()
    other = _other_thread(thread, i)
    if not other.suspended():
        ctrap(TrapCode.THREAD, f"thread {i} is not suspended")
    cancelled = yield from thread.suspend_then_resume(cancellable, other)
    return [int(cancelled)]


def canon_thread_yield_then_resume(
    thread: Thread, cancellable: bool, i: int
) -> Suspends[list[CoreVal]]:
    """``thread.yield-then-resume``: switch to thread ``i``, staying ready."""
    thread.inst.check_may_leave()
    other = _other_thread(thread, i)
    if not other.suspended():
        ctrap(TrapCode.THREAD, f"thread {i} is not suspended")
    cancelled = yield from thread.yield_then_resume(cancellable, other)
    return [int(cancelled)]


def canon_thread_suspend_then_promote(
    thread: Thread, cancellable: bool, i: int
) -> Suspends[list[CoreVal]]:
    """``thread.suspend-then-promote``: run thread ``i`` now if ready, else suspend."""
    thread.inst.check_may_leave()
    other = _other_thread(thread, i)
    cancelled = yield from thread.suspend_then_promote(cancellable, other)
    return [int(cancelled)]


def canon_thread_yield_then_promote(
    thread: Thread, cancellable: bool, i: int
) -> Suspends[list[CoreVal]]:
    """``thread.yield-then-promote``: run thread ``i`` now if ready, else yield."""
    thread.inst.check_may_leave()
    other = _other_thread(thread, i)
    cancelled = yield from thread.yield_then_promote(cancellable, other)
    return [int(cancelled)]


# -- error-context ------------------------------------------------------------------------


class ErrorContext:
    """An ``error-context`` value: an immutable debug message (§📝)."""

    __slots__ = ("debug_message",)

    def __init__(self, debug_message: str) -> None:
        self.debug_message = debug_message

    def __repr__(self) -> str:
        return f"ErrorContext({self.debug_message!r})"


def canon_error_context_new(
    thread: Thread, load_string: Callable[[int, int], str], ptr: int, tagged_code_units: int
) -> list[CoreVal]:
    """``error-context.new``: a new error context holding the guest's message.

    ``load_string(ptr, tagged_code_units)`` is the canonical ABI's string
    loader for the built-in's options. The message is kept as given (the
    host-defined transformation is the identity, so runs are deterministic).
    """
    inst = thread.inst
    inst.check_may_leave()
    return [inst.handles.add(ErrorContext(load_string(ptr, tagged_code_units)))]


def canon_error_context_debug_message(
    thread: Thread, store_string: Callable[[str, int], None], i: int, ptr: int
) -> list[CoreVal]:
    """``error-context.debug-message``: store the message as a string at ``ptr``."""
    inst = thread.inst
    inst.check_may_leave()
    errctx: ErrorContext = get_handle(thread, i, ErrorContext, "error-context")
    store_string(errctx.debug_message, ptr)
    return []


def canon_error_context_drop(thread: Thread, i: int) -> list[CoreVal]:
    """``error-context.drop``."""
    inst = thread.inst
    inst.check_may_leave()
    get_handle(thread, i, ErrorContext, "error-context")
    inst.handles.remove(i)
    return []
