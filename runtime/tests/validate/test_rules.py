"""Component validation rules, one small component each.

Binary.md, Explainer.md and CanonicalABI.md §"Canonical Definitions".
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from polyengine.errors import TranslationError
from polyengine.translate import translate_component

Wat = Callable[[str], bytes]

_CORE = """
  (core module $m
    (memory (export "mem") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) unreachable)
    (func (export "f-ii") (param i32 i32))
    (func (export "f-i-i") (param i32) (result i32) unreachable)
    (func (export "f-i") (param i32))
    (func (export "f-r") (result i32) unreachable)
    (func (export "cb") (param i32 i32 i32) (result i32) unreachable)
    (func (export "f") )
    (func (export "bad-realloc") (param i32) (result i32) unreachable)
  )
  (core instance $i (instantiate $m))
  (alias core export $i "mem" (core memory $mem))
  (alias core export $i "realloc" (core func $realloc))
"""


def core(body: str) -> str:
    """A component with a core instance ``$i`` (memory, realloc, a few funcs) plus ``body``."""
    return f"(component {_CORE} {body})"


REASON = {
    "kebab import name": "not in kebab case",
    "duplicate import names": "conflicts with previous name",
    "method and static conflict": "conflicts with previous name",
    "method without self": "first argument called `self`",
    "constructor of unknown resource": "expected resource name",
    "bad interface name": "not a valid extern name",
    "bad version": "bad version",
    "empty record": "at least one field",
    "duplicate field labels": "conflicts with previous",
    "too many flags": "more than 32 flags",
    "borrow in result": "cannot contain a `borrow`",
    "stream of char": "`stream<char>` is not valid",
    "borrow in stream": "cannot contain a `borrow`",
    "value too large": "exceeds maximum byte size",
    "own of non-resource": "not a resource type",
    "type index out of bounds": "type index out of bounds",
    "resource in a type": "concrete component",
    "outer alias count": "invalid outer alias count",
    "realloc missing for string param": "`realloc` is required",
    "realloc without memory": "requires `memory`",
    "memory missing for string param": "`memory` is required",
    "wrong lifted core signature": "do not match",
    "conflicting string encodings": "conflicts with option",
    "realloc wrong signature": "incorrect signature",
    "async option on sync type": "requires an async function type",
    "async lift of a string result without memory": "`memory` is required",
    "callback without async": "callback without async",
    "post-return on lower": "cannot be specified for lowerings",
    "post-return wrong signature": "incorrect signature",
    "resource.new of imported resource": "not a local resource",
    "destructor signature": "destructor",
    "core instantiate missing arg": "missing module instantiation argument",
    "core instantiate wrong type": "type mismatch",
    "instantiate missing import": "missing import named `x`",
    "instantiate wrong record": "expected field name",
    "instantiate wrong resource": "resource types are not the same",
    "alias of missing export": "no export named `nope`",
    "unnamed record in export": "not valid to be used as export",
    "unnamed resource in export": "not valid to be used as export",
    "duplicate core module imports": "duplicate import name",
    "implements on a func": "only instances",
}

INVALID = {
    "kebab import name": '(component (import "aBc" (func)))',
    "duplicate import names": '(component (import "a" (func)) (import "A" (func)))',
    "method and static conflict": """(component
        (import "r" (type $r (sub resource)))
        (import "[method]r.a" (func (param "self" (borrow $r))))
        (import "[static]r.a" (func)))""",
    "method without self": """(component
        (import "r" (type $r (sub resource)))
        (import "[method]r.a" (func (param "x" (borrow $r)))))""",
    "constructor of unknown resource": """(component
        (import "r" (type $r (sub resource)))
        (import "[constructor]q" (func (result (own $r)))))""",
    "bad interface name": '(component (import "wasi:http" (instance)))',
    "bad version": '(component (import "wasi:http/types@1.x" (instance)))',
    "empty record": "(component (type (record)))",
    "duplicate field labels": '(component (type (record (field "a" u8) (field "A" u8))))',
    "too many flags": "(component (type (flags " + " ".join(f'"f{i}"' for i in range(33)) + ")))",
    "borrow in result": """(component
        (import "r" (type $r (sub resource)))
        (import "f" (func (result (borrow $r)))))""",
    "stream of char": "(component (type (stream char)))",
    "borrow in stream": """(component
        (import "r" (type $r (sub resource)))
        (type (stream (borrow $r))))""",
    "value too large": "(component (type (list u64 33554432)))",
    "own of non-resource": "(component (type $t u32) (type (own $t)))",
    "type index out of bounds": '(component (import "f" (func (param "x" 7))))',
    "resource in a type": "(component (type (component (type (resource (rep i32))))))",
    "outer alias count": "(component (alias outer 2 0 (type)))",
    "realloc missing for string param": core(
        '(func (param "s" string) (canon lift (core func $i "f-ii") (memory $mem)))'
    ),
    "realloc without memory": core(
        '(func (param "s" string) (canon lift (core func $i "f-ii") (realloc $realloc)))'
    ),
    "memory missing for string param": core(
        '(func (param "s" string) (canon lift (core func $i "f-ii")))'
    ),
    "wrong lifted core signature": core('(func (param "x" u32) (canon lift (core func $i "f")))'),
    "conflicting string encodings": core(
        '(func (canon lift (core func $i "f") string-encoding=utf8 string-encoding=utf16))'
    ),
    "realloc wrong signature": core(
        '(func (param "s" string) (canon lift (core func $i "f-ii") (memory $mem)'
        ' (realloc (core func $i "bad-realloc"))))'
    ),
    "async lift of a string result without memory": core(
        "(type $ft (func async (result string)))"
        ' (func (type $ft) (canon lift (core func $i "f-r") async (callback (core func $i "cb"))))'
    ),
    "async option on sync type": core('(func (canon lift (core func $i "f") async))'),
    "callback without async": core(
        '(func (canon lift (core func $i "f") (callback (core func $i "f"))))'
    ),
    "post-return on lower": core(
        '(import "g" (func $g))'
        ' (core func (canon lower (func $g) (post-return (core func $i "f"))))'
    ),
    "post-return wrong signature": core(
        '(func (result u32) (canon lift (core func $i "f-r") (post-return (core func $i "f"))))'
    ),
    "resource.new of imported resource": """(component
        (import "r" (type $r (sub resource)))
        (core func (canon resource.new $r)))""",
    "destructor signature": core('(type (resource (rep i32) (dtor (core func $i "f"))))'),
    "core instantiate missing arg": """(component
        (core module $m (import "env" "f" (func)))
        (core instance (instantiate $m)))""",
    "core instantiate wrong type": """(component
        (core module $a (func (export "f") (param i32)))
        (core instance $ia (instantiate $a))
        (core module $m (import "env" "f" (func)))
        (core instance (instantiate $m (with "env" (instance $ia)))))""",
    "instantiate missing import": """(component
        (component $c (import "x" (func)))
        (instance (instantiate $c)))""",
    "instantiate wrong record": """(component
        (type $r1 (record (field "a" u32)))
        (import "t1" (type $t1 (eq $r1)))
        (component $c
          (type $r2 (record (field "b" u32)))
          (import "t" (type (eq $r2))))
        (instance (instantiate $c (with "t" (type $t1)))))""",
    "instantiate wrong resource": """(component
        (import "a" (type $a (sub resource)))
        (import "b" (type $b (sub resource)))
        (import "f" (func $f (result (own $b))))
        (component $c
          (import "r" (type $r (sub resource)))
          (import "g" (func (result (own $r)))))
        (instance (instantiate $c (with "r" (type $a)) (with "g" (func $f)))))""",
    "alias of missing export": """(component
        (import "i" (instance $i))
        (alias export $i "nope" (func)))""",
    "unnamed record in export": core(
        """(type $rec (record (field "x" u32)))
        (func $f (param "r" $rec) (canon lift (core func $i "f-i")))
        (export "f" (func $f))"""
    ),
    "unnamed resource in export": core(
        """(type $r (resource (rep i32)))
        (func $f (result (own $r)) (canon lift (core func $i "f-r")))
        (export "f" (func $f))"""
    ),
    "duplicate core module imports": """(component
        (core module (import "a" "b" (func)) (import "a" "b" (func))))""",
    "implements on a func": '(component (import "a" (implements "a:b/c") (func)))',
}

VALID = {
    "named record in export": core(
        """(type $rec (record (field "x" u32)))
        (export $rec2 "rec" (type $rec))
        (func $f (param "r" $rec2) (canon lift (core func $i "f-i")))
        (export "f" (func $f))"""
    ),
    "async lift with callback": core(
        "(type $ft (func async (result string)))"
        ' (func (type $ft) (canon lift (core func $i "f-r") async (memory $mem)'
        ' (callback (core func $i "cb"))))'
    ),
    "versioned interfaces": """(component
        (import "wasi:http/types@0.2.0" (instance))
        (import "wasi:http/types@0.3.0-rc-2025-01-01" (instance))
        (export "my:pkg/iface@1.0.0" (instance 0)))""",
    "resource methods": """(component
        (import "r" (type $r (sub resource)))
        (import "[constructor]r" (func (result (own $r))))
        (import "[method]r.get" (func (param "self" (borrow $r)) (result u32)))
        (import "[static]r.make" (func (result (own $r)))))""",
}


@pytest.mark.parametrize("text", INVALID.values(), ids=list(INVALID))
def test_invalid(wat2wasm_unchecked: Wat, text: str) -> None:
    data = wat2wasm_unchecked(text)
    with pytest.raises(TranslationError) as info:
        translate_component(data)
    name = next(k for k, v in INVALID.items() if v == text)
    assert REASON[name] in str(info.value)


@pytest.mark.parametrize("text", VALID.values(), ids=list(VALID))
def test_valid(wat2wasm: Wat, text: str) -> None:
    translate_component(wat2wasm(text))


def test_error_carries_offset_and_section(wat2wasm_unchecked: Wat) -> None:
    data = wat2wasm_unchecked('(component (import "aBc" (func)))')
    with pytest.raises(TranslationError) as info:
        translate_component(data)
    err = info.value
    assert err.section == "import"
    assert err.offset is not None and 0 < err.offset < len(data)
    assert "kebab" in err.reason
