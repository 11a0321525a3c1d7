"""Bounds for a guest one does not trust: :class:`Limits`.

``await polyengine.instantiate(component, imports, limits=Limits(...))``
(and ``polyengine.sync.instantiate_sync``, ``polyengine run -W ...``) runs
the instance under these bounds. Exceeding one is a
``polyengine_protocol.Trap`` with a stable code that poisons that instance
only (embedder-api.md §"Error model"); every other instance goes on.

========================  =============================  ====================
field                     meaning                        trap code
========================  =============================  ====================
``fuel``                  wasmtime fuel (about one unit  ``out-of-fuel``
                          per instruction) for the
                          instance, or for each call
                          with ``fuel_per_call``
``timeout``               wall-clock seconds one call    ``interrupt``
                          from the host may run
``max_memory_size``       bytes a linear memory may      ``memory-limit``
                          reach
``max_table_elements``    elements a table may reach     ``table-limit``
``max_instances``         core instances of the store    ``instance-limit``
``max_memories``          linear memories of the store   ``memory-limit``
``max_tables``            tables of the store            ``table-limit``
``max_lift_bytes``        bytes plus elements of lists   ``lift-limit``
                          and strings one lift or lower
                          reads from guest memory, or
                          one stream or future copy
                          lifts out of its writer
                          (default 1 GiB)
``max_stackful``          live stackful activations of   none: a call beyond
                          the store's async tasks        it waits
                          (default 10,000; ``None``:
                          no cap)
========================  =============================  ====================

``max_stackful`` is backpressure, not a fault: every parked stackful call
(an async export lifted without a callback, or a callback-lifted one that
blocks in a synchronous call) holds a fiber, whose stack costs two memory
mappings of the process's some 65,000; a new call beyond the cap waits,
before any of its guest code runs, until a live one finishes, so any number
of concurrent calls completes without exhausting the process.

The memory and table bounds are wasmtime's store limiter, with its meaning
(the same as ``wasmtime run -W max-memory-size=...``): creating a memory or
table beyond its bound fails the instantiation with the trap code above;
growing one beyond it fails as the core spec allows, ``memory.grow`` and
``table.grow`` returning -1 to the guest, which decides what follows.

Interruption needs no limit: every guest can be interrupted by the
cancellation of the asyncio task that awaits it (``asyncio.timeout``), and
``polyengine run`` interrupts its guest on ``SIGINT``; the trap code is
``interrupt``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Limits", "LimitCode"]


class LimitCode:
    """The trap codes of exceeded limits (``Trap.code``)."""

    OUT_OF_FUEL = "out-of-fuel"
    INTERRUPT = "interrupt"
    MEMORY = "memory-limit"
    TABLE = "table-limit"
    INSTANCES = "instance-limit"


_INT64 = 1 << 63


def _check_count(name: str, value: object, bound: int = _INT64) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < bound:
        raise ValueError(f"Limits.{name} must be None or an int in [0, {bound}), not {value!r}")


@dataclass(frozen=True, slots=True)
class Limits:
    """What an instance may use (``None``: unbounded); see the module docstring."""

    fuel: int | None = None
    fuel_per_call: bool = False
    timeout: float | None = None
    max_memory_size: int | None = None
    max_table_elements: int | None = None
    max_instances: int | None = None
    max_memories: int | None = None
    max_tables: int | None = None
    max_lift_bytes: int = 1 << 30
    max_stackful: int | None = 10_000

    def __post_init__(self) -> None:
        _check_count("fuel", self.fuel, 1 << 64)
        for name in (
            "max_memory_size",
            "max_table_elements",
            "max_instances",
            "max_memories",
            "max_tables",
            "max_lift_bytes",
        ):
            _check_count(name, getattr(self, name))
        s = self.max_stackful
        if s is not None and (isinstance(s, bool) or not isinstance(s, int) or s < 1):
            raise ValueError(f"Limits.max_stackful must be None or a positive int, not {s!r}")
        if not isinstance(self.fuel_per_call, bool):
            raise ValueError(f"Limits.fuel_per_call must be a bool, not {self.fuel_per_call!r}")
        if self.fuel_per_call and self.fuel is None:
            raise ValueError("Limits.fuel_per_call needs Limits.fuel")
        t = self.timeout
        if t is not None and (
            isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t <= 0
        ):
            raise ValueError(f"Limits.timeout must be None or positive seconds, not {t!r}")

    @property
    def per_call(self) -> bool:
        """Whether each call from the host re-arms a limit (a timeout, per-call fuel)."""
        return self.timeout is not None or self.fuel_per_call
