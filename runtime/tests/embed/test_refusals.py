"""Refusals and inert marks that held without a test (python-mapping.md §4, §6).

* ``read_direct`` and ``write_direct`` are for ``stream<u8>`` only (A21): a
  direct session on a stream of another element type is a ``TypeError``
  naming the rule, and the handle stays usable.
* A failure of the guest's background work between calls surfaces on the
  next call (A11).
* A guest-resource constructor that parks cannot complete synchronously: a
  named trap.
* ``abortable()`` (A24) concerns the cancellation of an ``async`` import's
  host task; on a sync-typed import, which a guest cannot cancel, it is inert.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import Trap, abortable, suspending

from . import async_components as ac
from .test_async import aio

Wat = Callable[[str], bytes]

IMPORTING = """(component
  (import "f" (func $f (param "x" u32) (result u32)))
  (core func $fl (canon lower (func $f)))
  (core module $m
    (import "" "f" (func $f (param i32) (result i32)))
    (func (export "call-f") (param i32) (result i32) (call $f (local.get 0))))
  (core instance $i (instantiate $m (with "" (instance (export "f" (func $fl))))))
  (func (export "call-f") (param "x" u32) (result u32) (canon lift (core func $i "call-f"))))
"""


def never(_: Any) -> str:
    raise AssertionError("the direct callback must not run")


@aio
async def test_read_direct_refuses_a_stream_of_strings(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.WORDS))
    with inst:
        words = await inst.exports.words()
        with pytest.raises(TypeError, match=r"read_direct needs a stream<u8>"):
            await words.read_direct(never)
        # refused before anything was taken: the stream still reads
        got: list[str] = []
        async for chunk in words:
            got += chunk
        assert got == ["hi", "there"]


@aio
async def test_write_direct_refuses_a_stream_of_strings(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.WORDS))
    with inst:
        stream, writer = polyengine.create_stream()
        call = asyncio.ensure_future(inst.exports.count_words(stream))
        await asyncio.sleep(0)  # the guest holds the stream<string> now
        with pytest.raises(TypeError, match=r"write_direct needs a stream<u8>"):
            await asyncio.wait_for(writer.write_direct(never), 5)
        async with writer:
            assert await writer.write_all(["abc"]) == 1
        assert await asyncio.wait_for(call, 5) == 1000 + 3


@aio
async def test_abortable_is_inert_on_a_sync_typed_import(wat: Wat) -> None:
    @abortable
    def f(x: int) -> int:
        return x + 1

    inst = await polyengine.instantiate(wat(IMPORTING), {"f": f})
    with inst:
        assert [await inst.exports.call_f(i) for i in range(3)] == [1, 2, 3]


@aio
async def test_a_failure_between_calls_surfaces_on_the_next_call(wat: Wat) -> None:
    """A11: background work of the guest runs between calls; its trap poisons the
    instance and the next call reports it, naming the original failure."""
    landed: list[int] = []

    async def tick() -> int:
        await asyncio.sleep(0)
        landed.append(1)
        return 5

    def notify(v: int) -> None:
        raise ValueError(f"late failure {v}")

    inst = await polyengine.instantiate(wat(ac.BACKGROUND), {"tick": tick, "notify": notify})
    with inst:
        await asyncio.wait_for(inst.exports.spawn(), 5)  # returns before the tick lands
        for _ in range(100):
            if landed:
                break
            await asyncio.sleep(0)
        for _ in range(10):  # the callback runs once the driver sees the tick settle
            await asyncio.sleep(0)
        with pytest.raises(Trap) as info:
            await asyncio.wait_for(inst.exports.spawn(), 5)
        assert info.value.code == "instance-poisoned"
        assert "host import notify raised ValueError: late failure 5" in str(info.value)


# a guest resource whose constructor parks in a suspending() host import
PARKING_CTOR = """
(component
  (import "nap" (func $nap))
  (core func $nap (canon lower (func $nap)))
  (type $r (resource (rep i32)))
  (core func $new (canon resource.new $r))
  (core module $m
    (import "h" "nap" (func $nap))
    (import "h" "new" (func $new (param i32) (result i32)))
    (func (export "ctor") (result i32) (call $nap) (call $new (i32.const 1))))
  (core instance $i (instantiate $m
    (with "h" (instance (export "nap" (func $nap)) (export "new" (func $new))))))
  (export $r2 "r" (type $r))
  (func (export "[constructor]r") (result (own $r2)) (canon lift (core func $i "ctor")))
)
"""


@aio
async def test_a_guest_constructor_that_cannot_finish_synchronously_traps(wat: Wat) -> None:
    """A guest-resource constructor is a synchronous call (python-mapping.md §5): one
    that parks cannot complete, and the embedder gets the named trap."""

    async def nap() -> None:
        await asyncio.sleep(0)

    inst = await polyengine.instantiate(wat(PARKING_CTOR), {"nap": suspending(nap)})
    with inst:
        with pytest.raises(Trap, match=r"did not complete synchronously") as info:
            inst.exports.R()
        assert info.value.code == "cannot-block-sync"
        assert "[constructor]r" in str(info.value)
