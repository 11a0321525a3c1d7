"""Answers kept by the identity of what they were worked out from.

Instantiation asks the same questions of the same objects again and again
(every instance of a component asks them of its plan, of its types, of its
instance types): the answers are worked out once and kept by the object's
``id``. An :class:`IdentityMemo` holds the object with its answer, so the
``id`` cannot be reused by another object while the answer is kept, and it
keeps at most ``limit`` objects, letting the oldest go first. The objects
are immutable (plans, type trees), so an answer never goes stale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["IdentityMemo"]

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    """``make(key)`` worked out once per key object (by identity), at most ``limit`` kept."""

    __slots__ = ("_limit", "_table")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("an IdentityMemo keeps at least one answer")
        self._limit = limit
        self._table: dict[int, tuple[K, V]] = {}

    def get(self, key: K, make: Callable[[K], V]) -> V:
        """The answer for ``key``: the one kept, else ``make(key)``, kept from now on."""
        table = self._table
        found = table.get(id(key))
        if found is not None and found[0] is key:
            return found[1]
        value = make(key)
        self.put(key, value)
        return value

    def peek(self, key: K) -> V | None:
        """The answer kept for ``key``, if one is (``None``: none)."""
        found = self._table.get(id(key))
        return found[1] if found is not None and found[0] is key else None

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` as the answer for ``key`` (replacing one kept)."""
        table = self._table
        if id(key) not in table and len(table) >= self._limit:
            table.pop(next(iter(table)))
        table[id(key)] = (key, value)

    def clear(self) -> None:
        """Forget every answer."""
        self._table.clear()
