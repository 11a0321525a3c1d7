"""Compiled canonical ABI of handle types: resources, streams, futures, error contexts.

All travel as ``i32`` indices into the instance's handle table. Resources
follow CanonicalABI.md §"Loading" (``lift_own``, ``lift_borrow``) and
§"Storing" (``lower_own``, ``lower_borrow``), converting reps to host
objects through :class:`~polyengine.abi.resources.HostResources` when the
compiler has one; streams, futures and error contexts go through the
concurrency layer's :class:`~polyengine.abi.compile.AsyncValueHooks`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from polyengine.abi.codec import M32, U32_STRUCT, Codec, CoreVal, unsupported
from polyengine.abi.errors import LowerTypeError, describe
from polyengine.abi.options import LiftLowerContext
from polyengine.abi.resources import (
    ComponentInstance,
    HostResources,
    ResourceHandle,
    lift_borrow,
    lift_own,
    lower_borrow,
    lower_own,
)
from polyengine.types.model import Borrow, ErrorContext, Future, Own, Stream, ValType

if TYPE_CHECKING:
    from polyengine.abi.codec import AsyncValueHooks
    from polyengine.abi.compile import Compiler

__all__ = ["compile_async_value", "compile_handle", "i32_codec"]


def i32_codec(
    comp: Compiler,
    t: ValType,
    lift: Callable[[LiftLowerContext, int], Any],
    lower: Callable[[LiftLowerContext, Any], int],
) -> Codec:
    unpack_from, pack_into = U32_STRUCT.unpack_from, U32_STRUCT.pack_into

    def load(cx: LiftLowerContext, ptr: int) -> Any:
        return lift(cx, unpack_from(cx.mv, ptr)[0])

    def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
        pack_into(cx.mv, ptr, lower(cx, v))

    def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> Any:
        return lift(cx, int(vals[i]) & M32)

    def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
        out.append(lower(cx, v))

    return comp._make(t, load, store, lift_flat, lower_flat)


def compile_handle(comp: Compiler, t: Own | Borrow, rt_index: int) -> Codec:
    """``own``/``borrow`` (§"Loading" ``lift_own``/``lift_borrow``, §"Storing" ``lower_*``)."""
    if comp.late_resources:
        return _late_handle(comp, t, rt_index)
    if comp.resource_type is None:
        raise ValueError(f"compiling {t!r} needs a resource_type mapping")
    rt = comp.resource_type(rt_index)
    host = comp.host_resources
    rep_of = _rep_of

    if isinstance(t, Own):
        if host is None:

            def lift(cx: LiftLowerContext, i: int) -> Any:
                return lift_own(cx.inst, i, rt)

            def lower(cx: LiftLowerContext, v: Any) -> int:
                return lower_own(cx.inst, rep_of(v), rt)

        else:
            h = host

            def lift(cx: LiftLowerContext, i: int) -> Any:
                return h.lift_own(rt, lift_own(cx.inst, i, rt))

            def lower(cx: LiftLowerContext, v: Any) -> int:
                return lower_own(cx.inst, h.lower_own(rt, v), rt)

    # A borrow is lifted out of a caller (the scope is its Subtask-like lender
    # record) and lowered into a callee (the scope is its Task-like borrow count).
    elif host is None:

        def lift(cx: LiftLowerContext, i: int) -> Any:
            lenders: Any = cx.borrow_scope
            return lift_borrow(cx.inst, i, rt, lenders)

        def lower(cx: LiftLowerContext, v: Any) -> int:
            task: Any = cx.borrow_scope
            return lower_borrow(cx.inst, rep_of(v), rt, task)

    else:
        h = host

        def lift(cx: LiftLowerContext, i: int) -> Any:
            lenders: Any = cx.borrow_scope
            return h.lift_borrow(rt, lift_borrow(cx.inst, i, rt, lenders))

        def lower(cx: LiftLowerContext, v: Any) -> int:
            task: Any = cx.borrow_scope
            return lower_borrow(cx.inst, h.lower_borrow(rt, v), rt, task)

    return i32_codec(comp, t, lift, lower)


def _late_handle(comp: Compiler, t: Own | Borrow, index: int) -> Codec:
    """``compile_handle`` reading the resource type and host table at call time.

    Both come from the context's component instance (``rtypes``,
    ``host_table``), so the codec is the same for every instance of a
    component and is compiled once (see :class:`~polyengine.abi.compile.Compiler`).
    """
    lift: Callable[[LiftLowerContext, int], Any]
    lower: Callable[[LiftLowerContext, Any], int]
    host = comp.host_resources is not None
    if isinstance(t, Own):
        if host:

            def lift(cx: LiftLowerContext, i: int) -> Any:
                inst = cx.inst
                rt = inst.rtypes[index]
                table = inst.host_table or _table(inst)
                return table.lift_own(rt, lift_own(inst, i, rt))

            def lower(cx: LiftLowerContext, v: Any) -> int:
                inst = cx.inst
                rt = inst.rtypes[index]
                table = inst.host_table or _table(inst)
                # lower_own, inline
                return inst.handles.add(ResourceHandle(rt, table.lower_own(rt, v), own=True))

        else:

            def lift(cx: LiftLowerContext, i: int) -> Any:
                inst = cx.inst
                return lift_own(inst, i, inst.rtypes[index])

            def lower(cx: LiftLowerContext, v: Any) -> int:
                inst = cx.inst
                return lower_own(inst, _rep_of(v), inst.rtypes[index])

    elif host:

        def lift(cx: LiftLowerContext, i: int) -> Any:
            inst = cx.inst
            rt = inst.rtypes[index]
            lenders: Any = cx.borrow_scope
            table = inst.host_table or _table(inst)
            return table.lift_borrow(rt, lift_borrow(inst, i, rt, lenders))

        def lower(cx: LiftLowerContext, v: Any) -> int:
            inst = cx.inst
            rt = inst.rtypes[index]
            task: Any = cx.borrow_scope
            table = inst.host_table or _table(inst)
            return lower_borrow(inst, table.lower_borrow(rt, v), rt, task)

    else:

        def lift(cx: LiftLowerContext, i: int) -> Any:
            inst = cx.inst
            lenders: Any = cx.borrow_scope
            return lift_borrow(inst, i, inst.rtypes[index], lenders)

        def lower(cx: LiftLowerContext, v: Any) -> int:
            inst = cx.inst
            task: Any = cx.borrow_scope
            return lower_borrow(inst, _rep_of(v), inst.rtypes[index], task)

    return i32_codec(comp, t, lift, lower)


def _rep_of(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= M32:
        raise LowerTypeError(f"expected a resource rep (u32), got {describe(v)}")
    return int(v)


def _table(inst: ComponentInstance) -> HostResources:
    table = inst.host_table
    if table is None:
        raise RuntimeError(f"{inst!r} has no host resource table for its host-side handles")
    return table


def compile_async_value(comp: Compiler, t: Stream | Future | ErrorContext) -> Codec:
    """``stream``/``future``/``error-context``: i32 handles through the concurrency hooks."""
    hooks = comp.async_values
    lift: Callable[[LiftLowerContext, int], Any]
    lower: Callable[[LiftLowerContext, Any], int]
    if comp.late_async_values:
        lift, lower = _late_async_value(t)
    elif hooks is None:
        what = {Stream: "stream", Future: "future"}.get(type(t), "error-context")
        lift, lower = unsupported(what), unsupported(what)
    elif isinstance(t, Stream):
        st = t
        lift = lambda cx, i: hooks.lift_stream(cx, i, st)  # noqa: E731
        lower = lambda cx, v: hooks.lower_stream(cx, v, st)  # noqa: E731
    elif isinstance(t, Future):
        ft = t
        lift = lambda cx, i: hooks.lift_future(cx, i, ft)  # noqa: E731
        lower = lambda cx, v: hooks.lower_future(cx, v, ft)  # noqa: E731
    else:
        lift, lower = hooks.lift_error_context, hooks.lower_error_context
    return i32_codec(comp, t, lift, lower)


def _late_async_value(
    t: Stream | Future | ErrorContext,
) -> tuple[Callable[[LiftLowerContext, int], Any], Callable[[LiftLowerContext, Any], int]]:
    """The lift and lower of ``t`` through the hooks of the context's component
    instance, read at call time (``Compiler(late_async_values=True)``; the
    runtime sets ``host_async_values`` on each of its component instances)."""
    if isinstance(t, Stream):
        st = t

        def lift_stream(cx: LiftLowerContext, i: int) -> Any:
            return _hooks(cx).lift_stream(cx, i, st)

        def lower_stream(cx: LiftLowerContext, v: Any) -> int:
            return _hooks(cx).lower_stream(cx, v, st)

        return lift_stream, lower_stream
    if isinstance(t, Future):
        ft = t

        def lift_future(cx: LiftLowerContext, i: int) -> Any:
            return _hooks(cx).lift_future(cx, i, ft)

        def lower_future(cx: LiftLowerContext, v: Any) -> int:
            return _hooks(cx).lower_future(cx, v, ft)

        return lift_future, lower_future

    def lift_error_context(cx: LiftLowerContext, i: int) -> Any:
        return _hooks(cx).lift_error_context(cx, i)

    def lower_error_context(cx: LiftLowerContext, v: Any) -> int:
        return _hooks(cx).lower_error_context(cx, v)

    return lift_error_context, lower_error_context


def _hooks(cx: LiftLowerContext) -> AsyncValueHooks:
    hooks = cx.inst.host_async_values
    assert hooks is not None, "a late async-value codec outside a task-model runtime"
    return hooks
