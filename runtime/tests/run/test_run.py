"""``polyengine run`` end to end: hand-written WASI commands run as subprocesses."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import components as c

REPO = Path(__file__).resolve().parents[3]
Runner = Callable[..., Any]

Build = Callable[[str, str], Path]


def test_hello(build: Build, polyengine_process: Runner) -> None:
    r = polyengine_process("run", build("hello", c.hello()))
    assert (r.returncode, r.stdout, r.stderr) == (0, "Hello, world!\n", "")


def test_example_hello(build: Build, polyengine: Runner) -> None:
    source = REPO / "examples" / "hello" / "hello.wat"
    if not source.is_file():
        pytest.skip("examples/hello/hello.wat is not in this checkout")
    r = polyengine("run", build("example-hello", source.read_text(encoding="utf-8")))
    assert (r.returncode, r.stdout, r.stderr) == (0, "Hello, world!\n", "")


def test_stdout_and_stderr(build: Build, polyengine: Runner) -> None:
    r = polyengine("run", build("stdio", c.stdio("to stdout\n", "to stderr\n")))
    assert (r.returncode, r.stdout, r.stderr) == (0, "to stdout\n", "to stderr\n")


def test_run_returning_err_exits_1(build: Build, polyengine: Runner) -> None:
    r = polyengine("run", build("stdio-fail", c.stdio("out\n", "failing\n", fail=True)))
    assert (r.returncode, r.stdout, r.stderr) == (1, "out\n", "failing\n")


@pytest.mark.parametrize(("code", "status"), [(3, 3), (0, 0), (255, 255), (None, 1)])
def test_exit(build: Build, polyengine: Runner, code: int | None, status: int) -> None:
    r = polyengine("run", build(f"exit-{code}", c.exit_with(code)))
    assert (r.returncode, r.stdout, r.stderr) == (status, "before exit\n", "exiting\n")


def test_args_and_env(build: Build, polyengine: Runner) -> None:
    wasm = build("args-env", c.ARGS_ENV)
    r = polyengine("run", "--env", "A=1", "--env", "B=two words", wasm, "x", "y z", "--env")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "args-env.wasm\nx\ny z\n--env\n--\nA=1\nB=two words\n"
    assert r.stderr == ""


def test_args_after_double_dash(build: Build, polyengine: Runner) -> None:
    r = polyengine("run", build("args-env", c.ARGS_ENV), "--", "-v", "--", "last")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "args-env.wasm\n-v\n--\nlast\n--\n"


def test_inherit_env(build: Build, polyengine: Runner) -> None:
    wasm = build("args-env", c.ARGS_ENV)
    r = polyengine("run", "--inherit-env", wasm, env={"POLYENGINE_TEST_VAR": "from host"})
    assert r.returncode == 0, r.stderr
    assert "\nPOLYENGINE_TEST_VAR=from host\n" in r.stdout
    r = polyengine("run", "-S", "inherit-env", wasm, env={"POLYENGINE_TEST_VAR": "again"})
    assert "\nPOLYENGINE_TEST_VAR=again\n" in r.stdout
    r = polyengine("run", "--env", "POLYENGINE_TEST_VAR", wasm, env={"POLYENGINE_TEST_VAR": "one"})
    assert r.stdout.endswith("--\nPOLYENGINE_TEST_VAR=one\n")
    r = polyengine("run", wasm, env={"POLYENGINE_TEST_VAR": "hidden"})
    assert r.stdout == "args-env.wasm\n--\n"


@pytest.mark.parametrize("form", ["host::guest", "host"])
def test_preopened_directory(build: Build, polyengine: Runner, tmp_path: Path, form: str) -> None:
    (tmp_path / "input.txt").write_text("some text\n", encoding="utf-8")
    spec = f"{tmp_path}::/data" if form == "host::guest" else str(tmp_path)
    r = polyengine("run", "--dir", spec, build("files", c.FILES))
    assert (r.returncode, r.stdout, r.stderr) == (0, "some text\n", "")
    assert (tmp_path / "output.txt").read_text(encoding="utf-8") == "copy: some text\n"


def test_no_preopen(build: Build, polyengine: Runner) -> None:
    r = polyengine("run", build("files", c.FILES))
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "no preopened directory\n")


def test_missing_input_file(build: Build, polyengine: Runner, tmp_path: Path) -> None:
    r = polyengine("run", "--dir", f"{tmp_path}::/", build("files", c.FILES))
    assert (r.returncode, r.stderr) == (1, "cannot open input.txt\n")


def test_bad_dir_option(build: Build, polyengine: Runner, tmp_path: Path) -> None:
    r = polyengine("run", "--dir", str(tmp_path / "absent"), build("files", c.FILES))
    assert r.returncode == 1
    assert r.stderr.startswith("Error: --dir") and "is not a directory" in r.stderr


def test_trap(build: Build, polyengine_process: Runner) -> None:
    wasm = build("trap", c.TRAP)
    r = polyengine_process("run", wasm)
    assert r.returncode == 134
    assert r.stdout == "about to trap\n"
    assert r.stderr.startswith(f"Error: failed to run main module `{wasm}`\n")
    assert "unreachable" in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_import(build: Build, polyengine_process: Runner) -> None:
    r = polyengine_process("run", build("missing", c.MISSING_IMPORT))
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr == (
        "Error: missing import: the component imports function `frob` of interface "
        "`example:missing/thing@1.0.0`, which no provider serves\n"
    )


def _one_line_error(r: object) -> str:
    stderr: str = getattr(r, "stderr")  # noqa: B009
    assert getattr(r, "returncode") == 1  # noqa: B009
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


def test_malformed_inputs(build: Build, polyengine: Runner, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.wasm"
    garbage.write_bytes(b"this is not wasm")
    assert "garbage.wasm is not a WebAssembly binary" in _one_line_error(polyengine("run", garbage))

    text = tmp_path / "text.wat"
    text.write_text(c.hello(), encoding="utf-8")
    assert "looks like WebAssembly text" in _one_line_error(polyengine("run", text))

    empty = tmp_path / "empty.wasm"
    empty.write_bytes(b"")
    assert "not a WebAssembly binary" in _one_line_error(polyengine("run", empty))

    good = build("hello", c.hello()).read_bytes()
    truncated = tmp_path / "truncated.wasm"
    truncated.write_bytes(good[: len(good) // 2])
    assert "is not a valid component" in _one_line_error(polyengine("run", truncated))

    core = tmp_path / "core.wasm"
    core.write_bytes(b"\0asm\x01\0\0\0")
    assert "is not a valid component" in _one_line_error(polyengine("run", core))

    missing = tmp_path / "missing.wasm"
    line = _one_line_error(polyengine("run", missing))
    assert "cannot read" in line and "missing.wasm" in line


def test_no_run_export(build: Build, polyengine: Runner) -> None:
    line = _one_line_error(polyengine("run", build("values", c.VALUES)))
    assert "exports no wasi:cli/run" in line


def test_cache_across_runs(build: Build, polyengine_process: Runner, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    wasm = build("hello", c.hello())
    env = {"POLYENGINE_CACHE_DIR": str(cache)}
    first = polyengine_process("run", wasm, env=env)
    assert (first.returncode, first.stdout) == (0, "Hello, world!\n")
    files = sorted(p for p in cache.rglob("*") if p.is_file())
    assert any(p.parent.name == "plans" for p in files)
    modules = [p for p in files if p.parent.name != "plans"]
    assert len(modules) >= 2  # at least the memory module and the main module
    stamps = {p: p.stat().st_mtime_ns for p in files}
    second = polyengine_process("run", wasm, env=env)
    assert (second.returncode, second.stdout) == (0, "Hello, world!\n")
    assert {p: p.stat().st_mtime_ns for p in files} == stamps
    assert sorted(p for p in cache.rglob("*") if p.is_file()) == files


def test_corrupt_translation_cache_is_ignored(
    build: Build, polyengine_process: Runner, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    wasm = build("hello", c.hello())
    env = {"POLYENGINE_CACHE_DIR": str(cache)}
    assert polyengine_process("run", wasm, env=env).returncode == 0
    plans = list(cache.rglob("plans/*"))
    assert plans
    for path in plans:
        path.write_bytes(b"not a plan")
    r = polyengine_process("run", wasm, env=env)
    assert (r.returncode, r.stdout, r.stderr) == (0, "Hello, world!\n", "")


def _big_hello() -> str:
    # A core module over the progress threshold (1 MiB) through a large data segment.
    big = c.hello().replace(
        '(data (i32.const 1024) "Hello',
        '(data (i32.const 20000) "'
        + "\\00" * (1100 * 1024)
        + '")\n    (data (i32.const 1024) "Hello',
    )
    return big.replace('(memory (export "memory") 1)', '(memory (export "memory") 20)').replace(
        '(import "libc" "memory" (memory 1))', '(import "libc" "memory" (memory 20))'
    )


def test_compile_progress_on_a_terminal(build: Build, tmp_path: Path) -> None:
    wasm = build("big-hello", _big_hello())
    env = {**os.environ, "POLYENGINE_CACHE_DIR": str(tmp_path / "cache")}
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "polyengine", "run", str(wasm)],
            stdout=subprocess.PIPE,
            stderr=follower,
            env=env,
        )
        os.close(follower)
        out, _ = proc.communicate(timeout=300)
        shown = b""
        while select.select([leader], [], [], 0.2)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert proc.returncode == 0
    assert out == b"Hello, world!\n"
    assert b"compiling big-hello.wasm: 0.0 of 1.1 MiB of core code, module 1 of 2" in shown
    assert shown.endswith(b"\r\x1b[K")


def test_no_progress_when_not_a_terminal(
    build: Build, polyengine_process: Runner, tmp_path: Path
) -> None:
    wasm = build("big-hello", _big_hello())
    r = polyengine_process("run", wasm, env={"POLYENGINE_CACHE_DIR": str(tmp_path / "cache")})
    assert (r.returncode, r.stdout, r.stderr) == (0, "Hello, world!\n", "")


def test_help_lists_verbs(polyengine_process: Runner) -> None:
    r = polyengine_process("--help")
    assert r.returncode == 0
    assert "run" in r.stdout and "invoke" in r.stdout
    r = polyengine_process("run", "--help")
    assert r.returncode == 0 and "--invoke" in r.stdout and "--dir" in r.stdout


def test_stdin_is_piped(build: Build, polyengine_process: Runner) -> None:
    data = bytes(range(256)) * 1200  # several reads' worth, every byte value
    r = polyengine_process("run", build("cat", c.CAT), stdin_bytes=data)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout_bytes == data


def test_run_export_found_by_track(build: Build, polyengine: Runner) -> None:
    text = c.hello("patch release\n").replace('"wasi:cli/run@0.2.0"', '"wasi:cli/run@0.2.3"')
    r = polyengine("run", build("hello-0.2.3", text))
    assert (r.returncode, r.stdout, r.stderr) == (0, "patch release\n", "")


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (["-S", "bogus"], "unknown WASI option -S 'bogus'"),
        (["--env", "=x"], "expected NAME=VALUE or NAME"),
        (["--dir", "::/guest"], "expected HOST or HOST::GUEST"),
    ],
)
def test_bad_options(build: Build, polyengine: Runner, opts: list[str], message: str) -> None:
    line = _one_line_error(polyengine("run", *opts, build("hello", c.hello())))
    assert message in line


def test_cache_can_be_disabled(build: Build, polyengine: Runner, tmp_path: Path) -> None:
    r = polyengine("run", build("hello", c.hello()), env={"POLYENGINE_CACHE_DIR": "off"})
    assert (r.returncode, r.stdout, r.stderr) == (0, "Hello, world!\n", "")


def test_internal_error_is_one_line(
    build: Build, polyengine: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from polyengine.cli import _run

    def broken(data: bytes, **_: object) -> object:
        raise RuntimeError("simulated failure")

    monkeypatch.setattr(_run, "load_artifacts", broken)
    monkeypatch.delenv("POLYENGINE_TRACEBACK", raising=False)
    line = _one_line_error(polyengine("run", build("hello", c.hello())))
    assert "internal error: RuntimeError: simulated failure" in line
    monkeypatch.setenv("POLYENGINE_TRACEBACK", "1")
    with pytest.raises(RuntimeError, match="simulated failure"):
        polyengine("run", build("hello", c.hello()))
