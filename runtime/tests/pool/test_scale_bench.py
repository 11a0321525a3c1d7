"""``bench/scale.py --quick`` runs and prints every row (never a timing check)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "scale.py"


def test_the_scale_bench_prints_its_rows() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for row in (
        "ms per call in process",
        "1 worker:",
        "2 workers:",
        "ratio 2 workers / 1 worker:",
        "per core the workers got:",
        "in process:",
        "pool:",
        "difference:",
    ):
        assert row in proc.stdout, (row, proc.stdout)
