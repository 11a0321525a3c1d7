"""The blocking facade (polyengine.sync): direct driving, the suspended fallback, refusals."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable

import pytest

from polyengine.sync import SyncFacadeError, instantiate_sync
from polyengine_protocol import Trap, suspending

from . import async_components as ac
from .components import BASIC

Wat = Callable[[str], bytes]

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="caller")


def _basic_imports(logs: list[str]) -> dict[str, object]:
    def fail() -> None:
        raise ValueError("host is unhappy")

    return {"log": logs.append, "fail": fail}


def test_synchronous_store_calls_complete_without_the_loop(wat: Wat) -> None:
    logs: list[str] = []
    with instantiate_sync(wat(BASIC), _basic_imports(logs)) as inst:
        loop = inst._loop
        add = inst.exports.add
        assert add(2, 40) == 42
        assert inst.exports.greet("sync") == "sync"
        assert logs == ["sync"]
        # nothing was scheduled on the private loop and no loop is left running
        assert not asyncio.all_tasks(loop)
        assert asyncio._get_running_loop() is None
        # the wrapped callables are built once
        assert inst.exports.add is add
        with pytest.raises(Trap):
            inst.exports.crash()
        assert asyncio._get_running_loop() is None


def test_host_import_sees_the_private_loop_running(wat: Wat) -> None:
    seen: list[asyncio.AbstractEventLoop | None] = []

    def log(msg: str) -> None:
        seen.append(asyncio._get_running_loop())

    with instantiate_sync(wat(BASIC), {"log": log, "fail": lambda: None}) as inst:
        inst.exports.greet("x")
        assert seen == [inst._loop]


def test_context_changes_of_a_call_stay_in_the_call(wat: Wat) -> None:
    def log(msg: str) -> None:
        assert _VAR.get() == "caller"
        _VAR.set(msg)

    with instantiate_sync(wat(BASIC), {"log": log, "fail": lambda: None}) as inst:
        inst.exports.greet("callee")
        assert _VAR.get() == "caller"


def test_a_call_that_suspends_is_finished_on_the_private_loop(wat: Wat) -> None:
    async def sleep(x: int) -> int:
        assert _VAR.get() == "caller"
        await asyncio.sleep(0)
        await asyncio.sleep(0.001)
        _VAR.set("callee")
        return x * 3

    with instantiate_sync(wat(ac.SUSPENDING), {"sleep": suspending(sleep)}) as inst:
        assert inst.exports.nap(5) == 16
        assert inst.exports.nap(1) == 4
        assert _VAR.get() == "caller"
        assert asyncio._get_running_loop() is None


def test_an_error_after_a_suspension_reaches_the_caller(wat: Wat) -> None:
    async def sleep(x: int) -> int:
        await asyncio.sleep(0)
        raise ValueError(f"no nap for {x}")

    with instantiate_sync(wat(ac.SUSPENDING), {"sleep": suspending(sleep)}) as inst:
        with pytest.raises(Trap, match="no nap for 7"):
            inst.exports.nap(7)
        assert asyncio._get_running_loop() is None


def test_calls_are_refused_in_a_running_loop_and_after_close(wat: Wat) -> None:
    inst = instantiate_sync(wat(BASIC), _basic_imports([]))
    add = inst.exports.add

    async def main() -> None:
        with pytest.raises(SyncFacadeError, match="running event loop"):
            add(1, 2)

    asyncio.run(main())
    assert add(1, 2) == 3
    inst.close()
    with pytest.raises(RuntimeError, match="closed"):
        add(1, 2)


def test_background_work_runs_only_while_the_loop_turns(wat: Wat) -> None:
    """A11 under the blocking facade: nothing runs between calls; run_background turns
    the private loop, and the guest's task waiting on an async import completes."""
    import time

    seen: list[int] = []

    async def tick() -> int:
        await asyncio.sleep(0)
        return 7

    with instantiate_sync(wat(ac.BACKGROUND), {"tick": tick, "notify": seen.append}) as inst:
        inst.exports.spawn()  # returns before its task's tick lands
        time.sleep(0.02)
        assert seen == []  # the documented limit: no loop turns between calls
        inst.run_background(0.05)
        assert seen == [7]
    with pytest.raises(Exception, match="closed"):
        inst.run_background(0.01)
