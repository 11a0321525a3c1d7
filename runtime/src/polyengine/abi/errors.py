"""Errors for host values that do not fit their component type.

Lowering a Python value (python-mapping.md §2) checks its shape and range.
A mismatch raises one of :class:`LowerTypeError`, :class:`LowerOverflowError`
or :class:`LowerValueError` (subclasses of ``TypeError``, ``OverflowError``
and ``ValueError``), each carrying the *path* to the offending part of the
value, e.g. ``parameter `points`[3].x: 300 is out of range for u8``.

Compiled lowerers raise with an empty path; each enclosing record, list,
variant, ... level prepends its own segment as the exception passes through
(:meth:`LowerError.prefix`), so the happy path pays nothing.
"""

from __future__ import annotations

__all__ = ["LowerError", "LowerOverflowError", "LowerTypeError", "LowerValueError", "describe"]


class LowerError(Exception):
    """Mixin for the three lowering errors: a detail message and a value path."""

    detail: str
    path: list[str]
    root: str

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.path = []
        self.root = ""

    def prefix(self, segment: str) -> None:
        """Record that the failing part sits under ``segment`` (e.g. ``.x`` or ``[3]``)."""
        self.path.append(segment)

    def set_root(self, root: str) -> None:
        """Name the whole value (``parameter `x```, ``result``)."""
        self.root = root

    def location(self) -> str:
        return self.root + "".join(reversed(self.path))

    def __str__(self) -> str:
        loc = self.location()
        return f"{loc}: {self.detail}" if loc else self.detail


class LowerTypeError(LowerError, TypeError):
    """A value of the wrong Python type (e.g. ``str`` for ``u32``, ``bool`` for ``s8``)."""


class LowerOverflowError(LowerError, OverflowError):
    """An integer out of range for its component integer type."""


class LowerValueError(LowerError, ValueError):
    """A value of the right type that is still invalid (unknown case, wrong length, ...)."""


def describe(v: object) -> str:
    """A short description of ``v`` for messages: its type and a truncated repr."""
    r = repr(v)
    if len(r) > 40:
        r = r[:37] + "..."
    return f"{type(v).__name__} {r}"
