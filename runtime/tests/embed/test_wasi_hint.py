"""A missing ``wasi:*`` import names the fix: ``polyengine_wasi.wasi()``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import polyengine
import polyengine.sync
import polyengine_wasi

HELLO = Path(__file__).resolve().parents[3] / "examples" / "hello" / "hello.wat"


def test_missing_wasi_import_names_polyengine_wasi(wat: Callable[[str], bytes]) -> None:
    data = wat(HELLO.read_text(encoding="utf-8"))
    with pytest.raises(polyengine.MissingImportError) as info:
        polyengine.sync.instantiate_sync(data, {})
    message = str(info.value)
    assert "'wasi:" in message
    assert "polyengine_wasi.wasi()" in message
    # The advice is right: with the WASI imports the same component links and runs.
    out = bytearray()
    with polyengine.sync.instantiate_sync(data, polyengine_wasi.wasi(stdout=out)) as instance:
        assert instance.exports["wasi:cli/run@0.2.0"].run() is None
    assert out == b"Hello, world!\n"


def test_other_missing_interfaces_get_no_wasi_advice(wat: Callable[[str], bytes]) -> None:
    data = wat(
        """(component
  (import "test:demo/api@1.0.0" (instance $api (export "f" (func))))
  (alias export $api "f" (func $f))
  (core func $f (canon lower (func $f)))
  (core module $m (import "h" "f" (func)))
  (core instance (instantiate $m (with "h" (instance (export "f" (func $f)))))))"""
    )
    with pytest.raises(polyengine.MissingImportError) as info:
        polyengine.sync.instantiate_sync(data, {})
    assert "test:demo/api@1.0.0" in str(info.value)
    assert "polyengine_wasi" not in str(info.value)
