"""A host object lent as ``borrow<R>`` is the guest's for the call only
(CanonicalABI.md §"Borrowed handles": a borrow never outlives the call;
python-mapping.md §5).

The host's resource table registers a fresh object passed as a borrow for
the export call that receives it and forgets it when the call ends, so the
runtime keeps no reference to it afterwards; an object the guest also owns
stays registered until the guest drops it. Both kinds of instance (the plain
synchronous path and the task model) behave alike.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import suspending

from .test_host_resources import WORLD_CELL, Cell, world_imports

Wat = Callable[[str], bytes]

KINDS = ["sync", "task"]


def imports(kind: str) -> dict[str, Any]:
    if kind == "sync":
        return world_imports()
    # a suspending()-marked import moves the whole instance onto the task model
    def make(v: int) -> Cell:
        return Cell(v)

    return world_imports(make=suspending(make))


@pytest.mark.parametrize("kind", KINDS)
def test_a_borrowed_host_object_is_released_when_the_call_ends(wat: Wat, kind: str) -> None:
    async def main() -> list[weakref.ref[Cell]]:
        inst = await polyengine.instantiate(wat(WORLD_CELL), imports(kind))
        refs: list[weakref.ref[Cell]] = []
        with inst:
            for v in range(200):
                c = Cell(v)
                refs.append(weakref.ref(c))
                assert await inst.exports.peek(c) == v * 10
                del c
            gc.collect()
            alive = sum(r() is not None for r in refs)
            assert alive == 0, f"{alive} of 200 borrowed objects stay alive"
        return refs

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_an_owned_object_lent_again_stays_until_the_guest_drops_it(wat: Wat, kind: str) -> None:
    Cell.closed = []

    async def main() -> None:
        inst = await polyengine.instantiate(wat(WORLD_CELL), imports(kind))
        with inst:
            c = Cell(7)
            kept = await inst.exports.keep(c)  # own in, own out: the host has it back
            assert kept is c
            assert await inst.exports.peek(c) == 70
            assert await inst.exports.peek(c) == 70  # lent twice, the same object
            await inst.exports.discard(c)  # owned by the guest, which drops it
            assert Cell.closed == [7]

    asyncio.run(main())
