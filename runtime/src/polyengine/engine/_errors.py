"""Errors raised by the engine seam.

Guest faults are :class:`CoreTrap` (a stable code plus a message); a module
that does not compile is a :class:`CompileError`; misuse of the engine API by
our own layers is a :class:`EngineError` (a ``RuntimeError``) or a
``TypeError``/``ValueError``.
"""

from __future__ import annotations

__all__ = ["CompileError", "CoreTrap", "EngineError", "StoreClosedError"]


class EngineError(RuntimeError):
    """The engine refused an operation (closed store, wrong store, bad state)."""


class StoreClosedError(EngineError):
    """An object was used after its :class:`EngineStore` was closed."""


class CompileError(EngineError):
    """A core module failed to compile; ``module`` names the module."""

    def __init__(self, module: str, message: str) -> None:
        super().__init__(f"cannot compile core module {module}: {message}")
        self.module = module
        self.reason = message


class CoreTrap(Exception):
    """A core WebAssembly trap that escaped a call into the guest.

    ``code`` is a stable lower-case name of the trap kind (``"unreachable"``,
    ``"stack_overflow"``, ``"memory_out_of_bounds"`` ...) or ``None`` when the
    trap was raised by the host.  ``host_exception`` is the Python exception a
    host function raised, when that is what unwound the guest; it is also the
    ``__cause__``.  ``details`` is wasmtime's full text (with the backtrace).
    """

    def __init__(
        self,
        message: str,
        code: str | None = None,
        host_exception: BaseException | None = None,
        *,
        details: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details if details is not None else message
        self.code = code
        self.host_exception = host_exception

    def __str__(self) -> str:
        if self.code is None:
            return self.message
        return f"{self.message} [{self.code}]"
