"""``stream``, ``future`` and ``error-context`` values crossing the ABI
(CanonicalABI.md §Loading ``lift_stream``/``lift_future``/``lift_async_value``/
``lift_error_context``, §Storing ``lower_stream``/``lower_future``/
``lower_error_context``).

:class:`TaskModelHooks` implements the canonical ABI compiler's
:class:`~polyengine.abi.compile.AsyncValueHooks`: lifting takes the readable
end out of the handle table and yields its shared object (the value that
travels); lowering puts a fresh readable end for a shared object into the
receiving instance's table.
"""

from __future__ import annotations

from polyengine.abi.errors import LowerTypeError
from polyengine.abi.options import LiftLowerContext
from polyengine.types.model import Future, Stream

from .builtins import ErrorContext, same_type
from .streams import (
    CopyEnd,
    CopyState,
    ReadableFutureEnd,
    ReadableStreamEnd,
    SharedFutureImpl,
    SharedStreamImpl,
)
from .traps import TrapCode, ctrap

__all__ = ["TaskModelHooks"]


def _lift_async_value(
    end_t: type[CopyEnd], what: str, cx: LiftLowerContext, i: int, t: Stream | Future
) -> SharedStreamImpl | SharedFutureImpl:
    e = cx.inst.handles.remove(i)
    if not isinstance(e, end_t):
        ctrap(TrapCode.HANDLE_TYPE_MISMATCH, f"handle {i} is not a {what}")
    assert isinstance(e, CopyEnd)
    shared = e.shared
    et = shared.t
    if et is not t.t and not same_type(et, t.t):
        ctrap(TrapCode.HANDLE_TYPE_MISMATCH, f"{what} {i} has another type")
    state = e.state
    if state is not CopyState.IDLE:
        if state is CopyState.DONE:
            ctrap(TrapCode.COPY_STATE, _lift_done_message(e))
        ctrap(TrapCode.BUSY, f"cannot remove busy {e.kind}")  # copying
    if e.wset is not None:
        ctrap(TrapCode.WAITABLE_SET, f"cannot lift {e.kind} while it's in a waitable set")
    return shared


def _lift_done_message(e: CopyEnd) -> str:
    if e.kind == "future":
        return "cannot lift future after previous read succeeded"
    return "cannot lift stream after being notified that the writable end dropped"


class TaskModelHooks:
    """The concurrency layer's :class:`~polyengine.abi.compile.AsyncValueHooks`."""

    __slots__ = ()

    def lift_stream(self, cx: LiftLowerContext, i: int, t: Stream) -> object:
        return _lift_async_value(ReadableStreamEnd, "readable stream end", cx, i, t)

    def lift_future(self, cx: LiftLowerContext, i: int, t: Future) -> object:
        return _lift_async_value(ReadableFutureEnd, "readable future end", cx, i, t)

    def lower_stream(self, cx: LiftLowerContext, v: object, t: Stream) -> int:
        if not isinstance(v, SharedStreamImpl):
            raise LowerTypeError(f"expected a stream, got {type(v).__name__}")
        assert v.t is t.t or v.t == t.t
        return cx.inst.handles.add(ReadableStreamEnd(v))

    def lower_future(self, cx: LiftLowerContext, v: object, t: Future) -> int:
        if not isinstance(v, SharedFutureImpl):
            raise LowerTypeError(f"expected a future, got {type(v).__name__}")
        assert v.t is t.t or v.t == t.t
        return cx.inst.handles.add(ReadableFutureEnd(v))

    def lift_error_context(self, cx: LiftLowerContext, i: int) -> object:
        e = cx.inst.handles.get(i)
        if not isinstance(e, ErrorContext):
            ctrap(TrapCode.HANDLE_TYPE_MISMATCH, f"handle {i} is not an error-context")
        return e

    def lower_error_context(self, cx: LiftLowerContext, v: object) -> int:
        if not isinstance(v, ErrorContext):
            raise LowerTypeError(f"expected an error-context, got {type(v).__name__}")
        return cx.inst.handles.add(v)
