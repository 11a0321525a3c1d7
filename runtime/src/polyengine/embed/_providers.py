"""Reading the imports mapping (python-mapping.md §4, §7).

The imports argument of ``instantiate`` is one mapping keyed by interface id
(version canonicalization applies) with world-level bare imports at the top
level under their snake_case names. A provider may be a module, any object
or a ``Mapping``; its members are looked up by snake_case name (functions)
or PascalCase name (resource classes). Members found as attributes of an
object are bound methods, which gives seed A2's receiver rule for free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from polyengine.embed._versions import VersionedRegistry
from polyengine.errors import LinkError

_MISSING = object()


class MissingImportError(LinkError):
    """An import the component needs has no provider."""


def get_member(provider: object, name: str) -> Any:
    """The member ``name`` of ``provider``, or ``None`` when it has none."""
    if isinstance(provider, Mapping):
        return provider.get(name)
    value = getattr(provider, name, _MISSING)
    return None if value is _MISSING else value


class Imports:
    """The embedder's imports mapping, indexed for resolution."""

    __slots__ = ("_interfaces", "_top")

    def __init__(self, imports: Mapping[str, object] | None):
        if imports is None:
            imports = {}
        if not isinstance(imports, Mapping):
            raise TypeError(
                f"imports must be a mapping keyed by interface id, got {type(imports).__name__}"
            )
        interfaces: list[tuple[str, object]] = []
        top: dict[str, object] = {}
        for key, value in imports.items():
            if not isinstance(key, str):
                raise TypeError(f"imports keys must be str, got {key!r}")
            if ":" in key:
                interfaces.append((key, value))
            else:
                top[key] = value
        self._interfaces = VersionedRegistry(interfaces)
        self._top = top

    def interface(self, name: str) -> tuple[str, object] | None:
        """The ``(registered key, provider)`` serving interface import ``name``."""
        key = self._interfaces.resolve_key(name)
        if key is None:
            return None
        provider = self._interfaces.lookup(key)
        return key, provider

    def top_level(self, py_name: str) -> object | None:
        """A world-level bare import by its Python name."""
        return self._top.get(py_name)

    def provider(self, name: str) -> object | None:
        """The provider :meth:`require_interface` finds for ``name`` (``None``: none)."""
        found = self.interface(name)
        if found is not None:
            return found[1]
        if ":" not in name:
            return self._top.get(name)
        return None

    def require_interface(self, name: str, member: str) -> object:
        found = self.interface(name)
        if found is None and ":" not in name and name in self._top:
            # a plain-named instance import (``(import "a" (instance ...))``)
            return self._top[name]
        if found is None:
            hint = ""
            if name.startswith("wasi:"):
                hint = (
                    "; WASI interfaces come from the polyengine-wasi package: pass"
                    " imports={**polyengine_wasi.wasi(), ...}"
                )
            raise MissingImportError(
                f"no provider for interface {name!r} (needed for {name}#{member}); "
                f"provided interfaces: {sorted(self._interfaces.keys()) or 'none'}{hint}"
            )
        return found[1]
