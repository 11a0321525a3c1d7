"""The embed executor: wast instance commands run through ``polyengine.instantiate``."""

from __future__ import annotations

import io
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from polyengine.testing import Status, WastRunner, XfailList
from polyengine.testing._runner import find_wasm_tools
from polyengine.testing._xfail import DEFAULT_XFAIL_FILE
from polyengine.testing.embed_executor import (
    DEFAULT_EQUIVALENTS_FILE,
    EmbedExecutor,
    TrapEquivalents,
)

SUITE = os.environ.get("POLYENGINE_CM_SUITE")

VALUES = """
(component
  (core module $M
    (memory (export "mem") 1)
    (global $n (mut i32) (i32.const 0))
    (data (i32.const 16) "hello")
    (func (export "answer") (result i32) i32.const 42)
    (func (export "echo") (param i32) (result i32) local.get 0)
    (func (export "boom") unreachable)
    (func (export "bump") (result i32)
      (global.set $n (i32.add (global.get $n) (i32.const 1)))
      global.get $n)
    (func (export "greet") (result i32)
      (i32.store (i32.const 64) (i32.const 16))
      (i32.store (i32.const 68) (i32.const 5))
      i32.const 64)
    (func (export "ok") (result i32)
      (i32.store8 (i32.const 32) (i32.const 0))
      (i32.store (i32.const 36) (i32.const 7))
      i32.const 32)
    (func (export "err") (result i32)
      (i32.store8 (i32.const 48) (i32.const 1))
      (i32.store (i32.const 52) (i32.const 16))
      (i32.store (i32.const 56) (i32.const 5))
      i32.const 48)
    (func (export "pair") (result i32)
      (i32.store8 (i32.const 80) (i32.const 1))
      (i32.store16 (i32.const 82) (i32.const 513))
      i32.const 80)
  )
  (core instance $m (instantiate $M))
  (type $r (result u32 (error string)))
  (type $pair (record (field "flag" bool) (field "big-num" u16)))
  (export $pair' "pair-t" (type $pair))
  (func (export "answer") (result u32) (canon lift (core func $m "answer")))
  (func (export "echo-flag") (param "b" bool) (result bool) (canon lift (core func $m "echo")))
  (func (export "echo-char") (param "c" char) (result char) (canon lift (core func $m "echo")))
  (func (export "boom") (canon lift (core func $m "boom")))
  (func (export "bump") (result u32) (canon lift (core func $m "bump")))
  (func (export "greet") (result string)
    (canon lift (core func $m "greet") (memory (core memory $m "mem"))))
  (func (export "ok") (result $r)
    (canon lift (core func $m "ok") (memory (core memory $m "mem"))))
  (func (export "err") (result $r)
    (canon lift (core func $m "err") (memory (core memory $m "mem"))))
  (func (export "pair") (result $pair')
    (canon lift (core func $m "pair") (memory (core memory $m "mem"))))
)
"""

TRAPPING_START = """
(component
  (core module $M (func $start unreachable) (start $start))
  (core instance (instantiate $M))
)
"""

NEEDS_IMPORT = """
(component
  (import "host-log" (func $log (param "x" u32)))
  (core func $log' (canon lower (func $log)))
  (core module $M (import "" "log" (func (param i32))))
  (core instance (instantiate $M (with "" (instance (export "log" (func $log'))))))
)
"""


def u32(n: int) -> dict[str, object]:
    return {"type": "u32", "value": str(n)}


def invoke(field: str, *args: dict[str, object], module: str | None = None) -> dict[str, object]:
    action: dict[str, object] = {"type": "invoke", "field": field, "args": list(args)}
    if module is not None:
        action["module"] = module
    return action


Suite = Callable[[dict[str, str], list[dict[str, object]]], Path]


@pytest.fixture
def suite(tmp_path: Path) -> Suite:
    """Write components (compiled with ``wasm-tools parse``) and a command list as a wast JSON."""
    tools = find_wasm_tools()
    if tools is None:
        pytest.skip("needs the wasm-tools CLI to compile the test components")

    def make(components: dict[str, str], commands: list[dict[str, object]]) -> Path:
        directory = tmp_path / "synthetic" / "case"
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in components.items():
            source = directory / f"{name}.wat"
            source.write_text(text, encoding="utf-8")
            subprocess.run(
                [str(tools), "parse", str(source), "-o", str(directory / f"{name}.wasm")],
                check=True,
                timeout=60,
            )
        path = directory / "case.json"
        path.write_text(json.dumps({"commands": commands}), encoding="utf-8")
        return path

    return make


def run(
    path: Path, executor: Callable[[], EmbedExecutor] = EmbedExecutor
) -> dict[int, tuple[Status, str]]:
    result = WastRunner(executor_factory=executor).run_file(path)
    return {r.line: (r.status, r.message) for r in result.results}


def module(line: int, name: str = "values", **extra: object) -> dict[str, object]:
    return {
        "type": "module",
        "line": line,
        "filename": f"{name}.wasm",
        "module_type": "binary",
        **extra,
    }


def test_values_pass_and_a_wrong_expected_value_fails(suite: Suite) -> None:
    path = suite(
        {"values": VALUES},
        [
            module(1),
            {"type": "assert_return", "line": 2, "action": invoke("answer"), "expected": [u32(42)]},
            {"type": "assert_return", "line": 3, "action": invoke("answer"), "expected": [u32(41)]},
            {
                "type": "assert_return",
                "line": 4,
                "action": invoke("echo-flag", {"type": "bool", "value": True}),
                "expected": [{"type": "bool", "value": True}],
            },
            {
                "type": "assert_return",
                "line": 5,
                "action": invoke("echo-char", {"type": "char", "value": "☃"}),
                "expected": [{"type": "char", "value": "☃"}],
            },
            {
                "type": "assert_return",
                "line": 6,
                "action": invoke("greet"),
                "expected": [{"type": "string", "value": "hello"}],
            },
            {
                "type": "assert_return",
                "line": 7,
                "action": invoke("ok"),
                "expected": [{"type": "result", "value": {"Ok": u32(7)}}],
            },
            {
                "type": "assert_return",
                "line": 8,
                "action": invoke("err"),
                "expected": [
                    {"type": "result", "value": {"Err": {"type": "string", "value": "hello"}}}
                ],
            },
            {
                "type": "assert_return",
                "line": 9,
                "action": invoke("err"),
                "expected": [{"type": "result", "value": {"Ok": u32(7)}}],
            },
            {
                "type": "assert_return",
                "line": 10,
                "action": invoke("pair"),
                "expected": [
                    {
                        "type": "record",
                        "value": [
                            ["flag", {"type": "bool", "value": True}],
                            ["big-num", {"type": "u16", "value": "513"}],
                        ],
                    }
                ],
            },
            {"type": "assert_return", "line": 11, "action": invoke("answer"), "expected": []},
            {"type": "assert_return", "line": 12, "action": invoke("missing"), "expected": []},
            {"type": "action", "line": 13, "action": invoke("answer")},
        ],
    )
    results = run(path)
    statuses = {line: status for line, (status, _) in results.items()}
    assert statuses == {
        1: Status.PASSED,
        2: Status.PASSED,
        3: Status.FAILED,
        4: Status.PASSED,
        5: Status.PASSED,
        6: Status.PASSED,
        7: Status.PASSED,
        8: Status.PASSED,
        9: Status.FAILED,
        10: Status.PASSED,
        11: Status.FAILED,
        12: Status.FAILED,
        13: Status.PASSED,
    }, results
    assert results[3][1] == "answer returned 42, expected 41"
    assert "{'kind': 'err', 'value': 'hello'}" in results[9][1]
    assert results[11][1] == "answer has 1 result(s), 0 expected"
    assert results[12][1].startswith("cannot find export: no export named 'missing'")


def test_trap_text_is_matched(suite: Suite) -> None:
    path = suite(
        {"values": VALUES},
        [
            module(1),
            {"type": "assert_trap", "line": 2, "action": invoke("answer"), "text": "unreachable"},
            {"type": "assert_trap", "line": 3, "action": invoke("boom"), "text": "out of fuel"},
            module(4),
            {"type": "assert_trap", "line": 5, "action": invoke("boom"), "text": "unreachable"},
            # a trap poisons the instance: the next call traps too
            {"type": "assert_trap", "line": 6, "action": invoke("answer"), "text": "poisoned"},
        ],
    )
    results = run(path)
    assert results[2] == (Status.FAILED, "answer returned 42; expected a trap: unreachable")
    assert results[3][0] is Status.FAILED
    assert results[3][1].startswith("trapped with ") and results[3][1].endswith(
        "expected 'out of fuel'"
    )
    assert results[5][0] is Status.PASSED and "(substring)" in results[5][1]
    assert results[6][0] is Status.PASSED


def test_equivalents_table_pairs_wordings(suite: Suite) -> None:
    path = suite(
        {"values": VALUES},
        [
            module(1),
            {"type": "assert_trap", "line": 2, "action": invoke("boom"), "text": "it went bang"},
        ],
    )
    assert run(path)[2][0] is Status.FAILED
    table = TrapEquivalents.parse("went bang | unreachable | both name the unreachable trap")
    status, message = run(path, lambda: EmbedExecutor(table))[2]
    assert status is Status.PASSED
    assert "equivalent wording: both name the unreachable trap" in message


def test_equivalents_parse() -> None:
    table = TrapEquivalents.parse("# comment\n\n a | b | why \n")
    assert table.match("xx a yy", "zz b") == "equivalent wording: why"
    assert table.match("xx a yy", "zz c") is None
    assert table.match("abc", "xx abc yy") == "substring"
    with pytest.raises(ValueError, match=r"<string>:1: expected"):
        TrapEquivalents.parse("a | b")
    with pytest.raises(ValueError, match=r"<string>:2: expected"):
        TrapEquivalents.parse("a | b | c\na |  | c")


def test_committed_equivalents_table_parses() -> None:
    table = TrapEquivalents.load(DEFAULT_EQUIVALENTS_FILE)
    assert all(e.expected and e.ours and e.reason for e in table.entries)


def test_named_instances_are_separate(suite: Suite) -> None:
    definition = {
        "type": "module_definition",
        "line": 1,
        "name": "D",
        "filename": "values.wasm",
        "module_type": "binary",
    }
    path = suite(
        {"values": VALUES},
        [
            definition,
            {"type": "module_instance", "line": 2, "instance": "a", "module": "D"},
            {"type": "assert_return", "line": 3, "action": invoke("bump"), "expected": [u32(1)]},
            {"type": "module_instance", "line": 4, "instance": "b", "module": "D"},
            {"type": "assert_return", "line": 5, "action": invoke("bump"), "expected": [u32(1)]},
            {
                "type": "assert_return",
                "line": 6,
                "action": invoke("bump", module="a"),
                "expected": [u32(2)],
            },
            {
                "type": "assert_return",
                "line": 7,
                "action": invoke("bump", module="nope"),
                "expected": [u32(1)],
            },
        ],
    )
    results = run(path)
    assert [results[line][0] for line in range(1, 7)] == [Status.PASSED] * 6, results
    assert results[7] == (Status.FAILED, "no instance named 'nope'")


def test_instantiation_commands(suite: Suite) -> None:
    path = suite(
        {"values": VALUES, "start": TRAPPING_START, "imports": NEEDS_IMPORT},
        [
            {
                "type": "assert_uninstantiable",
                "line": 1,
                "filename": "start.wasm",
                "module_type": "binary",
                "text": "unreachable",
            },
            {
                "type": "assert_uninstantiable",
                "line": 2,
                "filename": "values.wasm",
                "module_type": "binary",
                "text": "unreachable",
            },
            {
                "type": "assert_unlinkable",
                "line": 3,
                "filename": "imports.wasm",
                "module_type": "binary",
                "text": "was not found",
            },
            {
                "type": "assert_unlinkable",
                "line": 4,
                "filename": "values.wasm",
                "module_type": "binary",
                "text": "unknown import",
            },
            module(5, "imports"),
            {"type": "assert_return", "line": 6, "action": invoke("answer"), "expected": []},
            module(7, "start"),
            {"type": "assert_return", "line": 8, "action": invoke("answer"), "expected": []},
            {"type": "register", "line": 9, "name": "x"},
        ],
    )
    results = run(path)
    assert results[1][0] is Status.PASSED, results[1]
    assert results[2] == (
        Status.FAILED,
        "instantiation succeeded; expected a trap: unreachable",
    )
    assert results[3][0] is Status.PASSED and results[3][1].startswith("link error (substring)")
    assert "import 'host-log' was not found" in results[3][1]
    assert results[4][0] is Status.FAILED
    # the runner reports the translation as checked and the instantiation as skipped
    assert results[5][0] is Status.PASSED
    assert results[5][1].endswith(
        "instantiation skipped: imports the harness cannot provide: host-log (func)"
    )
    assert results[6][0] is Status.SKIPPED
    assert results[7][0] is Status.FAILED
    assert results[7][1].startswith("instantiation failed: Trap")
    assert results[8][0] is Status.FAILED
    assert results[8][1].startswith("the instance of line 7 does not exist")
    assert results[9] == (Status.FAILED, "register without an 'as' name")


def test_close_releases_the_event_loop(suite: Suite) -> None:
    path = suite({"values": VALUES}, [module(1)])
    made: list[EmbedExecutor] = []

    def factory() -> EmbedExecutor:
        made.append(EmbedExecutor())
        return made[-1]

    WastRunner(executor_factory=factory).run_file(path)
    (executor,) = made
    assert executor.closed
    executor.close()  # idempotent


@pytest.mark.slow
@pytest.mark.skipif(not SUITE, reason="POLYENGINE_CM_SUITE is not set (converted official suite)")
def test_official_suite_with_the_embed_executor() -> None:
    """Each command of the converted suite passes, is a listed xfail or is skipped."""
    assert SUITE is not None
    runner = WastRunner(executor_factory=EmbedExecutor, xfails=XfailList.load(DEFAULT_XFAIL_FILE))
    files = runner.run_paths([Path(SUITE)])
    failures = [
        f"{f.id}:{r.line} {r.type}: {r.message}"
        for f in files
        for r in f.results
        if r.status is Status.FAILED
    ]
    assert not failures, "\n".join(failures)
    assert sum(f.count(Status.PASSED) for f in files) > 0
    # every entry of the committed equivalents table is needed by some command
    matched = [r.message for f in files for r in f.results if "equivalent wording: " in r.message]
    table = TrapEquivalents.load(DEFAULT_EQUIVALENTS_FILE)
    unused = [
        e.expected
        for e in table.entries
        if not any(f"equivalent wording: {e.reason}" in m for m in matched)
    ]
    assert not unused, f"equivalents no command needs: {unused}"


def test_command_line_runs_the_embed_executor_by_default(suite: Suite) -> None:
    from polyengine.testing import wast
    from polyengine.translate import translate_component

    assert wast.default_executor(translate_component) == "embed"
    assert wast.default_executor(lambda data: None) == "none"
    assert wast.default_executor(None) == "none"
    path = suite(
        {"values": VALUES},
        [
            module(1),
            {"type": "assert_return", "line": 2, "action": invoke("answer"), "expected": [u32(42)]},
        ],
    )
    out = io.StringIO()
    assert wast.main([str(path), "--no-xfail"], out=out) == 0, out.getvalue()
    assert out.getvalue().strip().splitlines()[-1] == "2 passed, 0 failed, 0 xfail, 0 skipped"
    out = io.StringIO()
    assert wast.main([str(path), "--no-xfail", "--executor", "none"], out=out) == 0
    assert out.getvalue().strip().splitlines()[-1] == "1 passed, 0 failed, 0 xfail, 1 skipped"


def test_actions_after_a_module_that_made_no_instance(suite: Suite) -> None:
    path = suite(
        {"values": VALUES},
        [
            module(1),
            module(2, "broken"),
            {"type": "assert_return", "line": 3, "action": invoke("answer"), "expected": [u32(42)]},
            module(4),
            {"type": "module_instance", "line": 5, "instance": "i", "module": "nope"},
            {"type": "assert_return", "line": 6, "action": invoke("answer"), "expected": [u32(42)]},
        ],
    )
    (path.parent / "broken.wasm").write_bytes(b"\0asm\x0d\x00\x01\x00\x07")
    results = run(path)
    assert results[2][0] is Status.FAILED and results[2][1].startswith("translation failed")
    # the action does not reach the instance of line 1
    assert results[3][0] is Status.FAILED
    assert results[3][1].startswith("the instance of line 2 does not exist: translation failed")
    assert results[5] == (Status.FAILED, "module_instance of an unknown module 'nope'")
    assert results[6] == (
        Status.FAILED,
        "the instance of line 5 does not exist: module_instance of an unknown module 'nope'",
    )


INTERFACE = """
(component
  (core module $M (func (export "get") (result i32) i32.const 5))
  (core instance $m (instantiate $M))
  (func $get (result u32) (canon lift (core func $m "get")))
  (instance $i (export "get" (func $get)))
  (export "test:pkg/iface" (instance $i))
)
"""


def test_interface_functions_by_hash_name(suite: Suite) -> None:
    path = suite(
        {"iface": INTERFACE},
        [
            module(1, "iface"),
            {
                "type": "assert_return",
                "line": 2,
                "action": invoke("test:pkg/iface#get"),
                "expected": [u32(5)],
            },
            {
                "type": "assert_return",
                "line": 3,
                "action": invoke("test:pkg/iface#nope"),
                "expected": [u32(5)],
            },
            {"type": "assert_return", "line": 4, "action": invoke("get"), "expected": [u32(5)]},
        ],
    )
    results = run(path)
    assert results[2][0] is Status.PASSED, results[2]
    assert results[3][0] is Status.FAILED
    assert results[3][1].startswith("cannot find export: no export named 'nope'")
    assert results[4][0] is Status.FAILED
    assert "no export named 'get'" in results[4][1]
