"""Built-ins that must trap cleanly (CanonicalABI.md §"Canonical built-ins", issue 14).

Every fault here is a ``Trap`` naming what was wrong, never a Python
exception of the runtime (``AssertionError``, ``struct.error``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import Trap

# realloc calls waitable-set.new while the host lowers the export's string argument
REALLOC_BUILTIN = """
(component
  (core func $ws (canon waitable-set.new))
  (core module $libc
    (import "" "ws" (func $ws (result i32)))
    (memory (export "mem") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (drop (call $ws)) (i32.const 100)))
  (core instance $libc (instantiate $libc (with "" (instance (export "ws" (func $ws))))))
  (alias core export $libc "mem" (core memory $mem))
  (alias core export $libc "realloc" (core func $realloc))
  (core module $m (func (export "f") (param i32 i32) (result i32) (i32.const 7)))
  (core instance $i (instantiate $m))
  (func (export "f") (param "s" string) (result u32)
    (canon lift (core func $i "f") (memory $mem) (realloc $realloc)))
)
"""

BACKPRESSURE = """
(component
  (core func $inc (canon backpressure.inc))
  (core func $dec (canon backpressure.dec))
  (core module $m
    (import "" "inc" (func $inc))
    (import "" "dec" (func $dec))
    (func (export "inc") (param i32)
      (block $d (loop $l
        (br_if $d (i32.eqz (local.get 0)))
        (call $inc)
        (local.set 0 (i32.sub (local.get 0) (i32.const 1)))
        (br $l))))
    (func (export "dec") (call $dec)))
  (core instance $i (instantiate $m
    (with "" (instance (export "inc" (func $inc)) (export "dec" (func $dec))))))
  (func (export "inc") (param "n" u32) (canon lift (core func $i "inc")))
  (func (export "dec") (canon lift (core func $i "dec")))
)
"""

ERROR_CONTEXT = """
(component
  (core module $libc (memory (export "mem") 1)
    (data (i32.const 8) "oops")
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 512)))
  (core instance $libc (instantiate $libc))
  (alias core export $libc "mem" (core memory $mem))
  (core func $new8 (canon error-context.new (memory $mem)))
  (core func $new16 (canon error-context.new (memory $mem) string-encoding=utf16))
  (alias core export $libc "realloc" (core func $realloc))
  (core func $msg (canon error-context.debug-message (memory $mem) (realloc $realloc)))
  (core module $m
    (import "" "msg" (func $msg (param i32 i32)))
    (import "" "new8" (func $new8 (param i32 i32) (result i32)))
    (import "" "new16" (func $new16 (param i32 i32) (result i32)))
    (func (export "msg") (param i32)
      (call $msg (call $new8 (i32.const 8) (i32.const 4)) (local.get 0)))
    (func (export "new8") (param i32 i32) (result i32) (call $new8 (local.get 0) (local.get 1)))
    (func (export "new16") (param i32 i32) (result i32)
      (call $new16 (local.get 0) (local.get 1))))
  (core instance $i (instantiate $m
    (with "" (instance (export "new8" (func $new8)) (export "new16" (func $new16))
      (export "msg" (func $msg))))))
  (func (export "msg") (param "p" u32) (canon lift (core func $i "msg")))
  (func (export "new8") (param "p" u32) (param "n" u32) (result u32)
    (canon lift (core func $i "new8")))
  (func (export "new16") (param "p" u32) (param "n" u32) (result u32)
    (canon lift (core func $i "new16")))
)
"""


def call(data: bytes, name: str, *args: Any) -> Any:
    async def main() -> Any:
        with await polyengine.instantiate(data) as instance:
            return await getattr(instance.exports, name)(*args)

    return asyncio.run(main())


def test_builtin_outside_a_task_traps(wat: Callable[[str], bytes]) -> None:
    with pytest.raises(Trap) as info:
        call(wat(REALLOC_BUILTIN), "f", "abc")
    assert "waitable-set.new" in str(info.value)
    assert "no task is current" in str(info.value)
    assert "AssertionError" not in str(info.value)


def test_backpressure_overflow(wat: Callable[[str], bytes]) -> None:
    data = wat(BACKPRESSURE)
    assert call(data, "inc", 2**16 - 1) is None
    with pytest.raises(Trap, match="backpressure counter overflow"):
        call(data, "inc", 2**16)
    with pytest.raises(Trap, match="backpressure counter underflow"):
        call(data, "dec")


@pytest.mark.parametrize("name", ["new8", "new16"])
@pytest.mark.parametrize("ptr", [65530, 0xFFFF_FFF0, 0xFFFF_FFFE])
def test_error_context_message_out_of_bounds(
    wat: Callable[[str], bytes], name: str, ptr: int
) -> None:
    with pytest.raises(Trap, match=r"out-of-bounds|out of bounds"):
        call(wat(ERROR_CONTEXT), name, ptr, 100)


@pytest.mark.parametrize("ptr", [65532, 0xFFFF_FFF8])
def test_error_context_debug_message_out_of_bounds(wat: Callable[[str], bytes], ptr: int) -> None:
    with pytest.raises(Trap, match=r"out-of-bounds|out of bounds"):
        call(wat(ERROR_CONTEXT), "msg", ptr)


TASK_RETURN = """
(component
  (core module $libc (memory (export "mem") 1))
  (core instance $libc (instantiate $libc))
  (alias core export $libc "mem" (core memory $mem))
  (core func $ret_u32 (canon task.return (result u32)))
  (core func $ret_str (canon task.return (result string) (memory $mem)))
  (core func $ret_none (canon task.return))
  (core func $ret_str16 (canon task.return (result string) (memory $mem) string-encoding=utf16))
  (core module $m
    (import "" "u32" (func $u32 (param i32)))
    (import "" "str" (func $str (param i32 i32)))
    (import "" "none" (func $none))
    (import "" "str16" (func $str16 (param i32 i32)))
    (func (export "ok") (call $u32 (i32.const 5)))
    (func (export "str") (call $str (i32.const 0) (i32.const 0)))
    (func (export "none") (call $none))
    (func (export "str16") (call $str16 (i32.const 0) (i32.const 0)))
    (func (export "str8") (call $str (i32.const 0) (i32.const 0))))
  (core instance $i (instantiate $m (with "" (instance
    (export "u32" (func $ret_u32)) (export "str" (func $ret_str))
    (export "none" (func $ret_none)) (export "str16" (func $ret_str16))))))
  (type $ft (func async (result u32)))
  (type $fs (func async (result string)))
  (func (export "ok") (type $ft) (canon lift (core func $i "ok") async))
  (func (export "str") (type $ft) (canon lift (core func $i "str") async))
  (func (export "none") (type $ft) (canon lift (core func $i "none") async))
  (func (export "str16") (type $fs) (canon lift (core func $i "str16") async (memory $mem)))
  (func (export "str8") (type $fs) (canon lift (core func $i "str8") async (memory $mem)))
)
"""


def test_task_return_must_match_the_lift(wat: Callable[[str], bytes]) -> None:
    data = wat(TASK_RETURN)
    assert call(data, "ok") == 5
    assert call(data, "str8") == ""
    for name in ("str", "none", "str16"):
        with pytest.raises(Trap, match=r"invalid task\.return signature or options"):
            call(data, name)
