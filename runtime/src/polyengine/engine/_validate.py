"""Core module validation by the engine (Explainer.md §"Module definitions").

A component embeds core modules verbatim; their validity is the core
WebAssembly spec's business, so it is delegated to wasmtime's validator with
the features real guests need switched on.

Validating a large module (a language runtime is tens of megabytes) is costly
and its result depends only on the bytes, the wasmtime version and the
feature set, so successful validations are remembered by the module's
sha-256: in the process, and on disk next to the compiled-module cache
(``<module cache>/validated/<sha256>-<validator digest>``, an empty marker
file) for modules of at least :data:`DISK_CACHE_MIN_SIZE` bytes. Only
successes are remembered; an invalid module is validated (and refused) again
every time.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import threading
from pathlib import Path

import wasmtime
from wasmtime import _ffi as wffi

from polyengine.errors import TranslationError

from ._config import get_engine
from ._features import explain
from ._ffi import WASMTIME_VERSION
from ._module import module_cache_dir

__all__ = ["DISK_CACHE_MIN_SIZE", "clear_validation_cache", "validate_core_module"]

_FEATURES = (
    "multi_memory",
    "reference_types",
    "bulk_memory",
    "multi_value",
    "simd",
    "relaxed_simd",
    "tail_call",
    "function_references",
    "gc",
    "exceptions",
    "memory64",
    "custom_page_sizes",
    "threads",
    "wide_arithmetic",
)

DISK_CACHE_MIN_SIZE = 64 * 1024
"""Smaller modules validate faster than a marker file can be looked up."""

_MEMORY_CACHE_LIMIT = 4096

_validated: set[str] = set()
_lock = threading.Lock()


@functools.cache
def _validation_engine() -> wasmtime.Engine:
    config = wasmtime.Config()
    for feature in _FEATURES:
        setattr(config, f"wasm_{feature}", True)
    return wasmtime.Engine(config)


def _validate_bytes(raw: bytes) -> None:
    """``wasmtime.Module.validate`` without its copy of the bytes (tens of MB for a runtime)."""
    ptr = ctypes.cast(ctypes.c_char_p(raw), ctypes.POINTER(ctypes.c_uint8))
    error = wffi.wasmtime_module_validate(_validation_engine().ptr(), ptr, len(raw))
    if error:
        raise wasmtime.WasmtimeError._from_ptr(error)


@functools.cache
def _validator_digest() -> str:
    """What a validation result depends on besides the bytes: wasmtime's version and features."""
    text = "|".join((WASMTIME_VERSION, *_FEATURES))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _marker(sha256: str) -> Path | None:
    """The on-disk marker of a validated module, or ``None`` when the disk cache is off."""
    try:
        base = module_cache_dir(get_engine())
    except Exception:  # an unusable default engine only turns the cache off
        return None
    if base is None:
        return None
    return base / "validated" / f"{sha256}-{_validator_digest()}"


def _remember(sha256: str) -> None:
    with _lock:
        if len(_validated) >= _MEMORY_CACHE_LIMIT:
            _validated.clear()
        _validated.add(sha256)


def _write_marker(path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(b"")
        os.replace(tmp, path)
    except OSError:
        # the cache is an optimization; failing to fill it is not an error
        with contextlib.suppress(OSError):
            tmp.unlink()


def clear_validation_cache() -> None:
    """Forget the validations remembered in this process (the disk cache is kept)."""
    with _lock:
        _validated.clear()


def validate_core_module(
    data: bytes | bytearray | memoryview,
    offset: int | None = None,
    *,
    sha256: str | None = None,
) -> None:
    """Raise :class:`TranslationError` unless ``data`` is a valid core module.

    ``offset`` is where the module starts in the enclosing component binary and
    is reported in the error. ``sha256`` is the hex digest of ``data`` when the
    caller already has it (it is computed otherwise); it keys the cache of
    successful validations.
    """
    digest = sha256 if sha256 is not None else hashlib.sha256(data).hexdigest()
    if digest in _validated:
        return
    marker = _marker(digest) if len(data) >= DISK_CACHE_MIN_SIZE else None
    if marker is not None and marker.is_file():
        _remember(digest)
        return
    try:
        _validate_bytes(data if isinstance(data, bytes) else bytes(data))
    except wasmtime.WasmtimeError as exc:
        message = str(exc).strip().splitlines()
        summary = "; ".join(line.strip() for line in message if line.strip())
        raise TranslationError(
            f"invalid core module: {explain(summary)}", offset, "core module"
        ) from None
    _remember(digest)
    if marker is not None:
        _write_marker(marker)
