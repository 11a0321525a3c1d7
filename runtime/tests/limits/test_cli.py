"""``polyengine run``/``invoke`` under ``-W`` limits and ``SIGINT`` (issue 19)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .components import SPIN

# A wasi:cli/run command whose ``run`` spins forever.
SPIN_COMMAND = """(component
  (core module $m (func (export "run") (result i32) (loop (br 0)) (i32.const 0)))
  (core instance $i (instantiate $m))
  (func $run (result (result)) (canon lift (core func $i "run")))
  (instance $r (export "run" (func $run)))
  (export "wasi:cli/run@0.2.0" (instance $r))
)"""


def _polyengine(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "polyengine", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        **kw,
    )


@pytest.fixture
def spin_command(wat: Callable[[str], bytes], tmp_path: Path) -> Path:
    path = tmp_path / "spin.wasm"
    path.write_bytes(wat(SPIN_COMMAND))
    return path


def test_sigint_interrupts_a_spinning_guest(spin_command: Path) -> None:
    # a first run fills the plan and module caches and tells how long a start takes here
    t0 = time.monotonic()
    warm = _polyengine("run", "-W", "timeout=100ms", str(spin_command))
    assert warm.returncode == 134, warm.stderr
    start_up = time.monotonic() - t0
    proc = subprocess.Popen(
        [sys.executable, "-m", "polyengine", "run", str(spin_command)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(max(2.0, 2 * start_up))  # start-up from the caches, then the guest spins
        assert proc.poll() is None, proc.communicate()
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        _out, err = proc.communicate(timeout=20)
        assert time.monotonic() - t0 < 5
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "failed to invoke `run` function" in err
    assert "wasm trap: interrupt" in err


def test_run_timeout(spin_command: Path) -> None:
    t0 = time.monotonic()
    proc = _polyengine("run", "-W", "timeout=300ms", str(spin_command))
    assert proc.returncode == 134, proc.stderr
    assert "wasm trap: interrupt" in proc.stderr
    assert time.monotonic() - t0 < 30


def test_run_fuel(spin_command: Path) -> None:
    proc = _polyengine("run", "-W", "fuel=100000", str(spin_command))
    assert proc.returncode == 134, proc.stderr
    assert "all fuel consumed" in proc.stderr


def test_invoke_limits(wat: Callable[[str], bytes], tmp_path: Path) -> None:
    path = tmp_path / "spin.wasm"
    path.write_bytes(wat(SPIN))
    proc = _polyengine("invoke", "-W", "max-memory-size=65536", str(path), "grow(1)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "-1"
    proc = _polyengine("invoke", str(path), "grow(1)")
    assert proc.stdout.strip() == "1"
    options = "max-table-elements=5,timeout=10s"
    proc = _polyengine("invoke", "-W", options, str(path), "grow-table(9)")
    assert proc.stdout.strip() == "-1", proc.stderr
    proc = _polyengine("invoke", "-W", "max-instances=0", str(path), "ok()")
    assert proc.returncode == 134 and "instance count too high" in proc.stderr, proc.stderr


def test_bad_wasm_options_are_named(spin_command: Path) -> None:
    for option, needle in (
        ("nonsense=1", "unknown WebAssembly option -W 'nonsense=1'"),
        ("fuel=-3", "-W fuel=-3: expected a non-negative integer"),
        ("timeout=soon", "-W timeout=soon: invalid duration"),
    ):
        proc = _polyengine("run", "-W", option, str(spin_command))
        assert proc.returncode == 1, (option, proc.stderr)
        assert needle in proc.stderr, proc.stderr


def test_serve_accepts_wasm_options() -> None:
    import argparse

    from polyengine.cli import _serve

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    _serve.register(sub)
    args = parser.parse_args(["serve", "-W", "fuel=5,max-memory-size=65536", "x.wasm"])
    limits = _serve._options(args)["limits"]
    assert limits.fuel == 5 and limits.max_memory_size == 65536
