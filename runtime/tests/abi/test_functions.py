"""Function-level value lists: flattening limits, spilling and out-pointers."""

from __future__ import annotations

import struct

import pytest
from abi_helpers import make_cx, same

from polyengine.abi.compile import Compiler
from polyengine.abi.errors import LowerOverflowError, LowerTypeError
from polyengine.abi.functions import LiftedFunc, LoweredFunc
from polyengine.abi.trap import Trap, TrapCode
from polyengine.types.layout import CoreFuncType
from polyengine.types.model import F32, U8, U32, U64, Field, FuncType, Record, String, Tuple


def _ft(n: int, result: object = None, *, is_async: bool = False) -> FuncType:
    return FuncType(tuple((f"p-{i}", U32()) for i in range(n)), result, is_async)  # type: ignore[arg-type]


def test_flat_params_and_result() -> None:
    cx, _ = make_cx()
    f = LiftedFunc.compile(Compiler(), FuncType((("a", U8()), ("b", String())), U64()))
    assert f.core_type == CoreFuncType(("i32", "i32", "i32"), ("i64",))
    flat = f.lower_params(cx, [7, "hi"])
    assert flat[0] == 7 and len(flat) == 3
    assert f.lift_results(cx, [2**64 - 1]) == 2**64 - 1
    g = LiftedFunc.compile(Compiler(), FuncType((), None))
    assert g.lower_params(cx, []) == []
    assert g.lift_results(cx, []) is None


def test_params_spill_past_16_through_realloc() -> None:
    cx, mem = make_cx()
    f = LiftedFunc.compile(Compiler(), _ft(17))
    assert f.core_type.params == ("i32",)
    args = list(range(100, 117))
    flat = f.lower_params(cx, args)
    assert len(flat) == 1
    assert mem.calls[-1][2:4] == (4, 68)
    assert list(struct.unpack("<17I", mem.read(int(flat[0]), 68))) == args
    # The callee side lifts them back through the pointer.
    g = LoweredFunc.compile(Compiler(), _ft(17))
    assert g.lift_params(cx, flat) == args
    # Exactly 16 stay flat.
    assert LiftedFunc.compile(Compiler(), _ft(16)).lower_params(cx, list(range(16))) == list(
        range(16)
    )


def test_results_past_one_go_through_memory() -> None:
    cx, mem = make_cx()
    rt = Tuple((U32(), String()))
    lifted = LiftedFunc.compile(Compiler(), FuncType((), rt))
    assert lifted.core_type == CoreFuncType((), ("i32",))
    # The guest returns a pointer to (u32, string).
    mem.write(2000, b"abc")
    mem.write(256, struct.pack("<III", 9, 2000, 3))
    assert lifted.lift_results(cx, [256]) == (9, "abc")
    with pytest.raises(Trap) as e:
        lifted.lift_results(cx, [258])
    assert e.value.code == TrapCode.MISALIGNED
    with pytest.raises(Trap) as e:
        lifted.lift_results(cx, [65536 - 8])
    assert e.value.code == TrapCode.OUT_OF_BOUNDS

    lowered = LoweredFunc.compile(Compiler(), FuncType((("x", U8()),), rt))
    assert lowered.core_type == CoreFuncType(("i32", "i32"), ())
    assert lowered.out_ptr_index == 1
    assert lowered.lower_results(cx, (5, "xy"), [1, 512]) == []
    n, p, ln = struct.unpack("<III", mem.read(512, 12))
    assert (n, mem.read(p, ln)) == (5, b"xy")
    with pytest.raises(Trap):
        lowered.lower_results(cx, (5, "xy"), [1, 514])


def test_spilled_params_and_out_pointer_together() -> None:
    cx, mem = make_cx()
    ft = _ft(20, Tuple((U32(), U32())))
    g = LoweredFunc.compile(Compiler(), ft)
    assert g.core_type == CoreFuncType(("i32", "i32"), ())
    assert g.out_ptr_index == 1
    mem.write(128, struct.pack("<20I", *range(20)))
    assert g.lift_params(cx, [128, 640]) == list(range(20))
    assert g.lower_results(cx, (1, 2), [128, 640]) == []
    assert struct.unpack("<II", mem.read(640, 8)) == (1, 2)


def test_async_lower_limits() -> None:
    cx, mem = make_cx()
    g = LoweredFunc.compile(Compiler(), _ft(5, U8(), is_async=True), is_async=True)
    assert g.core_type == CoreFuncType(("i32", "i32"), ("i32",))
    mem.write(128, struct.pack("<5I", *range(5)))
    assert g.lift_params(cx, [128, 200]) == list(range(5))
    # Any result at all goes through the out-pointer.
    assert g.lower_results(cx, 77, [128, 200]) == []
    assert mem.buf[200] == 77
    h = LoweredFunc.compile(Compiler(), _ft(4, None, is_async=True), is_async=True)
    assert h.core_type == CoreFuncType(("i32",) * 4, ("i32",))
    assert h.lift_params(cx, [1, 2, 3, 4]) == [1, 2, 3, 4]
    assert h.lower_results(cx, None, [1, 2, 3, 4]) == []


def test_async_lift_task_return_allows_16_flat() -> None:
    cx, _ = make_cx()
    rt = Record(tuple(Field(f"f{i}", U32()) for i in range(3)))
    f = LiftedFunc.compile(Compiler(), FuncType((), rt, True), is_async=True, callback=True)
    assert f.core_type == CoreFuncType((), ("i32",))
    assert f.lift_task_return(cx, [1, 2, 3]) == {"f0": 1, "f1": 2, "f2": 3}


def test_param_errors_name_the_parameter() -> None:
    cx, _ = make_cx()
    f = LiftedFunc.compile(
        Compiler(), FuncType((("first-arg", U8()), ("r", Record((Field("x", F32()),)))), None)
    )
    with pytest.raises(LowerOverflowError) as e:
        f.lower_params(cx, [256, {"x": 1.0}])
    assert str(e.value) == "parameter `first_arg`: 256 is out of range for u8 (0..255)"
    with pytest.raises(LowerTypeError) as e2:
        f.lower_params(cx, [1, {"x": "no"}])
    assert str(e2.value).startswith("parameter `r`.x: expected float")
    with pytest.raises(TypeError, match="expected 2 values, got 1"):
        f.lower_params(cx, [1])
    big = LiftedFunc.compile(Compiler(), _ft(17))
    with pytest.raises(LowerOverflowError, match=r"^parameter `p_3`: -1"):
        big.lower_params(cx, [0, 0, 0, -1, *([0] * 13)])


def test_result_errors_name_the_result() -> None:
    cx, _ = make_cx()
    g = LoweredFunc.compile(Compiler(), FuncType((), Tuple((U8(), U8()))))
    with pytest.raises(LowerOverflowError, match=r"^result\[1\]: 300"):
        g.lower_results(cx, (1, 300), [256])
    h = LoweredFunc.compile(Compiler(), FuncType((), U8()))
    with pytest.raises(LowerTypeError, match=r"^result: expected int"):
        h.lower_results(cx, "x", [])
    assert h.lower_results(cx, 3, []) == [3]


def test_many_params_of_mixed_types_round_trip() -> None:
    cx, _ = make_cx("utf16")
    ft = FuncType(
        tuple((f"s{i}", String()) for i in range(9)), Tuple(tuple(String() for _ in range(3)))
    )
    args = [f"\u00e9{i}" * i for i in range(9)]
    f = LiftedFunc.compile(Compiler("utf16"), ft)
    g = LoweredFunc.compile(Compiler("utf16"), ft)
    flat = f.lower_params(cx, args)
    assert len(flat) == 1
    assert same(g.lift_params(cx, flat), args)
    res = ("a", "b\u4e2d", "")
    assert g.lower_results(cx, res, [*flat, 800]) == []
    assert f.lift_results(cx, [800]) == res


def test_flat_scalar_params_inline_conversions() -> None:
    import math

    from polyengine.types.model import F64, S8, S32, S64, Bool, Char

    cx, _ = make_cx()
    ft = FuncType(
        (
            ("a", S32()),
            ("b", Bool()),
            ("c", F64()),
            ("d", U64()),
            ("e", S64()),
            ("f", F32()),
            ("g", S8()),
            ("h", Char()),
        ),
        None,
    )
    f, g = LiftedFunc.compile(Compiler(), ft), LoweredFunc.compile(Compiler(), ft)
    args = [-1, True, math.nan, 2**64 - 1, -(2**63), 0.1, -128, "\u00e9"]
    flat = f.lower_params(cx, args)
    assert flat[0] == 0xFFFFFFFF and flat[1] == 1 and flat[3] == 2**64 - 1
    assert flat[4] == 2**63 and flat[6] == 0xFFFFFF80 and flat[7] == 0xE9
    assert flat[5] == struct.unpack("<f", struct.pack("<f", 0.1))[0]
    back = g.lift_params(cx, flat)
    assert back[0] == -1 and back[1] is True and math.isnan(back[2]) and back[6] == -128
    # The engine may hand over signed core integers; lifting masks them.
    assert g.lift_params(cx, [-1, 0, 1.0, -1, -1, 2.0, -1, 0x41]) == [
        -1,
        False,
        1.0,
        2**64 - 1,
        -1,
        2.0,
        -1,
        "A",
    ]
    with pytest.raises(LowerTypeError, match=r"^parameter `b`: expected bool"):
        f.lower_params(cx, [0, 1, 0.0, 0, 0, 0.0, 0, "a"])
    with pytest.raises(LowerOverflowError, match=r"^parameter `d`: -1 is out of range"):
        f.lower_params(cx, [0, True, 0.0, -1, 0, 0.0, 0, "a"])
    with pytest.raises(TypeError, match=r"^parameter `c`: expected float"):
        f.lower_params(cx, [0, True, "x", 0, 0, 0.0, 0, "a"])
    assert f.lower_params(cx, [0, False, 3, 0, 0, 2, 0, "a"])[2] == 3.0
