"""``python -m polyengine.testing.wast`` on a suite that ``register``s instances and core modules.

``linking.wast`` registers a component instance and a core module, then
instantiates components whose imports match and (under
``assert_unlinkable``) do not: each mismatch must be a ``LinkError`` whose
wording the command names.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from polyengine.testing import wast as wast_cli

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def suite(wasm_tools: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``linking.wast`` converted by ``wasm-tools json-from-wast`` into ``<dir>/linking/``."""
    root = tmp_path_factory.mktemp("wast")
    out = root / "linking"
    out.mkdir()
    subprocess.run(
        [
            wasm_tools,
            "json-from-wast",
            str(HERE / "linking.wast"),
            "-o",
            str(out / "linking.json"),
            "--wasm-dir",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return root


def test_every_command_passes(suite: Path) -> None:
    stream = io.StringIO()
    status = wast_cli.main([str(suite), "--no-xfail", "--json"], out=stream)
    report = json.loads(stream.getvalue())
    results = report["files"][0]["results"]
    bad = [r for r in results if r["status"] != "passed"]
    assert not bad, bad
    assert status == 0
    kinds = [r["type"] for r in results]
    assert kinds.count("register") == 2
    assert kinds.count("assert_unlinkable") == 10


def test_the_wording_is_checked(suite: Path, tmp_path: Path) -> None:
    """An ``assert_unlinkable`` whose expected text names another mismatch fails."""
    src = suite / "linking" / "linking.json"
    data = json.loads(src.read_text())
    for command in data["commands"]:
        if (
            command["type"] == "assert_unlinkable"
            and command["text"] == "mismatched resource types"
        ):
            command["text"] = "expected func found instance"
    moved = tmp_path / "linking"
    moved.mkdir()
    for f in (suite / "linking").iterdir():
        (moved / f.name).write_bytes(f.read_bytes())
    (moved / "linking.json").write_text(json.dumps(data))
    stream = io.StringIO()
    assert wast_cli.main([str(tmp_path), "--no-xfail"], out=stream) == 1
    assert "mismatched resource types" in stream.getvalue()
