"""The one lower of a host import (CanonicalABI.md §``canon lower``; python-mapping.md §3).

:class:`HostLower` holds the steps of a lowered host import's call:
lifting the guest's arguments, calling the host under the error model
(:func:`wrap_result`), the host-import fault door, lowering the result. The
synchronous trampoline (``HostLinker.trampoline``) runs them in place; the
task model (``TaskModel.lower_import``) runs the same steps with the host
callable as a host function of the store's driver; for an async lower whose
host function answers at once, :meth:`HostLower.lower_result` writes the
result through the out-pointer inside the built-in (an integer in C on the
compiled path: ``engine.int_result_store``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple, NoReturn, Protocol

from polyengine.abi.errors import LowerError
from polyengine.abi.functions import LoweredFunc
from polyengine.abi.options import CanonicalOptions, LiftLowerContext
from polyengine.abi.resources import CallLenders, ComponentInstance
from polyengine.abi.trap import host_import_trap, host_result_error
from polyengine.engine import int_result_store
from polyengine.instance._runtime import CoreVal, ImportSite, ResolvedOptions
from polyengine.memo import IdentityMemo
from polyengine.translate import plan as pln
from polyengine.types.layout import contains_borrow
from polyengine.types.model import PRIMITIVES, FuncType, Future, Result
from polyengine_protocol import is_component_exception, is_wasi_exit

__all__ = ["HostLower", "wrap_result"]


def wrap_result(ft: FuncType) -> Callable[[Callable[[], Any]], Any] | None:
    """For a ``result``-typed function: run the host call, return the result-as-value."""
    result = ft.result
    if not isinstance(result, Result):
        return None
    has_ok = result.ok is not None
    has_err = result.error is not None

    def call(thunk: Callable[[], Any]) -> Any:
        try:
            value = thunk()
        except Exception as exc:
            if not is_component_exception(exc):
                raise
            payload = getattr(exc, "payload", None)
            return {"kind": "err", "value": payload} if has_err else {"kind": "err"}
        return {"kind": "ok", "value": value} if has_ok else {"kind": "ok"}

    return call


class HostLower:
    """The steps of one ``canon lower`` of a host import (CanonicalABI.md §``canon lower``;
    python-mapping.md §3 for the error model and the fault door).

    Written once for both ways the host call's completion is waited for: in
    place (:meth:`call`, the synchronous trampoline, which refuses an
    awaitable) or by the task model (:meth:`host_callable`, whose awaitable
    the store's driver awaits while the guest is parked or the subtask
    pending). The lifting of the guest's arguments (:meth:`lift_params`) and
    the lowering of the result (:meth:`lower_results`, whose failure is the
    host's: a :class:`~polyengine.abi.HostResultError` naming the import) are
    the same for both, in the shape of the task model's ``CanonLower``.
    """

    __slots__ = (
        "ci",
        "fn",
        "ft",
        "is_async",
        "lends",
        "lowered",
        "marked",
        "ok_value",
        "opts",
        "ro",
        "scalar_cx",
        "scalar_out",
        "site",
        "source",
        "spills",
        "where",
        "wrap",
    )

    ro: ResolvedOptions
    opts: CanonicalOptions
    ci: ComponentInstance
    lowered: LoweredFunc
    spills: bool
    scalar_out: _ScalarOut | None

    def __init__(
        self,
        site: ImportSite,
        tr: pln.LowerImport,
        fn: Callable[..., Any],
        *,
        where: str,
        marked: bool,
    ) -> None:
        self.site = site
        self.fn = fn
        self.ft = ft = tr.type
        #: the import's name in traps (``wasi:cli/stdout@0.2.0#get-stdout``)
        self.where = where
        self.is_async = tr.options.is_async
        #: the error model of a ``result``-typed function (``None`` for other types)
        self.wrap = wrap_result(ft)
        #: the ``ok`` case of a ``result``-typed function carries a value
        self.ok_value = isinstance(ft.result, Result) and ft.result.ok is not None
        self.marked = marked
        #: A12: an import whose result is a future returns the future's source
        self.source = isinstance(ft.result, Future)
        #: a ``borrow`` may be among the arguments: the call counts its lends and the
        #: borrowed wrappers it hands the host (:meth:`in_place`)
        self.lends = _LENDS.get(ft, _lends)

    def prepare(self) -> None:
        """Resolve the options and compile the values (on the first call: the plan
        may name a memory or realloc of a core instance created later)."""
        ro = self.site.resolve()
        self.lowered = LoweredFunc.compile(ro.compiler, self.ft, is_async=self.is_async)
        self.opts = ro.opts
        self.ci = ro.record.ci
        self.ro = ro
        #: results written through the out-pointer: the lowering reads the memory's view
        self.spills = self.lowered.out_ptr_index is not None and ro.opts.memory is not None
        self.scalar_out = self._scalar_out()
        #: scalar arguments passed flat lift without their context: one serves every call
        self.scalar_cx: LiftLowerContext | None = None
        params = self.lowered.params
        if params.flat_count <= self.lowered.max_flat_params and all(
            isinstance(t, _SCALARS) for t in self.ft.param_types()
        ):
            self.scalar_cx = LiftLowerContext(self.opts, self.ci, None)
            self.scalar_cx.where = self.where

    def _scalar_out(self) -> _ScalarOut | None:
        """How :meth:`lower_result` stores a scalar result through the out-pointer."""
        lowered = self.lowered
        memory = self.opts.memory
        index = lowered.out_ptr_index
        if not isinstance(self.ft.result, _SCALARS) or index is None or memory is None:
            return None
        values = lowered.results
        compiled = None
        found = _INTS.get(type(self.ft.result))
        if found is not None and values.ptr_mask == 0xFFFF_FFFF:
            compiled = int_result_store(memory, *found)
        return _ScalarOut(
            compiled,
            values.codecs[0].store,
            index,
            values.ptr_mask,
            values.tuple_align - 1,
            values.tuple_size,
            memory,
        )

    def lift_params(self, scope: Any, flat: Sequence[CoreVal]) -> list[Any]:
        """The guest's arguments as host values; ``scope`` (the call's lenders, or its
        subtask) counts the borrows they hand out."""
        cx = self._lift_context(scope)  # (first: on the first call it prepares ``lowered``)
        return self.lowered.lift_params(cx, flat)

    def _lift_context(self, scope: Any) -> LiftLowerContext:
        """The context the arguments lift in: the shared one of scalar arguments, else
        a new one whose ``scope`` counts the borrows (prepared on the first call)."""
        try:
            cx = self.scalar_cx
        except AttributeError:  # the first call
            self.prepare()
            cx = self.scalar_cx
        return cx if cx is not None else self._context(scope)

    def _context(self, scope: Any) -> LiftLowerContext:
        cx = LiftLowerContext(self.opts, self.ci, scope)
        cx.where = self.where
        return cx

    def lower_results(
        self, scope: Any, result: list[Any], flat: Sequence[CoreVal]
    ) -> list[CoreVal]:
        """Lower the host's result (``[]``, or ``[value]``) into the guest, after
        :meth:`lift_params`; one of the wrong shape is the host's fault
        (:func:`~polyengine.abi.trap.host_result_error`)."""
        return self._lower(self._context(scope), result[0] if result else None, flat)

    def _lower(self, cx: LiftLowerContext, value: Any, flat: Sequence[CoreVal]) -> list[CoreVal]:
        if self.spills:
            memory: Any = self.opts.memory
            cx.mv = memory.view()  # as of now: the host call ran in between
        try:
            return self.lowered.lower_results(cx, value, flat)
        except LowerError as exc:
            raise host_result_error(self.where, exc) from exc

    def in_place(self, flat: Sequence[CoreVal], resources: _CallResources) -> list[CoreVal]:
        """The synchronous trampoline's whole call (``HostLinker.trampoline``):
        :meth:`lift_params`, :meth:`call` between ``resources.begin_call()`` and
        ``end_call``, :meth:`lower_results` and the release of the lends, with
        one lifting context for the arguments and the result. Without a
        ``borrow`` among the parameters (``lends``) nothing is lent and no
        borrowed wrapper is handed out: neither is counted."""
        lends = self.lends
        lenders = CallLenders() if lends else None
        cx = self._lift_context(lenders)
        if lends:
            borrowed = resources.begin_call()
            args = self.lowered.lift_params(cx, flat)
            try:
                value = self.call(args)
            finally:
                resources.end_call(borrowed)
        else:  # no borrow among the arguments: nothing is lent, no wrapper to invalidate
            value = self.call(self.lowered.lift_params(cx, flat))
        if cx is self.scalar_cx:  # the shared context of scalar arguments stays as it is
            cx = self._context(lenders)
        out = self._lower(cx, value, flat)
        if lenders is not None:
            lenders.deliver_resolve()
        return out

    def lower_result(self, value: Any, flat: Sequence[CoreVal]) -> None:
        """Lower the host's one result ``value`` (ignored without a result) of an async
        lower through the guest's out-pointer (CanonicalABI.md §``canon lower``), with
        no subtask to count borrows (the arguments lend none)."""
        out = self.scalar_out
        if out is not None:
            compiled = out.compiled
            if compiled is not None and compiled(flat, out.at, value):
                return
            # a scalar in bounds: its store checks the value before it writes
            # anything; any doubt takes the general path, which raises its error
            cx = LiftLowerContext(self.opts, self.ci, None)
            mv = cx.mv = out.memory.view()
            ptr = int(flat[out.at]) & out.mask
            if not ptr & out.align_mask and ptr + out.size <= len(mv):
                try:
                    out.store(cx, value, ptr)
                except LowerError:
                    pass
                else:
                    return
        self.lower_results(None, [value] if self.ft.result is not None else [], flat)

    def call(self, args: Sequence[Any]) -> Any:
        """Call the host in place: its value under the error model, else :meth:`fault`.

        What ``wrap(lambda: self.settled(fn(*args)))`` does, without a closure
        per call: a component exception (from the host or the settling) is the
        ``err`` case of a ``result``-typed function, any other one a fault.
        """
        wrap = self.wrap
        try:
            value = self.fn(*args)
            if type(value) not in _PLAIN:
                value = self.settled(value)
        except Exception as exc:
            if wrap is not None and is_component_exception(exc):
                return wrap(_raiser(exc))
            self.fail(exc)
        if wrap is None:
            return value
        return {"kind": "ok", "value": value} if self.ok_value else {"kind": "ok"}

    def finish(self, value: Any) -> Any:
        """:meth:`call`'s end for a value the host returned (the generated call's
        general path): refuse an awaitable through the fault door."""
        try:
            return self.settled(value)
        except Exception as exc:
            self.fail(exc)

    def fail(self, exc: Exception) -> NoReturn:
        """The host-import fault door: raise the trap ``exc`` escaping the host call is
        (:func:`~polyengine.abi.trap.host_import_trap`; a WASI exit passes through)."""
        if is_wasi_exit(exc):
            raise exc
        raise host_import_trap(self.where, exc) from exc

    def settled(self, value: Any) -> Any:
        """``value`` as an in-place call's result: an awaitable is refused (:func:`_settle`)."""
        return _settle(value, self.where, self.marked, self.source)

    def host_callable(self) -> Callable[..., Any]:
        """The host callable as the task model calls it: the error model applied to
        its result, returned or awaited; the driver applies the fault door.

        With a ``future`` result, an awaitable a plain function returns is the
        future's source, not the call's completion (embedder-api A12); a
        coroutine function's coroutine is still the call.
        """
        from polyengine.instance import FutureSource

        fn = self.fn
        if self.source and not inspect.iscoroutinefunction(fn):
            inner = fn

            def source_call(*args: Any) -> Any:
                out = inner(*args)
                return FutureSource(out) if inspect.isawaitable(out) else out

            fn = source_call
        wrap = self.wrap
        if wrap is None:
            return fn

        def call(*args: Any) -> Any:
            holder: list[Any] = []

            def thunk() -> Any:
                out = fn(*args)
                if inspect.isawaitable(out):
                    holder.append(out)
                    return None
                return out

            value = wrap(thunk)
            if not holder:
                return value
            aw: Awaitable[Any] = holder[0]

            async def settle() -> Any:
                try:
                    v = await aw
                except Exception as exc:
                    if not is_component_exception(exc):
                        raise
                    return wrap(_raiser(exc))
                return wrap(lambda: v)

            return settle()

        return call


def _lends(ft: FuncType) -> bool:
    return any(contains_borrow(t) for t in ft.param_types())


#: whether a ``borrow`` is among a function type's parameters, by the type's identity
#: (one answer per import of a plan, not per instance)
_LENDS: IdentityMemo[FuncType, bool] = IdentityMemo(4096)

#: the integer types: (size in bytes, signed)
_INTS: dict[type, tuple[int, bool]] = {
    PRIMITIVES[f"{sign}{8 * size}"]: (size, sign == "s") for size in (1, 2, 4, 8) for sign in "us"
}
#: the types whose values are one number: bool, the integers, floats and char
_SCALARS = tuple(t for name, t in PRIMITIVES.items() if name not in {"string", "error-context"})


class _ScalarOut(NamedTuple):
    """A scalar result's store through the out-pointer (CanonicalABI.md §"Storing"):
    the compiled store of an integer (``engine.int_result_store``, or ``None``),
    the value codec's ``store``, the out-pointer's index among the core
    arguments, the address mask, the alignment mask, the size and the memory."""

    compiled: Callable[[Sequence[CoreVal], int, object], bool] | None
    store: Callable[[LiftLowerContext, Any, int], None]
    at: int
    mask: int
    align_mask: int
    size: int
    memory: Any


class _CallResources(Protocol):
    """The host resource table's bracket around an in-place host call."""

    def begin_call(self) -> list[object] | None: ...

    def end_call(self, outer: list[object] | None) -> None: ...


def _raiser(exc: BaseException) -> Callable[[], Any]:
    def thunk() -> Any:
        raise exc

    return thunk


#: result types that are never awaitable (the common case skips ``inspect.isawaitable``)
_PLAIN = frozenset({int, float, bool, str, bytes, type(None), list, tuple, dict})


def _settle(value: Any, where: str, marked: bool, source: bool = False) -> Any:
    """A host import returned ``value``; an awaitable needs a suspension point.

    When the import's result is a ``future`` (``source``), an awaitable is
    the future's source and is lowered as such (embedder-api A12).
    """
    if type(value) in _PLAIN:
        return value
    if inspect.isawaitable(value) and not source:
        if inspect.iscoroutine(value):
            value.close()
        if marked:
            from polyengine_protocol import SuspensionUnavailable

            raise SuspensionUnavailable(
                f"host import {where} returned an awaitable, but this instance runs "
                "without suspension (a synchronous store)"
            )
        raise TypeError(
            f"host import {where} is synchronous in WIT but returned an awaitable; "
            "mark it with polyengine_protocol.suspending() to let it park the caller"
        )
    return value
