"""The translation envelope (python-mapping.md §7, A4): round trip and refusals."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest

from polyengine.errors import TranslationError
from polyengine.translate import Artifacts, artifacts_from_envelope, translate

WAT = """
(component
  (core module $m (func (export "f") (result i32) i32.const 7))
  (core instance $i (instantiate $m))
  (func (export "f") (result u32) (canon lift (core func $i "f")))
)
"""


def test_translate_returns_artifacts(wat2wasm: Callable[[str], bytes]) -> None:
    data = wat2wasm(WAT)
    art = translate(data)
    assert isinstance(art, Artifacts)
    assert art.sha256 == hashlib.sha256(data).hexdigest()
    assert art.component_bytes == data
    assert art.module_bytes(0)[:4] == b"\0asm"


def test_envelope_round_trip(wat2wasm: Callable[[str], bytes]) -> None:
    data = wat2wasm(WAT)
    art = translate(data)
    env = art.to_envelope()
    assert env["format"] == "polyengine.translation-envelope"
    assert env["version"] == 1
    assert env["component_sha256"] == art.sha256
    text = json.dumps(env, sort_keys=True)
    assert text == json.dumps(translate(data).to_envelope(), sort_keys=True)
    back = artifacts_from_envelope(json.loads(text), data)
    assert back.plan == art.plan
    assert back.sha256 == art.sha256


def test_mismatched_pair_is_refused(wat2wasm: Callable[[str], bytes]) -> None:
    data = wat2wasm(WAT)
    other = wat2wasm(WAT.replace("i32.const 7", "i32.const 8"))
    env = translate(data).to_envelope()
    with pytest.raises(ValueError) as info:
        artifacts_from_envelope(env, other)
    message = str(info.value)
    assert hashlib.sha256(data).hexdigest() in message
    assert hashlib.sha256(other).hexdigest() in message


def test_unknown_version_and_format_are_refused(wat2wasm: Callable[[str], bytes]) -> None:
    data = wat2wasm(WAT)
    env = translate(data).to_envelope()
    with pytest.raises(ValueError, match="version 99"):
        artifacts_from_envelope({**env, "version": 99}, data)
    with pytest.raises(ValueError, match="not a translation envelope"):
        artifacts_from_envelope({**env, "format": "something-else"}, data)
    with pytest.raises(ValueError, match="no plan"):
        artifacts_from_envelope({**env, "plan": None}, data)


def test_empty_component_and_truncated_section() -> None:
    empty = translate(b"\0asm\x0d\0\x01\0")
    assert empty.plan.modules == () and empty.plan.exports == ()
    with pytest.raises(TranslationError):
        translate(b"\0asm\x0d\0\x01\0\x01\x05\0")
