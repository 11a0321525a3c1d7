"""Engine configuration and the process-wide engines.

One wasmtime engine exists per distinct :class:`EngineConfig` in a process;
:func:`get_engine` hands it out.  Core modules compiled for one engine can
only be instantiated in stores of the same engine.
"""

from __future__ import annotations

import hashlib
import threading
import warnings
from dataclasses import dataclass, fields, replace

import wasmtime

from ._errors import EngineError
from ._ffi import WASMTIME_VERSION, address
from ._pooling import PoolingConfig, apply_pooling, can_reserve, reservation_bytes

__all__ = ["Engine", "EngineConfig", "get_engine"]

MiB = 1024 * 1024
# Stack a fiber keeps for host code (ctypes callbacks, Python) beyond the guest's.
MIN_HOST_STACK = 256 * 1024


@dataclass(frozen=True)
class EngineConfig:
    """What the engine enables.

    The WebAssembly features real guests need are always on: multi-memory,
    multi-value, reference types, bulk memory, SIMD, tail calls, exceptions,
    function references and GC (extended-const is on by default in this
    wasmtime and has no switch).

    ``fiber_stack_size`` sizes the stack each parkable call runs on;
    ``max_wasm_stack`` bounds the guest's own use of it; at least 256 KiB more
    is kept for host code, whose Python recursion on a fiber is limited to
    what fits (a ``RecursionError``, never an overflow).
    ``consume_fuel`` enables wasmtime's fuel (set per store); with
    ``epoch_interruption`` (on by default) a running guest can be
    interrupted: by a deadline, a cancelled asyncio task, a signal
    (``_interrupt.py``).  ``module_cache`` turns the on-disk cache
    of compiled modules on or off; ``cache_dir`` overrides its location (else
    ``POLYENGINE_CACHE_DIR``, else ``~/.cache/polyengine/modules``).
    ``pooling`` (a :class:`PoolingConfig`) makes the engine allocate the
    memories, tables, instances and fiber stacks of its stores from
    wasmtime's pooling instance allocator instead of on demand; an engine
    whose pool's address space cannot be reserved (a low ``ulimit -v``) is
    made with the on-demand allocator and a warning (``Engine.pooled`` says
    which).
    """

    fiber_stack_size: int = 8 * MiB
    max_wasm_stack: int = 512 * 1024
    consume_fuel: bool = False
    epoch_interruption: bool = True
    module_cache: bool = True
    cache_dir: str | None = None
    pooling: PoolingConfig | None = None

    def __post_init__(self) -> None:
        if self.max_wasm_stack <= 0:
            raise ValueError("max_wasm_stack must be positive")
        if self.fiber_stack_size < self.max_wasm_stack + MIN_HOST_STACK:
            raise ValueError(
                f"fiber_stack_size ({self.fiber_stack_size}) must exceed max_wasm_stack "
                f"({self.max_wasm_stack}) by at least {MIN_HOST_STACK} bytes for host code"
            )

    def code_fingerprint(self) -> str:
        """A short digest of every setting that changes compiled code.

        The allocator is not one of them: wasmtime compiles the same code for
        a pooled engine as for an on-demand one (their serialized modules are
        byte-identical, which ``tests/limits/test_pooling.py`` checks), so both
        share the cache of compiled modules.
        """
        parts = [WASMTIME_VERSION]
        for f in fields(self):
            if f.name not in ("module_cache", "cache_dir", "pooling"):
                parts.append(f"{f.name}={getattr(self, f.name)!r}")
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _wasmtime_config(config: EngineConfig) -> wasmtime.Config:
    c = wasmtime.Config()
    c.wasm_multi_memory = True
    c.wasm_multi_value = True
    c.wasm_reference_types = True
    c.wasm_bulk_memory = True
    c.wasm_simd = True
    c.wasm_relaxed_simd = True
    c.wasm_tail_call = True
    c.wasm_function_references = True
    c.wasm_gc = True
    c.wasm_exceptions = True
    c.wasm_memory64 = True
    c.wasm_custom_page_sizes = True
    c.wasm_wide_arithmetic = True
    c.max_wasm_stack = config.max_wasm_stack
    # Linear memories never move: a view of one stays valid (if short) after growth.
    c.memory_may_move = False
    c.consume_fuel = config.consume_fuel
    c.epoch_interruption = config.epoch_interruption
    from wasmtime import _ffi as wffi

    wffi.wasmtime_config_async_stack_size_set(c.ptr(), config.fiber_stack_size)
    if config.pooling is not None:
        apply_pooling(c, config.pooling)
    return c


class Engine:
    """A wasmtime engine with its configuration (obtain via :func:`get_engine`)."""

    __slots__ = ("_ptr", "config", "pooled", "wasmtime_engine")

    config: EngineConfig
    wasmtime_engine: wasmtime.Engine
    _ptr: int
    #: whether the stores of this engine allocate from its pool (``config.pooling``
    #: set and the pool reserved)
    pooled: bool

    def __init__(self) -> None:
        raise TypeError("use get_engine() to obtain an Engine")

    @classmethod
    def _create(cls, config: EngineConfig) -> Engine:
        self = object.__new__(cls)
        self.config = config
        self.pooled = False
        pooling = config.pooling
        if pooling is not None:
            need = reservation_bytes(pooling, config.fiber_stack_size)
            if can_reserve(need):
                self.pooled = True
            else:
                warnings.warn(
                    f"polyengine: cannot reserve the pooling allocator's {need >> 30} GiB of "
                    "address space (ulimit -v?); using the on-demand allocator",
                    RuntimeWarning,
                    stacklevel=4,
                )
        made = config if self.pooled or pooling is None else replace(config, pooling=None)
        try:
            self.wasmtime_engine = wasmtime.Engine(_wasmtime_config(made))
        except wasmtime.WasmtimeError as exc:
            raise EngineError(f"cannot create engine for {config}: {exc}") from None
        self._ptr = address(self.wasmtime_engine.ptr())
        return self

    def increment_epoch(self) -> None:
        """Advance the epoch (only meaningful with ``epoch_interruption``)."""
        self.wasmtime_engine.increment_epoch()

    def __repr__(self) -> str:
        return f"<Engine {self.config}>"


_engines: dict[EngineConfig, Engine] = {}
_lock = threading.Lock()


def get_engine(config: EngineConfig | None = None) -> Engine:
    """The process-wide engine for ``config`` (default configuration if omitted)."""
    key = config if config is not None else EngineConfig()
    engine = _engines.get(key)
    if engine is None:
        with _lock:
            engine = _engines.get(key)
            if engine is None:
                engine = Engine._create(key)
                _engines[key] = engine
    return engine
