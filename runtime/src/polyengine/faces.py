"""Package faces whose names are imported on first use (PEP 562).

A face (a package's ``__init__``) that must stay cheap to import names
what it exports and which module defines each; :func:`lazy_face` makes the
module-level ``__getattr__`` that imports that module on first use (and
binds the value in the face, so the lookup runs once) and the ``__dir__``
that lists the names before they are loaded. Every face of the runtime
that imports on first use is made with it (``polyengine``, ``translate``,
``instance``, ``embed``); it imports nothing but :mod:`importlib`, so a
face stays as cheap as its eager names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(
    face: dict[str, Any], lazy: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` pair of the face whose ``globals()`` is ``face``.

    ``lazy`` maps each lazily imported name to the module defining it: a
    relative name (``"._async"``) is taken from the face's package, an
    absolute one as it is. ``__dir__`` lists the face's globals and its
    ``__all__``. An unknown name is an ``AttributeError`` naming the face.
    """
    package = face["__name__"]

    def getattr_(name: str) -> object:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        face[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*face, *face.get("__all__", ())})

    return getattr_, dir_
