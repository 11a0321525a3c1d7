"""What instances of one component share, and what each keeps for itself.

A server makes many instances of one component (one per request for a 0.2
proxy). The compiled value handling of the host imports and exports is made
once and shared, also for types holding resource handles: such a codec reads
the resource type and the host's object table from the instance it runs in
(CanonicalABI.md §"Loading"/§"Storing", ``lift_own``, ``lower_borrow``), so
each instance still converts handles through its own table and its own
resource classes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine.abi.functions import LoweredFunc
from polyengine.translate import plan as pln
from polyengine.translate import translate

#: a world-level host resource ``cell``: the guest makes one, reads it, drops it;
#: ``keep`` and ``peek`` pass cells from the host through the guest and back
CELLS = """
(component
  (import "cell" (type $cell (sub resource)))
  (import "[constructor]cell" (func $ctor (param "v" u32) (result (own $cell))))
  (import "[method]cell.get" (func $get (param "self" (borrow $cell)) (result u32)))
  (core func $ctor (canon lower (func $ctor)))
  (core func $get (canon lower (func $get)))
  (core func $drop (canon resource.drop $cell))
  (core module $m
    (import "h" "ctor" (func $ctor (param i32) (result i32)))
    (import "h" "get" (func $get (param i32) (result i32)))
    (import "h" "drop" (func $drop (param i32)))
    (func (export "run") (param i32) (result i32) (local $h i32) (local $n i32)
      (local.set $h (call $ctor (local.get 0)))
      (local.set $n (call $get (local.get $h)))
      (call $drop (local.get $h))
      (local.get $n))
    (func (export "keep") (param i32) (result i32) (local.get 0))
    (func (export "peek") (param i32) (result i32) (local $n i32)
      (local.set $n (call $get (local.get 0)))
      (call $drop (local.get 0))
      (local.get $n)))
  (core instance $i (instantiate $m
    (with "h" (instance
      (export "ctor" (func $ctor)) (export "get" (func $get)) (export "drop" (func $drop))))))
  (func (export "run") (param "v" u32) (result u32) (canon lift (core func $i "run")))
  (func (export "keep") (param "c" (own $cell)) (result (own $cell))
    (canon lift (core func $i "keep")))
  (func (export "peek") (param "c" (borrow $cell)) (result u32)
    (canon lift (core func $i "peek")))
)
"""


def _cell_class(scale: int) -> type:
    class Cell:
        def __init__(self, v: int) -> None:
            self.v = v

        def get(self) -> int:
            return self.v * scale

    return Cell


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def cells(wat: Callable[[str], bytes]) -> Any:
    return translate(wat(CELLS))


def _lowered(inst: Any) -> list[tuple[pln.LowerImport, LoweredFunc]]:
    """Each host import's compiled value handling, as the instance compiles it."""
    runtime = inst._runtime
    out = []
    for tr in runtime.plan.trampolines:
        if isinstance(tr, pln.LowerImport):
            ro = runtime.resolve_options(tr.options, host_side=True)
            out.append((tr, LoweredFunc.compile(ro.compiler, tr.type)))
    return out


def test_instances_share_the_compiled_imports_holding_handles(cells: Any) -> None:
    async def main() -> None:
        a = await polyengine.instantiate(cells, {"Cell": _cell_class(10)})
        b = await polyengine.instantiate(cells, {"Cell": _cell_class(100)})
        try:
            assert await a.exports.run(2) == 20
            assert await b.exports.run(2) == 200
            mine, theirs = _lowered(a), _lowered(b)
            assert [tr.path for tr, _ in mine] == [("[constructor]cell",), ("[method]cell.get",)]
            for (_, fa), (_, fb) in zip(mine, theirs, strict=True):
                assert fa is fb
        finally:
            a.close()
            b.close()

    _run(main())


def test_a_shared_codec_converts_through_each_instance_s_own_table(cells: Any) -> None:
    """Interleaved calls on two instances: handles, objects and classes stay apart."""
    cell_a, cell_b = _cell_class(10), _cell_class(100)

    async def main() -> None:
        a = await polyengine.instantiate(cells, {"Cell": cell_a})
        b = await polyengine.instantiate(cells, {"Cell": cell_b})
        try:
            x, y = cell_a(1), cell_b(2)
            assert await a.exports.keep(x) is x
            assert await b.exports.keep(y) is y
            for _ in range(3):
                assert await a.exports.run(3) == 30
                assert await b.exports.run(3) == 300
                assert await a.exports.peek(x) == 10
                assert await b.exports.peek(y) == 200
            # Each instance checks host objects against its own imports' class.
            with pytest.raises(Exception, match="Cell"):
                await a.exports.keep(cell_b(5))
            with pytest.raises(Exception, match="Cell"):
                await b.exports.peek(cell_a(5))
            assert await b.exports.peek(y) == 200
        finally:
            a.close()
            b.close()

    _run(main())


def test_a_closed_instance_leaves_the_shared_imports_working(cells: Any) -> None:
    async def main() -> None:
        first = await polyengine.instantiate(cells, {"Cell": _cell_class(10)})
        assert await first.exports.run(4) == 40
        first.close()
        for scale in (7, 9):
            cell = _cell_class(scale)
            inst = await polyengine.instantiate(cells, {"Cell": cell})
            try:
                assert await inst.exports.run(4) == 4 * scale
                c = cell(6)
                assert await inst.exports.keep(c) is c
            finally:
                inst.close()

    _run(main())
