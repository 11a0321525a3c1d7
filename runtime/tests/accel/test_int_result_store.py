"""The compiled store of an integer result through an out-pointer (``_accel_hostlower.c``).

``engine.int_result_store(memory, size, signed)`` stands in for the integer
codecs' ``store`` (CanonicalABI.md §"Storing") when an async lower's host
function answers at once: it stores exactly the bytes the codec would, and
on any doubt (the value's type or range, an unaligned or out-of-bounds
address, a closed store) stores nothing, raises nothing and answers
``False``, so the codec runs and raises its own error.
"""

from __future__ import annotations

import pytest

from polyengine import engine
from polyengine.engine import _callpath

pytestmark = pytest.mark.skipif(
    _callpath._ACCEL is None, reason="the compiled call path is not built"
)

PAGE = 65536
INTS = [(1, False), (1, True), (2, False), (2, True), (4, False), (4, True), (8, False), (8, True)]


def _fits(value: object, size: int, signed: bool) -> bool:
    if type(value) is not int:
        return False
    bits = 8 * size
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return lo <= value <= hi


def _values(size: int, signed: bool) -> list[object]:
    bits = 8 * size
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return [0, 1, 7, lo, hi, lo - 1, hi + 1, -1, 1 << 64, -(1 << 64), 1 << 200,
            True, False, 1.0, "1", None, 2**63 - 1, -(2**63)]  # fmt: skip


@pytest.mark.parametrize(("size", "signed"), INTS)
def test_stores_what_the_codec_stores_and_nothing_else(size: int, signed: bool) -> None:
    store = engine.EngineStore(suspend=False)
    mem = engine.new_memory(store, 1)
    put = engine.int_result_store(mem, size, signed)
    assert put is not None
    pointers = [0, size, 64, PAGE - size, PAGE - size + 1, PAGE, PAGE + 64, 3, -size, 0xFFFF_FFFF]
    for value in _values(size, signed):
        for ptr in pointers:
            mem.write(0, bytes(range(256)) * (PAGE // 256))
            before = mem.read(0, PAGE)
            flat = [123, ptr]
            addr = ptr & 0xFFFF_FFFF
            ok = _fits(value, size, signed) and addr % size == 0 and addr + size <= PAGE
            assert put(flat, 1, value) is ok, (value, ptr)
            after = mem.read(0, PAGE)
            if not ok:
                assert after == before, (value, ptr)
                continue
            assert isinstance(value, int)
            want = value.to_bytes(size, "little", signed=signed)
            assert after[addr : addr + size] == want
            assert after[:addr] == before[:addr] and after[addr + size :] == before[addr + size :]


def test_a_grown_memory_is_seen_and_a_closed_store_answers_false() -> None:
    store = engine.EngineStore(suspend=False)
    mem = engine.new_memory(store, 1, 3)
    put = engine.int_result_store(mem, 4, False)
    assert put is not None
    assert put([PAGE], 0, 5) is False
    mem.grow(1)
    assert put([PAGE], 0, 5) is True
    assert mem.read(PAGE, 4) == (5).to_bytes(4, "little")
    store.close()
    assert put([0], 0, 5) is False


def test_the_pure_path_has_none() -> None:
    with _callpath.pure_stores():
        store = engine.EngineStore(suspend=False)
    mem = engine.new_memory(store, 1)
    assert engine.int_result_store(mem, 4, False) is None
