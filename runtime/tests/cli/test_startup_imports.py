"""What a ``polyengine run`` from warm caches imports (issue 15, start-up).

A component with no 0.3 async features whose only ``suspending()`` imports
are writes to stdio runs on the plain synchronous path: it imports neither
asyncio nor the task model, and only the WASI providers of the interfaces
it imports. Anything that may park (here: a socket interface) runs on the
task model as before. Each run is a fresh process; the first fills the
plan and module caches, the second is the one looked at.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HELLO = ROOT / "examples" / "hello" / "hello.wat"
CALC = ROOT / "examples" / "embed" / "calc.wat"

#: Runs the command line, then prints the polyengine and asyncio modules it imported.
_PROBE = """
import json, sys
from polyengine.cli import main
status = main(sys.argv[1:])
sys.stdout.flush()
names = sorted(m for m in sys.modules if m.startswith(("polyengine", "asyncio")))
print(json.dumps(names), file=sys.stderr)
sys.exit(status)
"""

#: The phases a cached run never needs.
TRANSLATION = ("polyengine.binary", "polyengine.validate", "polyengine.translate._translate")
#: The task model and what only it uses.
TASK_MODEL = (
    "asyncio",
    "polyengine.concurrency",
    "polyengine.instance._async",
    "polyengine.instance._hostvalues",
)


def _cached_run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    env = {**os.environ, "POLYENGINE_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-c", _PROBE, *args]
    warm = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=120)
    assert warm.returncode == 0, warm.stderr
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=120)
    *rest, last = proc.stderr.strip().splitlines()
    modules = set(json.loads(last))
    proc.stderr = "\n".join(rest)
    return proc, modules


def _imported(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


@pytest.fixture
def hello(wat: Callable[[str], bytes], tmp_path: Path) -> Path:
    path = tmp_path / "hello.wasm"
    path.write_bytes(wat(HELLO.read_text()))
    return path


def test_a_stdio_command_runs_without_asyncio_or_the_task_model(
    hello: Path, tmp_path: Path
) -> None:
    proc, modules = _cached_run(tmp_path, "run", str(hello))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Hello, world!\n"
    assert _imported(modules, TASK_MODEL) == []
    assert _imported(modules, TRANSLATION) == []
    # only the providers of wasi:io/error, wasi:io/streams and wasi:cli/stdout
    wasi = {m for m in modules if m.startswith("polyengine_wasi.")}
    assert wasi <= {
        "polyengine_wasi._wasi",
        "polyengine_wasi._cli",
        "polyengine_wasi._bytes",
        "polyengine_wasi._streams",
        "polyengine_wasi._kernel",
        "polyengine_wasi._exit",
    }, wasi


def test_invoking_a_sync_library_imports_no_task_model(
    wat: Callable[[str], bytes], tmp_path: Path
) -> None:
    calc = tmp_path / "calc.wasm"
    calc.write_bytes(wat(CALC.read_text()))
    proc, modules = _cached_run(tmp_path, "invoke", str(calc), "add(40, 2)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "42"
    assert _imported(modules, TASK_MODEL) == []
    assert _imported(modules, TRANSLATION) == []
    assert not any(m.startswith("polyengine_wasi.") for m in modules - {"polyengine_wasi._wasi"})


def test_a_command_that_may_park_runs_on_the_task_model(
    wat: Callable[[str], bytes], tmp_path: Path
) -> None:
    # the same command importing a socket interface: its streams may be sockets
    text = HELLO.read_text().replace(
        '  (import "wasi:cli/stdout@0.2.0"',
        '  (import "wasi:sockets/network@0.2.0" (instance\n'
        '    (export "network" (type (sub resource)))\n'
        "  ))\n"
        '  (import "wasi:cli/stdout@0.2.0"',
        1,
    )
    assert "wasi:sockets/network" in text
    path = tmp_path / "hello-net.wasm"
    path.write_bytes(wat(text))
    proc, modules = _cached_run(tmp_path, "run", str(path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Hello, world!\n"
    assert _imported(modules, TASK_MODEL) == list(TASK_MODEL)
    assert _imported(modules, TRANSLATION) == []


@pytest.mark.parametrize(
    "words",
    [
        ["run", "app.wasm"],
        ["run", "app.wasm", "a", "--dir", "b", "c"],
        ["run", "--dir", "/tmp", "--dir=/srv::/data", "app.wasm"],
        ["run", "--env", "A=1", "--env=B", "--inherit-env", "app.wasm", "-v"],
        ["run", "-S", "inherit-env", "-S", "p3,network", "-W", "fuel=10", "app.wasm"],
        ["run", "--invoke", "add(1, 2)", "app.wasm"],
        ["run", "--invoke=f()", "--invoke", "g()", "app.wasm", "x"],
        ["run", "-", "x"],
    ],
)
def test_plain_run_parses_as_argparse_does(words: list[str]) -> None:
    from polyengine.cli import _plain_run, build_parser

    plain = _plain_run(words)
    assert plain is not None
    assert vars(plain) == vars(build_parser(run_only=True).parse_args(words))


@pytest.mark.parametrize(
    "words",
    [
        [],
        ["invoke", "app.wasm", "f()"],
        ["run"],
        ["run", "--dir"],
        ["run", "--dir", "/tmp"],
        ["run", "-h"],
        ["run", "--help", "app.wasm"],
        ["run", "--inv", "f()", "app.wasm"],  # an abbreviation argparse accepts
        ["run", "--bogus", "app.wasm"],
        ["run", "-S=p3", "app.wasm"],
        ["run", "-Sp3", "app.wasm"],
        ["run", "--dir", "-x", "app.wasm"],
        ["run", "--inherit-env=1", "app.wasm"],
        ["run", "--", "app.wasm"],
        ["run", "app.wasm", "--", "x"],
    ],
)
def test_anything_else_is_left_to_argparse(words: list[str]) -> None:
    from polyengine.cli import _plain_run

    assert _plain_run(words) is None


def test_the_collector_is_held_off_only_while_a_run_starts_up(
    wat: Callable[[str], bytes], tmp_path: Path
) -> None:
    import gc

    from polyengine.cli import main
    from polyengine.cli._startup import start_up_gc

    calc = tmp_path / "calc.wasm"
    calc.write_bytes(wat(CALC.read_text()))
    assert gc.isenabled()
    with start_up_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    assert main(["invoke", str(calc), "add(1, 2)"]) == 0
    assert gc.isenabled()  # resumed when the guest ran
    assert main(["invoke", str(calc), "nope()"]) == 1
    assert gc.isenabled()  # resumed although no guest ran
    gc.disable()
    try:
        assert main(["invoke", str(calc), "add(1, 2)"]) == 0
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()
    assert gc.get_freeze_count() == 0  # start-up's objects are the collector's again
