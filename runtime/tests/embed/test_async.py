"""Async exports and imports through the task model (python-mapping.md §4)."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import polyengine
from polyengine.embed import _instantiate
from polyengine_protocol import WASI_EXIT, SuspensionUnavailable, Trap, defer_cancel, suspending

from . import async_components as ac

Wat = Callable[[str], bytes]


def aio(fn: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    """Run an async test body on a fresh event loop."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))  # type: ignore[arg-type]

    return run


@aio
async def test_callback_and_stackful_exports_are_awaitable(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.EXPORTS))
    with inst:
        assert await inst.exports.inc(41) == 42
        assert await inst.exports.dbl(21) == 42
        results = await asyncio.gather(*(inst.exports.dbl(i) for i in range(20)))
        assert results == [2 * i for i in range(20)]


class Pending:
    """Host futures keyed by the argument the guest passed."""

    def __init__(self) -> None:
        self.futures: dict[int, asyncio.Future[int]] = {}
        self.calls = 0

    async def get(self, x: int) -> int:
        self.calls += 1
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.futures[x] = fut
        return await fut

    async def wait_for(self, n: int) -> None:
        for _ in range(10_000):
            if len(self.futures) >= n:
                return
            await asyncio.sleep(0)
        raise AssertionError(f"only {len(self.futures)} of {n} host calls arrived")


@aio
async def test_async_host_import_through_sync_lower_parks_a_stackful_export(wat: Wat) -> None:
    host = Pending()
    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": host.get})
    with inst:
        call = asyncio.ensure_future(inst.exports.wait(5))
        await host.wait_for(1)
        assert not call.done()
        host.futures[5].set_result(37)
        assert await call == 38


@aio
async def test_async_host_import_through_async_lower(wat: Wat) -> None:
    host = Pending()
    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": host.get})
    with inst:
        call = asyncio.ensure_future(inst.exports.wait_cb(3))
        await host.wait_for(1)
        host.futures[3].set_result(20)
        assert await call == 1020


@aio
async def test_async_import_may_be_a_plain_function(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": lambda x: x * 10})
    with inst:
        assert await inst.exports.wait(4) == 41
        # resolved at once: the async lower returns RETURNED without a subtask
        assert await inst.exports.wait_cb(4) == 1040


@aio
async def test_exception_in_async_host_import_traps_naming_it(wat: Wat) -> None:
    async def get(x: int) -> int:
        await asyncio.sleep(0)
        raise ValueError(f"no value for {x}")

    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": get})
    with inst:
        with pytest.raises(Trap, match=r"host import get raised ValueError: no value for 9"):
            await inst.exports.wait(9)
        with pytest.raises(Trap, match="cannot enter component instance"):
            await inst.exports.wait(1)


@aio
async def test_thousand_parked_stackful_activations_resume_in_any_order(wat: Wat) -> None:
    host = Pending()
    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": host.get})
    with inst:
        n = 1000
        calls = [asyncio.ensure_future(inst.exports.wait(i)) for i in range(n)]
        await host.wait_for(n)
        order = list(range(n))
        random.Random(7).shuffle(order)
        for k, i in enumerate(order):
            host.futures[i].set_result(i * 2)
            if k % 97 == 0:
                await asyncio.sleep(0)
        assert await asyncio.gather(*calls) == [i * 2 + 1 for i in range(n)]


@aio
async def test_trap_in_one_parked_activation_poisons_only_its_instance(wat: Wat) -> None:
    host = Pending()
    inst = await polyengine.instantiate(wat(ac.TWO_INSTANCES), {"get": host.get})
    with inst:
        a = [asyncio.ensure_future(inst.exports.a_wait(i)) for i in range(0, 10)]
        b = [asyncio.ensure_future(inst.exports.b_wait(i)) for i in range(10, 20)]
        await host.wait_for(20)
        host.futures[3].set_result(0)  # the guest traps on a zero
        await asyncio.sleep(0)
        for i in range(20):
            if i != 3:
                host.futures[i].set_result(i)
        outcomes = await asyncio.gather(*a, return_exceptions=True)
        assert isinstance(outcomes[3], Trap) and "unreachable" in str(outcomes[3])
        assert all(isinstance(o, Trap) for o in outcomes)
        assert await asyncio.gather(*b) == [i + 1 for i in range(10, 20)]
        with pytest.raises(Trap, match="cannot enter component instance"):
            await inst.exports.a_wait(1)


@aio
async def test_deadlock_is_detected(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": lambda x: x})
    with inst, pytest.raises(Trap, match="deadlock detected"):
        await asyncio.wait_for(inst.exports.stuck(), 5)


@aio
async def test_between_calls_liveness(wat: Wat) -> None:
    tick: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    seen: list[int] = []

    async def tick_fn() -> int:
        return await tick

    inst = await polyengine.instantiate(
        wat(ac.BACKGROUND), {"tick": tick_fn, "notify": seen.append}
    )
    with inst:
        await inst.exports.spawn()
        assert seen == []
        tick.set_result(99)  # no export call is in flight now
        for _ in range(50):
            if seen:
                break
            await asyncio.sleep(0)
        assert seen == [99]


@aio
async def test_suspending_sync_import_parks_the_caller(wat: Wat) -> None:
    @suspending
    async def sleep(x: int) -> int:
        await asyncio.sleep(0.001)
        return x * 3

    inst = await polyengine.instantiate(wat(ac.SUSPENDING), {"sleep": sleep})
    with inst:
        assert await inst.exports.nap(5) == 16
        assert await asyncio.gather(inst.exports.nap(1), inst.exports.nap(2)) == [4, 7]


@aio
async def test_suspending_method_mark_is_read_from_the_class(wat: Wat) -> None:
    class Provider:
        @suspending
        async def sleep(self, x: int) -> int:
            await asyncio.sleep(0)
            return x

    inst = await polyengine.instantiate(wat(ac.SUSPENDING), {"sleep": Provider().sleep})
    with inst:
        assert await inst.exports.nap(2) == 3


@aio
async def test_unmarked_sync_import_returning_an_awaitable_traps(wat: Wat) -> None:
    async def sleep(x: int) -> int:
        return x

    inst = await polyengine.instantiate(wat(ac.SUSPENDING), {"sleep": sleep})
    with inst, pytest.raises(Trap, match="host import sleep"):
        await inst.exports.nap(1)


@aio
async def test_suspend_false_refuses_awaitables(wat: Wat) -> None:
    @suspending
    async def sleep(x: int) -> int:
        return x

    inst = await polyengine.instantiate(wat(ac.SUSPENDING), {"sleep": sleep}, suspend=False)
    with inst:
        with pytest.raises(Trap) as info:
            await inst.exports.nap(1)
        assert isinstance(info.value.__cause__, SuspensionUnavailable)


@aio
async def test_suspending_import_from_a_start_function_traps(wat: Wat) -> None:
    calls: list[int] = []

    @suspending
    def sleep(x: int) -> int:
        calls.append(x)
        return x

    with pytest.raises(Trap, match="start function"):
        await polyengine.instantiate(wat(ac.START), {"sleep": sleep})
    assert calls == []


@aio
async def test_plain_components_keep_the_synchronous_path(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.SUSPENDING), {"sleep": lambda x: x})
    with inst:
        assert inst._runtime.tasks is None
        assert await inst.exports.nap(1) == 2


@aio
async def test_cancelling_an_export_call_leaves_the_instance_usable(wat: Wat) -> None:
    host = Pending()
    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": host.get})
    with inst:
        call = asyncio.ensure_future(inst.exports.wait(1))
        await host.wait_for(1)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        host.futures[1].set_result(5)  # the guest finishes; its result is dropped
        other = asyncio.ensure_future(inst.exports.wait(2))
        await host.wait_for(2)
        host.futures[2].set_result(6)
        assert await other == 7


@aio
async def test_guest_to_guest_calls_between_sync_and_async(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.ADAPTERS))
    with inst:
        assert await inst.exports.sync_calls_async(1) == 102
        assert await inst.exports.async_calls_sync(5) == 16
        assert await asyncio.gather(
            inst.exports.sync_calls_async(2), inst.exports.async_calls_sync(3)
        ) == [103, 10]


@aio
async def test_closing_fails_the_calls_in_flight(wat: Wat) -> None:
    host = Pending()
    inst = await polyengine.instantiate(wat(ac.HOST_ASYNC), {"get": host.get})
    call = asyncio.ensure_future(inst.exports.wait(1))
    await host.wait_for(1)
    inst.close()
    with pytest.raises(Trap, match="closed"):
        await call
    host.futures[1].cancel()


@aio
async def test_defer_cancel_import_runs_to_completion(wat: Wat) -> None:
    @defer_cancel
    async def get(x: int) -> int:
        await asyncio.sleep(0.001)
        return x + 1

    inst = await polyengine.instantiate(wat(ac.CANCEL), {"get": get})
    with inst:
        # RETURNED (2) with the real result
        assert await asyncio.wait_for(inst.exports.cancel_get(5), 5) == 2006


class Exit(Exception):
    """A WASI exit request, recognized by its brand."""

    __polyengine_brand__ = WASI_EXIT

    def __init__(self, code: int) -> None:
        super().__init__(f"exit {code}")
        self.code = code


@pytest.mark.parametrize("mark", [False, True], ids=["plain", "suspending"])
def test_wasi_exit_reaches_the_embedder_unchanged(
    wat: Wat, mark: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the task model, an exit raised by a plain or a suspending import unwinds as itself."""

    def forced(_plan: Any, _marked: Any) -> bool:
        return True

    monkeypatch.setattr(_instantiate, "needs_task_model", forced)

    def sleep(x: int) -> int:
        raise Exit(x)

    async def main() -> None:
        inst = await polyengine.instantiate(
            wat(ac.SUSPENDING), {"sleep": suspending(sleep) if mark else sleep}
        )
        with inst:
            assert inst._runtime.tasks is not None
            await inst.exports.nap(7)

    with pytest.raises(Exit) as info:
        asyncio.run(main())
    assert info.value.code == 7
