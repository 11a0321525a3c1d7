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

from collections.abc import Callable, Sequence
from typing import Any

from polyengine.abi.bulk import NAN
from polyengine.abi.codegen import make_function, offset
from polyengine.abi.compile import Codec, Compiler, CoreVal
from polyengine.abi.errors import LowerError, LowerTypeError
from polyengine.abi.kernels import lift_kernel, lower_kernel
from polyengine.abi.options import LiftLowerContext
from polyengine.abi.trap import range_trap
from polyengine.types.layout import (
    MAX_FLAT_ASYNC_PARAMS,
    MAX_FLAT_PARAMS,
    MAX_FLAT_RESULTS,
    CoreFuncType,
    align_to,
    contains_async_value,
    flatten_functype,
)
from polyengine.types.model import (
    F32,
    F64,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    FuncType,
    ValType,
)

__all__ = [
    "LiftedFunc",
    "LoweredFunc",
    "ValuesCodec",
    "result_outcome",
    "result_value",
    "scalar_guard",
    "scalar_lifting",
    "scalar_lowering",
]


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
        self._stores = [
            (o, c.store, contains_async_value(c.t))
            for o, c in zip(offsets, self.codecs, strict=True)
        ]
        self._lift_direct = _gen_lift_direct(self.codecs, flat_offsets)
        self._lower_direct = _gen_lower_direct(self.codecs, self.names)

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
        lifted: list[Any] = self._lift_direct(cx, vals, start)
        return lifted

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
        if self.flat_count <= max_flat:
            flat: list[CoreVal] = self._lower_direct(cx, vs)
            return flat
        if len(vs) != len(self.codecs):
            raise LowerTypeError(f"expected {len(self.codecs)} values, got {len(vs)}")
        if out_param is None:
            ptr = cx.allocate(self.tuple_align, self.tuple_size)
            flat = [ptr]
        else:
            ptr = out_param & self.ptr_mask
            flat = []
        self._check_tuple_ptr(cx, ptr)
        stores = self._stores
        names = self.names
        k = 0
        try:
            for k, v in enumerate(vs):
                o, st, has_async = stores[k]
                if has_async:
                    cx.at = (names[k], v)
                st(cx, v, ptr + o)
            return flat
        except LowerError as e:
            e.set_root(self.names[k])
            raise


_INT_TYPES: dict[type, tuple[int, int, int]] = {
    # type: (bits, lo, hi)
    U8: (8, 0, 2**8 - 1),
    U16: (16, 0, 2**16 - 1),
    U32: (32, 0, 2**32 - 1),
    U64: (64, 0, 2**64 - 1),
    S8: (8, -(2**7), 2**7 - 1),
    S16: (16, -(2**15), 2**15 - 1),
    S32: (32, -(2**31), 2**31 - 1),
    S64: (64, -(2**63), 2**63 - 1),
}


_F32_MAX = 3.4028234663852886e38


def scalar_lifting(t: ValType, x: str, k: int, *, exact: bool = False) -> str | None:
    """Source lifting a ``bool``, integer or float from the flat core value ``x``.

    The expression gives what the codec's ``lift_flat`` gives (it cannot
    fail for these types); it uses the name ``NAN``
    (:data:`polyengine.abi.bulk.NAN`) and may bind the local ``x{k}``.
    ``exact``: ``x`` is known to be a non-negative int of its core type's
    width, or a float, as the engine returns them. ``None`` for any other type.
    """
    if isinstance(t, Bool):
        return f"({x} != 0)"
    if isinstance(t, F64 | F32):
        value = f"x{k}" if exact else f"float(x{k})"
        return f"(NAN if (x{k} := {x}) != x{k} else {value})"
    ints = _INT_TYPES.get(type(t))
    if ints is not None:
        bits, lo, _ = ints
        mask = (1 << bits) - 1
        if lo == 0:
            return x if exact and bits in {32, 64} else f"({x} & {mask})"
        sign = 1 << (bits - 1)
        return f"((({x} & {mask}) ^ {sign}) - {sign})"
    return None


def scalar_lowering(t: ValType, v: str) -> tuple[str, str] | None:
    """Source lowering a ``bool``, integer or float held in the variable ``v``.

    ``(guard, flat)``: when ``guard`` holds, ``flat`` is a core value that
    packs to the same bits as what the codec's ``lower_flat`` gives; when it
    does not, the codec must decide (it converts the value or raises).
    ``None`` for any other type.
    """
    if isinstance(t, Bool):
        return f"type({v}) is bool", f"(1 if {v} else 0)"
    if isinstance(t, F64):
        return f"type({v}) is float and {v} == {v}", v
    if isinstance(t, F32):
        # past the largest f32 (and for a NaN) the codec rounds or canonicalizes
        return f"type({v}) is float and {-_F32_MAX!r} <= {v} <= {_F32_MAX!r}", v
    ints = _INT_TYPES.get(type(t))
    if ints is not None:
        bits, lo, hi = ints
        guard = f"type({v}) is int and {lo} <= {v} <= {hi}"
        if lo == 0:
            return guard, v
        return guard, f"({v} & {(1 << (32 if bits <= 32 else 64)) - 1})"
    return None


def scalar_guard(ts: Sequence[ValType], vs: Sequence[str]) -> str | None:
    """One guard for the values in the variables ``vs``, of types ``ts``.

    It holds exactly when every :func:`scalar_lowering` guard does; the
    range tests of the unsigned integers of one width are merged into one
    shift (``not (a | b) >> 32`` holds exactly when ``a`` and ``b`` are both
    ints in ``0..2**32-1``). ``None`` if a type is not a plain scalar.
    """
    parts: list[str] = []
    unsigned: dict[int, list[str]] = {}
    for t, v in zip(ts, vs, strict=True):
        ints = _INT_TYPES.get(type(t))
        if ints is not None and ints[1] == 0:
            parts.append(f"type({v}) is int")
            unsigned.setdefault(ints[0], []).append(v)
            continue
        lowering = scalar_lowering(t, v)
        if lowering is None:
            return None
        parts.append(lowering[0])
    parts += [f"not ({' | '.join(names)}) >> {bits}" for bits, names in unsigned.items()]
    return " and ".join(f"({p})" for p in parts) or "True"


def _lift_expr(t: ValType, k: int, j: str) -> str:
    """An inline lift of a scalar from ``vals[j]``, or a call of its codec's ``lift_flat``."""
    return scalar_lifting(t, f"vals[{j}]", k) or f"lf{k}(cx, vals, {j})"


def _lower_stmts(t: ValType, k: int) -> list[str]:
    """Inline lowering of value ``v{k}`` for common scalars, else a call of ``lw{k}``."""
    v, call = f"v{k}", f"lw{k}(cx, v{k}, out)"
    if isinstance(t, Bool):
        return [
            f"if {v} is True: out.append(1)",
            f"elif {v} is False: out.append(0)",
            f"else: {call}",
        ]
    if isinstance(t, F64):
        return [f"if type({v}) is float and {v} == {v}: out.append({v})", f"else: {call}"]
    ints = _INT_TYPES.get(type(t))
    if ints is not None:
        bits, lo, hi = ints
        value = v if lo == 0 else f"{v} & {(1 << (32 if bits <= 32 else 64)) - 1}"
        return [
            f"if type({v}) is int and {lo} <= {v} <= {hi}: out.append({value})",
            f"else: {call}",
        ]
    return [call]


def _gen_lift_direct(codecs: Sequence[Codec], flat_offsets: Sequence[int]) -> Any:
    """``lift(cx, vals, start) -> list`` for values passed flat, as one generated display."""
    env: dict[str, Any] = {"NAN": NAN}
    exprs: list[str] = []
    for k, (c, fo) in enumerate(zip(codecs, flat_offsets, strict=True)):
        env[f"lf{k}"] = c.lift_flat
        exprs.append(_lift_expr(c.t, k, offset("start", fo)))
    return make_function(
        "lift_flat_values", "cx, vals, start=0", [f"return [{', '.join(exprs)}]"], env
    )


def _gen_lift_result(codecs: Sequence[Codec]) -> Any:
    """``lift(cx, vals) -> value`` for a result passed flat (``None`` without a result)."""
    assert len(codecs) <= 1
    env: dict[str, Any] = {"NAN": NAN}
    if not codecs:
        return make_function("lift_results", "cx, vals", ["return None"], env)
    env["lf0"] = codecs[0].lift_flat
    return make_function(
        "lift_results", "cx, vals", [f"return {_lift_expr(codecs[0].t, 0, '0')}"], env
    )


def _gen_lower_direct(codecs: Sequence[Codec], names: Sequence[str]) -> Any:
    """``lower(cx, vs) -> list`` for values passed flat, with errors naming the value."""
    n = len(codecs)

    def wrong_count(got: int) -> None:
        raise LowerTypeError(f"expected {n} values, got {got}")

    head = [f"if len(vs) != {n}: wrong_count(len(vs))"]
    if n:
        head.append(f"({''.join(f'v{k}, ' for k in range(n))}) = vs")
    return _gen_lower(
        codecs, names, name="lower_flat_values", params="cx, vs", head=head, wrong_count=wrong_count
    )


def _gen_lower_result(codecs: Sequence[Codec], names: Sequence[str]) -> Any:
    """``lower(cx, result, flat_args) -> list`` for a result passed flat (ignored without one)."""
    assert len(codecs) <= 1
    return _gen_lower(
        codecs, names, name="lower_results", params="cx, v0, flat_args", head=[], wrong_count=None
    )


def _gen_lower(
    codecs: Sequence[Codec],
    names: Sequence[str],
    *,
    name: str,
    params: str,
    head: list[str],
    wrong_count: Any,
) -> Any:
    """The lowering of values ``v0, v1, ...`` (bound by ``head``) into a new flat list."""
    env: dict[str, Any] = {
        "LowerError": LowerError,
        "names": list(names),
        "wrong_count": wrong_count,
    }
    body = [*head, "out = []", "k = 0", "try:"]
    for k, c in enumerate(codecs):
        env[f"lw{k}"] = c.lower_flat
        if k:
            body.append(f"    k = {k}")
        if contains_async_value(c.t):  # a host producer inside is named by this value
            body.append(f"    cx.at = (names[{k}], v{k})")
        body += [f"    {line}" for line in _lower_stmts(c.t, k)]
    body += [
        "    pass",
        "except LowerError as e:",
        "    e.set_root(names[k])",
        "    raise",
        "return out",
    ]
    return make_function(name, params, body, env)


def _param_names(ft: FuncType) -> list[str]:
    return [f"parameter `{name.replace('-', '_')}`" for name, _ in ft.params]


class LiftedFunc:
    """A guest export's value handling for its caller (``canon lift``).

    ``core_type`` is the export's core signature. Built by
    :meth:`LiftedFunc.compile`.

    ``lower_params(cx, args) -> list`` gives the core arguments for ``args``
    (§"`canon lift`": ``lower_flat_values``); ``lift_results(cx,
    flat_results)`` the result value of a synchronous export (``None`` when
    there is no result). When the values are passed flat, both are the
    generated codecs themselves, with no frame in between.
    """

    lower_params: Callable[[LiftLowerContext, Sequence[Any]], list[CoreVal]]
    lift_results: Callable[[LiftLowerContext, Sequence[CoreVal]], Any]

    def __init__(self, comp: Compiler, ft: FuncType, *, is_async: bool, callback: bool) -> None:
        self.ft = ft
        self.is_async = is_async
        self.core_type: CoreFuncType = flatten_functype(
            ft, "lift", is_async=is_async, callback=callback, ptr_type=comp.ptr_type
        )
        self.params = ValuesCodec(comp, ft.param_types(), _param_names(ft))
        self.results = ValuesCodec(comp, ft.result_types(), ["result"] * len(ft.result_types()))
        self.lower_params = (
            self.params._lower_direct
            if self.params.flat_count <= MAX_FLAT_PARAMS
            else self._lower_params_spilled
        )
        self.lift_results = (
            _gen_lift_result(self.results.codecs)
            if self.results.flat_count <= MAX_FLAT_RESULTS
            else self._lift_results_spilled
        )
        # the compiled value codecs over the Python ones, where they apply (abi/kernels.py)
        if self.params.flat_count <= MAX_FLAT_PARAMS:
            lower = lower_kernel(comp, self.params, self.lower_params)
            if lower is not None:
                self.lower_params = lower
        if self.results.flat_count > MAX_FLAT_RESULTS:
            lift = lift_kernel(comp, self.results, self.lift_results)
            if lift is not None:
                self.lift_results = lift

    @classmethod
    def compile(
        cls, comp: Compiler, ft: FuncType, *, is_async: bool = False, callback: bool = False
    ) -> LiftedFunc:
        """Compile ``ft``; shared by every compiler whose codecs of its types are shared."""
        key = _function_key(comp, ft, "lift", is_async, callback)
        if key is None:
            return cls(comp, ft, is_async=is_async, callback=callback)
        found = _FUNCTIONS.get(key)
        if found is None:
            found = _remember(key, cls(comp, ft, is_async=is_async, callback=callback))
        assert isinstance(found, LiftedFunc)
        return found

    def _lower_params_spilled(self, cx: LiftLowerContext, args: Sequence[Any]) -> list[CoreVal]:
        return self.params.lower_flat_values(cx, MAX_FLAT_PARAMS, args)

    def _lift_results_spilled(self, cx: LiftLowerContext, flat_results: Sequence[CoreVal]) -> Any:
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

    ``lift_params(cx, flat_args) -> list`` gives the argument values from
    the guest's core arguments (``lift_flat_values``); ``lower_results(cx,
    result, flat_args) -> list`` the core results for ``result`` (ignored
    for a function without a result), a spill going to the guest's
    out-pointer. When the values are passed flat, both are the generated
    codecs themselves, with no frame in between.
    """

    lift_params: Callable[[LiftLowerContext, Sequence[CoreVal]], list[Any]]
    lower_results: Callable[[LiftLowerContext, Any, Sequence[CoreVal]], list[CoreVal]]

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
        self.lift_params = self._lift_params_spilled if spilled else self.params._lift_direct
        self.lower_results = (
            self._lower_results_spilled
            if self.out_ptr_index is not None
            else _gen_lower_result(self.results.codecs, self.results.names)
        )

    @classmethod
    def compile(cls, comp: Compiler, ft: FuncType, *, is_async: bool = False) -> LoweredFunc:
        """Compile ``ft``; shared by every compiler whose codecs of its types are shared."""
        key = _function_key(comp, ft, "lower", is_async, False)
        if key is None:
            return cls(comp, ft, is_async=is_async)
        found = _FUNCTIONS.get(key)
        if found is None:
            found = _remember(key, cls(comp, ft, is_async=is_async))
        assert isinstance(found, LoweredFunc)
        return found

    def _lift_params_spilled(self, cx: LiftLowerContext, flat_args: Sequence[CoreVal]) -> list[Any]:
        return self.params.lift_flat_values(cx, self.max_flat_params, flat_args)

    def _lower_results_spilled(
        self, cx: LiftLowerContext, result: Any, flat_args: Sequence[CoreVal]
    ) -> list[CoreVal]:
        vs = [result] if self.results.codecs else []
        out = None if self.out_ptr_index is None else int(flat_args[self.out_ptr_index])
        return self.results.lower_flat_values(cx, self.max_flat_results, vs, out)


#: compiled functions whose codecs are all shared (see ``Compiler.shared_key``), by
#: the function type, direction and options: every instance of a component
#: compiles each import and export once
_FUNCTIONS: dict[tuple[Any, ...], LiftedFunc | LoweredFunc] = {}
_FUNCTIONS_LIMIT = 5_000


def _function_key(
    comp: Compiler, ft: FuncType, side: str, is_async: bool, callback: bool
) -> tuple[Any, ...] | None:
    """The sharing key of ``ft`` compiled by ``comp``, ``None`` if it holds instance state
    (by ``ft``'s identity too when a codec of it is shared by identity: every instance
    of one component compiles the same type object)."""
    identity = False
    for t in (*ft.param_types(), *ft.result_types()):
        if comp.shared_key(t) is None:
            return None
        identity = identity or comp.by_identity(t)
    if identity:
        return (comp.options_key(), ft, side, is_async, callback, id(ft))
    return (comp.options_key(), ft, side, is_async, callback)


def _remember(key: tuple[Any, ...], f: LiftedFunc | LoweredFunc) -> LiftedFunc | LoweredFunc:
    if len(_FUNCTIONS) >= _FUNCTIONS_LIMIT:
        _FUNCTIONS.clear()
    _FUNCTIONS[key] = f
    return f


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
