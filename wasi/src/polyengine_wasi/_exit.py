"""``ExitError``: the unwind raised by ``wasi:cli/exit``.

It carries the ``polyengine.wasiExit/1`` brand (embedder-api.md §"Module
identity", brand table) so that every copy of the runtime recognizes it by
the brand, never by class identity. ``ok`` says whether the guest exited
successfully and ``code`` is the process exit status it asked for.
"""

from __future__ import annotations

from polyengine_protocol import WASI_EXIT, is_wasi_exit

__all__ = ["ExitError", "WASI_EXIT_BRAND", "is_exit_error"]

WASI_EXIT_BRAND = WASI_EXIT


class ExitError(Exception):
    """Raised by ``exit`` / ``exit-with-code``; the guest stops here."""

    __polyengine_brand__ = WASI_EXIT_BRAND

    def __init__(self, code: int, message: str | None = None) -> None:
        if not isinstance(code, int) or isinstance(code, bool) or not 0 <= code <= 255:
            raise ValueError(f"exit status must be an int in 0..255, got {code!r}")
        self.message = message or f"the guest exited with status {code}"
        super().__init__(self.message)
        self.code = code
        self.ok = code == 0

    def __reduce__(self) -> tuple[type[ExitError], tuple[int, str]]:
        return (ExitError, (self.code, str(self)))


def is_exit_error(value: object) -> bool:
    """Whether ``value`` carries the wasi exit brand (any copy, any class)."""
    return is_wasi_exit(value)
