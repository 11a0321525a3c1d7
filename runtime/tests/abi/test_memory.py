"""BytearrayMemory, the canonical options context, and the result helpers."""

from __future__ import annotations

import pytest
from abi_helpers import make_cx

from polyengine.abi.compile import Compiler
from polyengine.abi.functions import result_outcome, result_value
from polyengine.abi.memory import PAGE_SIZE, BytearrayMemory
from polyengine.abi.options import CanonicalOptions, LiftLowerContext
from polyengine.abi.resources import ComponentInstance
from polyengine.types.model import U8, Result, String


def test_bump_realloc_aligns_copies_and_grows() -> None:
    mem = BytearrayMemory(PAGE_SIZE, heap_base=1)
    a = mem.realloc(0, 0, 8, 4)
    assert a == 8
    mem.write(a, b"abcd")
    b = mem.realloc(a, 4, 4, 2)  # shrink copies the prefix to a new block
    assert b == 12 and mem.read(b, 2) == b"ab"
    c = mem.realloc(b, 2, 2, 3 * PAGE_SIZE)
    assert len(mem) == 4 * PAGE_SIZE and mem.read(c, 2) == b"ab"
    assert [call[4] for call in mem.calls] == [a, b, c]


def test_growth_replaces_the_buffer_so_stale_views_are_detectable() -> None:
    mem = BytearrayMemory(PAGE_SIZE)
    view = mem.view()
    mem.realloc(0, 0, 1, 2 * PAGE_SIZE)
    assert len(view) == PAGE_SIZE
    assert len(mem.view()) == 3 * PAGE_SIZE


def test_growth_limit() -> None:
    mem = BytearrayMemory(PAGE_SIZE, max_pages=2)
    with pytest.raises(MemoryError, match="2 pages"):
        mem.realloc(0, 0, 1, 2 * PAGE_SIZE)


def test_context_rereads_the_view_after_realloc() -> None:
    cx, mem = make_cx(size=PAGE_SIZE)
    before = cx.mv
    ptr = cx.allocate(1, 2 * PAGE_SIZE)
    assert cx.mv is not before
    assert len(cx.mv) == len(mem) >= ptr + 2 * PAGE_SIZE


def test_realloc_result_is_masked_to_the_address_width() -> None:
    mem = BytearrayMemory()
    cx = LiftLowerContext(CanonicalOptions("utf8", mem, lambda *a: -4), ComponentInstance())
    assert cx.allocate(1, 1) == 0xFFFFFFFC
    cx64 = LiftLowerContext(
        CanonicalOptions("utf8", mem, lambda *a: -4, addrtype="i64"), ComponentInstance()
    )
    assert cx64.allocate(1, 1) == 2**64 - 4


def test_context_without_memory() -> None:
    cx = LiftLowerContext(CanonicalOptions(), ComponentInstance())
    assert len(cx.mv) == 0
    assert Compiler().codec(U8()).lift_flat(cx, [3], 0) == 3


def test_result_helpers() -> None:
    assert result_outcome({"kind": "ok", "value": 3}) == (True, 3)
    assert result_outcome({"kind": "err"}) == (False, None)
    assert result_value(True, 5) == {"kind": "ok", "value": 5}
    cx, _ = make_cx()
    c = Compiler().codec(Result(None, String()))
    out: list[int | float] = []
    c.lower_flat(cx, result_value(True), out)
    assert c.lift_flat(cx, out, 0) == {"kind": "ok"}
    out = []
    c.lower_flat(cx, result_value(False, "bad"), out)
    assert result_outcome(c.lift_flat(cx, out, 0)) == (False, "bad")


def test_scalar_only_calls_never_ask_for_a_view() -> None:
    from polyengine.abi.functions import LiftedFunc
    from polyengine.types.model import U32, FuncType

    class CountingMemory(BytearrayMemory):
        views = 0

        def view(self) -> memoryview:
            CountingMemory.views += 1
            return super().view()

    mem = CountingMemory()
    cx = LiftLowerContext(CanonicalOptions("utf8", mem, mem.realloc), ComponentInstance())
    f = LiftedFunc.compile(Compiler(), FuncType((("a", U32()), ("b", U32())), U32()))
    assert f.lower_params(cx, [1, 2]) == [1, 2]
    assert f.lift_results(cx, [3]) == 3
    assert CountingMemory.views == 0
    Compiler().codec(String()).lower_flat(cx, "abc", [])
    assert CountingMemory.views == 1  # read once, after realloc ran
