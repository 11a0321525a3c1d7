"""polyengine.instance: running a Plan (architecture.md §2, §4).

Between :mod:`polyengine.embed` (the facade, import resolution, host
handles) and :mod:`polyengine.concurrency` (the 0.3 task model): one
top-level component instantiation in plan order in one engine store, its
trampolines, lifts and lowers, and the canonical built-ins. A plan with
async features (or suspending imports) runs on the task model; the
synchronous path is its degenerate case.

The face: :class:`ComponentRuntime` (one instantiation), :class:`ExportCall`
and :class:`AsyncExportCall` (an export, called or awaited, as
:func:`export_call` chooses at instantiation),
:func:`needs_task_model`, and the seam the embed layer fills in for host
values (:class:`HostValueHooks`, :class:`FutureSource`).
"""

from polyengine.instance._async import (
    AsyncExportCall,
    FutureSource,
    HostValueHooks,
    HostValuesFactory,
    TaskModel,
    needs_task_model,
)
from polyengine.instance._lift import ExportCall, InlineCall, export_call
from polyengine.instance._runtime import (
    ComponentRuntime,
    CoreVal,
    ImportSite,
    ResolvedOptions,
)

__all__ = [
    "AsyncExportCall",
    "ComponentRuntime",
    "CoreVal",
    "ExportCall",
    "ImportSite",
    "FutureSource",
    "HostValueHooks",
    "HostValuesFactory",
    "InlineCall",
    "ResolvedOptions",
    "TaskModel",
    "export_call",
    "needs_task_model",
]
