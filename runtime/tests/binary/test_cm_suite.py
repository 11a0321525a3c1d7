"""The official Component Model suite (converted with ``wasm-tools json-from-wast``).

Set ``POLYENGINE_CM_SUITE`` to a directory laid out as ``<dir>/<group>/<name>/<name>.json``
with the ``.wasm`` files next to each JSON; the suite itself is not part of
this repository.

* every component used by a ``module``/``module_definition`` command reads;
* every binary ``assert_malformed`` is refused with a TranslationError;
* every other component binary the suite mentions (``assert_invalid`` ...)
  either reads or is refused with a TranslationError, never anything else.

All binary-level ``assert_malformed`` expectations of the suite are caught by
the reader alone; ``VALIDATION_LEVEL_MALFORMED`` lists the ones that would need
validation (none today). Conversely, ``READER_REJECTS_INVALID`` lists the
``assert_invalid`` binaries that the reader already refuses because their
problem is a grammar one under Binary.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from polyengine.binary import read_component
from polyengine.errors import TranslationError

SUITE_ENV = "POLYENGINE_CM_SUITE"

VALIDATION_LEVEL_MALFORMED: frozenset[str] = frozenset()
"""``assert_malformed`` binaries (``<json stem>/<file>``) whose problem only validation sees."""

READER_REJECTS_INVALID = frozenset(
    {
        # a nested core:moduletype inside a module type: inside module types the
        # core type rules apply and 0x50 is a non-final sub, so 0x01 is no comptype
        "binary/binary.89.wasm",
    }
)


def _suite_root() -> Path | None:
    value = os.environ.get(SUITE_ENV)
    return Path(value) if value else None


def _json_files() -> list[Path]:
    root = _suite_root()
    if root is None or not root.is_dir():
        return []
    return sorted(root.glob("**/*.json"))


def _is_component(data: bytes) -> bool:
    return data[:4] == b"\x00asm" and data[6:8] == b"\x01\x00"


def _commands(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text())
    commands: list[dict[str, Any]] = doc["commands"]
    return [c for c in commands if str(c.get("filename", "")).endswith(".wasm")]


_FILES = _json_files()
_SKIP = pytest.mark.skipif(
    not _FILES, reason=f"{SUITE_ENV} is not set to a converted component-model suite"
)


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


@_SKIP
@pytest.mark.parametrize("path", _FILES or [Path("none")], ids=_ids(_FILES) or ["none"])
def test_suite_file(path: Path) -> None:
    for cmd in _commands(path):
        wasm = path.parent / cmd["filename"]
        data = wasm.read_bytes()
        key = f"{path.stem}/{cmd['filename']}"
        kind = cmd["type"]
        if kind in ("module", "module_definition"):
            if not _is_component(data):
                continue
            read_component(data)
        elif kind == "assert_malformed" and cmd.get("module_type") == "binary":
            if key in VALIDATION_LEVEL_MALFORMED:
                continue
            with pytest.raises(TranslationError):
                read_component(data)
        elif _is_component(data):
            try:
                read_component(data)
            except TranslationError:
                assert kind == "assert_invalid" and key in READER_REJECTS_INVALID, (
                    key,
                    cmd.get("text"),
                )
            else:
                assert key not in READER_REJECTS_INVALID


def test_suite_is_skipped_cleanly_without_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SUITE_ENV, raising=False)
    assert _suite_root() is None
    monkeypatch.setenv(SUITE_ENV, "/nonexistent/suite")
    assert _json_files() == []
