"""The official component-model suite's validation verdicts.

Runs every ``module``/``module_definition`` (must translate) and every binary
``assert_invalid``/``assert_malformed`` (must raise ``TranslationError``) of
the converted suite at ``$POLYENGINE_CM_SUITE`` (``wasm-tools json-from-wast``
output: ``<dir>/<file>/<file>.json`` with the ``.wasm`` files next to it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from polyengine.errors import TranslationError
from polyengine.translate import translate_component

_KINDS = ("module", "module_definition", "assert_invalid", "assert_malformed")

# Verdicts we know we get wrong, with the reason (path relative to the suite, line).
KNOWN_MISSES: dict[tuple[str, int], str] = {}


def _commands() -> list[object]:
    root = os.environ.get("POLYENGINE_CM_SUITE")
    if not root:
        return [
            pytest.param(
                None,
                marks=pytest.mark.skip(reason="set POLYENGINE_CM_SUITE to the converted suite"),
                id="suite-not-configured",
            )
        ]
    base = Path(root)
    out: list[object] = []
    for path in sorted(base.glob("**/*.json")):
        doc = json.loads(path.read_text())
        rel = path.relative_to(base).as_posix()
        for cmd in doc.get("commands", ()):
            if cmd.get("type") not in _KINDS or cmd.get("module_type") != "binary":
                continue
            case = (path.parent / cmd["filename"], cmd["type"], cmd.get("text"))
            reason = KNOWN_MISSES.get((rel, cmd["line"]))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(case, marks=marks, id=f"{rel}:{cmd['line']}"))
    return out


@pytest.mark.parametrize("case", _commands())
def test_suite_verdict(case: tuple[Path, str, str | None]) -> None:
    wasm, kind, text = case
    data = wasm.read_bytes()
    if kind in ("module", "module_definition"):
        translate_component(data)
    else:
        with pytest.raises(TranslationError) as info:
            translate_component(data)
        assert "internal error" not in str(info.value)
        del text  # the suite's message text is wasm-tools' wording; only the verdict counts
