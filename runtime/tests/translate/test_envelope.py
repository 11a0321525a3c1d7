"""The translation envelope (python-mapping.md §7, A4): round trip and refusals."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from polyengine.errors import TranslationError
from polyengine.translate import Artifacts, artifacts_from_envelope, plan_to_json, translate

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


def test_envelope_is_identical_across_hash_seeds(
    wat2wasm: Callable[[str], bytes], tmp_path: Path
) -> None:
    nested = """(component
      (import "wasi:io/streams@0.2.0" (instance $io
        (export "r" (type $r (sub resource)))
        (export "[method]r.go" (func (param "self" (borrow $r))))))
      (component $C
        (import "io" (instance $i
          (export "r" (type $r (sub resource)))
          (export "[method]r.go" (func (param "self" (borrow $r))))))
        (alias export $i "[method]r.go" (func $go))
        (alias export $i "r" (type $r))
        (core func (canon lower (func $go)))
        (core func (canon resource.drop $r))
        (type $mine (resource (rep i32)))
        (export "mine" (type $mine)))
      (instance $a (instantiate $C (with "io" (instance $io))))
      (instance $b (instantiate $C (with "io" (instance $io))))
      (export "a" (instance $a))
      (export "b" (instance $b)))"""
    path = tmp_path / "c.wasm"
    path.write_bytes(wat2wasm(nested))
    script = (
        "import json, sys; from polyengine.translate import translate; "
        "print(json.dumps(translate(open(sys.argv[1], 'rb').read()).to_envelope(), sort_keys=True))"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", script, str(path)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outs) == 1


def test_a_plan_whose_module_digest_is_wrong_is_refused(
    wat2wasm: Callable[[str], bytes],
) -> None:
    """The runtime finds compiled modules by the plan's digests: a wrong one never gets in."""
    import dataclasses

    data = wat2wasm(WAT)
    arts = translate(data)
    module = arts.plan.modules[0]
    forged = dataclasses.replace(
        arts.plan, modules=(dataclasses.replace(module, sha256="0" * 64),)
    )
    with pytest.raises(ValueError, match="core module 0 has sha-256"):
        Artifacts(forged, data)
    envelope = arts.to_envelope()
    envelope["plan"] = plan_to_json(forged)
    with pytest.raises(ValueError, match="core module 0 has sha-256"):
        artifacts_from_envelope(envelope, data)
    assert Artifacts(arts.plan, data).plan is arts.plan
