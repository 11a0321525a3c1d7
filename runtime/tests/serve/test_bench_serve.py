"""bench/serve.py's in-process modes run the hello guest: called directly, and through
the serve command's HTTP/1.1 protocol on an in-memory transport."""

from __future__ import annotations

import gc
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "serve.py"


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("polyengine_bench_serve", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("through_protocol", [False, True])
def test_in_process_modes_answer_every_request(
    through_protocol: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("uvicorn")
    saved, threshold = list(sys.path), gc.get_threshold()
    try:
        bench = _bench()
        guest = bench._guest(None, tmp_path)
        bench.in_process(guest, 5, False, through_protocol)
    finally:  # it sets up the collector as the serve process does: undone for the others
        sys.path[:] = saved
        gc.unfreeze()
        gc.set_threshold(*threshold)
    out = capsys.readouterr().out
    where = "through the serve protocol" if through_protocol else "in process"
    assert out.startswith(f"{where}: hello.wasm, 5 requests: CPU ms/request mean ")
