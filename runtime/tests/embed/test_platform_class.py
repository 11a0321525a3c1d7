"""The platform-class binding pattern (embedder-api §"Resources", non-normative
pattern) with its three limits pinned: a standard-library class, ``io.BytesIO``,
provided directly as a host resource.

1. A property is not a method: binding is safe, a call traps naming the member.
2. A platform ``None`` where WIT expects a non-option value fails the call at the
   conversion layer, naming the import.
3. Platform exceptions are unbranded: they trap, naming the import.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import Trap

from .components import LIBC, OPTS

PLATFORM = f"""
(component
  {LIBC}
  (import "test:platform/io" (instance $io
    (export "bytes-i-o" (type $b (sub resource)))
    (export "[constructor]bytes-i-o" (func (param "initial" (list u8)) (result (own $b))))
    (export "[method]bytes-i-o.write"
      (func (param "self" (borrow $b)) (param "data" (list u8)) (result u64)))
    (export "[method]bytes-i-o.tell" (func (param "self" (borrow $b)) (result u64)))
    (export "[method]bytes-i-o.closed" (func (param "self" (borrow $b)) (result bool)))
    (export "[method]bytes-i-o.seek"
      (func (param "self" (borrow $b)) (param "pos" s64) (result u64)))
    (export "[method]bytes-i-o.flush" (func (param "self" (borrow $b)) (result u64)))))
  (alias export $io "bytes-i-o" (type $b))
  (alias export $io "[constructor]bytes-i-o" (func $ctor))
  (alias export $io "[method]bytes-i-o.write" (func $write))
  (alias export $io "[method]bytes-i-o.tell" (func $tell))
  (alias export $io "[method]bytes-i-o.closed" (func $closed))
  (alias export $io "[method]bytes-i-o.seek" (func $seek))
  (alias export $io "[method]bytes-i-o.flush" (func $flush))
  (core func $ctor (canon lower (func $ctor) {OPTS}))
  (core func $write (canon lower (func $write) {OPTS}))
  (core func $tell (canon lower (func $tell)))
  (core func $closed (canon lower (func $closed)))
  (core func $seek (canon lower (func $seek)))
  (core func $flush (canon lower (func $flush)))
  (core func $drop (canon resource.drop $b))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "h" "ctor" (func $ctor (param i32 i32) (result i32)))
    (import "h" "write" (func $write (param i32 i32 i32) (result i64)))
    (import "h" "tell" (func $tell (param i32) (result i64)))
    (import "h" "closed" (func $closed (param i32) (result i32)))
    (import "h" "seek" (func $seek (param i32 i64) (result i64)))
    (import "h" "flush" (func $flush (param i32) (result i64)))
    (import "h" "drop" (func $drop (param i32)))
    (data (i32.const 0) "abcde")
    (func (export "ok") (result i64) (local $h i32) (local $r i64)
      (local.set $h (call $ctor (i32.const 0) (i32.const 2)))
      (drop (call $seek (local.get $h) (i64.const 2)))
      (drop (call $write (local.get $h) (i32.const 2) (i32.const 3)))
      (local.set $r (call $tell (local.get $h)))
      (call $drop (local.get $h))
      (local.get $r))
    (func (export "closed") (result i32)
      (call $closed (call $ctor (i32.const 0) (i32.const 1))))
    (func (export "seek") (result i64)
      (call $seek (call $ctor (i32.const 0) (i32.const 1)) (i64.const -1)))
    (func (export "flush") (result i64)
      (call $flush (call $ctor (i32.const 0) (i32.const 1)))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "h" (instance
      (export "ctor" (func $ctor)) (export "write" (func $write)) (export "tell" (func $tell))
      (export "closed" (func $closed)) (export "seek" (func $seek))
      (export "flush" (func $flush)) (export "drop" (func $drop))))))
  (func (export "ok") (result u64) (canon lift (core func $i "ok")))
  (func (export "closed") (result bool) (canon lift (core func $i "closed")))
  (func (export "seek") (result u64) (canon lift (core func $i "seek")))
  (func (export "flush") (result u64) (canon lift (core func $i "flush")))
)
"""


def call(wat: Callable[[str], bytes], name: str) -> Any:
    async def main() -> Any:
        inst = await polyengine.instantiate(
            wat(PLATFORM), {"test:platform/io": {"BytesIO": io.BytesIO}}
        )
        return await getattr(inst.exports, name)()

    return asyncio.run(main())


def test_platform_class_binds_and_works(wat: Callable[[str], bytes]) -> None:
    # BytesIO(b"ab"), seek(2), write(b"cde") -> tell() == 5; the drop calls close().
    assert call(wat, "ok") == 5


def test_limit_1_property_is_not_a_method(wat: Callable[[str], bytes]) -> None:
    with pytest.raises(Trap, match=r"bytes-i-o\.closed.*has no method 'closed'"):
        call(wat, "closed")


def test_limit_2_platform_none_fails_the_conversion(wat: Callable[[str], bytes]) -> None:
    with pytest.raises(TypeError, match=r"import .*bytes-i-o\.flush returned a value of the"):
        call(wat, "flush")


def test_limit_3_platform_exception_traps_naming_the_import(
    wat: Callable[[str], bytes],
) -> None:
    with pytest.raises(Trap, match=r"bytes-i-o\.seek raised ValueError"):
        call(wat, "seek")
