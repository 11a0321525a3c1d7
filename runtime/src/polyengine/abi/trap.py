"""Guest faults: :class:`Trap` and :func:`trap_if` (definitions.py ``trap_if``).

A trap is something a guest can cause (a bad pointer, an invalid handle,
malformed string bytes). Broken invariants of our own are ``assert``\\ s.
Every trap carries a stable ``code`` (one of the :class:`TrapCode`
constants) plus a human-readable message. :class:`Trap` is the protocol
package's ``Trap(message, code=...)``, re-exported here.
"""

from __future__ import annotations

from typing import NoReturn

from polyengine_protocol import UNSPECIFIED_TRAP_CODE, Trap

__all__ = ["Trap", "TrapCode", "host_trap", "trap", "trap_if"]


class TrapCode:
    """Stable trap codes raised by the canonical ABI layer."""

    OUT_OF_BOUNDS = "out-of-bounds"
    MISALIGNED = "misaligned-pointer"
    INVALID_UTF8 = "invalid-utf8"
    INVALID_UTF16 = "invalid-utf16"
    INVALID_CHAR = "invalid-char"
    INVALID_DISCRIMINANT = "invalid-discriminant"
    STRING_TOO_LONG = "string-too-long"
    LIST_TOO_LONG = "list-too-long"
    INVALID_HANDLE = "invalid-handle"
    HANDLE_TYPE_MISMATCH = "handle-type-mismatch"
    HANDLE_LENT = "handle-lent"
    NOT_OWNED = "handle-not-owned"
    BORROWS_OUTSTANDING = "borrows-outstanding"
    TABLE_FULL = "table-full"
    MAY_NOT_LEAVE = "may-not-leave"
    CANNOT_ENTER = "cannot-enter"
    MISSING_REALLOC = "missing-realloc"


def trap(code: str, message: str) -> NoReturn:
    """Raise a :class:`Trap` unconditionally."""
    raise Trap(message, code=code)


def trap_if(cond: bool, code: str, message: str) -> None:
    """Raise a :class:`Trap` with ``code`` and ``message`` when ``cond`` holds."""
    if cond:
        raise Trap(message, code=code)


def range_trap(
    what: str,
    ptr: int,
    nbytes: int,
    align: int,
    memory_length: int,
    *,
    limit: int | None = None,
    too_long_code: str = TrapCode.LIST_TOO_LONG,
    from_realloc: bool = False,
) -> NoReturn:
    """Raise the trap for a bad memory range, checking in the spec's order.

    Hot paths test all conditions in one expression and call this only on
    failure: the byte-length ``limit`` (if any), then alignment, then bounds.
    ``what`` is ``"string"``, ``"list"`` or ``"spilled values"``; with
    ``from_realloc`` the range is a block ``realloc`` returned. Messages
    start with the wording other component runtimes use for the same fault.
    """
    if limit is not None and nbytes > limit:
        trap(too_long_code, f"{what} too long: {nbytes} bytes exceeds the limit of {limit}")
    if ptr & (align - 1):
        if from_realloc:
            msg = f"realloc return: result not aligned ({ptr} for a {align}-aligned {what})"
        else:
            msg = f"unaligned pointer: {what} pointer {ptr} is not {align}-byte aligned"
        trap(TrapCode.MISALIGNED, msg)
    if ptr + nbytes > memory_length:
        detail = f"{what} content out-of-bounds: {nbytes} bytes at {ptr}, memory is {memory_length}"
        if from_realloc:
            msg = f"realloc return: beyond end of memory ({detail})"
        else:
            msg = f"{what} pointer/length out of bounds of memory ({detail})"
        trap(TrapCode.OUT_OF_BOUNDS, msg)
    raise AssertionError("range_trap called on a valid range")


def host_trap(import_name: str, exc: BaseException) -> Trap:
    """The trap for a trap ``exc`` that a host import raised (python-mapping.md §3).

    Every trap from a host import names the import: the result is a
    canonical ``Trap`` with the same code (``"unspecified"`` when ``exc``
    carries no usable one, as a hand-rolled branded trap may not), the
    message ``host import <import_name> trapped: <exc's message>``, and
    ``exc`` as its ``__cause__``.
    """
    message = getattr(exc, "message", None)
    if not isinstance(message, str):
        message = str(exc)
    code = getattr(exc, "code", None)
    if not isinstance(code, str) or not code:
        code = UNSPECIFIED_TRAP_CODE
    named = Trap(f"host import {import_name} trapped: {message}", code=code)
    named.__cause__ = exc
    return named
