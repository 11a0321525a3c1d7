"""WIT names to Python names (python-mapping.md §1).

Functions, methods, statics, fields, flags and params become ``snake_case``;
resources become ``PascalCase``; a name that is a Python keyword gets a
trailing underscore (PEP 8). Annotated import/export names
(``[method]r.m``, ``[static]r.s``, ``[constructor]r``) are split first
(Explainer.md §"Import and export names").
"""

from __future__ import annotations

import functools
import keyword
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from polyengine.errors import NameCollisionError


@functools.lru_cache(maxsize=4096)
def snake(name: str) -> str:
    """``get-resolution`` → ``get_resolution``; hard keywords gain a trailing underscore.

    Only ``keyword.kwlist`` is mangled (python-mapping.md §1): soft keywords
    (``match``, ``case``, ``type``) are identifiers and stay, so a name is
    the same on every supported Python version.
    """
    out = name.replace("-", "_")
    if keyword.iskeyword(out):
        out += "_"
    return out


def field_key(name: str) -> str:
    """Record field and flag keys: snake_case with no keyword mangling (they are dict keys)."""
    return name.replace("-", "_")


@functools.lru_cache(maxsize=4096)
def pascal(name: str) -> str:
    """``tcp-socket`` → ``TcpSocket``."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("-"))


@dataclass(frozen=True, slots=True)
class FuncName:
    """A function name with its annotation: ``kind`` is ``"func"``, ``"method"``,
    ``"static"`` or ``"constructor"``; ``resource`` is set for the last three."""

    kind: str
    resource: str | None
    name: str


@functools.lru_cache(maxsize=4096)
def parse_func_name(name: str) -> FuncName:
    """Split an annotated WIT function name (``[method]counter.get``)."""
    for kind in ("method", "static"):
        prefix = f"[{kind}]"
        if name.startswith(prefix):
            resource, _, member = name[len(prefix) :].partition(".")
            return FuncName(kind, resource, member)
    if name.startswith("[constructor]"):
        resource = name[len("[constructor]") :]
        return FuncName("constructor", resource, resource)
    for prefix in ("[async]", "[async method]", "[async static]"):
        if name.startswith(prefix):
            rest = name[len(prefix) :]
            if " " in prefix:
                resource, _, member = rest.partition(".")
                return FuncName(prefix[7:-1], resource, member)
            return FuncName("func", None, rest)
    return FuncName("func", None, name)


def check_collisions(names: Iterable[str], convert: Callable[[str], str] = snake) -> dict[str, str]:
    """Map each WIT name to its Python name, raising on two that fold to one."""
    seen: dict[str, str] = {}
    out: dict[str, str] = {}
    for wit in names:
        py = convert(wit)
        other = seen.get(py)
        if other is not None and other != wit:
            raise NameCollisionError(
                f"WIT names {other!r} and {wit!r} both become the Python name {py!r}"
            )
        seen[py] = wit
        out[wit] = py
    return out
