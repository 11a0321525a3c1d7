"""Functions and async: the amendment rules of embedder-api.md §"Functions and
async" in Python form (python-mapping.md §4). Each test is named after the
amendment it pins."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

import polyengine
from polyengine_protocol import SuspensionUnavailable, Trap, abortable, defer_cancel, suspending

from . import async_components as ac
from .test_async import aio

Wat = Callable[[str], bytes]

CANCELLED_BEFORE_RETURNED = 4
RETURNED = 2


@aio
async def test_a1_suspending_function_form_parks_a_sync_import(wat: Wat) -> None:
    async def sleep(x: int) -> int:
        await asyncio.sleep(0.001)
        return x * 3

    inst = await polyengine.instantiate(wat(ac.SUSPENDING), {"sleep": suspending(sleep)})
    with inst:
        assert await inst.exports.nap(5) == 16


@aio
async def test_a1_unmarked_sync_import_returning_an_awaitable_traps(wat: Wat) -> None:
    async def sleep(x: int) -> int:
        return x

    inst = await polyengine.instantiate(wat(ac.SUSPENDING), {"sleep": sleep})
    with inst, pytest.raises(Trap, match="sleep"):
        await inst.exports.nap(1)


@aio
async def test_a1_marked_import_from_a_start_function_traps_even_when_synchronous(
    wat: Wat,
) -> None:
    calls: list[int] = []
    with pytest.raises(Trap, match="start function"):
        await polyengine.instantiate(wat(ac.START), {"sleep": suspending(calls.append)})
    assert calls == []


@aio
async def test_a1_suspend_false_refuses_awaitables_with_suspension_unavailable(
    wat: Wat,
) -> None:
    async def sleep(x: int) -> int:
        return x

    inst = await polyengine.instantiate(
        wat(ac.SUSPENDING), {"sleep": suspending(sleep)}, suspend=False
    )
    with inst:
        with pytest.raises(Trap) as info:
            await inst.exports.nap(1)
        assert isinstance(info.value.__cause__, SuspensionUnavailable)
        # a marked import that answers synchronously still works without suspension
    inst = await polyengine.instantiate(
        wat(ac.SUSPENDING), {"sleep": suspending(lambda x: x)}, suspend=False
    )
    with inst:
        assert await inst.exports.nap(4) == 5


@aio
async def test_a2_class_is_the_authority_for_method_marks(wat: Wat) -> None:
    class Provider:
        @suspending
        async def sleep(self, x: int) -> int:
            await asyncio.sleep(0)
            return x * 10

    p = Provider()
    inst = await polyengine.instantiate(wat(ac.SUSPENDING), {"sleep": p.sleep})
    with inst:
        assert await inst.exports.nap(2) == 21

    class Plain:
        async def sleep(self, x: int) -> int:
            return x

    q = Plain()
    q.sleep = suspending(q.sleep)  # type: ignore[method-assign]
    # an instance-level override never changes suspendability: the class is unmarked
    inst = await polyengine.instantiate(wat(ac.SUSPENDING), {"sleep": Plain().sleep})
    with inst, pytest.raises(Trap, match="sleep"):
        await inst.exports.nap(1)


def test_a2_refusals_happen_at_class_definition_time() -> None:
    with pytest.raises(TypeError):

        class Bad:
            @suspending
            def __init__(self) -> None:
                pass


@aio
async def test_a11_background_task_resumes_at_settlement_without_a_call(wat: Wat) -> None:
    clock: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    seen: list[int] = []

    async def tick() -> int:
        return await clock

    inst = await polyengine.instantiate(wat(ac.BACKGROUND), {"tick": tick, "notify": seen.append})
    with inst:
        await inst.exports.spawn()
        await asyncio.sleep(0.01)
        assert seen == []
        asyncio.get_running_loop().call_later(0.005, clock.set_result, 7)
        await asyncio.wait_for(_until(lambda: bool(seen)), 5)
        assert seen == [7]


async def _until(pred: Callable[[], bool]) -> None:
    while not pred():
        await asyncio.sleep(0)


@aio
async def test_a23_guest_cancel_discards_at_once_and_keeps_the_host_running(wat: Wat) -> None:
    release: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    gate = [release]
    log: list[str] = []

    async def get(x: int) -> int:
        try:
            await gate[0]
        except asyncio.CancelledError:
            log.append("cancelled")
            raise
        log.append("finished")
        return x

    inst = await polyengine.instantiate(wat(ac.CANCEL), {"get": get})
    with inst:
        # CANCELLED_BEFORE_RETURNED at once, while the host call is still parked
        got = await asyncio.wait_for(inst.exports.cancel_get(5), 5)
        assert got == CANCELLED_BEFORE_RETURNED * 1000
        assert not release.done() and log == []
        release.set_result(None)
        await asyncio.wait_for(_until(lambda: bool(log)), 5)
        # the host operation ran to completion; its value was discarded
        assert log == ["finished"]
        # (a coroutine that does not suspend settles at once: keep the next one parked)
        gate[0] = asyncio.get_running_loop().create_future()
        assert await inst.exports.cancel_get(6) == CANCELLED_BEFORE_RETURNED * 1000


@aio
async def test_a23_late_rejection_of_a_discarded_call_is_unreported(wat: Wat) -> None:
    release: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    gate = [release]

    async def get(x: int) -> int:
        await gate[0]
        raise RuntimeError("too late to matter")

    inst = await polyengine.instantiate(wat(ac.CANCEL), {"get": get})
    with inst:
        assert await inst.exports.cancel_get(1) == CANCELLED_BEFORE_RETURNED * 1000
        release.set_result(None)
        for _ in range(5):
            await asyncio.sleep(0)
        # the instance is not poisoned by the rejection nobody asked for
        gate[0] = asyncio.get_running_loop().create_future()
        assert await inst.exports.cancel_get(2) == CANCELLED_BEFORE_RETURNED * 1000


@aio
async def test_a23_defer_cancel_runs_to_completion(wat: Wat) -> None:
    @defer_cancel
    async def get(x: int) -> int:
        await asyncio.sleep(0.001)
        return x + 1

    inst = await polyengine.instantiate(wat(ac.CANCEL), {"get": get})
    with inst:
        assert await asyncio.wait_for(inst.exports.cancel_get(5), 5) == RETURNED * 1000 + 6


@aio
async def test_a24_abortable_cancels_the_host_task_after_the_builtin_returns(wat: Wat) -> None:
    log: list[str] = []

    @abortable
    async def get(x: int) -> int:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            log.append("cancelled")
            raise
        return x

    inst = await polyengine.instantiate(wat(ac.CANCEL), {"get": get})
    with inst:
        call = asyncio.ensure_future(inst.exports.cancel_get(5))
        got = await asyncio.wait_for(call, 5)
        # the guest saw CANCELLED_BEFORE_RETURNED first ...
        assert got == CANCELLED_BEFORE_RETURNED * 1000
        # ... and the host's CancelledError arrives at its next await, later
        await asyncio.wait_for(_until(lambda: bool(log)), 5)
        assert log == ["cancelled"]


@aio
async def test_a24_abortable_is_inert_on_a_defer_cancel_import(wat: Wat) -> None:
    log: list[str] = []

    @abortable
    @defer_cancel
    async def get(x: int) -> int:
        try:
            await asyncio.sleep(0.001)
        except asyncio.CancelledError:
            log.append("cancelled")
            raise
        return x + 2

    inst = await polyengine.instantiate(wat(ac.CANCEL), {"get": get})
    with inst:
        assert await asyncio.wait_for(inst.exports.cancel_get(1), 5) == RETURNED * 1000 + 3
        assert log == []
