"""Pure-Python stand-ins for the engine and memory, for tests without wasm.

A *Python guest function* is a generator function ``fn(thread, flat_args)``
that may ``yield from`` blocking built-ins and returns its flat results; it
stands for a core wasm function. :func:`py_core` turns it into a
:data:`~.lift.CoreFunc` (an activation per call, parking on each block, as
the engine's wasmtime fibers do). Guest memory in tests is the canonical ABI
layer's :class:`~polyengine.abi.memory.BytearrayMemory`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from polyengine.types.model import FuncType, ValType

from .lift import CanonLift, CanonLower, CoreFunc, lift_func
from .store import InstanceState
from .task import FuncInst, Subtask, Task
from .thread import CoreVal, GeneratorActivation, Suspends, Thread

__all__ = [
    "PyCore",
    "bare_thread",
    "now",
    "py_core",
    "py_lifted",
    "py_lowered",
    "returns",
    "stackful",
]

T = TypeVar("T")

PyCore = Callable[[Thread, list[CoreVal]], Suspends[list[CoreVal]]]


def returns(*vals: CoreVal) -> Suspends[list[CoreVal]]:
    """A guest body that returns ``vals`` at once (``yield from returns(1)``)."""
    yield from ()
    return list(vals)


def py_core(fn: PyCore) -> CoreFunc:
    """A :data:`~.lift.CoreFunc` running the Python guest function ``fn``."""

    def start(thread: Thread, args: list[CoreVal]) -> GeneratorActivation:
        return GeneratorActivation(fn(thread, args))

    return start


def _identity_lower(_task: Task, values: list[Any]) -> list[CoreVal]:
    return [int(v) for v in values]


def _identity_lift(_task: Task, flat: list[CoreVal]) -> list[Any]:
    return list(flat)


def py_lifted(
    inst: InstanceState,
    fn: PyCore,
    *,
    params: tuple[ValType, ...] = (),
    result: ValType | None = None,
    is_async: bool = False,
    async_: bool = False,
    callback: PyCore | None = None,
    post_return: PyCore | None = None,
) -> CanonLift:
    """A lifted function over numeric flat values (values pass through as ints)."""
    ft = FuncType(tuple((f"p{i}", t) for i, t in enumerate(params)), result, is_async)
    return CanonLift(
        ft=ft,
        inst=inst,
        callee=py_core(fn),
        lower_args=_identity_lower,
        lift_results=_identity_lift,
        async_=async_,
        callback=py_core(callback) if callback is not None else None,
        post_return=py_core(post_return) if post_return is not None else None,
        return_key=("py", id(inst)),
    )


def py_lowered(
    callee: FuncInst | CanonLift,
    *,
    async_: bool = False,
    ft: FuncType | None = None,
    results: list[list[Any]] | None = None,
) -> CanonLower:
    """A lowered function passing numeric values through.

    For an async lower, results cannot go through an out-pointer here; they
    are appended to ``results`` when the subtask returns.
    """
    if isinstance(callee, CanonLift):
        ft = callee.ft
        fi = lift_func(callee)
    else:
        assert ft is not None
        fi = callee
    sink = results

    def lift_params(_s: Subtask, flat: list[CoreVal]) -> list[Any]:
        return list(flat)

    def lower_results(_s: Subtask, vs: list[Any], _flat: list[CoreVal]) -> list[CoreVal]:
        if async_:
            if sink is not None:
                sink.append(list(vs))
            return []
        return [int(v) for v in vs]

    return CanonLower(
        callee=fi, ft=ft, lift_params=lift_params, lower_results=lower_results, async_=async_
    )


def now(gen: Suspends[T]) -> T:
    """Run a possibly-blocking operation that must complete without blocking."""
    try:
        block = next(gen)
    except StopIteration as stop:
        return cast(T, stop.value)
    gen.close()
    raise AssertionError(f"operation blocked ({block!r})")


def bare_thread(inst: InstanceState, *, is_async: bool = True) -> Thread:
    """A registered, started thread of a started task, for calling built-ins directly.

    Its body never runs; it stands for a guest thread that is executing.
    """
    ft = FuncType((), None, is_async)
    task = Task(ft, inst, list, lambda _r: None, async_=is_async, return_key=("py", id(inst)))
    task.state = Task.State.STARTED

    def body(_t: Thread) -> Suspends[None]:
        yield from ()

    thread = Thread(task, body)
    task.implicit_thread = thread
    task.register_thread(thread)
    return thread


def stackful(
    inst: InstanceState, body: Callable[[Thread], Suspends[None]], *, is_async: bool = True
) -> CanonLift:
    """An export with no parameters or results whose core function runs ``body``.

    Async-typed exports are lifted stackful (``async`` without callback) and
    ``task.return`` is called after ``body`` unless it resolved the task;
    otherwise the export is lifted synchronously.
    """

    def core(thread: Thread, _args: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from body(thread)
        if is_async and not thread.task.resolved():
            thread.task.return_([])
        return []

    return py_lifted(inst, core, is_async=is_async, async_=is_async)
