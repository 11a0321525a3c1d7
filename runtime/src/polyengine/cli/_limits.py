"""``-W`` options of ``run``, ``invoke`` and ``serve``, as ``wasmtime`` spells them.

``-W max-memory-size=N,max-table-elements=N,max-instances=N,max-tables=N,
max-memories=N,fuel=N,timeout=DURATION`` (comma-separated or repeated) become
a :class:`polyengine.Limits` with the same meaning as in ``wasmtime run``:
bytes per linear memory, elements per table, instances, tables and memories
per store, fuel units for the instance, and a wall-clock bound on running the
guest (``1``, ``2s``, ``100ms``). Options wasmtime accepts that change nothing
here are accepted and ignored; any other is an error naming it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["add_wasm_options", "limits_from"]

_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "μs": 1e-6, "ns": 1e-9, "m": 60.0}
_COUNTS = {
    "max-memory-size": "max_memory_size",
    "max-table-elements": "max_table_elements",
    "max-instances": "max_instances",
    "max-tables": "max_tables",
    "max-memories": "max_memories",
    "fuel": "fuel",
}
#: wasmtime -W options that polyengine always has on, or that do not apply to it
_ACCEPTED = frozenset(
    {
        "epoch-interruption",
        "component-model",
        "component-model-async",
        "multi-memory",
        "memory64",
        "simd",
        "relaxed-simd",
        "tail-call",
        "gc",
        "function-references",
        "exceptions",
        "bulk-memory",
        "reference-types",
        "multi-value",
        "all-proposals",
    }
)


class WasmOptionError(ValueError):
    """A ``-W`` option that is unknown or has a bad value."""


def add_wasm_options(p: argparse.ArgumentParser) -> None:
    """Add ``-W OPTION`` to ``p`` (collected in ``args.wasm_options``)."""
    p.add_argument(
        "-W",
        dest="wasm_options",
        action="append",
        default=[],
        metavar="OPTION",
        help="a WebAssembly option as wasmtime spells it: max-memory-size=N, "
        "max-table-elements=N, max-instances=N, max-tables=N, max-memories=N, fuel=N, "
        "timeout=DURATION (comma-separated or repeated)",
    )


def _duration(key: str, text: str) -> float:
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(s|ms|us|μs|ns|m)?\s*", text)
    if found is None:
        raise WasmOptionError(f"-W {key}={text}: invalid duration (e.g. 1, 2s, 100ms)")
    seconds = float(found.group(1)) * _UNITS[found.group(2) or ""]
    if seconds <= 0:
        raise WasmOptionError(f"-W {key}={text}: the duration must be positive")
    return seconds


def _count(key: str, text: str) -> int:
    cleaned = text.strip().replace("_", "")
    try:
        value = int(cleaned, 0)
    except ValueError:
        raise WasmOptionError(f"-W {key}={text}: expected a non-negative integer") from None
    if value < 0:
        raise WasmOptionError(f"-W {key}={text}: expected a non-negative integer")
    return value


def limits_from(options: list[str]) -> Any:
    """The :class:`polyengine.Limits` the ``-W`` ``options`` ask for (``None`` for none)."""
    from polyengine.limits import Limits

    fields: dict[str, Any] = {}
    for option in options:
        for raw in option.split(","):
            item = raw.strip()
            if not item:
                continue
            key, eq, value = item.partition("=")
            if key in _COUNTS:
                if not eq:
                    raise WasmOptionError(f"-W {key} needs a value ({key}=N)")
                fields[_COUNTS[key]] = _count(key, value)
            elif key == "timeout":
                if not eq:
                    raise WasmOptionError("-W timeout needs a value (timeout=DURATION)")
                fields["timeout"] = _duration(key, value)
            elif key not in _ACCEPTED:
                raise WasmOptionError(f"unknown WebAssembly option -W {item!r}")
    if not fields:
        return None
    try:
        return Limits(**fields)
    except ValueError as exc:
        raise WasmOptionError(str(exc)) from None
