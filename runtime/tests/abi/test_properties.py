"""Property tests: every value of every (generated) type survives the canonical ABI."""

from __future__ import annotations

from abi_helpers import make_cx, same, through_flat, through_memory
from abi_strategies import encodings, ptr_types, types, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyengine.abi.compile import Compiler
from polyengine.abi.functions import LiftedFunc, LoweredFunc
from polyengine.abi.options import StringEncoding
from polyengine.types.layout import PtrType, alignment, elem_size, flatten_type
from polyengine.types.model import (
    FuncType,
    ValType,
)

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(st.data(), types, encodings, ptr_types)
def test_store_load_and_flat_round_trip(
    data: st.DataObject, t: ValType, enc: StringEncoding, pt: PtrType
) -> None:
    v = data.draw(values(t))
    cx, _ = make_cx(enc, ptr_type=pt)
    codec = Compiler(enc, pt).codec(t)
    assert (codec.size, codec.align) == (elem_size(t, pt), alignment(t, pt))
    assert list(codec.flat) == flatten_type(t, pt)
    assert same(through_memory(codec, cx, v), v)
    assert same(through_flat(codec, cx, v), v)


@SETTINGS
@given(st.data(), st.lists(types, max_size=20), st.none() | types, encodings)
def test_function_round_trip(
    data: st.DataObject, params: list[ValType], result: ValType | None, enc: StringEncoding
) -> None:
    ft = FuncType(tuple((f"p{i}", t) for i, t in enumerate(params)), result)
    args = [data.draw(values(t)) for t in params]
    comp = Compiler(enc)
    cx, _ = make_cx(enc)
    caller, callee = LiftedFunc.compile(comp, ft), LoweredFunc.compile(comp, ft)
    flat_args = caller.lower_params(cx, args)
    assert len(flat_args) == len(caller.core_type.params)
    assert same(callee.lift_params(cx, flat_args), args)
    if result is None:
        assert callee.lower_results(cx, None, flat_args) == []
        return
    r = data.draw(values(result))
    out_ptr = cx.allocate(callee.results.tuple_align, callee.results.tuple_size)
    core_args = [*flat_args, out_ptr] if callee.out_ptr_index is not None else flat_args
    flat_results = callee.lower_results(cx, r, core_args)
    if callee.out_ptr_index is not None:
        assert flat_results == []
        flat_results = [out_ptr]
    assert same(caller.lift_results(cx, flat_results), r)
