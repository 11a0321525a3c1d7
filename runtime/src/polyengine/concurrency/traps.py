"""Trap codes and messages of the task model (CanonicalABI.md §Concurrency).

Guest faults are :class:`~polyengine.abi.trap.Trap`; this module only adds
the stable codes and messages raised by the concurrency layer. Messages that
have a well-known wording in other hosts keep it, so conformance transcripts
match.
"""

from __future__ import annotations

from typing import NoReturn

from polyengine.abi.trap import Trap

__all__ = ["Trap", "TrapCode", "ctrap", "ctrap_if"]


class TrapCode:
    """Stable codes for traps raised by :mod:`polyengine.concurrency`."""

    DEADLOCK = "deadlock"
    CANNOT_BLOCK_SYNC = "cannot-block-sync"
    CANNOT_ENTER = "cannot-enter"
    CANNOT_LEAVE = "may-not-leave"
    POISONED = "instance-poisoned"
    CALLBACK_CODE = "unsupported-callback-code"
    TASK_STATE = "task-state"
    BORROWS_OUTSTANDING = "borrows-outstanding"
    INVALID_HANDLE = "invalid-handle"
    HANDLE_TYPE_MISMATCH = "handle-type-mismatch"
    BUSY = "busy"
    WAITABLE_SET = "waitable-set"
    SUBTASK = "subtask"
    COPY_STATE = "copy-state"
    SAME_INSTANCE_COPY = "same-instance-copy"
    BACKPRESSURE = "backpressure-overflow"
    OUT_OF_BOUNDS = "out-of-bounds"
    MISALIGNED = "misaligned-pointer"
    THREAD = "thread-state"
    CONTEXT = "context-slot"


MESSAGES = {
    TrapCode.DEADLOCK: "deadlock detected: event loop cannot make further progress",
    TrapCode.CANNOT_BLOCK_SYNC: "cannot block a synchronous task before returning",
    TrapCode.CANNOT_ENTER: "cannot enter component instance",
    TrapCode.CANNOT_LEAVE: "cannot leave component instance",
}


def ctrap(code: str, detail: str | None = None) -> NoReturn:
    """Raise a concurrency trap; ``detail`` defaults to the code's standard message."""
    raise Trap(detail if detail is not None else MESSAGES.get(code, code), code=code)


def ctrap_if(cond: bool, code: str, detail: str | None = None) -> None:
    """:func:`ctrap` when ``cond`` holds (the spec's ``trap_if``)."""
    if cond:
        ctrap(code, detail)
