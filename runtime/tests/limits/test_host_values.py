"""Host values refused with a clear error instead of being misread (issue 19)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine

from .components import LIBC_OPTS, with_libc

VALUES = with_libc(
    f"""
  (type $pt0 (record (field "x" u32) (field "y" u32)))
  (type $opt0 (record (field "x" u32) (field "label" (option u32))))
  (type $v0 (variant (case "none") (case "some" u32)))
  (export $pt "point" (type $pt0))
  (export $opt "labelled" (type $opt0))
  (export $v "maybe" (type $v0))
  (core module $m
    (import "libc" "mem" (memory 1))
    (func (export "sum16") (param i32 i32) (result i32) (local.get 1))
    (func (export "pt") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
    (func (export "opt") (param i32 i32 i32) (result i32) (local.get 0))
    (func (export "var") (param i32 i32) (result i32) (local.get 0)))
  (core instance $i (instantiate $m (with "libc" (instance $libc))))
  (func (export "sum16") (param "xs" (list u16)) (result u32)
    (canon lift (core func $i "sum16") {LIBC_OPTS}))
  (func (export "f64s") (param "values" (list f64)) (result u32)
    (canon lift (core func $i "sum16") {LIBC_OPTS}))
  (func (export "pt") (param "p" $pt) (result u32) (canon lift (core func $i "pt")))
  (func (export "opt") (param "p" $opt) (result u32) (canon lift (core func $i "opt")))
  (func (export "var") (param "v" $v) (result u32) (canon lift (core func $i "var")))
"""
)


def _call(wat: Callable[[str], bytes], name: str, *args: Any) -> Any:
    async def go() -> Any:
        inst = await polyengine.instantiate(wat(VALUES))
        return await getattr(inst.exports, name)(*args)

    return asyncio.run(go())


@pytest.mark.parametrize("value", [b"\x01\x02", bytearray(4), memoryview(b"abcd")])
def test_bytes_for_a_list_of_wider_numbers_is_refused(
    wat: Callable[[str], bytes], value: object
) -> None:
    with pytest.raises(TypeError) as info:
        _call(wat, "sum16", value)
    text = str(info.value)
    assert "xs" in text and "list<u16>" in text and "list<u8> only" in text
    with pytest.raises(TypeError, match="values"):
        _call(wat, "f64s", b"\0" * 8)
    assert _call(wat, "sum16", [1, 2, 3]) == 3


def test_record_refuses_unknown_keys(wat: Callable[[str], bytes]) -> None:
    assert _call(wat, "pt", {"x": 1, "y": 2}) == 3
    with pytest.raises(TypeError) as info:
        _call(wat, "pt", {"x": 1, "y": 2, "z": 3})
    assert "'z'" in str(info.value) and "x, y" in str(info.value)
    assert _call(wat, "opt", {"x": 4}) == 4
    with pytest.raises(TypeError, match="'lable'"):
        _call(wat, "opt", {"x": 4, "lable": 5})  # a misspelt optional field


def test_variant_refuses_unknown_keys(wat: Callable[[str], bytes]) -> None:
    assert _call(wat, "var", {"kind": "some", "value": 3}) == 1
    assert _call(wat, "var", {"kind": "none"}) == 0
    with pytest.raises(TypeError, match=r"'value'.*'none' has no payload"):
        _call(wat, "var", {"kind": "none", "value": 3})
    with pytest.raises(TypeError, match="'extra'"):
        _call(wat, "var", {"kind": "some", "value": 3, "extra": 1})
