"""Whether a plan needs the task model (architecture.md §4).

Kept apart from the task model itself (``_async.py``): deciding costs only the
plan and the type model, so a synchronous store never imports the task
model or asyncio.
"""

from __future__ import annotations

from collections.abc import Callable

from polyengine.memo import IdentityMemo
from polyengine.translate import plan as pln
from polyengine.types import model as m
from polyengine.types.layout import contains

__all__ = ["needs_task_model"]


def _has_async_value(t: m.ValType | None) -> bool:
    """Whether a value of type ``t`` may hold a stream, future or error-context
    (once per type object: every instance of a plan asks of the same ones)."""
    return t is not None and _ASYNC_VALUED.get(t, _holds_async_value)


def _holds_async_value(t: m.ValType) -> bool:
    return contains(t, _is_async_value)


def _is_async_value(u: m.ValType) -> bool:
    return isinstance(u, m.Stream | m.Future | m.ErrorContext)


#: whether each type object may hold an async value
_ASYNC_VALUED: IdentityMemo[m.ValType, bool] = IdentityMemo(20_000)


def _func_has_async_value(ft: m.FuncType) -> bool:
    return any(_has_async_value(t) for t in ft.param_types()) or _has_async_value(ft.result)


def needs_task_model(plan: pln.Plan, marked: Callable[[tuple[str, ...]], bool]) -> bool:
    """Whether ``plan`` must run on the task model (``marked(path)``: a suspending import)."""
    by_plan, lowered = _plan_needs(plan)
    return by_plan or any(marked(path) for path in lowered)


#: per plan: whether the plan alone needs the task model, and its lowered imports'
#: paths (whether one is marked depends on the imports)
_NEEDS: IdentityMemo[pln.Plan, tuple[bool, tuple[tuple[str, ...], ...]]] = IdentityMemo(64)


def _plan_needs(plan: pln.Plan) -> tuple[bool, tuple[tuple[str, ...], ...]]:
    """What :func:`needs_task_model` asks of the plan alone, worked out once per plan."""
    return _NEEDS.get(plan, _work_out_needs)


def _work_out_needs(plan: pln.Plan) -> tuple[bool, tuple[tuple[str, ...], ...]]:
    by_plan = (
        plan.uses_async()
        or any(
            isinstance(tr, pln.LowerImport | pln.Adapter) and _func_has_async_value(tr.type)
            for tr in plan.trampolines
        )
        or any(_func_has_async_value(lift.type) for lift in _export_lifts(plan.exports))
    )
    lowered = tuple(
        dict.fromkeys(tr.path for tr in plan.trampolines if isinstance(tr, pln.LowerImport))
    )
    return by_plan, lowered


def _export_lifts(exports: tuple[pln.Export, ...]) -> list[pln.Lift]:
    out: list[pln.Lift] = []
    for e in exports:
        if isinstance(e.item, pln.Lift):
            out.append(e.item)
        elif isinstance(e.item, pln.ExportedInstance):
            out.extend(_export_lifts(e.item.items))
    return out
