"""A finished call leaves no reference cycle behind (issue 19: parked calls at scale).

Every object of a call that cycles keep alive is freed only by a full
collection, whose cost grows with everything else alive: with 100,000 calls
in flight that dominated their completion. A finished call is freed by
reference counting alone.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable

import polyengine

from .components import PARKED

Wat = Callable[[str], bytes]


def test_finished_parked_calls_leave_no_cyclic_garbage(wat: Wat) -> None:
    wasm = wat(PARKED)
    n = 200

    async def go() -> int:
        loop = asyncio.get_running_loop()
        pending: list[tuple[int, asyncio.Future[int]]] = []

        def get(x: int) -> asyncio.Future[int]:
            fut: asyncio.Future[int] = loop.create_future()
            pending.append((x, fut))
            return fut

        inst = await polyengine.instantiate(wasm, {"get": get})
        try:
            assert await _run(inst, pending, 5) == list(range(1, 6))  # warm up
            pending.clear()
            gc.collect()
            gc.disable()
            try:
                results = await _run(inst, pending, n)
                assert results == list(range(1, n + 1))
                pending.clear()
                del results
                return gc.collect()
            finally:
                gc.enable()
        finally:
            inst.close()

    found = asyncio.run(go())
    assert found < n, f"{found} objects in cycles after {n} calls"


async def _run(
    inst: polyengine.Instance, pending: list[tuple[int, asyncio.Future[int]]], n: int
) -> list[int]:
    """``n`` concurrent ``wait(k)`` calls, all parked, then all settled: ``k + 1`` each."""
    calls = [asyncio.ensure_future(inst.exports.wait(k)) for k in range(n)]
    async with asyncio.timeout(30):
        while len(pending) < n:
            await asyncio.sleep(0)
        for x, fut in pending:
            fut.set_result(x)
        return list(await asyncio.gather(*calls))
