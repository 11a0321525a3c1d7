"""Building :class:`~.lift.CanonLift`/:class:`~.lift.CanonLower` and
``task.return`` from the canonical ABI's compiled value codecs.

The embed layer compiles, per lifted or lowered function, an
:class:`polyengine.abi.functions.LiftedFunc` or
:class:`~polyengine.abi.functions.LoweredFunc` (typecheck once) and hands it
here with the ``canonopt`` options; the functions below close over them so a
call does no type dispatch. Result lists follow the spec's shape (``[]`` for
no result, ``[v]`` for one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from polyengine.abi.functions import LiftedFunc, LoweredFunc
from polyengine.abi.options import CanonicalOptions, LiftLowerContext

from .builtins import canon_task_return
from .lift import CanonLift, CanonLower, CoreFunc
from .store import InstanceState
from .task import FuncInst, Subtask, Task
from .thread import CoreVal, Thread

__all__ = ["canon_lift_from_abi", "canon_lower_from_abi", "return_key", "task_return_builtin"]


def return_key(opts: CanonicalOptions) -> tuple[str, object]:
    """What ``task.return``'s options must share with the lift: encoding and memory."""
    return (opts.string_encoding, opts.memory)


def canon_lift_from_abi(
    values: LiftedFunc,
    opts: CanonicalOptions,
    inst: InstanceState,
    callee: CoreFunc,
    *,
    callback: CoreFunc | None = None,
    post_return: CoreFunc | None = None,
) -> CanonLift:
    """The :class:`CanonLift` of a ``canon lift`` whose values ``values`` handles."""
    ci = inst.ci
    has_result = bool(values.ft.result_types())

    def lower_args(task: Task, args: list[Any]) -> list[CoreVal]:
        return values.lower_params(LiftLowerContext(opts, ci, task), args)

    def lift_results(task: Task, flat: list[CoreVal]) -> list[Any]:
        r = values.lift_results(LiftLowerContext(opts, ci, task), flat)
        return [r] if has_result else []

    return CanonLift(
        ft=values.ft,
        inst=inst,
        callee=callee,
        lower_args=lower_args,
        lift_results=lift_results,
        async_=opts.is_async,
        callback=callback,
        post_return=post_return,
        return_key=return_key(opts),
    )


def canon_lower_from_abi(
    values: LoweredFunc, opts: CanonicalOptions, inst: InstanceState, callee: FuncInst
) -> CanonLower:
    """The :class:`CanonLower` of a guest→guest ``canon lower`` in ``inst`` calling ``callee``.

    (A host import's lower is the embed layer's, whose steps the task model
    runs as they are: ``TaskModel.lower_import``.)
    """
    ci = inst.ci
    has_result = bool(values.ft.result_types())

    def lift_params(subtask: Subtask, flat: list[CoreVal]) -> list[Any]:
        return values.lift_params(LiftLowerContext(opts, ci, subtask), flat)

    def lower_results(subtask: Subtask, result: list[Any], flat: list[CoreVal]) -> list[CoreVal]:
        v = result[0] if has_result else None
        return values.lower_results(LiftLowerContext(opts, ci, subtask), v, flat)

    return CanonLower(
        callee=callee,
        ft=values.ft,
        lift_params=lift_params,
        lower_results=lower_results,
        async_=opts.is_async,
    )


def task_return_builtin(
    values: LiftedFunc, opts: CanonicalOptions
) -> Callable[[Thread, list[CoreVal]], list[CoreVal]]:
    """``canon task.return (result T) opts`` as ``fn(thread, flat_args)``.

    ``values`` is compiled for a function whose result is the built-in's
    ``T`` (its parameters are unused).
    """
    result_types = values.ft.result_types()
    result_type = result_types[0] if result_types else None
    key = return_key(opts)

    def lift(task: Task, flat: list[CoreVal]) -> list[Any]:
        r = values.lift_task_return(LiftLowerContext(opts, task.inst.ci, task), flat)
        return [r] if result_type is not None else []

    def task_return(thread: Thread, flat_args: list[CoreVal]) -> list[CoreVal]:
        return canon_task_return(thread, result_type, key, lift, flat_args)

    return task_return
