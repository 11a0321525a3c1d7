"""The official component-model suite, when a converted copy is pointed at.

Set ``POLYENGINE_CM_SUITE`` to a directory of ``wasm-tools json-from-wast``
output (``<dir>/<file>/<file>.json``); the run must have no unexpected failure
and no stale entry in the committed xfail list.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from polyengine.testing import wast

SUITE = os.environ.get("POLYENGINE_CM_SUITE")


@pytest.mark.slow
@pytest.mark.skipif(not SUITE, reason="POLYENGINE_CM_SUITE is not set (converted official suite)")
def test_official_suite_has_no_unexpected_failures() -> None:
    assert SUITE is not None
    root = Path(SUITE)
    assert root.is_dir(), f"POLYENGINE_CM_SUITE={SUITE} is not a directory"
    out = io.StringIO()
    status = wast.main([str(root)], out=out)
    report = out.getvalue()
    assert status == 0, report
    closing = report.strip().splitlines()[-1]
    passed = int(closing.split(" passed")[0])
    assert passed > 0, report


@pytest.mark.skipif(not SUITE, reason="POLYENGINE_CM_SUITE is not set (converted official suite)")
def test_every_suite_value_decodes() -> None:
    import json

    from polyengine.testing.values import from_wast

    assert SUITE is not None
    decoded = 0
    for path in sorted(Path(SUITE).glob("*/*/*.json")):
        for command in json.loads(path.read_text(encoding="utf-8"))["commands"]:
            action = command.get("action") or {}
            for value in [*action.get("args", []), *command.get("expected", [])]:
                from_wast(value)
                decoded += 1
    assert decoded > 0


@pytest.mark.slow
@pytest.mark.skipif(not SUITE, reason="POLYENGINE_CM_SUITE is not set (converted official suite)")
def test_official_suite_executes_with_the_embed_executor() -> None:
    assert SUITE is not None
    out = io.StringIO()
    status = wast.main([SUITE, "--executor", "embed"], out=out)
    report = out.getvalue()
    assert status == 0, report
