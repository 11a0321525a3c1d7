"""``Limits.max_stackful``: live stackful activations per store, with backpressure (issue 19).

A call beyond the cap waits for a fiber to finish instead of allocating one,
so any number of concurrent calls into a stackful export completes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

import polyengine
from polyengine import Limits
from polyengine.concurrency.store import DEFAULT_MAX_STACKFUL

from .components import PARKED

Wat = Callable[[str], bytes]


def _run_parked(wasm: bytes, limits: Limits | None, n: int) -> tuple[list[int], int, int]:
    """``n`` concurrent ``wait`` calls; the host settles each ``get`` a loop turn later.

    Returns the results, the most ``get`` calls ever in flight at once, and
    the most fibers the store counted.
    """

    async def go() -> tuple[list[int], int, int]:
        loop = asyncio.get_running_loop()
        in_flight = [0, 0]

        def get(x: int) -> asyncio.Future[int]:
            fut: asyncio.Future[int] = loop.create_future()
            in_flight[0] += 1
            in_flight[1] = max(in_flight[1], in_flight[0])

            def settle() -> None:
                in_flight[0] -= 1
                fut.set_result(x)

            loop.call_later(0.001, settle)
            return fut

        inst = await polyengine.instantiate(wasm, {"get": get}, limits=limits)
        store = inst._runtime.tasks.store  # type: ignore[attr-defined]
        most = [0]

        async def watch() -> None:
            while True:
                most[0] = max(most[0], store.fibers)
                await asyncio.sleep(0)

        watcher = asyncio.ensure_future(watch())
        try:
            async with asyncio.timeout(60):
                results = await asyncio.gather(*(inst.exports.wait(k) for k in range(n)))
        finally:
            watcher.cancel()
            inst.close()
        assert store.fibers == 0
        return list(results), in_flight[1], most[0]

    return asyncio.run(go())


def test_calls_beyond_the_cap_wait_for_a_fiber_and_all_complete(wat: Wat) -> None:
    results, in_flight, fibers = _run_parked(wat(PARKED), Limits(max_stackful=8), 300)
    assert results == [k + 1 for k in range(300)]
    assert in_flight <= 8
    assert fibers <= 8


def test_without_a_cap_every_call_parks_at_once(wat: Wat) -> None:
    results, in_flight, _fibers = _run_parked(wat(PARKED), Limits(max_stackful=None), 300)
    assert results == [k + 1 for k in range(300)]
    assert in_flight == 300


def test_the_default_cap_is_the_stores() -> None:
    assert Limits().max_stackful == DEFAULT_MAX_STACKFUL
    assert DEFAULT_MAX_STACKFUL <= 16_000  # well under ~32,600 fibers a process can map


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8"])
def test_a_bad_cap_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="max_stackful"):
        Limits(max_stackful=bad)  # type: ignore[arg-type]
