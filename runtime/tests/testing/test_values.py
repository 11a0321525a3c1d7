"""Wast JSON values decode to the python-mapping.md §2 shapes and compare sensibly."""

from __future__ import annotations

import math

import pytest

from polyengine.testing.values import FlagsValue, from_wast, values_equal


def v(kind: str, value: object) -> dict[str, object]:
    return {"type": kind, "value": value}


@pytest.mark.parametrize(
    ("wast", "python"),
    [
        (v("u32", "42"), 42),
        (v("s8", "-8"), -8),
        (v("u64", "18446744073709551615"), 2**64 - 1),
        (v("bool", True), True),
        (v("char", "Z"), "Z"),
        (v("string", "☃"), "☃"),
        (v("enum", "red"), "red"),
        (v("f32", "1084227584"), 5.0),
        (v("f64", "4621256167635550208"), 9.0),
        (v("list", [v("u32", "1"), v("u32", "2")]), [1, 2]),
        (v("list", [v("u8", "1"), v("u8", "255")]), b"\x01\xff"),
        (v("list", []), []),
        (v("tuple", [v("string", "x="), v("bool", False)]), ("x=", False)),
        (
            v("record", [["s-field", v("string", "v")], ["n", v("u32", "7")]]),
            {"s_field": "v", "n": 7},
        ),
        (v("variant", {"case": "s", "payload": v("string", "hi")}), {"kind": "s", "value": "hi"}),
        (v("variant", {"case": "none"}), {"kind": "none"}),
        (v("option", v("u32", "5")), 5),
        (v("option", None), None),
        (v("option", v("option", v("u32", "5"))), {"kind": "some", "value": 5}),
        (v("option", v("option", None)), {"kind": "none"}),
        (v("result", {"Ok": v("string", "yo")}), {"kind": "ok", "value": "yo"}),
        (v("result", {"Err": None}), {"kind": "err"}),
        (v("flags", ["a", "c-d"]), {"a": True, "c_d": True}),
    ],
)
def test_from_wast(wast: dict[str, object], python: object) -> None:
    decoded = from_wast(wast)
    assert decoded == python
    assert type(decoded) is type(python) or isinstance(decoded, FlagsValue)
    assert values_equal(decoded, python)


def test_nan() -> None:
    assert math.isnan(from_wast(v("f32", "nan:canonical")))  # type: ignore[arg-type]
    nan = from_wast(v("f64", "nan:arithmetic"))
    assert values_equal(nan, math.nan)
    assert not values_equal(nan, 1.0)


@pytest.mark.parametrize(
    ("wast", "message"),
    [
        (v("u8", "256"), "out of range"),
        (v("s8", "-129"), "out of range"),
        (v("u32", 5), "decimal string"),
        (v("char", "ab"), "one code point"),
        (v("bool", "true"), "true or false"),
        (v("variant", {"payload": None}), "must have a case"),
        (v("result", {"Maybe": None}), "Ok or Err"),
        (v("record", [["a"]]), "record field"),
        (v("stream", 1), "unknown wast value type 'stream'"),
        ({"value": 1}, "not a wast value"),
    ],
)
def test_malformed_values_are_named(wast: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        from_wast(wast)


def test_values_equal_rules() -> None:
    flags = from_wast(v("flags", ["a"]))
    assert values_equal(flags, {"a": True, "b": False})
    assert not values_equal(flags, {"a": True, "b": True})
    assert not values_equal(flags, {"a": False})
    assert values_equal(b"\x01\x02", [1, 2])
    assert values_equal([1, 2], b"\x01\x02")
    assert not values_equal(b"\x01", [1, 2])
    assert not values_equal(True, 1)
    assert not values_equal(1, True)
    assert not values_equal(1, 1.0)
    assert not values_equal((1, 2), [1, 2])
    assert not values_equal({"kind": "ok"}, {"kind": "ok", "value": None})
    assert values_equal({"x": [1.5, math.nan]}, {"x": [1.5, math.nan]})
    assert not values_equal("a", b"a")
