"""The embed executor runs instances through polyengine.instantiate."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from polyengine.testing import Status, WastRunner
from polyengine.testing._runner import find_translator, find_wasm_tools
from polyengine.testing.embed_executor import EmbedExecutor

COMPONENT = """
(component
  (core module $M
    (func (export "answer") (result i32) i32.const 42)
    (func (export "echo") (param i32) (result i32) local.get 0)
    (func (export "boom") unreachable))
  (core instance $m (instantiate $M))
  (func (export "answer") (result u32) (canon lift (core func $m "answer")))
  (func (export "echo-flag") (param "b" bool) (result bool) (canon lift (core func $m "echo")))
  (func (export "boom") (canon lift (core func $m "boom")))
)
"""


def invoke(field: str, *args: dict[str, object]) -> dict[str, object]:
    return {"type": "invoke", "field": field, "args": list(args)}


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    tools = find_wasm_tools()
    translate, _why = find_translator()
    if tools is None or translate is None:
        pytest.skip("needs wasm-tools and the translator")
    directory = tmp_path / "exec" / "basic"
    directory.mkdir(parents=True)
    (directory / "c.wat").write_text(COMPONENT, encoding="utf-8")
    subprocess.run(
        [str(tools), "parse", str(directory / "c.wat"), "-o", str(directory / "c.wasm")],
        check=True,
        timeout=60,
    )
    u32_42 = {"type": "u32", "value": "42"}
    true = {"type": "bool", "value": True}
    commands = [
        {"type": "module", "line": 1, "filename": "c.wasm", "module_type": "binary"},
        {"type": "assert_return", "line": 2, "action": invoke("answer"), "expected": [u32_42]},
        {
            "type": "assert_return",
            "line": 3,
            "action": invoke("answer"),
            "expected": [{"type": "u32", "value": "41"}],
        },
        {
            "type": "assert_return",
            "line": 4,
            "action": invoke("echo-flag", true),
            "expected": [true],
        },
        {"type": "assert_trap", "line": 5, "action": invoke("answer"), "text": "unreachable"},
        {"type": "action", "line": 6, "action": invoke("answer")},
        {"type": "assert_return", "line": 7, "action": invoke("missing"), "expected": []},
        {"type": "assert_trap", "line": 8, "action": invoke("boom"), "text": "unreachable"},
        # a trap poisons the instance: later calls trap too
        {"type": "assert_trap", "line": 9, "action": invoke("answer"), "text": "poisoned"},
    ]
    path = directory / "basic.json"
    path.write_text(json.dumps({"commands": commands}), encoding="utf-8")
    return path


def test_embed_executor(suite: Path) -> None:
    result = WastRunner(executor_factory=EmbedExecutor).run_file(suite)
    by_line = {r.line: r for r in result.results}
    assert [(r.line, r.status) for r in result.results] == [
        (1, Status.PASSED),
        (2, Status.PASSED),
        (3, Status.FAILED),
        (4, Status.PASSED),
        (5, Status.FAILED),
        (6, Status.PASSED),
        (7, Status.FAILED),
        (8, Status.PASSED),
        (9, Status.PASSED),
    ], by_line
    assert by_line[1].message.endswith("instantiated")
    assert by_line[3].message == "returned 42, expected 41"
    assert by_line[5].message == "returned 42, expected a trap (unreachable)"
    assert by_line[7].message.startswith("raised AttributeError")


def test_embed_executor_closes(suite: Path) -> None:
    made: list[EmbedExecutor] = []

    def factory() -> EmbedExecutor:
        made.append(EmbedExecutor())
        return made[-1]

    WastRunner(executor_factory=factory).run_file(suite)
    (executor,) = made
    assert executor._loop.is_closed()
