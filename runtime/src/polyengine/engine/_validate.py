"""Core module validation by the engine (Explainer.md §"Module definitions").

A component embeds core modules verbatim; their validity is the core
WebAssembly spec's business, so it is delegated to wasmtime's validator with
the features real guests need switched on.
"""

from __future__ import annotations

import functools

import wasmtime

from polyengine.errors import TranslationError


@functools.cache
def _validation_engine() -> wasmtime.Engine:
    config = wasmtime.Config()
    config.wasm_multi_memory = True
    config.wasm_reference_types = True
    config.wasm_bulk_memory = True
    config.wasm_multi_value = True
    config.wasm_simd = True
    config.wasm_relaxed_simd = True
    config.wasm_tail_call = True
    config.wasm_function_references = True
    config.wasm_gc = True
    config.wasm_exceptions = True
    config.wasm_memory64 = True
    config.wasm_custom_page_sizes = True
    config.wasm_threads = True
    config.wasm_wide_arithmetic = True
    return wasmtime.Engine(config)


def validate_core_module(data: bytes, offset: int | None = None) -> None:
    """Raise :class:`TranslationError` unless ``data`` is a valid core module.

    ``offset`` is where the module starts in the enclosing component binary and
    is reported in the error.
    """
    try:
        wasmtime.Module.validate(_validation_engine(), data)
    except wasmtime.WasmtimeError as exc:
        message = str(exc).strip().splitlines()
        summary = "; ".join(line.strip() for line in message if line.strip())
        raise TranslationError(f"invalid core module: {summary}", offset, "core module") from None
