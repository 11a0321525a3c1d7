"""The canonical built-ins of a plan as core host functions (CanonicalABI.md
§Canonical Definitions: the 🔀 🧵 📝 built-ins).

:func:`task_model_builtin` maps one :class:`~polyengine.translate.plan.Builtin`
to the concurrency layer's ``canon_<name>`` function with its immediates
bound, plus the built-in's flat core signature (CanonicalABI.md gives it per
built-in: ``stream.new`` returns the two packed indices as an ``i64``,
``waitable-set.wait`` takes the set and an event pointer, and so on).
Options naming memories or reallocs are resolved on the first call, since a
plan may name a core instance created after the one importing the built-in.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from polyengine import engine
from polyengine.abi.functions import LiftedFunc
from polyengine.abi.options import LiftLowerContext
from polyengine.concurrency import builtins as cb
from polyengine.concurrency import copy_builtins as cc
from polyengine.concurrency.copy_builtins import CopyOptions
from polyengine.concurrency.engine_seam import BuiltinFn, engine_core
from polyengine.concurrency.thread import CoreVal, Thread
from polyengine.concurrency.traps import Trap, TrapCode, ctrap_if
from polyengine.errors import LinkError
from polyengine.translate import plan as pln
from polyengine.types import model as m
from polyengine.types.layout import MAX_FLAT_PARAMS, flatten_type

if TYPE_CHECKING:
    from polyengine.instance._runtime import ComponentRuntime

__all__ = ["ReturnKey", "builtin_signature", "task_model_builtin"]

Sig = tuple[list[str], list[str]]

_SIGS: dict[str, Sig] = {
    "backpressure.inc": ([], []),
    "backpressure.dec": ([], []),
    "task.cancel": ([], []),
    "subtask.drop": (["i32"], []),
    "subtask.cancel": (["i32"], ["i32"]),
    "error-context.new": (["i32", "i32"], ["i32"]),
    "error-context.debug-message": (["i32", "i32"], []),
    "error-context.drop": (["i32"], []),
    "waitable-set.new": ([], ["i32"]),
    "waitable-set.drop": (["i32"], []),
    "waitable-set.wait": (["i32", "i32"], ["i32"]),
    "waitable-set.poll": (["i32", "i32"], ["i32"]),
    "waitable.join": (["i32", "i32"], []),
    "context.get": ([], ["i32"]),
    "context.set": (["i32"], []),
    "thread.index": ([], ["i32"]),
    "thread.new-indirect": (["i32", "i32"], ["i32"]),
    "thread.resume-later": (["i32"], []),
    "thread.suspend": ([], ["i32"]),
    "thread.yield": ([], ["i32"]),
    "thread.suspend-then-resume": (["i32"], ["i32"]),
    "thread.yield-then-resume": (["i32"], ["i32"]),
    "thread.suspend-then-promote": (["i32"], ["i32"]),
    "thread.yield-then-promote": (["i32"], ["i32"]),
}


def builtin_signature(b: pln.Builtin) -> Sig:
    """The flat core signature of built-in ``b`` (CanonicalABI.md, per built-in)."""
    kind = b.kind
    if kind == "task.return":
        flat = [t for r in b.results or () for t in flatten_type(r)]
        return (["i32"] if len(flat) > MAX_FLAT_PARAMS else list(flat)), []
    found = _SIGS.get(kind)
    if found is not None:
        return list(found[0]), list(found[1])
    stream = kind.startswith("stream.")
    op = kind.split(".", 1)[1]
    if op == "new":
        return [], ["i64"]
    if op in ("read", "write"):
        return (["i32", "i32", "i32"] if stream else ["i32", "i32"]), ["i32"]
    if op.startswith("cancel-"):
        return ["i32"], ["i32"]
    if op.startswith("drop-"):
        return ["i32"], []
    raise LinkError(f"the canonical built-in {kind} is not supported")


def _flat(fn: Callable[..., Any]) -> BuiltinFn:
    """``fn(thread, *flat_args)`` as ``fn(thread, flat_args)``."""

    def call(thread: Thread, args: list[CoreVal]) -> Any:
        return fn(thread, *args)

    return call


_PLAIN: dict[str, Callable[..., Any]] = {
    "backpressure.inc": cb.canon_backpressure_inc,
    "backpressure.dec": cb.canon_backpressure_dec,
    "task.cancel": cb.canon_task_cancel,
    "subtask.drop": cb.canon_subtask_drop,
    "error-context.drop": cb.canon_error_context_drop,
    "waitable-set.new": cb.canon_waitable_set_new,
    "waitable-set.drop": cb.canon_waitable_set_drop,
    "waitable.join": cb.canon_waitable_join,
    "thread.index": cb.canon_thread_index,
    "thread.resume-later": cb.canon_thread_resume_later,
}

_CANCELLABLE: dict[str, Callable[..., Any]] = {
    "thread.suspend": cb.canon_thread_suspend,
    "thread.yield": cb.canon_thread_yield,
    "thread.suspend-then-resume": cb.canon_thread_suspend_then_resume,
    "thread.yield-then-resume": cb.canon_thread_yield_then_resume,
    "thread.suspend-then-promote": cb.canon_thread_suspend_then_promote,
    "thread.yield-then-promote": cb.canon_thread_yield_then_promote,
}

#: the built-ins :func:`~polyengine.concurrency.copy_builtins.end_builtin` binds
_TYPED = frozenset(
    {
        "stream.new",
        "future.new",
        "stream.drop-readable",
        "stream.drop-writable",
        "future.drop-readable",
        "future.drop-writable",
    }
)

_CANCELS: dict[str, Callable[..., Any]] = {
    "stream.cancel-read": cc.canon_stream_cancel_read,
    "stream.cancel-write": cc.canon_stream_cancel_write,
    "future.cancel-read": cc.canon_future_cancel_read,
    "future.cancel-write": cc.canon_future_cancel_write,
}


def _lazy(build: Callable[[], BuiltinFn]) -> BuiltinFn:
    """A built-in whose options are resolved on its first call."""
    cell: list[BuiltinFn] = []

    def call(thread: Thread, args: list[CoreVal]) -> Any:
        if not cell:
            cell.append(build())
        return cell[0](thread, args)

    return call


def task_model_builtin(rt: ComponentRuntime, b: pln.Builtin) -> tuple[BuiltinFn, bool]:
    """``(fn, defer)`` for built-in ``b``: ``fn(thread, flat_args)`` and whether it must defer."""
    kind = b.kind
    plain = _PLAIN.get(kind)
    if plain is not None:
        return _flat(plain), False
    if kind in _CANCELLABLE:
        return _positional(_CANCELLABLE[kind], b.cancellable), False
    if kind == "subtask.cancel":
        return _positional(cb.canon_subtask_cancel, b.is_async), True
    if kind in ("context.get", "context.set"):
        assert b.index is not None
        fn = cb.canon_context_get if kind == "context.get" else cb.canon_context_set
        return _positional(fn, b.index), False
    if kind == "task.return":
        return _lazy(lambda: _task_return(rt, b)), False
    if kind in ("waitable-set.wait", "waitable-set.poll"):
        assert b.memory is not None
        wait: Callable[..., Any] = (
            cb.canon_waitable_set_wait
            if kind == "waitable-set.wait"
            else cb.canon_waitable_set_poll
        )
        mem_ref = b.memory

        def build_wait() -> BuiltinFn:
            memory = rt.resolve(mem_ref)
            assert isinstance(memory, engine.GuestMemory)
            return _positional(wait, b.cancellable, memory)

        return _lazy(build_wait), False
    if kind == "thread.new-indirect":
        return _lazy(lambda: _thread_new_indirect(rt, b)), False
    if kind == "error-context.new":
        return _lazy(lambda: _error_context_new(rt, b)), False
    if kind == "error-context.debug-message":
        return _lazy(lambda: _error_context_debug_message(rt, b)), False
    if kind in _TYPED:
        assert isinstance(b.type, m.Stream | m.Future)
        return cc.end_builtin(kind, b.type), False
    if kind in _CANCELS:
        assert b.type is not None
        return _positional(_CANCELS[kind], b.type, b.is_async), False
    if kind in ("stream.read", "stream.write"):
        return _lazy_stream_copy(rt, b), False
    if kind in ("future.read", "future.write"):
        assert b.type is not None and b.options is not None
        return _lazy(lambda: _copy(rt, b)), False
    raise LinkError(f"the canonical built-in {kind} is not supported")


def _positional(fn: Callable[..., Any], *immediates: Any) -> BuiltinFn:
    def call(thread: Thread, args: list[CoreVal]) -> Any:
        return fn(thread, *immediates, *args)

    return call


def _lazy_stream_copy(rt: ComponentRuntime, b: pln.Builtin) -> BuiltinFn:
    """``stream.read``/``stream.write``, built on its first call (as :func:`_lazy`).

    Its ``attach`` takes the compiled path's env of its host function, armed
    once the options are resolved (:func:`~.copy_builtins.arm_stream_copy`).
    """
    assert isinstance(b.type, m.Stream)
    stream_t = b.type
    reading = b.kind == "stream.read"
    cell: list[BuiltinFn] = []
    envs: list[Any] = []

    def call(thread: Thread, args: list[CoreVal]) -> Any:
        if not cell:
            opts = _copy_options(rt, b)
            cell.append(cc.stream_copy_builtin(reading, stream_t, opts))
            for env in envs:
                cc.arm_stream_copy(env, thread.store, reading, stream_t, opts)
        return cell[0](thread, args)

    setattr(call, "attach", envs.append)  # noqa: B010 (a function attribute mypy allows)
    return call


def _copy_options(rt: ComponentRuntime, b: pln.Builtin) -> CopyOptions:
    assert isinstance(b.type, m.Stream | m.Future) and b.options is not None
    ro = rt.resolve_options(b.options, side="copy")
    elem = b.type.t
    codec = None if elem is None else ro.compiler.codec(elem)
    return CopyOptions(ro.opts, codec)


def _copy(rt: ComponentRuntime, b: pln.Builtin) -> BuiltinFn:
    assert isinstance(b.type, m.Future)
    return cc.future_copy_builtin(b.kind == "future.read", b.type, _copy_options(rt, b))


@dataclass(frozen=True, slots=True)
class ReturnKey:
    """A lift's ``task.return`` identity: the options it compares, and who called.

    ``side`` is ``"host"`` for the lift the host calls and ``"guest"`` for the
    one other instances call: ``task.return`` lifts the result for that caller.
    """

    key: object
    side: str


def _task_return(rt: ComponentRuntime, b: pln.Builtin) -> BuiltinFn:
    assert b.options is not None
    options = b.options
    results = b.results or ()
    result_t = results[0] if results else None
    ft = m.FuncType((), result_t, False)
    key = rt.return_key(options, result_t)
    lifts: dict[str, Callable[[Any, list[CoreVal]], list[Any]]] = {}

    def lift_for(side: str) -> Callable[[Any, list[CoreVal]], list[Any]]:
        found = lifts.get(side)
        if found is not None:
            return found
        ro = rt.resolve_options(options, side=side)
        values = LiftedFunc.compile(ro.compiler, ft, is_async=True)

        def lift(task: Any, flat: list[CoreVal]) -> list[Any]:
            cx = LiftLowerContext(ro.opts, task.inst.ci, task)
            r = values.lift_task_return(cx, flat)
            return [r] if result_t is not None else []

        lifts[side] = lift
        return lift

    def task_return(thread: Thread, args: list[CoreVal]) -> list[CoreVal]:
        tk = thread.task.return_key
        if tk.__class__ is ReturnKey and tk.key == key:
            side = tk.side
            lift = lifts.get(side) or lift_for(side)
            return cb.canon_task_return(thread, result_t, tk, lift, args)
        return cb.canon_task_return(thread, result_t, key, lift_for("guest"), args)

    return task_return


def _thread_new_indirect(rt: ComponentRuntime, b: pln.Builtin) -> BuiltinFn:
    assert b.table is not None
    table = rt.resolve(b.table)
    assert isinstance(table, engine.CoreTable)

    def new_indirect(thread: Thread, args: list[CoreVal]) -> list[CoreVal]:
        fi, c = int(args[0]), int(args[1])
        try:
            func = table.get(fi)
        except engine.CoreTrap as exc:
            raise Trap(f"thread.new-indirect: {exc}", code="out-of-bounds") from None
        ctrap_if(func is None, TrapCode.THREAD, f"thread.new-indirect: table entry {fi} is null")
        assert func is not None
        ctrap_if(
            list(func.params) != ["i32"] or list(func.results) != [],
            TrapCode.HANDLE_TYPE_MISMATCH,
            "thread.new-indirect: the table entry has the wrong type",
        )
        return cb.canon_thread_new_indirect(thread, engine_core(func), c)

    return new_indirect


def _error_context_new(rt: ComponentRuntime, b: pln.Builtin) -> BuiltinFn:
    assert b.options is not None
    ro = rt.resolve_options(b.options, side="copy")
    codec = ro.compiler.codec(m.String())
    ci = ro.record.ci

    def load_string(ptr: int, units: int) -> str:
        s = codec.lift_flat(LiftLowerContext(ro.opts, ci), [ptr, units], 0)
        return str(s)

    return _positional(cb.canon_error_context_new, load_string)


def _error_context_debug_message(rt: ComponentRuntime, b: pln.Builtin) -> BuiltinFn:
    assert b.options is not None
    ro = rt.resolve_options(b.options, side="copy")
    codec = ro.compiler.codec(m.String())
    ci = ro.record.ci

    pair = 16 if ro.opts.addrtype == "i64" else 8

    def store_string(s: str, ptr: int) -> None:
        try:
            codec.store(LiftLowerContext(ro.opts, ci), s, ptr)
        except struct.error:
            # the string is stored (realloc may grow the memory), then its
            # (pointer, length) pair at ptr: that store beyond memory traps
            memory = ro.opts.memory
            size = 0 if memory is None else len(memory.view())
            raise Trap(
                f"error-context.debug-message: string pointer and length out-of-bounds: "
                f"{pair} bytes at {ptr}, memory is {size}",
                code=TrapCode.OUT_OF_BOUNDS,
            ) from None

    return _positional(cb.canon_error_context_debug_message, store_string)
