"""Parameter and result lists: flattening limits, spilling and out-pointers.

CanonicalABI.md §"Lifting and Lowering Values" (``lift_flat_values``,
``lower_flat_values``) and the value handling of §"`canon lift`" and
§"`canon lower`", compiled per function type:

* :class:`LiftedFunc` is a guest export seen from its caller (``canon
  lift``): :meth:`LiftedFunc.lower_params` turns the caller's values into
  core arguments (spilling through ``realloc`` past ``MAX_FLAT_PARAMS``),
  :meth:`LiftedFunc.lift_results` reads the core results (through the
  returned pointer past ``MAX_FLAT_RESULTS``).
* :class:`LoweredFunc` is a callee reached through a guest import (``canon
  lower``): :meth:`LoweredFunc.lift_params` reads the core arguments,
  :meth:`LoweredFunc.lower_results` writes the result to flat core results or
  into the caller's out-pointer (the last core argument).

Whether a function-level ``result<T, E>`` returns ``T`` or raises is the
embed layer's business; here the result is the value of its type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from polyengine.abi.compile import Codec, Compiler, CoreVal
from polyengine.abi.errors import LowerError, LowerTypeError
from polyengine.abi.options import LiftLowerContext
from polyengine.abi.trap import range_trap
from polyengine.types.layout import (
    MAX_FLAT_ASYNC_PARAMS,
    MAX_FLAT_PARAMS,
    MAX_FLAT_RESULTS,
    CoreFuncType,
    align_to,
    flatten_functype,
)
from polyengine.types.model import FuncType, ValType

__all__ = ["LiftedFunc", "LoweredFunc", "ValuesCodec", "result_outcome", "result_value"]


class ValuesCodec:
    """A compiled list of values of types ``ts`` (§"Lifting and Lowering Values").

    ``names`` label the values in error messages (``parameter `x```,
    ``result``). A spilled list is stored as ``tuple<ts...>``.
    """

    def __init__(self, comp: Compiler, ts: Sequence[ValType], names: Sequence[str]) -> None:
        assert len(ts) == len(names)
        self.codecs: list[Codec] = [comp.codec(t) for t in ts]
        self.names = list(names)
        self.flat_count = sum(len(c.flat) for c in self.codecs)
        self.ptr_mask = comp.ptr_mask
        offsets: list[int] = []
        flat_offsets: list[int] = []
        size = 0
        align = 1
        f = 0
        for c in self.codecs:
            size = align_to(size, c.align)
            offsets.append(size)
            size += c.size
            align = max(align, c.align)
            flat_offsets.append(f)
            f += len(c.flat)
        self.tuple_size = align_to(size, align)
        self.tuple_align = align
        self._loads = list(zip(offsets, [c.load for c in self.codecs], strict=True))
        self._stores = list(zip(offsets, [c.store for c in self.codecs], strict=True))
        self._lifts = list(zip(flat_offsets, [c.lift_flat for c in self.codecs], strict=True))
        self._lowers = [c.lower_flat for c in self.codecs]

    def _check_tuple_ptr(self, cx: LiftLowerContext, ptr: int) -> None:
        a, n = self.tuple_align, self.tuple_size
        if ptr & (a - 1) or ptr + n > len(cx.mv):
            range_trap("spilled values", ptr, n, a, len(cx.mv))

    def lift_flat_values(
        self, cx: LiftLowerContext, max_flat: int, vals: Sequence[CoreVal], start: int = 0
    ) -> list[Any]:
        """Lift the values from core values at ``vals[start:]``, or through a pointer there."""
        if self.flat_count > max_flat:
            ptr = int(vals[start]) & self.ptr_mask
            self._check_tuple_ptr(cx, ptr)
            return [ld(cx, ptr + o) for o, ld in self._loads]
        return [lf(cx, vals, start + o) for o, lf in self._lifts]

    def lower_flat_values(
        self,
        cx: LiftLowerContext,
        max_flat: int,
        vs: Sequence[Any],
        out_param: int | None = None,
    ) -> list[CoreVal]:
        """Lower ``vs`` to core values, spilling to memory past ``max_flat``.

        A spill goes to ``out_param`` when given (and returns no core value),
        else into a block from ``realloc`` whose pointer is the one core value.
        """
        if len(vs) != len(self.codecs):
            raise LowerTypeError(f"expected {len(self.codecs)} values, got {len(vs)}")
        k = 0
        try:
            if self.flat_count > max_flat:
                if out_param is None:
                    ptr = cx.allocate(self.tuple_align, self.tuple_size)
                    flat: list[CoreVal] = [ptr]
                else:
                    ptr = out_param & self.ptr_mask
                    flat = []
                self._check_tuple_ptr(cx, ptr)
                stores = self._stores
                for k, v in enumerate(vs):
                    o, st = stores[k]
                    st(cx, v, ptr + o)
                return flat
            flat = []
            lowers = self._lowers
            for k, v in enumerate(vs):
                lowers[k](cx, v, flat)
            return flat
        except LowerError as e:
            e.set_root(self.names[k])
            raise


def _param_names(ft: FuncType) -> list[str]:
    return [f"parameter `{name.replace('-', '_')}`" for name, _ in ft.params]


class LiftedFunc:
    """A guest export's value handling for its caller (``canon lift``).

    ``core_type`` is the export's core signature. Built by
    :meth:`LiftedFunc.compile`.
    """

    def __init__(self, comp: Compiler, ft: FuncType, *, is_async: bool, callback: bool) -> None:
        self.ft = ft
        self.is_async = is_async
        self.core_type: CoreFuncType = flatten_functype(
            ft, "lift", is_async=is_async, callback=callback, ptr_type=comp.ptr_type
        )
        self.params = ValuesCodec(comp, ft.param_types(), _param_names(ft))
        self.results = ValuesCodec(comp, ft.result_types(), ["result"] * len(ft.result_types()))

    @classmethod
    def compile(
        cls, comp: Compiler, ft: FuncType, *, is_async: bool = False, callback: bool = False
    ) -> LiftedFunc:
        return cls(comp, ft, is_async=is_async, callback=callback)

    def lower_params(self, cx: LiftLowerContext, args: Sequence[Any]) -> list[CoreVal]:
        """The core arguments for ``args`` (§"`canon lift`": ``lower_flat_values``)."""
        return self.params.lower_flat_values(cx, MAX_FLAT_PARAMS, args)

    def lift_results(self, cx: LiftLowerContext, flat_results: Sequence[CoreVal]) -> Any:
        """The result value of a synchronous export (``None`` when there is no result)."""
        vs = self.results.lift_flat_values(cx, MAX_FLAT_RESULTS, flat_results)
        return vs[0] if vs else None

    def lift_task_return(self, cx: LiftLowerContext, flat_args: Sequence[CoreVal]) -> Any:
        """The result passed to ``task.return`` by an async export (§"`canon task.return`")."""
        vs = self.results.lift_flat_values(cx, MAX_FLAT_PARAMS, flat_args)
        return vs[0] if vs else None


class LoweredFunc:
    """A guest import's value handling for its callee (``canon lower``).

    ``core_type`` is the signature the guest calls. Built by
    :meth:`LoweredFunc.compile`.
    """

    def __init__(self, comp: Compiler, ft: FuncType, *, is_async: bool) -> None:
        self.ft = ft
        self.is_async = is_async
        self.core_type: CoreFuncType = flatten_functype(
            ft, "lower", is_async=is_async, ptr_type=comp.ptr_type
        )
        self.params = ValuesCodec(comp, ft.param_types(), _param_names(ft))
        self.results = ValuesCodec(comp, ft.result_types(), ["result"] * len(ft.result_types()))
        self.max_flat_params = MAX_FLAT_ASYNC_PARAMS if is_async else MAX_FLAT_PARAMS
        self.max_flat_results = 0 if is_async else MAX_FLAT_RESULTS
        spilled = self.params.flat_count > self.max_flat_params
        #: index of the out-pointer among the core arguments, if results go through memory
        self.out_ptr_index: int | None = None
        if self.results.flat_count > self.max_flat_results:
            self.out_ptr_index = 1 if spilled else self.params.flat_count

    @classmethod
    def compile(cls, comp: Compiler, ft: FuncType, *, is_async: bool = False) -> LoweredFunc:
        return cls(comp, ft, is_async=is_async)

    def lift_params(self, cx: LiftLowerContext, flat_args: Sequence[CoreVal]) -> list[Any]:
        """The argument values from the guest's core arguments (``lift_flat_values``)."""
        return self.params.lift_flat_values(cx, self.max_flat_params, flat_args)

    def lower_results(
        self, cx: LiftLowerContext, result: Any, flat_args: Sequence[CoreVal]
    ) -> list[CoreVal]:
        """The core results for ``result``; a spill goes to the guest's out-pointer.

        ``result`` is ignored for a function without a result.
        """
        vs = [result] if self.results.codecs else []
        out = None if self.out_ptr_index is None else int(flat_args[self.out_ptr_index])
        return self.results.lower_flat_values(cx, self.max_flat_results, vs, out)


def result_outcome(v: Any) -> tuple[bool, Any]:
    """Split a lifted ``result<T, E>`` value into ``(is_ok, payload)``.

    For the embed layer's function-result rule (python-mapping.md §2): an
    export returning ``result`` returns the ``ok`` payload or raises
    ``ComponentException`` with the ``err`` payload; an empty side gives
    ``None``.
    """
    return (v["kind"] == "ok", v.get("value"))


def result_value(is_ok: bool, payload: Any = None) -> dict[str, Any]:
    """The ``result<T, E>`` value to lower for a host import that returned or raised."""
    return {"kind": "ok" if is_ok else "err", "value": payload}
