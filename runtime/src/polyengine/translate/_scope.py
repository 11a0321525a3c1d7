"""Index spaces of one component or type scope (Explainer.md §"Index Spaces").

A scope holds one list per sort. A component's scope is created when the
component is walked; component and instance type declarators get their own
scopes. ``parent_lens`` records how long each index space of the enclosing
scope was when this scope's definition appeared, which bounds ``outer``
aliases (Binary.md §"Alias Definitions").
"""

from __future__ import annotations

from typing import Any

from polyengine.binary.ast import Sort
from polyengine.errors import TranslationError

_WHAT = {
    Sort.CORE_FUNC: "core func",
    Sort.CORE_TABLE: "core table",
    Sort.CORE_MEMORY: "core memory",
    Sort.CORE_GLOBAL: "core global",
    Sort.CORE_TAG: "core tag",
    Sort.CORE_TYPE: "core type",
    Sort.CORE_MODULE: "module",
    Sort.CORE_INSTANCE: "core instance",
    Sort.FUNC: "func",
    Sort.VALUE: "value",
    Sort.TYPE: "type",
    Sort.COMPONENT: "component",
    Sort.INSTANCE: "instance",
}


def sort_name(s: Sort) -> str:
    return _WHAT[s]


class Fail(Exception):
    """A validation failure at a position not yet known; converted to TranslationError."""


class Scope:
    """The index spaces of a component (``is_component``) or of a type declarator."""

    __slots__ = ("is_component", "parent", "parent_lens", "spaces")

    def __init__(self, parent: Scope | None, is_component: bool) -> None:
        self.parent = parent
        self.parent_lens: dict[Sort, int] = parent.lens() if parent is not None else {}
        self.is_component = is_component
        self.spaces: dict[Sort, list[Any]] = {s: [] for s in Sort}

    def lens(self) -> dict[Sort, int]:
        return {s: len(v) for s, v in self.spaces.items()}

    def add(self, sort: Sort, value: object) -> None:
        self.spaces[sort].append(value)

    def get(self, sort: Sort, index: int, limit: int | None = None) -> Any:
        space = self.spaces[sort]
        n = len(space) if limit is None else min(limit, len(space))
        if not 0 <= index < n:
            raise Fail(f"{sort_name(sort)} index out of bounds: {index} (there are {n})")
        return space[index]

    def outer(self, count: int, sort: Sort, index: int) -> tuple[Any, bool]:
        """Resolve ``(alias outer count index (sort))``.

        Returns the value and whether the path crossed a component boundary.
        """
        scope: Scope = self
        limit: int | None = None
        crossed = False
        for _ in range(count):
            if scope.parent is None:
                raise Fail(f"invalid outer alias count of {count}")
            crossed = crossed or scope.is_component
            limit = scope.parent_lens.get(sort, 0)
            scope = scope.parent
        return scope.get(sort, index, limit), crossed


def fail_at(exc: Fail, offset: int, section: str) -> TranslationError:
    return TranslationError(str(exc), offset if offset >= 0 else None, section)
