"""Future sources whose future dies unread are cancelled (embedder-api A13,
python-mapping.md §6: "a source with a cancel() method is cancelled when the
stream dies while it is parked"; a coroutine's driving task is cancelled)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

import polyengine
from polyengine_protocol import DroppedError, StreamProducerError

from . import stream_components as sc
from .test_async import aio

Wat = Callable[[str], bytes]


async def until(pred: Callable[[], bool]) -> None:
    while not pred():
        await asyncio.sleep(0)


@aio
async def test_an_asyncio_future_dropped_unread_is_cancelled(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        store = inst._runtime.tasks.store  # type: ignore[union-attr]
        base = store.host_pending
        source: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        assert await inst.exports.drop_fut(source) == 7
        await asyncio.wait_for(until(source.done), 5)
        assert source.cancelled()
        # the pump let go of the dead future: nothing counts as host work any more (A15)
        await asyncio.wait_for(until(lambda: store.host_pending == base), 5)


@aio
async def test_a_task_dropped_unread_is_cancelled(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        task = asyncio.ensure_future(asyncio.Event().wait())
        assert await inst.exports.drop_fut(task) == 7
        await asyncio.wait_for(until(task.done), 5)
        assert task.cancelled()


@aio
async def test_a_started_coroutine_whose_future_dies_is_cancelled(wat: Wat) -> None:
    log: list[str] = []

    async def source() -> str:
        log.append("started")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            log.append("cancelled")
            raise
        finally:
            log.append("closed")
        return "never"

    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        fut = await inst.exports.echo_fut(source())
        await asyncio.wait_for(until(lambda: bool(log)), 5)
        store = inst._runtime.tasks.store  # type: ignore[union-attr]
        fut.drop()  # the reader of the future the coroutine feeds lets go unread
        await asyncio.wait_for(until(lambda: "closed" in log), 5)
        assert log == ["started", "cancelled", "closed"]
        await asyncio.wait_for(until(lambda: store.host_pending == 0), 5)


@aio
async def test_a_coroutine_dropped_unread_never_stays_parked(wat: Wat) -> None:
    log: list[str] = []

    async def source() -> str:
        log.append("started")
        await asyncio.Event().wait()
        return "never"

    coro = source()
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        assert await inst.exports.drop_fut(coro) == 7
        # closed before it ever ran, or cancelled at its await: never parked for good
        await asyncio.wait_for(until(lambda: coro.cr_frame is None), 5)


@aio
async def test_a_source_that_settles_after_the_drop_is_harmless(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        source: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        fut = await inst.exports.echo_fut(source)
        source.set_result("value")
        assert await fut == "value"


@aio
async def test_an_asyncio_future_that_fails_is_named_for_its_reader(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        source: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        fut = await inst.exports.echo_fut(source)
        source.set_exception(OSError("gone"))
        with pytest.raises(StreamProducerError) as info:
            await asyncio.wait_for(_await(fut), 5)
        assert str(info.value) == "producer for parameter `f` of echo-fut raised OSError: gone"


@aio
async def test_an_asyncio_future_cancelled_by_the_host_abandons_the_future(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        store = inst._runtime.tasks.store  # type: ignore[union-attr]
        source: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        fut = await inst.exports.echo_fut(source)
        source.cancel()
        with pytest.raises(DroppedError, match="writable end was dropped without a value"):
            await asyncio.wait_for(_await(fut), 5)
        await asyncio.wait_for(until(lambda: store.host_pending == 0), 5)


@aio
async def test_an_asyncio_future_done_before_it_is_passed_delivers_its_value(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        store = inst._runtime.tasks.store  # type: ignore[union-attr]
        source: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        source.set_result("early")
        fut = await inst.exports.echo_fut(source)
        assert await asyncio.wait_for(_await(fut), 5) == "early"
        # the value was taken: the writer let go, nothing counts as host work (A15)
        await asyncio.wait_for(until(lambda: store.host_pending == 0), 5)


async def _await(fut: object) -> object:
    return await fut  # type: ignore[misc]


@aio
async def test_a_source_that_settles_after_the_instance_closed_is_harmless(wat: Wat) -> None:
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    source: asyncio.Future[str] = loop.create_future()
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        fut = await inst.exports.echo_fut(source)
    source.set_result("late")
    for _ in range(5):
        await asyncio.sleep(0)
    assert errors == []
    del fut


def test_a_future_dropped_after_its_sources_loop_closed_is_let_go(wat: Wat) -> None:
    loop = asyncio.new_event_loop()
    source: asyncio.Future[str] = loop.create_future()

    async def start() -> tuple[polyengine.Instance, object]:
        inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
        return inst, await inst.exports.echo_fut(source)

    inst, fut = loop.run_until_complete(start())
    loop.close()
    store = inst._runtime.tasks.store  # type: ignore[union-attr]
    fut.drop()  # type: ignore[attr-defined] # the reader lets go with no loop left to run
    assert store.host_pending == 0  # the writer end was let go at once (A15)
    inst.close()
