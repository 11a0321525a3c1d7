"""The host boundary of the task model (python-mapping.md §3, §4, §6).

Guest cancellation of an async import and deadlock detection (A23, A24),
handles abandoned by a trapping import (A7), the naming of traps raised by
host imports on the task-model path, eager starts of host coroutines, and
the embedder cancelling an export call it awaits.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

import polyengine
from polyengine_protocol import TRAP, UNSPECIFIED_TRAP_CODE, Trap, abortable, suspending

from . import async_components as ac
from .boundary_components import BOUNDARY
from .test_async import aio

Wat = Callable[[str], bytes]

CANCELLED_BEFORE_RETURNED = 4
TASK_CANCELLED = 6


async def _until(pred: Callable[[], bool], limit: int = 2000) -> None:
    for _ in range(limit):
        if pred():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


@pytest.fixture
def no_gc() -> Iterator[None]:
    """Cyclic garbage collection off: releases must not rely on it."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _imports(**over: Any) -> dict[str, Any]:
    async def never(_x: int) -> int:
        await asyncio.Event().wait()
        return 0

    async def sink(_s: Any) -> None:
        return None

    base: dict[str, Any] = {"get": never, "notify": lambda v: None, "sink": sink, "fsink": sink}
    base.update(over)
    return base


# -- A23/A24: a discarded call no longer keeps a stalled guest from trapping ------------------


@aio
async def test_a23_discarded_call_does_not_hide_a_deadlock(wat: Wat) -> None:
    release: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    log: list[str] = []
    notified: list[int] = []

    async def get(x: int) -> int:
        try:
            await release
        except asyncio.CancelledError:
            log.append("cancelled")
            raise
        log.append("finished")
        return x

    inst = await polyengine.instantiate(wat(BOUNDARY), _imports(get=get, notify=notified.append))
    with inst:
        with pytest.raises(Trap) as info:
            await asyncio.wait_for(inst.exports.cancel_then_stall(1), 5)
        assert info.value.code == "deadlock"
        assert notified == [CANCELLED_BEFORE_RETURNED]
        # the discarded host operation was not killed by the trap: it runs on
        await asyncio.sleep(0)
        assert log == []
        release.set_result(None)
        await asyncio.wait_for(_until(lambda: bool(log)), 5)
        assert log == ["finished"]


@aio
async def test_a24_abortable_discarded_call_is_cancelled_and_the_stall_traps(wat: Wat) -> None:
    log: list[str] = []

    @abortable
    async def get(x: int) -> int:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            log.append("cancelled")
            raise
        return x

    inst = await polyengine.instantiate(wat(BOUNDARY), _imports(get=get))
    with inst:
        with pytest.raises(Trap) as info:
            await asyncio.wait_for(inst.exports.cancel_then_stall(1), 5)
        assert info.value.code == "deadlock"
        await asyncio.wait_for(_until(lambda: bool(log)), 5)
        assert log == ["cancelled"]


# -- A7: a trapping import drops the handles it abandoned ----------------------------------


@aio
async def test_a7_trapping_import_drops_an_abandoned_stream_at_once(wat: Wat, no_gc: None) -> None:
    closed: list[str] = []

    class Source:
        """A producer that never produces: only the stream's death ends it (A13)."""

        def __aiter__(self) -> Source:
            return self

        async def __anext__(self) -> bytes:
            await asyncio.Event().wait()
            return b"never"

        async def aclose(self) -> None:
            closed.append("closed")

    def sink(s: Any) -> None:
        raise ValueError("cannot take it")

    inst = await polyengine.instantiate(wat(BOUNDARY), _imports(sink=sink))
    with inst:
        with pytest.raises(Trap, match=r"host import sink raised ValueError") as info:
            await asyncio.wait_for(inst.exports.relay(Source()), 5)
        # the trap (and its traceback, which saw the handle) is still alive here
        assert info.value.__cause__ is not None
        await asyncio.wait_for(_until(lambda: bool(closed)), 5)
        assert closed == ["closed"]


@aio
async def test_a7_coroutine_import_trapping_later_drops_its_future(wat: Wat, no_gc: None) -> None:
    src: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def fsink(f: Any) -> None:
        await asyncio.sleep(0)
        raise KeyError("later")

    inst = await polyengine.instantiate(wat(BOUNDARY), _imports(fsink=fsink))
    with inst:
        with pytest.raises(Trap, match=r"host import fsink raised KeyError") as info:
            await asyncio.wait_for(inst.exports.frelay(src), 5)
        assert info.value.__cause__ is not None
        # the dropped future cancels its producer (A13)
        await asyncio.wait_for(_until(src.cancelled), 5)


@aio
async def test_a7_a_stream_the_host_kept_is_not_dropped(wat: Wat, no_gc: None) -> None:
    kept: list[Any] = []

    async def source() -> AsyncIterator[bytes]:
        yield b"abc"
        yield b"de"

    def sink(s: Any) -> None:
        kept.append(s)
        raise ValueError("kept it, then failed")

    inst = await polyengine.instantiate(wat(BOUNDARY), _imports(sink=sink))
    with inst:
        with pytest.raises(Trap):
            await asyncio.wait_for(inst.exports.relay(source()), 5)
        (s,) = kept
        got = b""
        while chunk := await asyncio.wait_for(s.read(10), 5):
            got += chunk
        assert got == b"abcde"


# -- trap naming on the task-model path --------------------------------------------------------


def _trapping(kind: str) -> Callable[..., Any]:
    def plain(_x: int) -> int:
        raise Trap("the device is gone", code="device-gone")

    async def coroutine(_x: int) -> int:
        await asyncio.sleep(0)
        raise Trap("the device is gone", code="device-gone")

    async def at_once(_x: int) -> int:
        raise Trap("the device is gone", code="device-gone")

    return {"plain": plain, "coroutine": coroutine, "at-once": at_once}[kind]


@pytest.mark.parametrize("kind", ["plain", "coroutine", "at-once"])
@pytest.mark.parametrize("export", ["wait", "wait_cb"])
@aio
async def test_async_import_trap_keeps_its_code_and_names_the_import(
    wat: Wat, kind: str, export: str
) -> None:
    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": _trapping(kind)})
    with inst:
        with pytest.raises(Trap) as info:
            await asyncio.wait_for(getattr(inst.exports, export)(1), 5)
        trap = info.value
        assert trap.code == "device-gone"
        assert str(trap).startswith("host import get trapped: the device is gone")
        assert isinstance(trap.__cause__, Trap) and trap.__cause__.code == "device-gone"


@pytest.mark.parametrize("kind", ["plain", "coroutine", "at-once"])
@aio
async def test_suspending_sync_import_trap_keeps_its_code_and_names_the_import(
    wat: Wat, kind: str
) -> None:
    inst = await polyengine.instantiate(wat(ac.SUSPENDING), {"sleep": suspending(_trapping(kind))})
    with inst:
        with pytest.raises(Trap) as info:
            await asyncio.wait_for(inst.exports.nap(1), 5)
        assert info.value.code == "device-gone"
        assert str(info.value).startswith("host import sleep trapped: the device is gone")
        assert info.value.__cause__ is not None


@aio
async def test_hand_rolled_branded_trap_is_named_with_the_unspecified_code(wat: Wat) -> None:
    class DeviceTrap(Exception):
        __polyengine_brand__ = TRAP

    async def get(_x: int) -> int:
        await asyncio.sleep(0)
        raise DeviceTrap("unplugged")

    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": get})
    with inst:
        with pytest.raises(Trap, match=r"^host import get trapped: unplugged") as info:
            await inst.exports.wait(1)
        assert info.value.code == UNSPECIFIED_TRAP_CODE
        assert isinstance(info.value.__cause__, DeviceTrap)


@aio
async def test_unbranded_exception_still_traps_naming_the_import(wat: Wat) -> None:
    async def get(_x: int) -> int:
        raise LookupError("no such thing")

    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": get})
    with inst:
        with pytest.raises(Trap, match=r"host import get raised LookupError: no such thing") as i:
            await inst.exports.wait(1)
        assert isinstance(i.value.__cause__, LookupError)


# -- eager starts of host coroutines -------------------------------------------------------------

_var: contextvars.ContextVar[str] = contextvars.ContextVar("_var", default="unset")


@aio
async def test_coroutine_that_does_not_suspend_settles_at_once(wat: Wat) -> None:
    async def get(x: int) -> int:
        return x + 5

    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": get})
    with inst:
        # wait-cb answers 1000 + x only when the async lower returned RETURNED at once
        assert await inst.exports.wait_cb(1) == 1006


@aio
async def test_a_future_already_done_settles_at_once(wat: Wat) -> None:
    def get(x: int) -> asyncio.Future[int]:
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if x == 13:
            fut.set_exception(LookupError("unlucky"))
        else:
            fut.set_result(x + 7)
        return fut

    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": get})
    with inst:
        assert await inst.exports.wait_cb(1) == 1008  # RETURNED inside the call
        with pytest.raises(Trap, match=r"host import get raised LookupError: unlucky"):
            await inst.exports.wait_cb(13)


@aio
async def test_eager_step_runs_as_its_own_task_in_its_own_context(wat: Wat) -> None:
    seen: list[Any] = []
    outer = asyncio.current_task()

    async def get(x: int) -> int:
        me = asyncio.current_task()
        seen.append(me is not None and me is not outer)
        _var.set("inside")  # must not leak into the caller's context
        async with asyncio.timeout(5):  # binds to the call's own task
            await asyncio.sleep(0)
        seen.append(asyncio.current_task() is me)
        return x

    _var.set("outside")
    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": get})
    with inst:
        assert await inst.exports.wait(4) == 5
        assert await inst.exports.wait_cb(4) == 1004
    assert seen == [True, True, True, True]
    assert _var.get() == "outside"
    assert asyncio.current_task() is outer


@aio
async def test_timeout_entered_in_the_eager_step_expires_on_the_call_itself(wat: Wat) -> None:
    async def get(x: int) -> int:
        try:
            async with asyncio.timeout(0.01):
                await asyncio.Event().wait()
        except TimeoutError:
            return x + 90
        return 0

    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": get})
    with inst:
        # the embedder's own await is not what the timeout cancels
        assert await asyncio.wait_for(inst.exports.wait(1), 5) == 92
        assert await asyncio.wait_for(inst.exports.wait_cb(2), 5) == 1092


@aio
async def test_eager_step_may_call_back_into_the_component(wat: Wat) -> None:
    inst: Any = None

    async def get(x: int) -> int:
        if x == 1:  # instance a waits on instance b, through the host
            return int(await inst.exports.b_wait(5)) * 10
        await asyncio.sleep(0)  # b's call really waits
        return x

    inst = await polyengine.instantiate(wat(ac.TWO_INSTANCES), {"get": get})
    with inst:
        assert await asyncio.wait_for(inst.exports.a_wait(1), 5) == 61


@aio
async def test_eagerly_started_call_cancelled_by_the_guest_sees_cancelled_error(
    wat: Wat,
) -> None:
    log: list[str] = []

    @abortable
    async def get(x: int) -> int:
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        try:
            return await fut  # suspends in the eager step: a task takes over here
        except asyncio.CancelledError:
            log.append("cancelled")
            raise

    inst = await polyengine.instantiate(wat(ac.CANCEL), {"get": get})
    with inst:
        assert await inst.exports.cancel_get(1) == CANCELLED_BEFORE_RETURNED * 1000
        await asyncio.wait_for(_until(lambda: bool(log)), 5)
        assert log == ["cancelled"]


# -- the embedder cancels an export call it awaits -------------------------------------------------


@aio
async def test_cancelled_export_call_delivers_cancellation_to_the_guest(wat: Wat) -> None:
    notified: list[int] = []
    inst = await polyengine.instantiate(wat(BOUNDARY), _imports(notify=notified.append))
    with inst:
        call = asyncio.ensure_future(inst.exports.cb_wait())
        await asyncio.sleep(0.01)
        assert not call.done()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        # the guest saw the cancellation and confirmed it with task.cancel
        await asyncio.wait_for(_until(lambda: bool(notified)), 5)
        assert notified == [TASK_CANCELLED]
        # the instance is not poisoned: another call works (and is cancelled by timeout)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(inst.exports.cb_wait(), 0.01)
        assert notified == [TASK_CANCELLED, TASK_CANCELLED]


@aio
async def test_result_of_a_guest_that_returns_anyway_is_discarded(wat: Wat) -> None:
    notified: list[int] = []
    inst = await polyengine.instantiate(wat(BOUNDARY), _imports(notify=notified.append))
    with inst:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(inst.exports.cb_stubborn(), 0.01)
        await asyncio.wait_for(_until(lambda: bool(notified)), 5)
        assert notified == [TASK_CANCELLED]
        # still usable after the stubborn return was dropped
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(inst.exports.cb_wait(), 0.01)
        assert notified == [TASK_CANCELLED, TASK_CANCELLED]


@aio
async def test_guest_that_cannot_see_the_cancellation_finishes_and_is_dropped(wat: Wat) -> None:
    pending: list[asyncio.Future[int]] = []

    async def get(x: int) -> int:
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        pending.append(fut)
        return await fut

    inst = await polyengine.instantiate(wat(BOUNDARY), _imports(get=get))
    with inst:
        call = asyncio.ensure_future(inst.exports.wait_get(3))
        await asyncio.wait_for(_until(lambda: bool(pending)), 5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        # the guest waits on, not cancellably: its eventual result goes nowhere
        pending[0].set_result(7)
        answering = asyncio.ensure_future(_answer(pending, 1, 8))
        # and the instance serves the next call
        assert await asyncio.wait_for(inst.exports.wait_get(3), 5) == 8
        await answering


async def _answer(pending: list[asyncio.Future[int]], index: int, value: int) -> None:
    """Answer call ``index`` of ``get`` with ``value`` as soon as it arrives."""
    await _until(lambda: len(pending) > index)
    pending[index].set_result(value)
