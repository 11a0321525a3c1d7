"""wasmtime's pooling instance allocator: its limits, sized from what a component needs.

An engine made with ``EngineConfig(pooling=PoolingConfig(...))`` reserves,
once, slots for linear memories, tables, core instances and fiber stacks,
and its stores take and give back slots instead of mapping and unmapping
their own (architecture.md §5, serving: what an instance costs to make and
to drop). A slot freed by a store's deletion can keep its pages resident
(``linear_memory_keep_resident``, ``async_stack_keep_resident``): the next
instance in that slot then starts on pages already mapped, at the price of
zeroing them when the slot is freed.

The limits are wasmtime's, with its names. What exceeds them fails the
instantiation with :class:`PoolLimitError`, never an abort: a module that
defines more memories or tables than a slot holds, a memory or table whose
minimum is larger than its slot, and every slot of a kind in use (the pool
is full). :func:`component_needs` reads what one instance of a component
takes from the pool out of its core modules, so a pool can be sized for a
number of instances (:meth:`PoolingConfig.for_instances`).
"""

from __future__ import annotations

import mmap
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import wasmtime

from ._errors import EngineError
from ._reaper import LIMIT as REAPER_QUEUE

__all__ = ["ComponentNeeds", "PoolLimitError", "PoolingConfig", "component_needs"]

MiB = 1024 * 1024
GiB = 1024 * MiB
#: a table's slot when no table of the component declares a larger bound
DEFAULT_TABLE_ELEMENTS = 20_000
#: a table's slot at most, whatever the declared bounds
MAX_TABLE_ELEMENTS = 1 << 20


class PoolLimitError(EngineError):
    """An instantiation (or a call's fiber) the pooling allocator cannot hold.

    ``limit`` names the :class:`PoolingConfig` field that was exceeded, when
    it is known; ``reason`` is wasmtime's text.
    """

    def __init__(self, message: str, limit: str | None, reason: str) -> None:
        super().__init__(message)
        self.limit = limit
        self.reason = reason


@dataclass(frozen=True, slots=True)
class PoolingConfig:
    """The limits of wasmtime's pooling allocator (``PoolingAllocationConfig``).

    Totals are over every store of the engine at once; the ``max_*``
    and ``table_elements`` bound one module, memory or table. The defaults
    are wasmtime's, except the keep-resident sizes (see
    ``bench/README.md``, "serve", for how they were chosen).
    """

    total_core_instances: int = 1000
    total_memories: int = 1000
    total_tables: int = 1000
    total_stacks: int = 1000
    max_memories_per_module: int = 1
    max_tables_per_module: int = 1
    table_elements: int = DEFAULT_TABLE_ELEMENTS
    max_memory_size: int = 4 * GiB
    max_core_instance_size: int = 1 * MiB
    max_unused_warm_slots: int = 100
    linear_memory_keep_resident: int = 0
    async_stack_keep_resident: int = 0
    table_keep_resident: int = 0

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 63:
                raise ValueError(f"PoolingConfig.{name} must be an int >= 0, not {value!r}")
        for name in ("total_core_instances", "max_core_instance_size"):
            if getattr(self, name) == 0:
                raise ValueError(f"PoolingConfig.{name} must be positive")

    @classmethod
    def for_instances(
        cls,
        needs: ComponentNeeds,
        instances: int,
        stacks: int,
        *,
        keep_resident: int = 0,
    ) -> PoolingConfig:
        """A pool for ``instances`` live instances of a component needing ``needs``
        and ``stacks`` fibers in use at once (parked and running calls), plus
        the closed stores the reaper thread may not have deleted yet
        (``_reaper.LIMIT``), whose slots are free only then; a freed memory
        slot keeps ``keep_resident`` bytes mapped."""
        if instances < 1 or stacks < 1:
            raise ValueError("a pool needs room for at least one instance and one stack")
        instances += REAPER_QUEUE
        return cls(
            total_core_instances=max(1, needs.core_instances * instances),
            total_memories=needs.memories * instances,
            total_tables=needs.tables * instances,
            total_stacks=stacks,
            max_memories_per_module=max(1, needs.memories_per_module),
            max_tables_per_module=max(1, needs.tables_per_module),
            table_elements=needs.table_elements,
            max_memory_size=max(4 * GiB, needs.memory_bytes),
            max_unused_warm_slots=min(100, max(1, needs.memories * instances)),
            linear_memory_keep_resident=keep_resident,
        )


def reservation_bytes(pooling: PoolingConfig, fiber_stack_size: int) -> int:
    """About how much address space the pool reserves when its engine is made
    (a little more than wasmtime's own layout: each memory slot is the 4 GiB
    a 32-bit memory reserves, or ``max_memory_size`` if larger, plus guard
    regions; each stack is a fiber stack and a guard page)."""
    page = 1 << 16
    memory_slot = max(pooling.max_memory_size, 4 * GiB) + 64 * MiB
    table_slot = -(-pooling.table_elements * 8 // page) * page
    total = (
        pooling.total_memories * memory_slot
        + pooling.total_stacks * (fiber_stack_size + page)
        + pooling.total_tables * table_slot
        + pooling.total_core_instances * pooling.max_core_instance_size
        + 1000 * MiB  # component-instance slots (wasmtime's default count, unused here)
    )
    return total + total // 8 + GiB


def can_reserve(size: int) -> bool:
    """Whether ``size`` bytes of address space can be reserved now (mapped without
    access or backing, then unmapped): wasmtime's C API aborts the process when
    a pool's reservation fails, so an engine is made only after this says yes."""
    noreserve = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform == "linux" else 0)
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0) | noreserve
    try:
        region = mmap.mmap(-1, size, flags=flags, prot=0)
    except (OSError, OverflowError, ValueError, TypeError):
        return False
    region.close()
    return True


def apply_pooling(config: wasmtime.Config, pooling: PoolingConfig) -> None:
    """Make ``config`` use the pooling allocator with ``pooling``'s limits."""
    from wasmtime import _bindings as b

    p = b.wasmtime_pooling_allocation_config_new()
    try:
        for name in pooling.__dataclass_fields__:
            setter = getattr(b, f"wasmtime_pooling_allocation_config_{name}_set")
            setter(p, getattr(pooling, name))
        b.wasmtime_pooling_allocation_strategy_set(config.ptr(), p)
    finally:
        b.wasmtime_pooling_allocation_config_delete(p)


# -- what a component takes from the pool -------------------------------------


@dataclass(frozen=True, slots=True)
class ComponentNeeds:
    """What one instance of a component takes from a pool.

    ``memories``, ``tables`` and ``core_instances`` are totals over its
    core instances (defined memories and tables only: an imported one is
    its exporter's); the ``*_per_module`` counts are the largest of one
    module; ``table_elements`` a table slot large enough for every table's
    declared bound (else its minimum, doubled, at least
    ``DEFAULT_TABLE_ELEMENTS``); ``memory_bytes`` the largest memory minimum.
    """

    core_instances: int
    memories: int
    tables: int
    memories_per_module: int
    tables_per_module: int
    table_elements: int
    memory_bytes: int


@dataclass(frozen=True, slots=True)
class _ModuleNeeds:
    memories: int
    tables: int
    table_elements: int
    memory_bytes: int


def component_needs(
    modules: Sequence[bytes | memoryview], instance_modules: Sequence[int]
) -> ComponentNeeds:
    """What an instance takes from a pool: ``modules`` are its core modules'
    binaries, ``instance_modules`` the module of each core instance it makes."""
    each = [_module_needs(bytes(m)) for m in modules]
    used = [each[i] for i in instance_modules]
    return ComponentNeeds(
        core_instances=len(used),
        memories=sum(m.memories for m in used),
        tables=sum(m.tables for m in used),
        memories_per_module=max((m.memories for m in used), default=0),
        tables_per_module=max((m.tables for m in used), default=0),
        table_elements=max(
            [DEFAULT_TABLE_ELEMENTS, *(min(m.table_elements, MAX_TABLE_ELEMENTS) for m in used)]
        ),
        memory_bytes=max((m.memory_bytes for m in used), default=0),
    )


def _leb(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


def _limits(data: bytes, pos: int) -> tuple[int, int, int | None, int]:
    """``(flags, min, max or None, position after)`` of a limits encoding."""
    flags = data[pos]
    low, pos = _leb(data, pos + 1)
    high = None
    if flags & 1:
        high, pos = _leb(data, pos)
    return flags, low, high, pos


def _module_needs(wasm: bytes) -> _ModuleNeeds:
    """The memories and tables a core module defines (Binary format §5.5.9-10:
    the table and memory sections), read from its binary."""
    memories = tables = table_elements = memory_bytes = 0
    pos = 8
    try:
        while pos < len(wasm):
            section = wasm[pos]
            size, pos = _leb(wasm, pos + 1)
            end = pos + size
            if section == 4:  # tables
                tables, at = _leb(wasm, pos)
                for _ in range(tables):
                    initialized = wasm[at] == 0x40  # 0x40 0x00: an initializer follows
                    if initialized:
                        at += 2
                    kind = wasm[at]
                    at += 1
                    if kind in (0x63, 0x64):  # (ref null? ht): a heap type follows
                        _, at = _leb(wasm, at)
                    _, low, high, at = _limits(wasm, at)
                    table_elements = max(table_elements, high if high is not None else 2 * low)
                    if initialized:
                        break  # the bounds of the tables after an initializer go unread
            elif section == 5:  # memories
                memories, at = _leb(wasm, pos)
                for _ in range(memories):
                    flags, low, _, at = _limits(wasm, at)
                    page_log2 = 16
                    if flags & 8:
                        page_log2, at = _leb(wasm, at)
                    memory_bytes = max(memory_bytes, low << page_log2)
            pos = end
    except IndexError:
        pass  # a truncated module fails to compile with its own error; count what was read
    return _ModuleNeeds(memories, tables, table_elements, memory_bytes)


# -- errors -----------------------------------------------------------------------

_LIMITS = (
    ("defined memories count", "max_memories_per_module"),
    ("defined tables count", "max_tables_per_module"),
    ("minimum element size", "table_elements"),
    ("minimum byte size", "max_memory_size"),
    ("for core instances reached", "total_core_instances"),
    ("for memories reached", "total_memories"),
    ("for memory stripe", "total_memories"),
    ("for tables reached", "total_tables"),
    ("for table stripe", "total_tables"),
    ("for stacks reached", "total_stacks"),
    ("fiber", "total_stacks"),
    ("instance size", "max_core_instance_size"),
)


def pool_limit(message: str, where: str = "") -> PoolLimitError | None:
    """The :class:`PoolLimitError` a wasmtime error ``message`` is, if any
    (its text starting with ``where``)."""
    low = message.lower()
    if "pooling allocator" not in low and "maximum concurrent limit" not in low:
        return None
    limit = next((field for text, field in _LIMITS if text in low), None)
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    reason = "; ".join(ln for ln in lines if ln != "Caused by:")
    field = f"PoolingConfig.{limit}" if limit else "a PoolingConfig limit"
    return PoolLimitError(
        f"{where}over the pooling allocator's {field}: {reason}; "
        "raise the limit, or use the on-demand allocator "
        "(EngineConfig(pooling=None); polyengine serve -O pooling-allocator=n)",
        limit,
        message,
    )
