"""Reentrance is refused on every path (Component Invariant #2, CanonicalABI.md §"canon lift").

A synchronous export parked in a ``suspending()`` host import is still on
the call stack: a call back into its instance from that import (awaited, or
driven by hand) traps "cannot enter component instance", as does the plain
synchronous path. A composed callee parked the same way keeps its instance
entered for the host too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import Trap, suspending

COMPONENT = """
(component
  (import "h" (func $h))
  (core func $hl (canon lower (func $h)))
  (core module $m
    (import "" "h" (func $h))
    (func (export "f") (call $h))
    (func (export "g")))
  (core instance $i (instantiate $m (with "" (instance (export "h" (func $hl))))))
  (func (export "f") (canon lift (core func $i "f")))
  (func (export "g") (canon lift (core func $i "g")))
)
"""

# the outer export calls the nested instance's "f", which parks in the host import
NESTED = """
(component
  (import "h" (func $h))
  (component $Inner
    (import "h" (func $h))
    (core func $hl (canon lower (func $h)))
    (core module $m
      (import "" "h" (func $h))
      (func (export "f") (call $h))
      (func (export "g")))
    (core instance $i (instantiate $m (with "" (instance (export "h" (func $hl))))))
    (func (export "f") (canon lift (core func $i "f")))
    (func (export "g") (canon lift (core func $i "g"))))
  (instance $in (instantiate $Inner (with "h" (func $h))))
  (component $Outer
    (import "f" (func $f))
    (core func $fl (canon lower (func $f)))
    (core module $m
      (import "" "f" (func $f))
      (func (export "run") (call $f)))
    (core instance $i (instantiate $m (with "" (instance (export "f" (func $fl))))))
    (func (export "run") (canon lift (core func $i "run"))))
  (instance $out (instantiate $Outer (with "f" (func $in "f"))))
  (export "run" (func $out "run"))
  (export "g" (func $in "g"))
)
"""


def reenter(data: bytes, entry: str, make_h: Callable[[list[Any]], Any]) -> BaseException | None:
    holder: list[Any] = []

    async def main() -> BaseException | None:
        instance = await polyengine.instantiate(data, {"h": make_h(holder)})
        holder.append(instance)
        with instance:
            try:
                await getattr(instance.exports, entry)()
            except Trap as exc:
                return exc
        return None

    return asyncio.run(main())


def awaiting(holder: list[Any]) -> Any:
    @suspending
    async def h() -> None:
        await holder[0].exports.g()

    return h


def driving(holder: list[Any]) -> Any:
    def h() -> None:
        coro = holder[0].exports.g()
        try:
            coro.send(None)
        except StopIteration:
            return
        finally:
            coro.close()
        raise AssertionError("the reentrant call suspended")

    return h


@pytest.mark.parametrize("make_h", [awaiting, driving], ids=["suspending", "sync"])
def test_host_import_calling_back_traps(wat: Callable[[str], bytes], make_h: Any) -> None:
    trap = reenter(wat(COMPONENT), "f", make_h)
    assert trap is not None, "the reentrant call was allowed"
    assert "cannot enter component instance" in str(trap)
    assert trap.code == "cannot-enter"  # type: ignore[attr-defined]


def test_parked_nested_callee_stays_entered(wat: Callable[[str], bytes]) -> None:
    trap = reenter(wat(NESTED), "run", awaiting)
    assert trap is not None, "the reentrant call was allowed"
    assert "cannot enter component instance" in str(trap)


def test_parked_call_leaves_when_done(wat: Callable[[str], bytes]) -> None:
    """Once the parked call resolves, the instance can be entered again."""

    @suspending
    async def h() -> None:
        await asyncio.sleep(0)

    async def main() -> None:
        with await polyengine.instantiate(wat(COMPONENT), {"h": h}) as instance:
            await instance.exports.f()
            await instance.exports.g()
            await asyncio.gather(instance.exports.f(), instance.exports.g())

    asyncio.run(main())
