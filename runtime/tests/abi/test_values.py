"""Value shapes (python-mapping.md §2) through load/store and lift_flat/lower_flat."""

from __future__ import annotations

import math
import struct
from typing import Any

import pytest
from abi_helpers import make_cx, roundtrip, same, through_flat, through_memory

from polyengine.abi.compile import Compiler
from polyengine.abi.errors import LowerOverflowError, LowerTypeError, LowerValueError
from polyengine.abi.options import StringEncoding
from polyengine.abi.trap import Trap, TrapCode
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
    Case,
    Char,
    Enum,
    Field,
    Flags,
    List,
    Map,
    Option,
    Record,
    Result,
    String,
    Tuple,
    ValType,
    Variant,
)

INT_RANGES: list[tuple[ValType, int, int]] = [
    (U8(), 0, 255),
    (S8(), -128, 127),
    (U16(), 0, 65535),
    (S16(), -32768, 32767),
    (U32(), 0, 2**32 - 1),
    (S32(), -(2**31), 2**31 - 1),
    (U64(), 0, 2**64 - 1),
    (S64(), -(2**63), 2**63 - 1),
]


@pytest.mark.parametrize(("t", "lo", "hi"), INT_RANGES)
def test_integers_round_trip_at_the_edges(t: ValType, lo: int, hi: int) -> None:
    for v in (lo, hi, 0, 1, (lo + hi) // 2):
        roundtrip(t, v)


@pytest.mark.parametrize(("t", "lo", "hi"), INT_RANGES)
def test_integer_range_checks(t: ValType, lo: int, hi: int) -> None:
    cx, _ = make_cx()
    c = Compiler().codec(t)
    for bad in (lo - 1, hi + 1):
        with pytest.raises(OverflowError, match="out of range"):
            c.store(cx, bad, 8)
        with pytest.raises(LowerOverflowError):
            c.lower_flat(cx, bad, [])


@pytest.mark.parametrize("bad", [True, 1.0, "1", None])
def test_integers_refuse_non_int(bad: object) -> None:
    cx, _ = make_cx()
    with pytest.raises(TypeError, match="expected int"):
        Compiler().codec(U32()).lower_flat(cx, bad, [])


def test_flat_signed_ints_are_unsigned_core_values_and_lift_accepts_both() -> None:
    cx, _ = make_cx()
    c = Compiler().codec(S32())
    out: list[int | float] = []
    c.lower_flat(cx, -1, out)
    assert out == [0xFFFFFFFF]
    assert c.lift_flat(cx, [-1], 0) == -1
    assert c.lift_flat(cx, [0xFFFFFFFF], 0) == -1
    # Narrow types ignore the unused high bits of the i32.
    assert Compiler().codec(U8()).lift_flat(cx, [0x1FF], 0) == 0xFF
    assert Compiler().codec(S8()).lift_flat(cx, [0x180], 0) == -128
    assert Compiler().codec(S64()).lift_flat(cx, [2**64 - 2], 0) == -2


def test_bool() -> None:
    roundtrip(Bool(), True)
    roundtrip(Bool(), False)
    cx, mem = make_cx()
    c = Compiler().codec(Bool())
    mem.buf[100] = 7
    assert c.load(cx, 100) is True
    assert c.lift_flat(cx, [2], 0) is True
    for bad in (1, 0, None, "x"):
        with pytest.raises(TypeError, match="expected bool"):
            c.store(cx, bad, 100)


def test_floats() -> None:
    roundtrip(F64(), 0.1)
    roundtrip(F64(), -math.inf)
    roundtrip(F32(), 0.1, struct.unpack("<f", struct.pack("<f", 0.1))[0])
    roundtrip(F32(), 3, 3.0)
    roundtrip(F32(), 1e300, math.inf)
    roundtrip(F32(), -1e300, -math.inf)
    roundtrip(F64(), 2**53, float(2**53))
    cx, _ = make_cx()
    with pytest.raises(TypeError, match="expected float"):
        Compiler().codec(F64()).store(cx, True, 8)
    with pytest.raises(OverflowError, match="does not fit f64"):
        Compiler().codec(F64()).store(cx, 10**400, 8)


def _nan32(bits: int) -> float:
    x: float = struct.unpack("<f", struct.pack("<I", bits))[0]
    return x


def _nan64(bits: int) -> float:
    x: float = struct.unpack("<d", struct.pack("<Q", bits))[0]
    return x


def test_nan_canonicalization_on_store_and_lower() -> None:
    cx, mem = make_cx()
    c32, c64 = Compiler().codec(F32()), Compiler().codec(F64())
    for nan in (_nan32(0xFFC00001), _nan32(0x7F800001), math.nan):
        c32.store(cx, nan, 16)
        assert mem.read(16, 4) == struct.pack("<I", 0x7FC00000)
        out: list[int | float] = []
        c32.lower_flat(cx, nan, out)
        assert struct.pack("<d", out[0]) == struct.pack("<Q", 0x7FF8000000000000)
    for nan in (_nan64(0xFFF8000000000001), _nan64(0x7FF0000000000001), -math.nan):
        c64.store(cx, nan, 16)
        assert mem.read(16, 8) == struct.pack("<Q", 0x7FF8000000000000)


def test_nan_canonicalization_on_load_and_lift() -> None:
    cx, mem = make_cx()
    mem.write(16, struct.pack("<I", 0xFFC12345))
    x = Compiler().codec(F32()).load(cx, 16)
    assert struct.pack("<d", x) == struct.pack("<Q", 0x7FF8000000000000)
    y = Compiler().codec(F64()).lift_flat(cx, [_nan64(0xFFF0000000000009)], 0)
    assert struct.pack("<d", y) == struct.pack("<Q", 0x7FF8000000000000)


def test_char() -> None:
    for ch in ("a", "\u00e9", "\uffff", "\U0010ffff", "\ud7ff", "\ue000"):
        roundtrip(Char(), ch)
    cx, mem = make_cx()
    c = Compiler().codec(Char())
    with pytest.raises(ValueError, match="surrogate"):
        c.store(cx, "\ud800", 8)
    for bad in ("", "ab", 97, None):
        with pytest.raises(TypeError, match="one-character"):
            c.store(cx, bad, 8)
    for bits in (0xD800, 0xDFFF, 0x110000, 0xFFFFFFFF):
        mem.write(8, struct.pack("<I", bits))
        with pytest.raises(Trap) as e:
            c.load(cx, 8)
        assert e.value.code == TrapCode.INVALID_CHAR
        with pytest.raises(Trap):
            c.lift_flat(cx, [bits], 0)


def test_strings_and_byte_lists() -> None:
    encodings: list[StringEncoding] = ["utf8", "utf16", "latin1+utf16"]
    for enc in encodings:
        for s in ("", "abc", "caf\u00e9", "\u4e2d\u6587", "\U0001f600 x"):
            roundtrip(String(), s, encoding=enc)
    roundtrip(List(U8()), b"\x00\xff abc")
    roundtrip(List(U8()), bytearray(b"xy"), b"xy")
    roundtrip(List(U8()), memoryview(b"xyz"), b"xyz")
    roundtrip(List(U8()), [1, 2, 3], b"\x01\x02\x03")
    roundtrip(List(U8()), memoryview(b"abcd").cast("H"), b"abcd")
    cx, _ = make_cx()
    with pytest.raises(TypeError):
        Compiler().codec(List(U8())).store(cx, "abc", 8)
    with pytest.raises(OverflowError, match=r"\[1\]: 256 is out of range"):
        Compiler().codec(List(U8())).store(cx, [1, 256], 8)


@pytest.mark.parametrize(
    ("t", "v"),
    [
        (U16(), [0, 1, 65535]),
        (S16(), [-32768, 5]),
        (U32(), [2**32 - 1, 0]),
        (S32(), [-1, 2**31 - 1]),
        (U64(), [2**64 - 1]),
        (S64(), [-(2**63), 3]),
        (S8(), [-128, 127]),
        (F64(), [0.5, -0.0, math.inf]),
        (F32(), [0.5, 1.0, -2.0]),
        (Bool(), [True, False, True]),
        (Char(), ["a", "\U0001f600"]),
        (String(), ["a", "", "bc"]),
        (List(List(U8())), [[b"a", b""], []]),
    ],
)
def test_lists(t: ValType, v: list[Any]) -> None:
    roundtrip(List(t), v)
    roundtrip(List(t), [])
    roundtrip(List(t), tuple(v), v)


def test_numeric_list_errors_name_the_index() -> None:
    cx, _ = make_cx()
    c = Compiler().codec(List(U16()))
    with pytest.raises(OverflowError, match=r"^\[2\]: 70000 is out of range for u16"):
        c.store(cx, [1, 2, 70000], 8)
    with pytest.raises(TypeError, match=r"^\[1\]: expected u16, got bool"):
        c.store(cx, [1, True], 8)
    with pytest.raises(TypeError, match=r"^\[0\]: expected f32"):
        Compiler().codec(List(F32())).store(cx, ["x"], 8)
    with pytest.raises(TypeError, match=r"^\[1\]: expected bool"):
        Compiler().codec(List(Bool())).store(cx, [True, 1], 8)
    with pytest.raises(TypeError, match="expected a sequence"):
        c.store(cx, "abc", 8)
    with pytest.raises(TypeError, match="expected a sequence"):
        c.store(cx, {1, 2}, 8)


def test_float_lists_canonicalize_nans() -> None:
    cx, mem = make_cx()
    c = Compiler().codec(List(F32()))
    c.store(cx, [1.0, _nan32(0xFFC00001)], 8)
    ptr, n = struct.unpack("<II", mem.read(8, 8))
    assert n == 2
    assert mem.read(ptr + 4, 4) == struct.pack("<I", 0x7FC00000)
    mem.write(ptr + 4, struct.pack("<I", 0x7FC00123))
    back = c.load(cx, 8)
    assert back[0] == 1.0
    assert struct.pack("<d", back[1]) == struct.pack("<Q", 0x7FF8000000000000)


def test_fixed_length_lists() -> None:
    roundtrip(List(U32(), 3), [1, 2, 3])
    roundtrip(List(U8(), 4), b"abcd")
    roundtrip(List(String(), 2), ["a", "b"])
    roundtrip(List(Option(U8()), 2), [None, 3])
    cx, _ = make_cx()
    with pytest.raises(ValueError, match="exactly 3 elements, got 2"):
        Compiler().codec(List(U32(), 3)).store(cx, [1, 2], 8)
    with pytest.raises(ValueError, match="exactly 3 elements"):
        Compiler().codec(List(U32(), 3)).lower_flat(cx, [1, 2, 3, 4], [])
    with pytest.raises(OverflowError, match=r"^\[1\]:"):
        Compiler().codec(List(U8(), 2)).lower_flat(cx, [1, 999], [])


RECORD = Record(
    (
        Field("first-name", String()),
        Field("age", U8()),
        Field("nick", Option(String())),
    )
)


def test_records_have_snake_case_keys_and_optional_fields() -> None:
    roundtrip(RECORD, {"first_name": "Ada", "age": 36, "nick": None})
    roundtrip(RECORD, {"first_name": "Ada", "age": 36, "nick": "a"})
    roundtrip(
        RECORD, {"first_name": "Ada", "age": 36}, {"first_name": "Ada", "age": 36, "nick": None}
    )
    cx, _ = make_cx()
    c = Compiler().codec(RECORD)
    with pytest.raises(TypeError, match="missing field 'age'"):
        c.store(cx, {"first_name": "x"}, 8)
    with pytest.raises(TypeError, match="expected a dict"):
        c.store(cx, ("x", 1, None), 8)
    with pytest.raises(OverflowError, match=r"^\.age: 256 is out"):
        c.lower_flat(cx, {"first_name": "x", "age": 256}, [])


def test_tuples() -> None:
    roundtrip(Tuple((U8(), String(), F64())), (1, "x", 2.5))
    roundtrip(Tuple((U8(), String())), [1, "x"], (1, "x"))
    cx, _ = make_cx()
    with pytest.raises(ValueError, match="tuple of 2 elements, got 3"):
        Compiler().codec(Tuple((U8(), U8()))).store(cx, (1, 2, 3), 8)
    with pytest.raises(TypeError, match=r"^\[1\]: expected int"):
        Compiler().codec(Tuple((U8(), U8()))).lower_flat(cx, (1, "2"), [])


VARIANT = Variant(
    (
        Case("none-yet", None),
        Case("small", U8()),
        Case("big", U64()),
        Case("real", F32()),
        Case("double", F64()),
        Case("text", String()),
    )
)


@pytest.mark.parametrize(
    "v",
    [
        {"kind": "none-yet"},
        {"kind": "small", "value": 200},
        {"kind": "big", "value": 2**64 - 1},
        {"kind": "real", "value": 1.5},
        {"kind": "real", "value": math.nan},
        {"kind": "double", "value": -2.25},
        {"kind": "text", "value": "h\u00e9"},
    ],
)
def test_variants(v: dict[str, Any]) -> None:
    roundtrip(VARIANT, v)


def test_variant_flat_uses_joined_core_types() -> None:
    cx, _ = make_cx()
    c = Compiler().codec(VARIANT)
    assert c.flat == ("i32", "i64", "i32")
    out: list[int | float] = []
    c.lower_flat(cx, {"kind": "real", "value": 1.0}, out)
    assert out == [3, 0x3F800000, 0]
    out = []
    c.lower_flat(cx, {"kind": "double", "value": 1.0}, out)
    assert out == [4, 0x3FF0000000000000, 0]
    out = []
    c.lower_flat(cx, {"kind": "none-yet"}, out)
    assert out == [0, 0, 0]
    assert c.lift_flat(cx, [3, 0xFFFFFFFF_3F800000, 0], 0) == {"kind": "real", "value": 1.0}
    assert c.lift_flat(cx, [1, 0x1_0000_0105, 0], 0) == {"kind": "small", "value": 5}
    v = Variant((Case("f", F32()), Case("i", U32())))
    cf = Compiler().codec(v)
    assert cf.flat == ("i32", "i32")
    out = []
    cf.lower_flat(cx, {"kind": "f", "value": math.nan}, out)
    assert out == [0, 0x7FC00000]
    assert same(cf.lift_flat(cx, [0, 0xFFC00001], 0), {"kind": "f", "value": math.nan})
    ff = Compiler().codec(Option(F32()))
    assert ff.flat == ("i32", "f32")
    out = []
    ff.lower_flat(cx, None, out)
    assert out == [0, 0.0] and isinstance(out[1], float)


def test_variant_errors() -> None:
    cx, mem = make_cx()
    c = Compiler().codec(VARIANT)
    with pytest.raises(ValueError, match="unknown case 'huge'"):
        c.store(cx, {"kind": "huge"}, 8)
    with pytest.raises(TypeError, match="needs a 'value'"):
        c.store(cx, {"kind": "small"}, 8)
    with pytest.raises(TypeError, match="'kind'"):
        c.store(cx, {"value": 1}, 8)
    with pytest.raises(OverflowError, match=r"^\.value: 300"):
        c.store(cx, {"kind": "small", "value": 300}, 8)
    mem.buf[8] = 6
    with pytest.raises(Trap) as e:
        c.load(cx, 8)
    assert e.value.code == TrapCode.INVALID_DISCRIMINANT
    with pytest.raises(Trap):
        c.lift_flat(cx, [6, 0, 0], 0)


def test_enums() -> None:
    e = Enum(("red", "dark-green"))
    roundtrip(e, "dark-green")
    roundtrip(e, "red")
    cx, _ = make_cx()
    with pytest.raises(ValueError, match="unknown case 'blue'"):
        Compiler().codec(e).store(cx, "blue", 8)
    with pytest.raises(TypeError):
        Compiler().codec(e).store(cx, 0, 8)
    big = Enum(tuple(f"c{i}" for i in range(300)))
    roundtrip(big, "c299")


def test_options_box_only_when_nested_directly() -> None:
    roundtrip(Option(U8()), None)
    roundtrip(Option(U8()), 7)
    oo = Option(Option(U32()))
    roundtrip(oo, None)
    roundtrip(oo, {"kind": "none"})
    roundtrip(oo, {"kind": "some", "value": 7})
    ooo = Option(Option(Option(U8())))
    roundtrip(ooo, {"kind": "some", "value": {"kind": "none"}})
    roundtrip(ooo, {"kind": "some", "value": {"kind": "some", "value": 1}})
    # Inside a list (not directly inside an option) the option is plain again.
    roundtrip(Option(List(Option(U8()))), [None, 1])
    roundtrip(List(Option(Option(U8()))), [None, {"kind": "none"}])
    cx, _ = make_cx()
    with pytest.raises(TypeError, match="expected a dict"):
        Compiler().codec(oo).store(cx, 7, 8)


def test_results_as_values() -> None:
    r = Result(U32(), String())
    roundtrip(r, {"kind": "ok", "value": 1})
    roundtrip(r, {"kind": "err", "value": "bad"})
    empty = Result(None, None)
    roundtrip(empty, {"kind": "ok"})
    roundtrip(empty, {"kind": "err"})
    cx, _ = make_cx()
    with pytest.raises(ValueError, match="unknown case 'error'"):
        Compiler().codec(r).store(cx, {"kind": "error", "value": "x"}, 8)
    roundtrip(Result(Option(U8()), None), {"kind": "ok"}, {"kind": "ok", "value": None})


def test_flags() -> None:
    f = Flags(("read", "write-all", "exec"))
    roundtrip(f, {"read": True, "write_all": False, "exec": True})
    roundtrip(f, {"exec": True}, {"read": False, "write_all": False, "exec": True})
    roundtrip(f, {}, {"read": False, "write_all": False, "exec": False})
    many = Flags(tuple(f"f{i}" for i in range(32)))
    full = {f"f{i}": True for i in range(32)}
    roundtrip(many, full)
    cx, mem = make_cx()
    c = Compiler().codec(f)
    c.store(cx, {"read": True, "exec": True}, 8)
    assert mem.buf[8] == 0b101
    with pytest.raises(ValueError, match="unknown flag 'delete'"):
        c.store(cx, {"delete": True}, 8)
    with pytest.raises(TypeError, match=r"^\.read: expected bool"):
        c.store(cx, {"read": 1}, 8)
    # Bits beyond the labels are ignored on lift.
    assert c.lift_flat(cx, [0xFF], 0) == {"read": True, "write_all": True, "exec": True}


def test_maps() -> None:
    m = Map(String(), U32())
    roundtrip(m, [("a", 1), ("b", 2)])
    roundtrip(m, {"a": 1}, [("a", 1)])
    roundtrip(m, [])


def test_memory64() -> None:
    t = Record((Field("s", String()), Field("l", List(U16())), Field("o", Option(String()))))
    encodings: list[StringEncoding] = ["utf8", "utf16", "latin1+utf16"]
    for enc in encodings:
        v = {"s": "\u4e2dx", "l": [1, 2], "o": "\u00e9"}
        roundtrip(t, v, encoding=enc, ptr_type="i64")
    c = Compiler(ptr_type="i64").codec(String())
    assert c.size == 16 and c.align == 8 and c.flat == ("i64", "i64")


def test_paths_through_nesting() -> None:
    t = Record((Field("items", List(Record((Field("tags", List(Variant((Case("n", U8()),)))),)))),))
    cx, _ = make_cx()
    bad = {
        "items": [{"tags": []}, {"tags": [{"kind": "n", "value": 1}, {"kind": "n", "value": -1}]}]
    }
    with pytest.raises(LowerOverflowError) as e:
        Compiler().codec(t).store(cx, bad, 8)
    assert str(e.value) == ".items[1].tags[1].value: -1 is out of range for u8 (0..255)"
    with pytest.raises(LowerOverflowError):
        Compiler().codec(t).lower_flat(cx, bad, [])


def test_lower_errors_are_the_builtin_kinds() -> None:
    assert issubclass(LowerTypeError, TypeError)
    assert issubclass(LowerOverflowError, OverflowError)
    assert issubclass(LowerValueError, ValueError)


def test_memory_load_traps() -> None:
    cx, mem = make_cx(size=65536)
    c = Compiler().codec(List(U32()))
    mem.write(8, struct.pack("<II", 65536 - 4, 2))
    with pytest.raises(Trap) as e:
        c.load(cx, 8)
    assert e.value.code == TrapCode.OUT_OF_BOUNDS
    mem.write(8, struct.pack("<II", 18, 1))
    with pytest.raises(Trap) as e:
        c.load(cx, 8)
    assert e.value.code == TrapCode.MISALIGNED
    mem.write(8, struct.pack("<II", 16, 1 << 27))
    with pytest.raises(Trap) as e:
        c.load(cx, 8)
    assert e.value.code == TrapCode.LIST_TOO_LONG
    with pytest.raises(Trap):
        c.lift_flat(cx, [0xFFFFFFF0, 4], 0)


def test_lowering_writes_after_realloc_growth() -> None:
    # 1 page of memory; a 100 KB list forces the memory to grow mid-store.
    cx, mem = make_cx(size=65536)
    t = Record((Field("a", String()), Field("b", List(U8())), Field("c", String())))
    v = {"a": "x" * 10, "b": bytes(range(256)) * 400, "c": "y" * 70000}
    assert same(through_memory(Compiler().codec(t), cx, v), v)
    assert len(mem) > 65536
    assert same(through_flat(Compiler().codec(t), cx, v), v)


def test_records_of_scalars_load_through_one_struct() -> None:
    point = Record((Field("x", F32()), Field("ok", Bool()), Field("c", Char()), Field("n", S64())))
    c = Compiler().codec(point)
    assert c.load_many is not None
    assert Compiler().codec(RECORD).load_many is None
    v = [
        {"x": 1.5, "ok": True, "c": "\u00e9", "n": -(2**63)},
        {"x": math.nan, "ok": False, "c": "a", "n": 7},
    ]
    roundtrip(List(point), v)
    roundtrip(point, v[0])
    roundtrip(Tuple((U8(), F64(), Bool())), (1, -0.5, True))
    cx, mem = make_cx()
    lc = Compiler().codec(List(point))
    lc.store(cx, v, 64)
    ptr = struct.unpack_from("<I", mem.buf, 64)[0]
    assert c.size == 24  # x@0, ok@4, c@8, n@16
    second = ptr + c.size
    mem.buf[second + 4] = 9  # any nonzero byte is true
    mem.write(second, struct.pack("<I", 0xFFC00001))  # a non-canonical NaN
    back = lc.load(cx, 64)
    assert back[1]["ok"] is True
    assert struct.pack("<d", back[1]["x"]) == struct.pack("<Q", 0x7FF8000000000000)
    mem.write(second + 8, struct.pack("<I", 0xD800))
    with pytest.raises(Trap) as e:
        lc.load(cx, 64)
    assert e.value.code == TrapCode.INVALID_CHAR


def test_fused_scalar_stores_fall_back_for_everything_unusual() -> None:
    from types import MappingProxyType

    point = Record((Field("x", F32()), Field("ok", Bool()), Field("c", Char()), Field("n", U16())))
    roundtrip(
        point, {"x": 1, "ok": False, "c": "z", "n": 3}, {"x": 1.0, "ok": False, "c": "z", "n": 3}
    )
    roundtrip(
        point,
        {"x": 1e300, "ok": True, "c": "z", "n": 0},
        {"x": math.inf, "ok": True, "c": "z", "n": 0},
    )
    roundtrip(
        point,
        MappingProxyType({"x": 0.5, "ok": True, "c": "q", "n": 1}),
        {"x": 0.5, "ok": True, "c": "q", "n": 1},
    )
    cx, mem = make_cx()
    c = Compiler().codec(point)
    c.store(cx, {"x": _nan32(0xFFC00001), "ok": True, "c": "q", "n": 1}, 64)
    assert mem.read(64, 4) == struct.pack("<I", 0x7FC00000)
    with pytest.raises(OverflowError, match=r"^\.n: 65536 is out of range"):
        c.store(cx, {"x": 0.5, "ok": True, "c": "q", "n": 65536}, 64)
    with pytest.raises(TypeError, match=r"^\.ok: expected bool"):
        c.store(cx, {"x": 0.5, "ok": 1, "c": "q", "n": 1}, 64)
    with pytest.raises(ValueError, match=r"^\.c: surrogate"):
        c.store(cx, {"x": 0.5, "ok": True, "c": "\udc00", "n": 1}, 64)
    with pytest.raises(TypeError, match="missing field 'n'"):
        c.store(cx, {"x": 0.5, "ok": True, "c": "q"}, 64)
    pair = Tuple((S8(), F64()))
    roundtrip(pair, [-1, 2], (-1, 2.0))
    with pytest.raises(ValueError, match="tuple of 2 elements, got 3"):
        Compiler().codec(pair).store(cx, (1, 2.0, 3), 64)
    with pytest.raises(OverflowError, match=r"^\[0\]: 128"):
        Compiler().codec(pair).store(cx, (128, 2.0), 64)


def test_uncompiled_spec_named_entry_points() -> None:
    from polyengine.abi.compile import lift_flat, load, lower_flat, store

    cx, _ = make_cx("utf16")
    t = Record((Field("name", String()), Field("n", U8())))
    store(cx, {"name": "\u4e2d", "n": 3}, t, 64)
    assert load(cx, 64, t) == {"name": "\u4e2d", "n": 3}
    flat = lower_flat(cx, {"name": "x", "n": 4}, t)
    assert len(flat) == 3
    assert lift_flat(cx, flat, t) == {"name": "x", "n": 4}
