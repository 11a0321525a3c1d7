"""Entering an export lifted in a nested component instance (CanonicalABI.md, may_enter).

A call from the host into an export enters the lifting instance and every
ancestor it has (``ComponentInstance.entering_set``); while that call runs, a
reentrant host call into any of them is refused, on the compiled scalar path
and on the general path alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import Trap

Wat = Callable[[str], bytes]

# ``f`` is lifted in the nested instance and calls the host import ``h``;
# ``g`` (scalar) and ``greet`` (a string: the general path) are lifted in the
# root instance, the nested one's parent.
NESTED = """(component
  (import "h" (func $h))
  (core module $libc (memory (export "mem") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 64)))
  (core instance $libc (instantiate $libc))
  (core module $m
    (import "libc" "mem" (memory 1))
    (func (export "g") (result i32) (i32.const 7))
    (func (export "greet") (param i32 i32) (result i32)
      (i32.store (i32.const 0) (local.get 0))
      (i32.store (i32.const 4) (local.get 1))
      (i32.const 0)))
  (core instance $mi (instantiate $m (with "libc" (instance $libc))))
  (func $g (result u32) (canon lift (core func $mi "g")))
  (func $greet (param "s" string) (result string)
    (canon lift (core func $mi "greet")
      (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
  (component $inner
    (import "h" (func $h))
    (core func $hl (canon lower (func $h)))
    (core module $n
      (import "" "h" (func $h))
      (func (export "f") (result i32) (call $h) (i32.const 1)))
    (core instance $ni (instantiate $n (with "" (instance (export "h" (func $hl))))))
    (func (export "f") (result u32) (canon lift (core func $ni "f"))))
  (instance $i (instantiate $inner (with "h" (func $h))))
  (export "f" (func $i "f"))
  (export "g" (func $g))
  (export "greet" (func $greet)))
"""


def _drive(coro: Any) -> Any:
    """Run an export coroutine that never suspends to its end, here and now."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the export call suspended")


@pytest.mark.parametrize("export", ["g", "greet"])
def test_an_ancestor_of_the_entered_instance_is_entered_too(wat: Wat, export: str) -> None:
    box: dict[str, Any] = {}
    seen: list[BaseException] = []

    def h() -> None:
        fn = getattr(box["inst"].exports, export)
        try:
            _drive(fn(*(() if export == "g" else ("x",))))
        except Trap as exc:
            seen.append(exc)
            raise

    async def main() -> None:
        inst = await polyengine.instantiate(wat(NESTED), {"h": h})
        box["inst"] = inst
        # outside any call, the root's exports are callable
        assert await inst.exports.g() == 7
        assert await inst.exports.greet("hi") == "hi"
        with pytest.raises(Trap):
            await inst.exports.f()
        assert len(seen) == 1
        assert seen[0].code == "cannot-enter"
        assert "already entered" in str(seen[0])

    asyncio.run(main())
