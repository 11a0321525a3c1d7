"""The official component-model suite, when a converted copy is pointed at.

Set ``POLYENGINE_CM_SUITE`` to a directory of ``wasm-tools json-from-wast``
output (``<dir>/<file>/<file>.json``). Each converted file is one test of
validation and translation (the executed suite is in
``test_embed_executor.py``). A file passes when it has no unexpected failure
and no stale entry in the committed xfail list.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from polyengine.testing import FileResult, Status, WastRunner, XfailList, wast
from polyengine.testing._runner import discover
from polyengine.testing._xfail import DEFAULT_XFAIL_FILE
from polyengine.testing.executor import NoExecution

SUITE = os.environ.get("POLYENGINE_CM_SUITE")
NOT_SET = "POLYENGINE_CM_SUITE is not set (converted official suite)"
FILES = (
    [(fid, path) for fid, path, has_json in discover([Path(SUITE)]) if has_json] if SUITE else []
)

pytestmark = pytest.mark.skipif(not SUITE, reason=NOT_SET)


def _failures(result: FileResult) -> list[str]:
    return [
        f"{result.id}:{r.line} {r.type}: {r.message}"
        for r in result.results
        if r.status is Status.FAILED
    ]


@pytest.mark.parametrize(("fid", "path"), FILES, ids=[fid for fid, _ in FILES])
def test_validation(fid: str, path: Path) -> None:
    runner = WastRunner(executor_factory=NoExecution, xfails=XfailList.load(DEFAULT_XFAIL_FILE))
    result = runner.run_file(path, fid)
    assert _failures(result) == []


def test_command_line_summary() -> None:
    assert SUITE is not None
    out = io.StringIO()
    status = wast.main([SUITE], out=out)
    report = out.getvalue()
    assert status == 0, report
    closing = report.strip().splitlines()[-1]
    assert int(closing.split(" passed")[0]) > 0, report


def test_every_suite_value_decodes() -> None:
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
