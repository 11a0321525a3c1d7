"""``polyengine run --invoke`` and ``polyengine invoke``: WIT-syntax calls of exports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import components as c

Build = Callable[[str, str], Path]
Runner = Callable[..., Any]

#: (call, printed result): every value kind both ways through the guest.
CALLS: list[tuple[str, str]] = [
    ("add(1, 2)", "3"),
    ("add(4294967295, 1)", "0"),
    ("echo-u8(255)", "255"),
    ("echo-s32(-5)", "-5"),
    ("echo-s64(-9223372036854775808)", "-9223372036854775808"),
    ("echo-u64(18446744073709551615)", "18446744073709551615"),
    ("echo-f32(3.14)", "3.14"),
    ("echo-f32(16777217)", "16777216"),
    ("echo-f64(0.1)", "0.1"),
    ("echo-f64(1e21)", "1000000000000000000000"),
    ("echo-f64(-inf)", "-inf"),
    ("echo-f64(nan)", "nan"),
    ("echo-bool(true)", "true"),
    ("echo-char('☃')", "'☃'"),
    ("echo-char('\\u{7f}')", "'\\u{7f}'"),
    ('echo-string("a\\"b\\\\c\\n\\t☃\\u{1}")', '"a\\"b\\\\c\\n\\t☃\\u{1}"'),
    ('echo-string("it\'s")', '"it\\\'s"'),
    ("echo-list([1, 2, 3,])", "[1, 2, 3]"),
    ("echo-list([])", "[]"),
    ("echo-bytes([0, 255])", "[0, 255]"),
    ('echo-strings(["a", "", "ü"])', '["a", "", "ü"]'),
    ("sum([1, 2, 3, 4])", "10"),
    ("nothing()", "()"),
    ('echo-point({x: 1, y: -2, label-text: "hi"})', '{x: 1, y: -2, label-text: "hi"}'),
    ('echo-point({label-text: "", y: 2, x: 1})', '{x: 1, y: 2, label-text: ""}'),
    ("echo-shape(circle(3))", "circle(3)"),
    ('echo-shape(named("n"))', 'named("n")'),
    ("echo-shape(empty)", "empty"),
    ("echo-option(none)", "none"),
    ('echo-option("flat")', 'some("flat")'),
    ('echo-option(some("x"))', 'some("x")'),
    ("echo-result(ok(1))", "ok(1)"),
    ("echo-result(5)", "ok(5)"),
    ('echo-result(err("bad"))', 'err("bad")'),
    ('echo-tuple((1, "t"))', '(1, "t")'),
    ("echo-perms({write, read})", "{read, write}"),
    ("echo-perms({})", "{}"),
    ("echo-color(blue-ish)", "blue-ish"),
    ("echo-color(%ok)", "%ok"),
    ("echo-opt-opt(some(none))", "some(none)"),
    ("echo-opt-opt(some(some(4)))", "some(some(4))"),
    ("echo-opt-opt(none)", "none"),
    ("echo-opt-rec({id: 1})", "{id: 1}"),
    ('echo-opt-rec({id: 1, note: "n"})', '{id: 1, note: some("n")}'),
    ("double(4)", "8"),
    ("example:values/iface.double@0.1.0(6)", "12"),
    ("example:values/iface.double@0.1.1(7)", "14"),
    ("add(1,2,)", "3"),
    ("add (1, 2)", "3"),
    ("add(1, // one\n 2)", "3"),
    ("echo-shape(%circle(3))", "circle(3)"),
    ("echo-f64(1E5)", "100000"),
    ("echo-f32(1e39)", "inf"),
    ("echo-f32(-1e-50)", "-0"),
    ('echo-string("\\u{10FFFF}")', '"\\u{10ffff}"'),
]


@pytest.mark.parametrize(("call", "printed"), CALLS)
def test_run_invoke(build: Build, polyengine: Runner, call: str, printed: str) -> None:
    r = polyengine("run", "--invoke", call, build("values", c.VALUES))
    assert (r.returncode, r.stdout, r.stderr) == (0, printed + "\n", "")


def test_invoke_verb(build: Build, polyengine: Runner) -> None:
    r = polyengine("invoke", build("values", c.VALUES), 'echo-point({x: 3, y: 4, label-text: "p"})')
    assert (r.returncode, r.stdout, r.stderr) == (0, '{x: 3, y: 4, label-text: "p"}\n', "")


def test_invoke_a_command_export(build: Build, polyengine: Runner) -> None:
    # wasi:cli/run's own function is an interface export like any other.
    r = polyengine("invoke", build("hello", c.hello()), "run()")
    assert (r.returncode, r.stdout, r.stderr) == (0, "Hello, world!\nok\n", "")
    r = polyengine("run", "--invoke", "wasi:cli/run.run@0.2.0()", build("hello", c.hello()))
    assert (r.returncode, r.stdout) == (0, "Hello, world!\nok\n")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("echo-u8(256)", "out of range for u8"),
        ("echo-opt-rec({id: 1, id: 2})", "duplicate field 'id'"),
        ("nope()", "no exported function named `nope`"),
        ("add(1)", "missing required param 'b'"),
        ("add(1, 2, 3)", "takes 2 argument(s), got 3"),
        ("echo-option()", "no arguments given"),
        ("echo-color(ok)", "expected enum"),
        ("echo-opt-opt(4)", "expected option<option<u32>>"),
        ("add 1", "cannot parse the call"),
        ("other:pkg/iface.double@0.1.0(1)", "no exported function named"),
        ("iface.double(5)", "no exported function named `iface.double`"),
    ],
)
def test_invoke_errors(build: Build, polyengine: Runner, call: str, message: str) -> None:
    r = polyengine("run", "--invoke", call, build("values", c.VALUES))
    assert r.returncode == 1
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    assert message in lines[0]


def test_invoke_trap(build: Build, polyengine: Runner) -> None:
    r = polyengine("invoke", build("trap", c.TRAP), "run()")
    assert r.returncode == 134
    assert r.stdout == "about to trap\n"
    assert "failed to invoke `wasi:cli/run@0.2.0#run`" in r.stderr
    assert "unreachable" in r.stderr
