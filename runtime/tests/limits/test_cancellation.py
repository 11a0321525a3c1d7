"""asyncio timeouts and cancellation reach a guest that is running (issue 19)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

import polyengine
from polyengine_protocol import Trap

from .components import SPIN, SPIN_ASYNC


@pytest.mark.parametrize("source", [SPIN, SPIN_ASYNC], ids=["sync-lift", "task-model"])
def test_asyncio_timeout_interrupts_a_spinning_guest(
    wat: Callable[[str], bytes], source: str
) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(wat(source))
        other = await polyengine.instantiate(wat(source))
        t0 = time.monotonic()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await inst.exports.spin()
        assert time.monotonic() - t0 < 1.5
        with pytest.raises(Trap) as info:
            await inst.exports.ok()
        assert info.value.code == "instance-poisoned"
        assert "interrupt" in str(info.value)
        assert await other.exports.ok() == 7
        await asyncio.sleep(0)  # no cancellation is left pending on the task

    asyncio.run(go())


def test_task_model_export_spinning_at_once(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(wat(SPIN_ASYNC))
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await inst.exports.spin_now()

    asyncio.run(go())


def test_wait_for_interrupts_a_spinning_guest(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(wat(SPIN))
        t0 = time.monotonic()
        with pytest.raises((TimeoutError, Trap)):
            await asyncio.wait_for(inst.exports.spin(), 0.3)
        assert time.monotonic() - t0 < 1.5

    asyncio.run(go())


def test_an_unrelated_due_timer_does_not_interrupt(wat: Callable[[str], bytes]) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(wat(SPIN))
        fired: list[float] = []
        asyncio.get_running_loop().call_later(0.01, lambda: fired.append(time.monotonic()))
        other = asyncio.create_task(asyncio.sleep(0.01))
        # counts long enough to see many ticks with due timers of other tasks
        assert await inst.exports.count(300_000_000) == 300_000_000
        await other
        assert fired

    asyncio.run(go())


def test_store_interrupt_from_another_thread(wat: Callable[[str], bytes]) -> None:
    import threading

    async def go() -> None:
        inst = await polyengine.instantiate(wat(SPIN))
        store = inst._runtime.store
        threading.Timer(0.2, store.interrupt).start()
        with pytest.raises(Trap) as info:
            await inst.exports.spin()
        assert info.value.code == "interrupt"

    asyncio.run(go())
