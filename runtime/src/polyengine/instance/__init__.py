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
:func:`needs_task_model`, :func:`lowered_imports` (a plan's, worked out once),
and the seam the embed layer fills in for host
values (:class:`HostValueHooks`, :class:`FutureSource`) and the host values
themselves, made of the embed layer's handle classes (:class:`HostValues`,
:class:`HostHandles`).

The face imports nothing until a name is used (PEP 562 module
``__getattr__``): a synchronous store never imports the task model
(``_async.py``, :mod:`polyengine.concurrency`) nor asyncio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyengine.faces import lazy_face

if TYPE_CHECKING:
    from polyengine.instance._async import AsyncExportCall as AsyncExportCall
    from polyengine.instance._async import FutureSource as FutureSource
    from polyengine.instance._async import HostValueHooks as HostValueHooks
    from polyengine.instance._async import HostValuesFactory as HostValuesFactory
    from polyengine.instance._async import TaskModel as TaskModel
    from polyengine.instance._features import needs_task_model as needs_task_model
    from polyengine.instance._hostlower import HostLower as HostLower
    from polyengine.instance._hostvalues import HostHandles as HostHandles
    from polyengine.instance._hostvalues import HostValues as HostValues
    from polyengine.instance._lift import ExportCall as ExportCall
    from polyengine.instance._lift import InlineCall as InlineCall
    from polyengine.instance._lift import export_call as export_call
    from polyengine.instance._perplan import lowered_imports as lowered_imports
    from polyengine.instance._runtime import ComponentRuntime as ComponentRuntime
    from polyengine.instance._runtime import CoreVal as CoreVal
    from polyengine.instance._runtime import ImportSite as ImportSite
    from polyengine.instance._runtime import ResolvedOptions as ResolvedOptions

__all__ = [
    "AsyncExportCall",
    "ComponentRuntime",
    "CoreVal",
    "ExportCall",
    "ImportSite",
    "FutureSource",
    "HostHandles",
    "HostLower",
    "HostValueHooks",
    "HostValues",
    "HostValuesFactory",
    "InlineCall",
    "ResolvedOptions",
    "TaskModel",
    "export_call",
    "lowered_imports",
    "needs_task_model",
]

#: the module of each name, imported on first use
_LAZY = {
    "AsyncExportCall": "._async",
    "FutureSource": "._async",
    "HostValueHooks": "._async",
    "HostValuesFactory": "._async",
    "TaskModel": "._async",
    "needs_task_model": "._features",
    "HostHandles": "._hostvalues",
    "HostLower": "._hostlower",
    "HostValues": "._hostvalues",
    "ComponentRuntime": "._runtime",
    "CoreVal": "._runtime",
    "ExportCall": "._lift",
    "export_call": "._lift",
    "lowered_imports": "._perplan",
    "ImportSite": "._runtime",
    "InlineCall": "._lift",
    "ResolvedOptions": "._runtime",
}


__getattr__, __dir__ = lazy_face(globals(), _LAZY)
