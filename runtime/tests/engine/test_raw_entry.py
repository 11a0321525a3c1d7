"""``CoreFunc.raw_entry``: a caller following its protocol gets what ``call_raw`` gives."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from polyengine.engine import CoreModule, CoreTrap, EngineStore, instantiate
from polyengine.engine._core import RawEntry

Wat = Callable[..., CoreModule]

MODULE = """(module
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
  (func (export "swap") (param i64 f64) (result f64 i64) local.get 1 local.get 0)
  (func (export "half") (param f32) (result f32) local.get 0 f32.const 0.5 f32.mul)
  (func (export "boom") unreachable)
)"""


def _call(raw: RawEntry, args: Sequence[Any]) -> Sequence[Any]:
    """The call as the RawEntry protocol describes it, through ``pack_into``."""
    ctx = raw.state.ctx
    if not ctx or raw.state.async_required:
        return raw.call_raw(args)
    raw.pack_into(raw.buf, 0, *args)
    err = raw.entry(ctx, raw.addr, raw.buf_addr, raw.nslots, raw.trap_addr)
    if err or raw.trap.value:
        raw.fail(err)
    return raw.unpack_from(raw.buf)


def test_raw_entry_calls_like_call_raw(wat: Wat) -> None:
    with EngineStore() as store:
        inst = instantiate(store, wat(MODULE), [])
        for name, args in [("add", (2, 40)), ("swap", (2**40, 1.5)), ("half", (3.0,))]:
            func = inst.func(name)
            raw = func.raw_entry()
            assert raw is not None
            assert tuple(_call(raw, args)) == tuple(func.call_raw(args))


def test_slot_views_write_arguments_and_read_results(wat: Wat) -> None:
    with EngineStore() as store:
        inst = instantiate(store, wat(MODULE), [])
        raw = inst.func("swap").raw_entry()
        assert raw is not None and raw.views is not None
        i64, per_i64 = raw.views["i64"]
        f64, per_f64 = raw.views["f64"]
        i64[0 * per_i64] = 2**63 + 5
        f64[1 * per_f64] = -2.25
        assert not raw.entry(raw.state.ctx, raw.addr, raw.buf_addr, raw.nslots, raw.trap_addr)
        assert raw.trap.value is None
        assert (f64[0 * per_f64], i64[1 * per_i64]) == (-2.25, 2**63 + 5)
        assert tuple(raw.unpack_from(raw.buf)) == (-2.25, 2**63 + 5)


def test_a_trap_goes_through_fail_and_the_cell_is_reset(wat: Wat) -> None:
    with EngineStore() as store:
        inst = instantiate(store, wat(MODULE), [])
        raw = inst.func("boom").raw_entry()
        assert raw is not None
        with pytest.raises(CoreTrap):
            _call(raw, ())
        assert not raw.trap.value
        add = inst.func("add").raw_entry()
        assert add is not None
        assert tuple(_call(add, (1, 2))) == (3,)  # the store is usable after the trap


def test_a_closed_store_is_left_to_call_raw(wat: Wat) -> None:
    store = EngineStore()
    inst = instantiate(store, wat(MODULE), [])
    raw = inst.func("add").raw_entry()
    assert raw is not None
    store.close()
    assert raw.state.ctx == 0
    with pytest.raises(Exception, match="closed"):
        _call(raw, (1, 2))
