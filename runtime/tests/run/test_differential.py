"""Differential tests: ``polyengine run`` against the ``wasmtime run`` CLI.

For every hand-written command, both hosts must print the same stdout and
stderr and exit with the same status; ``--invoke`` must print the same
result. A trap's message is host-specific: only its status, stdout and the
first line of stderr are compared.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import components as c
from .test_invoke import CALLS

Build = Callable[[str, str], Path]
Runner = Callable[..., Any]

REPO = Path(__file__).resolve().parents[3]

COMMANDS: dict[str, Callable[[], str]] = {
    "hello": c.hello,
    "stdio": lambda: c.stdio("to stdout\n", "to stderr\n"),
    "stdio-fail": lambda: c.stdio("out\n", "failing\n", fail=True),
    "exit-3": lambda: c.exit_with(3),
    "exit-0": lambda: c.exit_with(0),
    "exit-err": lambda: c.exit_with(None),
    "files-no-preopen": lambda: c.FILES,
}


def _same(ours: Any, theirs: Any) -> None:
    assert (ours.returncode, ours.stdout, ours.stderr) == (
        theirs.returncode,
        theirs.stdout,
        theirs.stderr,
    )


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_commands(build: Build, polyengine: Runner, wasmtime: Runner, name: str) -> None:
    wasm = build(name, COMMANDS[name]())
    _same(polyengine("run", wasm), wasmtime("run", wasm))


def test_example_hello(build: Build, polyengine: Runner, wasmtime: Runner) -> None:
    source = REPO / "examples" / "hello" / "hello.wat"
    if not source.is_file():
        pytest.skip("examples/hello/hello.wat is not in this checkout")
    wasm = build("example-hello", source.read_text(encoding="utf-8"))
    _same(polyengine("run", wasm), wasmtime("run", wasm))


def test_args_and_env(build: Build, polyengine: Runner, wasmtime: Runner) -> None:
    wasm = build("args-env", c.ARGS_ENV)
    opts = ["--env", "A=1", "--env", "B=two words", "--env", "EMPTY="]
    args = ["x", "y z", "--flag", ""]
    _same(polyengine("run", *opts, wasm, *args), wasmtime("run", *opts, wasm, *args))


def test_inherited_env(build: Build, polyengine: Runner, wasmtime: Runner) -> None:
    wasm = build("args-env", c.ARGS_ENV)
    env = {"POLYENGINE_DIFF": "inherited"}
    ours = polyengine("run", "--env", "POLYENGINE_DIFF", wasm, env=env)
    _same(ours, wasmtime("run", "--env", "POLYENGINE_DIFF", wasm, env=env))
    assert ours.stdout.endswith("--\nPOLYENGINE_DIFF=inherited\n")
    ours = polyengine("run", "-S", "inherit-env", wasm, env=env)
    theirs = wasmtime("run", "-S", "inherit-env", wasm, env=env)
    assert (ours.returncode, ours.stderr) == (theirs.returncode, theirs.stderr)
    assert "\nPOLYENGINE_DIFF=inherited\n" in ours.stdout
    assert "\nPOLYENGINE_DIFF=inherited\n" in theirs.stdout


def test_preopened_directory(
    build: Build, polyengine: Runner, wasmtime: Runner, tmp_path: Path
) -> None:
    wasm = build("files", c.FILES)
    results = []
    for host, runner in (("ours", polyengine), ("theirs", wasmtime)):
        root = tmp_path / host
        root.mkdir()
        (root / "input.txt").write_text("line one\nline two\n", encoding="utf-8")
        results.append(runner("run", "--dir", f"{root}::/data", wasm))
        assert (root / "output.txt").read_text(encoding="utf-8") == "copy: line one\nline two\n"
    _same(*results)
    assert results[0].stdout == "line one\nline two\n"


def test_trap(build: Build, polyengine: Runner, wasmtime: Runner) -> None:
    wasm = build("trap", c.TRAP)
    ours, theirs = polyengine("run", wasm), wasmtime("run", wasm)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout)
    assert ours.stderr.splitlines()[0] == theirs.stderr.splitlines()[0]
    assert "unreachable" in ours.stderr and "unreachable" in theirs.stderr


def test_missing_import_status(build: Build, polyengine: Runner, wasmtime: Runner) -> None:
    wasm = build("missing", c.MISSING_IMPORT)
    ours, theirs = polyengine("run", wasm), wasmtime("run", wasm)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout) == (1, "")
    assert "example:missing/thing@1.0.0" in ours.stderr
    assert "example:missing/thing@1.0.0" in theirs.stderr


@pytest.mark.parametrize(("call", "printed"), CALLS)
def test_invoke(
    build: Build, polyengine: Runner, wasmtime: Runner, call: str, printed: str
) -> None:
    wasm = build("values", c.VALUES)
    ours = polyengine("run", "--invoke", call, wasm)
    theirs = wasmtime("run", "--invoke", call, wasm)
    _same(ours, theirs)
    assert ours.stdout == printed + "\n"


@pytest.mark.parametrize(
    "call",
    [
        "echo-u8(256)",
        "echo-option()",
        "add(1)",
        "nope()",
        "echo-opt-opt(4)",
        "echo-color(ok)",
        "echo-f64(1.)",
        "echo-s32(01)",
        'echo-string("\\u{}")',
        "echo-list([1,,2])",
        "echo-result(ok)",
        " add(1, 2)",
    ],
)
def test_invoke_refusals(build: Build, polyengine: Runner, wasmtime: Runner, call: str) -> None:
    wasm = build("values", c.VALUES)
    ours = polyengine("run", "--invoke", call, wasm)
    theirs = wasmtime("run", "--invoke", call, wasm)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout) == (1, "")


def test_invoke_run_export(build: Build, polyengine: Runner, wasmtime: Runner) -> None:
    wasm = build("hello", c.hello())
    _same(polyengine("run", "--invoke", "run()", wasm), wasmtime("run", "--invoke", "run()", wasm))


def test_stdin(build: Build, polyengine_process: Runner, wasmtime: Runner) -> None:
    wasm = build("cat", c.CAT)
    data = b"line one\nline two, no newline at the end"
    _same(
        polyengine_process("run", wasm, stdin_bytes=data),
        wasmtime("run", wasm, stdin_bytes=data),
    )
