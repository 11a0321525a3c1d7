"""The wast runner on small synthetic ``json-from-wast`` directories."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path

import pytest

from polyengine.errors import TranslationError
from polyengine.testing import (
    Action,
    Command,
    Executor,
    LoadedModule,
    NoExecution,
    Outcome,
    Status,
    WastRunner,
    XfailList,
    is_core_module,
)
from polyengine.testing import wast as wast_cli
from polyengine.testing._runner import discover, file_id, find_wasm_tools

EMPTY_COMPONENT = b"\0asm\x0d\x00\x01\x00"
EMPTY_CORE_MODULE = b"\0asm\x01\x00\x00\x00"


def fake_translate(data: bytes) -> object:
    """Accepts a well-formed preamble unless the bytes contain BAD; INVALID is invalid."""
    if len(data) < 8 or data[:4] != b"\0asm":
        raise TranslationError("bad preamble", 0, None)
    if b"BAD" in data:
        raise TranslationError("malformed body", 8, "custom")
    if b"INVALID" in data:
        raise TranslationError("invalid body", 8, "type")
    return ("plan", len(data))


def fake_core_validate(data: bytes) -> None:
    if b"BAD" in data:
        raise TranslationError("invalid core module", 0, "core module")


def write_suite(
    root: Path, name: str, commands: list[tuple[dict[str, object], bytes | str | None]]
) -> Path:
    """Write ``<root>/<name>/<name>.json`` with each command's file next to it."""
    directory = root / name
    directory.mkdir(parents=True)
    written = []
    for index, (original, content) in enumerate(commands):
        command = dict(original)
        if content is not None:
            suffix = "wat" if isinstance(content, str) else "wasm"
            filename = f"{name}.{index}.{suffix}"
            command["filename"] = filename
            command.setdefault("module_type", "text" if isinstance(content, str) else "binary")
            if isinstance(content, str):
                (directory / filename).write_text(content, encoding="utf-8")
            else:
                (directory / filename).write_bytes(content)
        written.append(command)
    doc = {"source_filename": f"{name}.wast", "commands": written}
    path = directory / f"{name}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def runner(**kwargs: object) -> WastRunner:
    options: dict[str, object] = {
        "translate": fake_translate,
        "validate_core": fake_core_validate,
        "use_defaults": False,
    }
    options.update(kwargs)
    return WastRunner(**options)  # type: ignore[arg-type]


def statuses(result: object) -> list[tuple[int, Status]]:
    return [(r.line, r.status) for r in result.results]  # type: ignore[attr-defined]


GOOD_FILE = [
    ({"type": "module", "line": 1}, EMPTY_COMPONENT),
    ({"type": "module_definition", "line": 3, "name": "M"}, EMPTY_COMPONENT),
    ({"type": "assert_malformed", "line": 5, "text": "unexpected end"}, b"\0asm\x0d"),
    ({"type": "assert_invalid", "line": 7, "text": "type mismatch"}, EMPTY_COMPONENT + b"INVALID"),
    (
        {
            "type": "assert_return",
            "line": 9,
            "action": {"type": "invoke", "field": "f", "args": []},
            "expected": [{"type": "u32", "value": "42"}],
        },
        None,
    ),
    ({"type": "module_instance", "line": 11, "instance": "i", "module": "M"}, None),
]


# --------------------------------------------------------------------------- counts


def test_passed_and_skipped_counts(tmp_path: Path) -> None:
    path = write_suite(tmp_path / "vals", "good", GOOD_FILE)
    result = runner().run_file(path)
    assert result.id == "vals/good"
    assert statuses(result) == [
        (1, Status.PASSED),
        (3, Status.PASSED),
        (5, Status.PASSED),
        (7, Status.PASSED),
        (9, Status.SKIPPED),
        (11, Status.SKIPPED),
    ]
    assert result.skip_reasons() == {"execution not implemented yet": 2}
    assert result.count(Status.PASSED) == 4
    assert result.commands == 6


def test_accepting_an_invalid_binary_fails(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path / "d",
        "f",
        [({"type": "assert_invalid", "line": 4, "text": "nope"}, EMPTY_COMPONENT)],
    )
    (only,) = runner().run_file(path).results
    assert only.status is Status.FAILED
    assert "translated an invalid component (expected: nope)" in only.message


def test_rejecting_a_valid_module_fails(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path / "d", "f", [({"type": "module", "line": 2}, b"\0asm\x0d\x00\x01\x00BAD")]
    )
    (only,) = runner().run_file(path).results
    assert only.status is Status.FAILED
    assert only.message.startswith("translation failed: malformed body")


def test_translator_crash_is_a_failure(tmp_path: Path) -> None:
    def crashing(data: bytes) -> object:
        raise IndexError("index out of range")

    path = write_suite(
        tmp_path / "d", "f", [({"type": "assert_malformed", "line": 1, "text": "x"}, b"\0asm")]
    )
    (only,) = runner(translate=crashing).run_file(path).results
    assert only.status is Status.FAILED
    assert only.message == "crash: IndexError: index out of range"


def test_hanging_translator_times_out(tmp_path: Path) -> None:
    def hanging(data: bytes) -> object:
        time.sleep(5)
        return None

    path = write_suite(tmp_path / "d", "f", [({"type": "module", "line": 1}, EMPTY_COMPONENT)])
    start = time.monotonic()
    (only,) = runner(translate=hanging, timeout=0.2).run_file(path).results
    assert time.monotonic() - start < 3
    assert only.status is Status.FAILED
    assert "timed out" in only.message


def test_missing_binary_fails(tmp_path: Path) -> None:
    path = write_suite(tmp_path / "d", "f", [({"type": "module", "line": 1}, EMPTY_COMPONENT)])
    (path.parent / "f.0.wasm").unlink()
    (only,) = runner().run_file(path).results
    assert only.status is Status.FAILED
    assert only.message == "missing file f.0.wasm"


def test_no_translator_skips(tmp_path: Path) -> None:
    path = write_suite(tmp_path / "d", "f", [({"type": "module", "line": 1}, EMPTY_COMPONENT)])
    result = WastRunner(use_defaults=False).run_file(path)
    assert statuses(result) == [(1, Status.SKIPPED)]


# --------------------------------------------------------------------------- xfail


def test_xfail_turns_a_failure_into_xfail(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path / "d",
        "f",
        [({"type": "assert_invalid", "line": 4, "text": "nope"}, EMPTY_COMPONENT)],
    )
    xfails = XfailList.parse("d/f:4 validation of nope is missing\n")
    (only,) = runner(xfails=xfails).run_file(path).results
    assert only.status is Status.XFAIL
    assert only.message.startswith("validation of nope is missing [translated an invalid")


def test_stale_xfail_fails(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path / "d", "f", [({"type": "module_definition", "line": 1}, EMPTY_COMPONENT)]
    )
    xfails = XfailList.parse("d/f:1 used to fail\n")
    (only,) = runner(xfails=xfails).run_file(path).results
    assert only.status is Status.FAILED
    assert only.message == "stale xfail (passed): used to fail"


def test_xfail_on_a_partly_checked_module_is_not_stale(tmp_path: Path) -> None:
    """A module translated while instantiation was skipped: the xfail may be about instantiation."""
    path = write_suite(tmp_path / "d", "f", [({"type": "module", "line": 1}, EMPTY_COMPONENT)])
    xfails = XfailList.parse("d/f:1 fails to instantiate\n")
    (only,) = runner(xfails=xfails).run_file(path).results
    assert only.status is Status.SKIPPED
    assert only.message.startswith("xfail not checked: translated")


def test_xfail_on_a_skipped_command_stays_skipped(tmp_path: Path) -> None:
    path = write_suite(tmp_path / "d", "f", GOOD_FILE)
    xfails = XfailList.parse("d/f:9 needs execution\n")
    result = runner(xfails=xfails).run_file(path)
    assert dict(statuses(result))[9] is Status.SKIPPED


def test_xfail_matching_no_command_fails(tmp_path: Path) -> None:
    path = write_suite(tmp_path / "d", "f", [({"type": "module", "line": 1}, EMPTY_COMPONENT)])
    xfails = XfailList.parse("d/f:99 typo\nother/file:1 not run here\n")
    result = runner(xfails=xfails).run_file(path)
    assert statuses(result) == [(1, Status.PASSED), (99, Status.FAILED)]
    assert "matches no command" in result.results[1].message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no-line-number reason\n", "expected '<dir>/<file>:<line> <reason>'"),
        ("d/f:x reason\n", "expected '<dir>/<file>:<line> <reason>'"),
        ("d/f:3\n", "has no reason"),
        ("d/f:3 a\nd/f:3 b\n", "duplicate xfail d/f:3"),
    ],
)
def test_xfail_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        XfailList.parse(text, "xf.txt")


def test_xfail_parse_skips_comments() -> None:
    xfails = XfailList.parse("# comment\n\n  values/strings:12 some reason here \n")
    assert xfails.entries == {("values/strings", 12): "some reason here"}


def test_committed_xfail_file_parses() -> None:
    from polyengine.testing._xfail import DEFAULT_XFAIL_FILE

    xfails = XfailList.load(DEFAULT_XFAIL_FILE)
    assert all(reason for reason in xfails.entries.values())


# --------------------------------------------------------------------------- text and core


def test_malformed_text_rejected_by_wasm_tools_passes(tmp_path: Path) -> None:
    tools = find_wasm_tools()
    if tools is None:
        pytest.skip("wasm-tools is not installed")
    path = write_suite(
        tmp_path / "d",
        "f",
        [
            (
                {"type": "assert_malformed", "line": 1, "text": "unexpected token"},
                "(component (foo",
            ),
            ({"type": "assert_invalid", "line": 2, "text": "x"}, "(component (foo"),
            ({"type": "module", "line": 3}, "(component)"),
        ],
    )
    result = runner(wasm_tools=tools).run_file(path)
    assert statuses(result) == [(1, Status.PASSED), (2, Status.SKIPPED), (3, Status.PASSED)]
    assert result.results[0].message.startswith("text rejected by wasm-tools")
    assert result.results[1].message.startswith("wasm-tools cannot parse the text")


def test_text_without_wasm_tools_skips(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path / "d", "f", [({"type": "assert_malformed", "line": 1, "text": "x"}, "(component")]
    )
    (only,) = runner(wasm_tools=None).run_file(path).results
    assert only.status is Status.SKIPPED
    assert only.message == "wasm-tools is not available to compile text"


def test_core_module_detection() -> None:
    assert is_core_module(EMPTY_CORE_MODULE)
    assert not is_core_module(EMPTY_COMPONENT)
    assert not is_core_module(b"\0asm")


def test_core_modules_go_to_the_core_validator(tmp_path: Path) -> None:
    translated: list[bytes] = []

    def recording(data: bytes) -> object:
        translated.append(data)
        return fake_translate(data)

    path = write_suite(
        tmp_path / "d",
        "f",
        [
            ({"type": "module", "line": 1}, EMPTY_CORE_MODULE),
            ({"type": "module", "line": 2}, EMPTY_CORE_MODULE + b"BAD"),
            ({"type": "assert_invalid", "line": 3, "text": "x"}, EMPTY_CORE_MODULE + b"BAD"),
            ({"type": "assert_invalid", "line": 4, "text": "x"}, EMPTY_CORE_MODULE),
        ],
    )
    result = runner(translate=recording).run_file(path)
    assert statuses(result) == [
        (1, Status.PASSED),
        (2, Status.FAILED),
        (3, Status.PASSED),
        (4, Status.FAILED),
    ]
    assert translated == []
    assert result.results[0].message.startswith("validated core module")


def test_core_modules_skip_without_a_core_validator(tmp_path: Path) -> None:
    path = write_suite(tmp_path / "d", "f", [({"type": "module", "line": 1}, EMPTY_CORE_MODULE)])
    (only,) = runner(validate_core=None).run_file(path).results
    assert only.status is Status.SKIPPED
    assert only.message == "no core module validator available"


# --------------------------------------------------------------------------- executor


class RecordingExecutor(NoExecution):
    """Passes assert_return when the expected value is 42; records what it saw."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def instantiate(self, command: Command, module: LoadedModule) -> Outcome:
        self.seen.append(f"instantiate:{module.plan}")
        return Outcome.passed()

    def module_instance(self, command: Command, module: LoadedModule, instance: str) -> Outcome:
        self.seen.append(f"instance:{instance}:{module.name}")
        return Outcome.passed()

    def assert_return(self, command: Command, action: Action, expected: list[object]) -> Outcome:
        self.seen.append(f"return:{action.field}")
        if expected == [{"type": "u32", "value": "42"}]:
            return Outcome.passed()
        return Outcome.failed(f"got 42, expected {expected}")

    def assert_trap(self, command: Command, action: Action, text: str) -> Outcome:
        raise RuntimeError("engine exploded")


def test_executor_receives_execution_commands(tmp_path: Path) -> None:
    trap = {
        "type": "assert_trap",
        "line": 13,
        "action": {"type": "invoke", "field": "g", "args": []},
        "text": "unreachable",
    }
    path = write_suite(tmp_path / "d", "f", [*GOOD_FILE, (trap, None)])
    executors: list[RecordingExecutor] = []

    def factory() -> Executor:
        executors.append(RecordingExecutor())
        return executors[-1]

    result = runner(executor_factory=factory).run_file(path)
    assert statuses(result) == [
        (1, Status.PASSED),
        (3, Status.PASSED),
        (5, Status.PASSED),
        (7, Status.PASSED),
        (9, Status.PASSED),
        (11, Status.PASSED),
        (13, Status.FAILED),
    ]
    assert result.results[-1].message == "executor raised RuntimeError: engine exploded"
    (executor,) = executors
    assert executor.seen == [
        f"instantiate:{('plan', len(EMPTY_COMPONENT))}",
        "return:f",
        "instance:i:M",
    ]


def test_module_instance_of_unknown_module_fails(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path / "d",
        "f",
        [({"type": "module_instance", "line": 1, "instance": "i", "module": "Q"}, None)],
    )
    (only,) = runner().run_file(path).results
    assert only.status is Status.FAILED
    assert "unknown module 'Q'" in only.message


def test_action_parsing() -> None:
    command = Command.from_json(
        {
            "type": "assert_return",
            "line": 3,
            "action": {
                "type": "invoke",
                "module": "i1",
                "field": "f",
                "args": [{"type": "u8", "value": "1"}],
            },
            "expected": [],
        }
    )
    assert Action.of(command) == Action("invoke", "f", "i1", ({"type": "u8", "value": "1"},))
    with pytest.raises(ValueError, match="has no action"):
        Action.of(Command.from_json({"type": "action", "line": 1}))


def test_bad_commands_are_named() -> None:
    with pytest.raises(ValueError, match="without an integer 'line'"):
        Command.from_json({"type": "module"})
    with pytest.raises(ValueError, match="without a string 'type'"):
        Command.from_json({"line": 1})
    with pytest.raises(ValueError, match="must be an object"):
        Command.from_json([1])


def test_unreadable_json_is_a_failed_row(tmp_path: Path) -> None:
    bad = tmp_path / "d" / "f"
    bad.mkdir(parents=True)
    (bad / "f.json").write_text("{not json", encoding="utf-8")
    result = runner().run_file(bad / "f.json")
    assert statuses(result) == [(0, Status.FAILED)]
    assert result.error is not None and "cannot read" in result.error


# --------------------------------------------------------------------------- discovery


def test_discover_ids_and_unconverted_directories(tmp_path: Path) -> None:
    write_suite(tmp_path / "suite" / "values", "strings", GOOD_FILE[:1])
    write_suite(tmp_path / "suite" / "async", "calls", GOOD_FILE[:1])
    (tmp_path / "suite" / "async" / "broken").mkdir()
    found = discover([tmp_path / "suite"])
    assert [(fid, has) for fid, _, has in found] == [
        ("async/broken", False),
        ("async/calls", True),
        ("values/strings", True),
    ]
    loose = tmp_path / "loose" / "x.json"
    loose.parent.mkdir()
    loose.write_text("{}", encoding="utf-8")
    assert file_id(loose) == "loose/x"
    with pytest.raises(FileNotFoundError):
        discover([tmp_path / "nowhere"])


# --------------------------------------------------------------------------- command line


def make_cli_suite(tmp_path: Path, *, failing: bool) -> Path:
    root = tmp_path / "suite"
    write_suite(root / "values", "good", GOOD_FILE)
    if failing:
        write_suite(
            root / "values",
            "bad",
            [({"type": "assert_malformed", "line": 8, "text": "x"}, EMPTY_COMPONENT)],
        )
    return root


def run_cli(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    import polyengine.testing._runner as runner_module

    monkeypatch.setattr(runner_module, "find_translator", lambda: (fake_translate, "fake"))
    monkeypatch.setattr(runner_module, "find_core_validator", lambda: fake_core_validate)
    out = io.StringIO()
    status = wast_cli.main(list(args), out=out)
    return status, out.getvalue()


def test_cli_report_and_success(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_cli_suite(tmp_path, failing=False)
    status, text = run_cli(monkeypatch, str(root), "--no-xfail")
    assert status == 0
    lines = text.strip().splitlines()
    assert lines[0].split() == ["file", "commands", "passed", "failed", "xfail", "skipped"]
    assert lines[2].split() == ["values/good", "6", "4", "0", "0", "2"]
    assert lines[3].strip() == "skipped 2: execution not implemented yet"
    assert lines[-1] == "4 passed, 0 failed, 0 xfail, 2 skipped"


def test_cli_failure_exit_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_cli_suite(tmp_path, failing=True)
    status, text = run_cli(monkeypatch, str(root), "--no-xfail")
    assert status == 1
    assert "  values/bad:8 assert_malformed: translated a malformed component" in text
    assert text.strip().splitlines()[-1] == "4 passed, 1 failed, 0 xfail, 2 skipped"


def test_cli_xfail_file_and_stale_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_cli_suite(tmp_path, failing=True)
    xfail = tmp_path / "xfail.txt"
    xfail.write_text("values/bad:8 the reader is too lenient\n", encoding="utf-8")
    status, text = run_cli(monkeypatch, str(root), "--xfail", str(xfail))
    assert status == 0
    assert text.strip().splitlines()[-1] == "4 passed, 0 failed, 1 xfail, 2 skipped"
    xfail.write_text(
        "values/bad:8 the reader is too lenient\nvalues/good:5 fixed long ago\n", encoding="utf-8"
    )
    status, text = run_cli(monkeypatch, str(root), "--xfail", str(xfail))
    assert status == 1
    assert "stale xfail (passed): fixed long ago" in text
    assert text.strip().splitlines()[-1] == "3 passed, 1 failed, 1 xfail, 2 skipped"


def test_cli_json_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_cli_suite(tmp_path, failing=True)
    status, text = run_cli(monkeypatch, str(root), "--no-xfail", "--json")
    assert status == 1
    doc = json.loads(text)
    assert doc["totals"] == {"passed": 4, "failed": 1, "xfail": 0, "skipped": 2}
    by_id = {f["id"]: f for f in doc["files"]}
    assert by_id["values/bad"]["results"][0]["status"] == "failed"
    assert by_id["values/good"]["skip_reasons"] == {"execution not implemented yet": 2}


def test_cli_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, _ = run_cli(monkeypatch, str(tmp_path / "missing"))
    assert status == 2
    bad_xfail = tmp_path / "xf.txt"
    bad_xfail.write_text("garbage\n", encoding="utf-8")
    root = make_cli_suite(tmp_path, failing=False)
    status, _ = run_cli(monkeypatch, str(root), "--xfail", str(bad_xfail))
    assert status == 2
    status, _ = run_cli(monkeypatch, str(root), "--executor", "no_such_module_xyz:make")
    assert status == 2


def test_cli_loads_an_executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "wast_plugin_exec.py").write_text(
        "from polyengine.testing import NoExecution, Outcome\n"
        "class PassAll(NoExecution):\n"
        "    def assert_return(self, command, action, expected):\n"
        "        return Outcome.passed()\n"
        "    def module_instance(self, command, module, instance):\n"
        "        return Outcome.passed()\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(plugin))
    root = make_cli_suite(tmp_path, failing=False)
    status, text = run_cli(
        monkeypatch, str(root), "--no-xfail", "--executor", "wast_plugin_exec:PassAll"
    )
    assert status == 0
    assert text.strip().splitlines()[-1] == "6 passed, 0 failed, 0 xfail, 0 skipped"


def test_module_entry_point_runs(tmp_path: Path) -> None:
    import subprocess

    root = make_cli_suite(tmp_path, failing=False)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "polyengine.testing.wast",
            str(root),
            "--no-xfail",
            "--executor",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=dict(os.environ),
    )
    # The real translator reads these tiny binaries: the empty component is
    # valid, the truncated one malformed; 'INVALID' trailing bytes are malformed too.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "4 passed, 0 failed, 0 xfail, 2 skipped"


# --------------------------------------------------------------------------- engine checkers

# (module (func (result i32))): well-formed, but the body leaves no i32 on the stack.
INVALID_CORE_MODULE = EMPTY_CORE_MODULE + bytes.fromhex("0105016000017f030201000a040102000b")


def test_engine_core_validator(tmp_path: Path) -> None:
    from polyengine.testing._runner import find_core_validator

    validator = find_core_validator()
    if validator is None:
        pytest.skip("polyengine.engine._validate.validate_core_module is not available")
    path = write_suite(
        tmp_path / "d",
        "f",
        [
            ({"type": "module", "line": 1}, EMPTY_CORE_MODULE),
            ({"type": "assert_invalid", "line": 2, "text": "type mismatch"}, INVALID_CORE_MODULE),
            ({"type": "module", "line": 3}, INVALID_CORE_MODULE),
        ],
    )
    result = runner(validate_core=validator).run_file(path)
    assert statuses(result) == [(1, Status.PASSED), (2, Status.PASSED), (3, Status.FAILED)]


def test_engine_translator(tmp_path: Path) -> None:
    from polyengine.testing._runner import find_translator

    translate, description = find_translator()
    if translate is None:
        pytest.skip(description)
    path = write_suite(
        tmp_path / "d",
        "f",
        [
            ({"type": "module", "line": 1}, EMPTY_COMPONENT),
            ({"type": "assert_malformed", "line": 2, "text": "eof"}, EMPTY_COMPONENT[:6]),
            (
                {"type": "assert_malformed", "line": 3, "text": "bad layer"},
                b"\0asm\x0d\x00\x02\x00",
            ),
        ],
    )
    result = runner(translate=translate).run_file(path)
    assert statuses(result) == [(1, Status.PASSED), (2, Status.PASSED), (3, Status.PASSED)]
    assert result.results[1].message.startswith("rejected: ")


def test_cli_prune_xfail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_cli_suite(tmp_path, failing=True)
    xfail = tmp_path / "xfail.txt"
    xfail.write_text(
        "# header\nvalues/bad:8 still failing\nvalues/good:5 fixed long ago\nvalues/good:77 gone\n",
        encoding="utf-8",
    )
    status, _ = run_cli(monkeypatch, str(root), "--xfail", str(xfail), "--prune-xfail")
    assert status == 0
    assert xfail.read_text(encoding="utf-8") == "# header\nvalues/bad:8 still failing\n"
    status, text = run_cli(monkeypatch, str(root), "--xfail", str(xfail))
    assert status == 0
    assert text.strip().splitlines()[-1] == "4 passed, 0 failed, 1 xfail, 2 skipped"


def test_failing_executor_factory_is_a_failed_row(tmp_path: Path) -> None:
    def broken() -> Executor:
        raise RuntimeError("no engine here")

    path = write_suite(tmp_path / "d", "f", [({"type": "module", "line": 1}, EMPTY_COMPONENT)])
    result = runner(executor_factory=broken).run_file(path)
    assert statuses(result) == [(0, Status.FAILED)]
    assert result.error == "the executor factory failed: RuntimeError: no engine here"
