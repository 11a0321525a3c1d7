"""bench/translate.py runs and prints every row (never a timing check)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "translate.py"

TEXT = """(component
  (core module $m (func (export "f") (param i32) (result i32) local.get 0))
  (core instance $i (instantiate $m))
  (func (export "f") (param "x" u32) (result u32) (canon lift (core func $i "f")))
)"""


def test_quick_run_prints_every_row(wat2wasm: Callable[[str], bytes], tmp_path: Path) -> None:
    component = tmp_path / "small.wasm"
    component.write_bytes(wat2wasm(TEXT))
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--component", str(component)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for row in (
        "cold: first translate()",
        "warm in-process: translate() 2nd+",
        "warm in-process: translate_component()",
        "warm fresh process: first translate()",
        "warm fresh process: translate_component()",
        "import polyengine.translate",
    ):
        assert row in out, out
    header = next(line for line in out.splitlines() if "total |" in line)
    for phase in ("hash", "lookup", "read", "core", "component", "inline", "plan", "store"):
        assert phase in header
