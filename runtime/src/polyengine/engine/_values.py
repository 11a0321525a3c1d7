"""Flat core values and their layouts in wasmtime's slot buffers.

Flat core values cross the engine seam as Python numbers: ``i32``/``i64`` as
non-negative ``int`` (the unsigned reading of their bits, as
``CanonicalABI.md`` §"Flattening" and ``definitions.py``'s ``CoreValueIter``
expect), ``f32``/``f64`` as ``float``.  Negative ints are accepted on input
and wrapped.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TypeAlias

import wasmtime

from . import _ffi as ffi

__all__ = [
    "VALTYPES",
    "CoreValue",
    "check_valtypes",
    "functype",
    "normalize",
    "raw_struct",
    "val_struct",
]

CoreValue: TypeAlias = int | float

VALTYPES = ("i32", "i64", "f32", "f64")
_RAW_SLOT = {"i32": "I12x", "i64": "Q8x", "f32": "f12x", "f64": "d8x"}
_VAL_SLOT = {"i32": "I20x", "i64": "Q16x", "f32": "f20x", "f64": "d16x"}
KIND = {"i32": ffi.KIND_I32, "i64": ffi.KIND_I64, "f32": ffi.KIND_F32, "f64": ffi.KIND_F64}
_BOUNDS = {"i32": 32, "i64": 64}


def check_valtypes(types: Sequence[str], what: str) -> tuple[str, ...]:
    out = tuple(types)
    for t in out:
        if t not in VALTYPES:
            raise ValueError(
                f"{what}: unsupported core value type {t!r} (expected one of {VALTYPES})"
            )
    return out


def raw_struct(types: Sequence[str]) -> struct.Struct:
    """Layout of ``types`` in consecutive ``wasmtime_val_raw_t`` slots."""
    return struct.Struct("<" + "".join(_RAW_SLOT[t] for t in types))


def val_struct(types: Sequence[str], with_kind: bool) -> struct.Struct:
    """Layout of ``types`` in consecutive ``wasmtime_val_t`` (kind, then payload)."""
    if with_kind:
        return struct.Struct("<" + "".join("B7x" + _VAL_SLOT[t] for t in types))
    return struct.Struct("<" + "".join("8x" + _VAL_SLOT[t] for t in types))


def normalize(types: Sequence[str], values: Sequence[object], what: str) -> list[CoreValue]:
    """Check ``values`` against ``types``; wrap negative ints (the slow path)."""
    if len(values) != len(types):
        raise TypeError(f"{what}: expected {len(types)} values, got {len(values)}")
    out: list[CoreValue] = []
    for i, (t, v) in enumerate(zip(types, values, strict=True)):
        if t in _BOUNDS:
            bits = _BOUNDS[t]
            if not isinstance(v, int):
                raise TypeError(f"{what}: value {i} must be an int for {t}, got {type(v).__name__}")
            if not -(1 << (bits - 1)) <= v < (1 << bits):
                raise ValueError(f"{what}: value {i} = {v} does not fit {t}")
            out.append(v & ((1 << bits) - 1))
        else:
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise TypeError(
                    f"{what}: value {i} must be a float for {t}, got {type(v).__name__}"
                )
            out.append(float(v))
    return out


_functypes: dict[tuple[int, tuple[str, ...], tuple[str, ...]], wasmtime.FuncType] = {}


def functype(engine: int, params: Sequence[str], results: Sequence[str]) -> wasmtime.FuncType:
    """The ``wasm_functype_t`` of ``params -> results`` for the engine at ``engine``.

    Made once per engine and signature and kept: a type once used with one
    engine belongs to it (wasmtime aborts the process if it meets another).
    """
    key = (engine, tuple(params), tuple(results))
    found = _functypes.get(key)
    if found is None:
        found = _functypes[key] = _new_functype(params, results)
    return found


def _new_functype(params: Sequence[str], results: Sequence[str]) -> wasmtime.FuncType:
    make = {
        "i32": wasmtime.ValType.i32,
        "i64": wasmtime.ValType.i64,
        "f32": wasmtime.ValType.f32,
        "f64": wasmtime.ValType.f64,
    }
    return wasmtime.FuncType([make[t]() for t in params], [make[t]() for t in results])
