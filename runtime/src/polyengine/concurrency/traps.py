"""Trap codes and messages of the task model (CanonicalABI.md §Concurrency).

Guest faults are :class:`~polyengine.abi.trap.Trap` with a code of the one
table :class:`~polyengine.abi.trap.TrapCode`; this module only adds the
standard messages of the concurrency layer's codes. Messages that
have a well-known wording in other hosts keep it, so conformance transcripts
match.
"""

from __future__ import annotations

from typing import NoReturn

from polyengine.abi.trap import Trap, TrapCode

__all__ = ["Trap", "TrapCode", "ctrap", "ctrap_if"]


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
