"""The process-global registry of runtime copies and its diagnostics.

embedder-api.md §"Module identity and @polyengine/protocol" (A9) and
python-mapping.md §3. Every copy of the runtime appends one entry to a
single list stored on the ``sys`` module under the key
``"polyengine.runtimeCopies/1"``, so copies imported from different paths
(or different versions of this package) all find the same list. Several
copies are diagnosed, never refused: the census text below is what a
runtime appends to an unbranded-throw trap, and what a cross-copy refusal
quotes.

Each entry is a plain dict with exactly the keys ``module`` (the runtime
copy's ``__file__``), ``runtime_version`` and ``protocol_generation``, so
every version of this package reads every other's entries.
"""

from __future__ import annotations

import sys
from typing import Final, TypedDict

from ._brands import RUNTIME_COPIES

__all__ = [
    "PROTOCOL_GENERATION",
    "RuntimeCopy",
    "copy_census",
    "register_runtime_copy",
    "runtime_copies",
]

#: The generation of the brand vocabulary: the ``/1`` suffix of every key.
PROTOCOL_GENERATION: Final = 1


class RuntimeCopy(TypedDict):
    """One registered runtime copy."""

    module: str
    runtime_version: str
    protocol_generation: int


def _registry() -> list[RuntimeCopy]:
    """The shared list, created on first use (``setdefault`` is atomic)."""
    registry = sys.__dict__.setdefault(RUNTIME_COPIES, [])
    if not isinstance(registry, list):
        raise RuntimeError(
            f"sys.__dict__[{RUNTIME_COPIES!r}] holds a {type(registry).__name__}, "
            "not the runtime-copy list; something overwrote the registry"
        )
    return registry


def register_runtime_copy(runtime_version: str, *, module: str | None = None) -> RuntimeCopy:
    """Record a runtime copy in the process-global registry; returns its entry.

    A runtime calls this once when it is imported. ``module`` defaults to the
    calling module's ``__file__`` (its ``__name__`` when it has no file).
    Registering the same module and version again returns the existing entry
    (a reloaded module is one copy, not two).
    """
    if not isinstance(runtime_version, str) or not runtime_version:
        raise TypeError(f"runtime_version must be a non-empty str, not {runtime_version!r}")
    if module is None:
        caller = sys._getframe(1).f_globals
        module = str(caller.get("__file__") or caller.get("__name__") or "<unknown>")
    elif not isinstance(module, str) or not module:
        raise TypeError(f"module must be a non-empty str, not {module!r}")
    registry = _registry()
    for entry in registry:
        if (
            isinstance(entry, dict)
            and entry.get("module") == module
            and entry.get("runtime_version") == runtime_version
        ):
            return entry
    entry = RuntimeCopy(
        module=module,
        runtime_version=runtime_version,
        protocol_generation=PROTOCOL_GENERATION,
    )
    registry.append(entry)
    return entry


def runtime_copies() -> list[RuntimeCopy]:
    """A snapshot of the registered runtime copies, in registration order."""
    return [
        RuntimeCopy(
            module=entry["module"],
            runtime_version=entry["runtime_version"],
            protocol_generation=entry["protocol_generation"],
        )
        for entry in _registry()
        if _well_formed(entry)
    ]


def _well_formed(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("module"), str)
        and isinstance(entry.get("runtime_version"), str)
        and isinstance(entry.get("protocol_generation"), int)
    )


def copy_census() -> str | None:
    """The multi-copy diagnostic, or ``None`` while at most one copy is registered.

    The text lists every copy and says what several copies mean: handles
    minted by one copy are foreign to the others, and an exception that
    reaches a host boundary without a brand may come from a copy that
    predates brands.
    """
    copies = runtime_copies()
    if len(copies) <= 1:
        return None
    lines = [
        f"{len(copies)} polyengine runtime copies are registered in this process "
        f"(sys.__dict__[{RUNTIME_COPIES!r}]):"
    ]
    lines.extend(
        f"  - {c['module']} (runtime {c['runtime_version']}, "
        f"protocol generation {c['protocol_generation']})"
        for c in copies
    )
    lines.append(
        "Brands make errors and marks from any copy recognizable, but handles "
        "(streams, futures, resources) work only in the copy that minted them; "
        "an unbranded exception here may come from a copy that predates brands. "
        "Resolve exactly one runtime per process."
    )
    return "\n".join(lines)
