"""WIT value syntax: typed parsing into python-mapping.md §2 shapes, and printing back."""

from __future__ import annotations

import math
from typing import Any

import pytest

from polyengine.cli._wave import (
    WaveError,
    format_results,
    format_value,
    parse_args,
    parse_call,
    parse_value,
)
from polyengine.types.model import (
    F32,
    F64,
    S8,
    S64,
    U8,
    U32,
    U64,
    Bool,
    Case,
    Char,
    Enum,
    Field,
    Flags,
    List,
    Option,
    Record,
    Result,
    String,
    Tuple,
    ValType,
    Variant,
)

POINT = Record((Field("x", S8()), Field("label-text", String()), Field("note", Option(String()))))
SHAPE = Variant((Case("circle", U32()), Case("named", String()), Case("empty", None)))
PERMS = Flags(("read", "write", "exec-all"))
COLOR = Enum(("red", "blue-ish", "ok"))
RES = Result(U32(), String())

# (type, text, Python value, canonical text)
CASES: list[tuple[ValType, str, Any, str]] = [
    (Bool(), "true", True, "true"),
    (U8(), "255", 255, "255"),
    (S8(), "-128", -128, "-128"),
    (U64(), "18446744073709551615", 2**64 - 1, "18446744073709551615"),
    (S64(), "-9223372036854775808", -(2**63), "-9223372036854775808"),
    (F64(), "0.1", 0.1, "0.1"),
    (F64(), "1e21", 1e21, "1000000000000000000000"),
    (F64(), "2", 2.0, "2"),
    (F64(), "-inf", -math.inf, "-inf"),
    (F32(), "3.14", 3.140000104904175, "3.14"),
    (Char(), "'x'", "x", "'x'"),
    (Char(), "'\\u{1F600}'", "\U0001f600", "'\U0001f600'"),
    (Char(), "'\\''", "'", "'\\''"),
    (String(), '"a\\tb\\n\\"q\\""', 'a\tb\n"q"', '"a\\tb\\n\\"q\\""'),
    (String(), '"\\u{7}"', "\x07", '"\\u{7}"'),
    (List(U32()), "[1, 2, 3,]", [1, 2, 3], "[1, 2, 3]"),
    (List(U8()), "[0, 255]", b"\x00\xff", "[0, 255]"),
    (Tuple((U8(), String())), '(1, "a")', (1, "a"), '(1, "a")'),
    (
        POINT,
        '{label-text: "p", x: 1}',
        {"x": 1, "label_text": "p", "note": None},
        '{x: 1, label-text: "p"}',
    ),
    (
        POINT,
        '{x: 1, label-text: "p", note: "n"}',
        {"x": 1, "label_text": "p", "note": "n"},
        '{x: 1, label-text: "p", note: some("n")}',
    ),
    (Record((Field("o", Option(U8())),)), "{:}", {"o": None}, "{:}"),
    (SHAPE, "circle(3)", {"kind": "circle", "value": 3}, "circle(3)"),
    (SHAPE, "empty", {"kind": "empty"}, "empty"),
    (
        PERMS,
        "{exec-all, read}",
        {"read": True, "write": False, "exec_all": True},
        "{read, exec-all}",
    ),
    (PERMS, "{}", {"read": False, "write": False, "exec_all": False}, "{}"),
    (COLOR, "blue-ish", "blue-ish", "blue-ish"),
    (COLOR, "%ok", "ok", "%ok"),
    (Option(String()), "none", None, "none"),
    (Option(String()), '"flat"', "flat", 'some("flat")'),
    (Option(Option(U32())), "some(none)", {"kind": "none"}, "some(none)"),
    (Option(Option(U32())), "some(some(4))", {"kind": "some", "value": 4}, "some(some(4))"),
    (Option(Option(U32())), "none", None, "none"),
    (RES, "ok(1)", {"kind": "ok", "value": 1}, "ok(1)"),
    (RES, "7", {"kind": "ok", "value": 7}, "ok(7)"),
    (RES, 'err("e")', {"kind": "err", "value": "e"}, 'err("e")'),
    (Result(None, None), "err", {"kind": "err"}, "err"),
    (List(Option(U8())), "[1, none] // comment", [1, None], "[some(1), none]"),
]


@pytest.mark.parametrize(("t", "text", "value", "canonical"), CASES)
def test_parse_and_format(t: ValType, text: str, value: Any, canonical: str) -> None:
    parsed = parse_value(text, t)
    assert parsed == value
    assert type(parsed) is type(value)
    assert format_value(parsed, t) == canonical
    assert parse_value(canonical, t) == value


def test_nan_and_negative_zero() -> None:
    assert math.isnan(parse_value("nan", F64()))
    assert format_value(math.nan, F32()) == "nan"
    assert format_value(-0.0, F64()) == "-0"


def test_multiline_string() -> None:
    text = '"""\n    first\n      second\n    """'
    assert parse_value(text, String()) == "first\n  second"


@pytest.mark.parametrize(
    ("t", "text", "reason"),
    [
        (U8(), "256", "out of range"),
        (U8(), "-0", "is not a u8"),
        (U32(), "1.5", "is not a u32"),
        (U32(), '"1"', "expected u32"),
        (Char(), "'ab'", "invalid token"),
        (String(), '"\\q"', "invalid token"),
        (String(), '"\\u{D800}"', "not a Unicode scalar value"),
        (POINT, '{x: 1, x: 2, label-text: ""}', "duplicate field"),
        (POINT, "{x: 1}", "missing field 'label-text'"),
        (POINT, '{x: 1, label-text: "", y: 2}', "unknown field 'y'"),
        (PERMS, "{read, read}", "duplicate flag"),
        (PERMS, "{nope}", "unknown flag"),
        (COLOR, "ok", "expected enum"),
        (SHAPE, "circle", "missing payload"),
        (SHAPE, "empty(1)", "unexpected payload"),
        (SHAPE, "square", "unknown variant case"),
        (Option(Option(U32())), "4", "expected option"),
        (Tuple((U8(), U8())), "(1)", "expected 2 tuple values"),
        (List(U8()), "[1, 2", "unexpected end of input"),
        (U8(), "1 2", "trailing characters"),
        (Tuple((U8(),)), "()", "empty tuple"),
    ],
)
def test_parse_errors(t: ValType, text: str, reason: str) -> None:
    with pytest.raises(WaveError, match=reason):
        parse_value(text, t)


def test_parse_call_names() -> None:
    assert parse_call("add(1, 2)").item == (None, "add")
    call = parse_call('ns:pkg/iface.greet@1.2.3("x")')
    assert call.item == ("ns:pkg/iface@1.2.3", "greet")
    assert parse_call("iface.f()").item == ("iface", "f")
    assert parse_call("f()").args == []
    with pytest.raises(WaveError, match="expected"):
        parse_call("add 1")
    with pytest.raises(WaveError):
        parse_call("(1)")


def test_parse_args_trailing_options() -> None:
    params = [("a", U8()), ("b", Option(U8())), ("c", Option(U8()))]
    assert parse_args(parse_call("f(1)"), params) == [1, None, None]
    assert parse_args(parse_call("f(1, 2)"), params) == [1, 2, None]
    with pytest.raises(WaveError, match="missing required param"):
        parse_args(parse_call("f(none)"), [("a", Option(U8())), ("b", U8())])
    with pytest.raises(WaveError, match="takes 3 argument"):
        parse_args(parse_call("f(1, 2, 3, 4)"), params)
    with pytest.raises(WaveError, match="no arguments given"):
        parse_args(parse_call("f()"), [("a", Option(U8()))])


def test_format_results() -> None:
    assert format_results(None, None) == "()"
    assert format_results(3, U32()) == "3"
