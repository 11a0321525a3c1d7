"""Error conversion at the host boundary (python-mapping.md §3, embedder-api §"Error model").

Three kinds of failure cross the boundary:

* a guest fault (a core trap or a canonical-ABI trap) becomes a branded
  :class:`polyengine_protocol.Trap` with a stable code, and poisons the
  instance it escaped from;
* a host import raising anything but a branded ``ComponentException`` traps
  the calling instance with a message naming the import, chained with
  ``raise ... from``: a ``Trap`` (canonical or only branded) keeps its code
  and gains the prefix ``host import <name> trapped: ``
  (:func:`host_trap`), any other exception becomes a ``host-import`` trap
  (:func:`host_import_trap`);
* ``KeyboardInterrupt`` and ``SystemExit`` are never swallowed: the instance
  is poisoned and the original exception propagates to the embedder.
"""

from __future__ import annotations

from polyengine.abi.trap import host_trap
from polyengine.engine import CoreTrap
from polyengine_protocol import Trap, is_trap, is_wasi_exit

__all__ = [
    "HostImportError",
    "HostResultError",
    "Trap",
    "host_import_trap",
    "host_result_error",
    "host_trap",
    "trap_from_core",
]


class HostImportError(Trap):
    """The trap raised when a host import fails with an unbranded exception."""


def host_import_trap(import_name: str, exc: BaseException) -> Trap:
    """The trap for ``exc`` escaping host import ``import_name``.

    A trap (anything carrying the trap brand) is re-raised by
    :func:`host_trap`; any other exception becomes a ``host-import`` trap.
    """
    if is_trap(exc):
        return host_trap(import_name, exc)
    trap = HostImportError(
        f"host import {import_name} raised {type(exc).__name__}: {exc}", code="host-import"
    )
    trap.__cause__ = exc
    return trap


class HostResultError(TypeError):
    """A host import returned a value its WIT result type does not accept.

    The embedder-api's platform-class limit 2: the call fails at the
    conversion layer with a ``TypeError`` naming the import, not a trap (the
    instance it unwound is still poisoned).
    """


def host_result_error(import_name: str, exc: BaseException) -> HostResultError:
    """The error for a host result of ``import_name`` that cannot be lowered."""
    return HostResultError(f"host import {import_name} returned a value of the wrong shape: {exc}")


def trap_from_core(exc: CoreTrap) -> BaseException:
    """Translate a trap that unwound a core call into what the embedder sees.

    A host exception that unwound the guest is returned as is when it is a
    ``Trap`` (already attributed), a WASI exit (``polyengine.wasiExit/1``:
    the guest asked to exit, the embedder decides what that means) or a
    ``BaseException`` that must propagate (``KeyboardInterrupt``,
    ``SystemExit``); any other unwinding becomes a ``Trap`` with the core
    trap's code.
    """
    host = exc.host_exception
    if host is not None:
        if is_trap(host) or is_wasi_exit(host) or isinstance(host, HostResultError):
            return host
        if not isinstance(host, Exception):
            return host
    code = exc.code or "trap"
    trap = Trap(f"wasm trap: {exc.message}", code=code)
    trap.__cause__ = exc
    return trap
