"""Real guests (componentize-py) under ``polyengine run`` and ``wasmtime run``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import load_guest_builder

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]

Runner = Callable[..., Any]


def _guest(name: str) -> Path:
    path: Path = load_guest_builder().build_guest(name)
    return path


def _same(ours: Any, theirs: Any) -> None:
    assert (ours.returncode, ours.stdout, ours.stderr) == (
        theirs.returncode,
        theirs.stdout,
        theirs.stderr,
    )


def test_py_sync_wasi(polyengine: Runner, wasmtime: Runner, tmp_path: Path) -> None:
    wasm = _guest("py-sync-wasi")
    results = []
    for host, runner in (("ours", polyengine), ("theirs", wasmtime)):
        root = tmp_path / host
        root.mkdir()
        (root / "input.txt").write_text("Some Input\n", encoding="utf-8")
        opts = ["--dir", f"{root}::/data", "--env", "GREETING=héllo"]
        results.append(runner("run", *opts, wasm, "one", "two words"))
        assert (root / "output.txt").read_text(encoding="utf-8") == "SOME INPUT\n"
    _same(*results)
    assert results[0].returncode == 0, results[0].stderr
    assert results[0].stdout == (
        "hello from py-sync-wasi\n"
        "args: one two words\n"
        "env GREETING: héllo\n"
        "read: Some Input\n"
        "wrote: SOME INPUT\n"
    )


def test_py_sync_wasi_without_preopen(polyengine: Runner, wasmtime: Runner) -> None:
    # The guest fails to open /data/input.txt: an uncaught Python exception.
    wasm = _guest("py-sync-wasi")
    ours, theirs = polyengine("run", wasm), wasmtime("run", wasm)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout)
    assert ours.returncode != 0
    assert "FileNotFoundError" in ours.stderr or "No such file" in ours.stderr


def test_py_p3_run(polyengine: Runner, wasmtime: Runner) -> None:
    wasm = _guest("py-p3-run")
    ours, theirs = polyengine("run", wasm), wasmtime("run", wasm)
    assert theirs.returncode == 0
    _same(ours, theirs)


@pytest.mark.parametrize("args", [[], ["the", "quick", "the"], ["--fail"]])
def test_example_py_app(polyengine: Runner, wasmtime: Runner, args: list[str]) -> None:
    wasm = _guest("example-py-app")
    ours = polyengine("run", wasm, *args)
    _same(ours, wasmtime("run", wasm, *args))
    assert ours.returncode == (1 if args == ["--fail"] else 0)


def test_c_hello_preview1_adapter(polyengine: Runner, wasmtime: Runner) -> None:
    wasm = _guest("c-hello")
    opts = ["--env", "GREETING=hi"]
    ours = polyengine("run", *opts, wasm, "a", "b c")
    _same(ours, wasmtime("run", *opts, wasm, "a", "b c"))
    assert "arg: b c\n" in ours.stdout and "env GREETING: hi\n" in ours.stdout


JS_CALLS = [
    'greet("bob")',
    "add-points({x: 1, y: 2}, {x: 3, y: -4})",
    "sum([1, 2, 3])",
    "reverse-bytes([1, 2, 3])",
    'parse-u32("12")',
    'parse-u32("x")',
    'maybe-len(some("abc"))',
    "maybe-len(none)",
]


@pytest.mark.parametrize("call", JS_CALLS)
def test_js_qjs_invoke(polyengine: Runner, wasmtime: Runner, call: str) -> None:
    wasm = _guest("js-qjs")
    ours = polyengine("run", "--invoke", call, wasm)
    _same(ours, wasmtime("run", "--invoke", call, wasm))
    assert ours.returncode == 0


PY_VALUE_CALLS = [
    'split-words("a b  c")',
    "sum-u32([4294967295, 4294967295])",
    'describe-person({name: "A", age: 3, tags: ["x"]})',
    'make-person("B", 4)',
    "area(rect({x: 2, y: 3}))",
    "maybe-double(some(21))",
    "check-positive(-1)",
    "toggle-exec({read})",
    "next-color(blue)",
    'swap(("s", 5))',
    "scalars(true, -1, 65535, -5, 1.5, 'z')",
    'polyengine:values/api.upper("q")',
]


@pytest.mark.parametrize("call", PY_VALUE_CALLS)
def test_py_stub_values_invoke(polyengine: Runner, wasmtime: Runner, call: str) -> None:
    wasm = _guest("py-stub-values")
    ours = polyengine("run", "--invoke", call, wasm)
    _same(ours, wasmtime("run", "--invoke", call, wasm))
    assert ours.returncode == 0


def _tour() -> Path:
    builder = load_guest_builder()
    if "run-py-tour" not in builder.GUESTS:
        builder.GUESTS["run-py-tour"] = builder.GuestSpec(
            "run-py-tour",
            "componentize-py",
            builder.FEATURES_SYNC,
            "a Python command touring WASI 0.2 (files, stdin, stderr, exit)",
            world="py-sync-wasi",
            command=True,
            location="runtime/tests/run/guests/py-tour",
        )
    return _guest("run-py-tour")


@pytest.mark.parametrize("exit_code", ["0", "3"])
def test_py_tour(
    polyengine_process: Runner, wasmtime: Runner, tmp_path: Path, exit_code: str
) -> None:
    wasm = _tour()
    stdin = b"first line\nsecond\nthird, unterminated"
    results = []
    for host, runner in (("ours", polyengine_process), ("theirs", wasmtime)):
        root = tmp_path / host
        root.mkdir()
        (root / "one.txt").write_text("1\n", encoding="utf-8")
        opts = ["--dir", f"{root}::/data", "--env", f"EXIT_CODE={exit_code}"]
        results.append(runner("run", *opts, wasm, stdin_bytes=stdin))
        assert sorted(p.name for p in root.iterdir()) == ["one.txt"]
    _same(*results)
    ours = results[0]
    assert ours.returncode == (0 if exit_code == "0" else 1)  # componentize-py: exit(err)
    assert "content: ['alpha', 'alpha', 'alpha', 'appended']\n" in ours.stdout
    assert "stdin rest: 'second\\nthird, unterminated'\n" in ours.stdout
    assert ours.stderr.endswith("to stderr\n")
