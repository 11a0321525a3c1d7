"""Property tests: every value of every (generated) type survives the canonical ABI."""

from __future__ import annotations

from typing import Any

import pytest
from abi_helpers import make_cx, same, through_flat, through_memory
from abi_strategies import encodings, ptr_types, types, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyengine.abi.compile import Compiler, snake
from polyengine.abi.errors import LowerError
from polyengine.abi.functions import LiftedFunc, LoweredFunc
from polyengine.abi.options import StringEncoding
from polyengine.types.layout import PtrType, alignment, elem_size, flatten_type
from polyengine.types.model import (
    U8,
    Bool,
    Flags,
    FuncType,
    List,
    Map,
    Option,
    Record,
    Result,
    Tuple,
    ValType,
    Variant,
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


class _Bad:
    """A value no component type accepts."""

    def __repr__(self) -> str:
        return "BAD"


def _corrupt(t: ValType, v: Any, target: int, counter: list[int], boxed: bool = False) -> Any:
    """``v`` with its ``target``-th leaf (depth first) replaced by a ``_Bad``.

    ``counter[0]`` counts leaves seen; ``counter[1:]`` receives the path of
    the replaced leaf, in the segments lowering errors use.
    """

    def leaf() -> Any:
        counter[0] += 1
        if counter[0] - 1 == target:
            counter.append("")  # type: ignore[arg-type]
            return _Bad()
        return v

    def at(seg: str, u: ValType, x: Any, b: bool = False) -> Any:
        before = len(counter)
        out = _corrupt(u, x, target, counter, b)
        if len(counter) > before:
            counter.insert(before, seg)  # type: ignore[arg-type]
        return out

    match t:
        case List(U8(), _):
            return leaf()
        case List(et, _):
            return [at(f"[{i}]", et, x) for i, x in enumerate(v)]
        case Tuple(ts):
            return tuple(at(f"[{i}]", u, x) for i, (u, x) in enumerate(zip(ts, v, strict=True)))
        case Record(fields):
            return {
                snake(f.label): at("." + snake(f.label), f.t, v[snake(f.label)]) for f in fields
            }
        case Variant(cases):
            (c,) = [c for c in cases if c.label == v["kind"]]
            if c.t is None:
                return v
            return {"kind": v["kind"], "value": at(".value", c.t, v["value"])}
        case Result(ok, err):
            pt = ok if v["kind"] == "ok" else err
            if pt is None:
                return v
            return {"kind": v["kind"], "value": at(".value", pt, v["value"])}
        case Option(u):
            inner = isinstance(u, Option)
            if boxed:
                if v["kind"] == "none":
                    return v
                return {"kind": "some", "value": at(".value", u, v["value"], inner)}
            return None if v is None else at("", u, v, inner)
        case Flags(labels):
            return {snake(lb): at("." + snake(lb), Bool(), v[snake(lb)]) for lb in labels}
        case Map(k, val):
            return [(at(f"[{i}][0]", k, a), at(f"[{i}][1]", val, b)) for i, (a, b) in enumerate(v)]
    return leaf()


@SETTINGS
@given(st.data(), types)
def test_a_bad_leaf_is_named_by_its_path(data: st.DataObject, t: ValType) -> None:
    v = data.draw(values(t))
    count = [0]
    _corrupt(t, v, -1, count)
    if count[0] == 0:
        return
    target = data.draw(st.integers(0, count[0] - 1))
    counter: list[Any] = [0]
    bad = _corrupt(t, v, target, counter)
    path = "".join(counter[1:])
    cx, _ = make_cx()
    codec = Compiler().codec(t)
    with pytest.raises(LowerError) as e:
        codec.store(cx, bad, 64)
    assert e.value.location() == path, (str(e.value), path)
    with pytest.raises(LowerError) as e:
        codec.lower_flat(cx, bad, [])
    assert e.value.location() == path, (str(e.value), path)
