"""Guest faults: :class:`Trap` and :func:`trap_if` (definitions.py ``trap_if``).

A trap is something a guest can cause (a bad pointer, an invalid handle,
malformed string bytes). Broken invariants of our own are ``assert``\\ s.
Every trap carries a stable ``code`` (one of the :class:`TrapCode`
constants) plus a human-readable message. :class:`Trap` is the protocol
package's ``Trap(message, code=...)``, re-exported here.
"""

from __future__ import annotations

from typing import NoReturn

from polyengine.engine import CoreTrap
from polyengine_protocol import UNSPECIFIED_TRAP_CODE, Trap, copy_census, is_trap, is_wasi_exit

__all__ = [
    "HostImportError",
    "HostResultError",
    "Trap",
    "TrapCode",
    "escaped",
    "fault",
    "passes_through",
    "poisons",
    "host_import_trap",
    "host_result_error",
    "host_trap",
    "internal_trap",
    "trap",
    "trap_if",
]


class TrapCode:
    """The one table of stable trap codes (canonical ABI, task model, host faults)."""

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
    # the task model (CanonicalABI.md §Concurrency)
    DEADLOCK = "deadlock"
    CANNOT_BLOCK_SYNC = "cannot-block-sync"
    CANNOT_LEAVE = MAY_NOT_LEAVE
    POISONED = "instance-poisoned"
    CALLBACK_CODE = "unsupported-callback-code"
    TASK_STATE = "task-state"
    BUSY = "busy"
    WAITABLE_SET = "waitable-set"
    SUBTASK = "subtask"
    COPY_STATE = "copy-state"
    SAME_INSTANCE_COPY = "same-instance-copy"
    BACKPRESSURE = "backpressure-overflow"
    THREAD = "thread-state"
    CONTEXT = "context-slot"
    # faults of host code and of the engine
    HOST_IMPORT = "host-import"
    CORE = "trap"
    INTERNAL = "internal"
    # limits of an instance (polyengine.Limits)
    LIFT_LIMIT = "lift-limit"
    UNSPECIFIED = UNSPECIFIED_TRAP_CODE


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


class HostImportError(Trap):
    """The trap raised when a host import fails with an unbranded exception."""


class HostResultError(TypeError):
    """A host import returned a value its WIT result type does not accept.

    The embedder-api's platform-class limit 2: the call fails at the
    conversion layer with a ``TypeError`` naming the import, not a trap (the
    instance it unwound is still poisoned).
    """


def host_import_trap(import_name: str, exc: BaseException) -> Trap:
    """The trap for ``exc`` escaping host import ``import_name`` (python-mapping.md §3).

    A trap (anything carrying the trap brand) is named by :func:`host_trap`;
    any other exception becomes a :class:`HostImportError` with code
    ``host-import`` and the message ``host import <name> raised <type>:
    <message>``, followed by the copy census when more than one runtime copy
    is registered (embedder-api A9). Either chains to ``exc``. Both the synchronous and the task
    model's host functions use this one conversion.
    """
    if is_trap(exc):
        return host_trap(import_name, exc)
    message = f"host import {import_name} raised {type(exc).__name__}: {exc}"
    census = copy_census()
    if census is not None:  # embedder-api A9: an unbranded throw from a multi-copy process
        message = f"{message}\n{census}"
    named = HostImportError(message, code=TrapCode.HOST_IMPORT)
    named.__cause__ = exc
    return named


def host_result_error(import_name: str, exc: BaseException) -> HostResultError:
    """The error for a host result of ``import_name`` that cannot be lowered."""
    return HostResultError(f"host import {import_name} returned a value of the wrong shape: {exc}")


def internal_trap(site: str, exc: BaseException) -> Trap:
    """The trap for an internal Python error ``exc`` raised while running ``site``.

    ``site`` names the canonical built-in or import that was running; the
    user never sees a bare ``AssertionError``, ``struct.error`` or
    ``IndexError`` escaping a component call.
    """
    named = Trap(f"internal error in {site}: {type(exc).__name__}: {exc}", code=TrapCode.INTERNAL)
    named.__cause__ = exc
    return named


def passes_through(exc: BaseException) -> bool:
    """Whether ``exc`` reaches the embedder unchanged when it unwinds a guest.

    A WASI exit request (the guest asked to exit), a host result of the
    wrong shape (a ``TypeError`` naming the import) and a ``BaseException``
    that is not an ``Exception`` (``KeyboardInterrupt``, ``SystemExit``...),
    which is never swallowed (python-mapping.md §3).
    """
    return is_wasi_exit(exc) or isinstance(exc, HostResultError) or not isinstance(exc, Exception)


def fault(exc: BaseException) -> BaseException:
    """The one door from a fault that escaped a component instance to what the embedder sees.

    A canonical :class:`Trap` is itself; a core trap is the host exception
    that unwound the guest when that is a trap or passes through
    (:func:`passes_through`), otherwise a ``Trap`` ``wasm trap: <message>``
    with the core trap's code chained to it; a trap of another copy of the
    protocol (branded only) becomes a canonical ``Trap`` with its code. Any
    other exception passes through: the callers convert the faults of their
    own site first (:func:`host_import_trap`, :func:`internal_trap`).
    """
    if isinstance(exc, Trap):
        return exc
    if isinstance(exc, CoreTrap):
        host = exc.host_exception
        if host is not None and (is_trap(host) or passes_through(host)):
            return fault(host)
        converted = Trap(f"wasm trap: {exc.message}", code=exc.code or TrapCode.CORE)
        converted.__cause__ = exc
        return converted
    if is_trap(exc):
        code = getattr(exc, "code", None)
        converted = Trap(str(exc), code=code if isinstance(code, str) and code else TrapCode.CORE)
        converted.__cause__ = exc
        return converted
    return exc


def poisons(exc: BaseException, converted: BaseException) -> bool:
    """Whether ``exc`` (converted by :func:`fault` to ``converted``) poisons its instance.

    Every trap does, and so does whatever passes through (an exit request,
    an interrupt); an ordinary exception raised before the guest ran
    (embedder misuse while lowering arguments) does not.
    """
    return converted is not exc or isinstance(exc, Trap) or not isinstance(exc, Exception)


def escaped(exc: BaseException) -> Trap:
    """The trap that poisons an instance ``exc`` escaped from (the one door's poison).

    A trap is itself (:func:`fault`); anything else (an exception that
    passes through to the embedder, an internal error of host code) is a
    ``host-import`` trap naming the exception, chained to it.
    """
    converted = fault(exc)
    if isinstance(converted, Trap):
        return converted
    exc = converted  # what passes through, unwrapped from a core trap
    if isinstance(exc, Exception):
        named = Trap(f"host code raised {type(exc).__name__}: {exc}", code=TrapCode.HOST_IMPORT)
    else:
        named = Trap(f"interrupted by {type(exc).__name__}", code=TrapCode.HOST_IMPORT)
    named.__cause__ = exc
    return named
