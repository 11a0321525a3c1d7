"""Python names of WIT names, exactly as the runtime's facade spells them (python-mapping.md §1).

Bindings must name every member the way the runtime looks it up (imports)
or presents it (exports), so the spelling functions are the runtime's own.
"""

from __future__ import annotations

from polyengine.embed import FuncName, field_key, parse_func_name, pascal, snake
from polyengine.errors import NameCollisionError

__all__ = [
    "FuncName",
    "NameCollisionError",
    "Namespace",
    "field_key",
    "parse_func_name",
    "pascal",
    "snake",
]


class Namespace:
    """Python names claimed in one scope; a name may be claimed once per owner."""

    __slots__ = ("_owners", "label")

    def __init__(self, label: str, reserved: tuple[str, ...] = ()) -> None:
        self.label = label
        self._owners: dict[str, object] = {name: ("reserved", name) for name in reserved}

    def owner(self, name: str) -> object | None:
        return self._owners.get(name)

    def claim(self, candidates: list[str], owner: object, what: str) -> str:
        """The first of ``candidates`` free (or already ``owner``'s); raise when none is."""
        for name in candidates:
            current = self._owners.get(name)
            if current is None or current == owner:
                self._owners[name] = owner
                return name
        raise NameCollisionError(
            f"{what}: the Python names {', '.join(repr(c) for c in candidates)} are all "
            f"taken in {self.label}"
        )
