"""The thread rule: an instance is used only from the thread that created it (issue 19).

A call from another thread is refused at once with ``ThreadRuleError``,
before any guest code runs, and the instance stays usable from its own
thread (it is not poisoned), on the plain path and on the task model.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine.errors import ThreadRuleError
from polyengine.sync import instantiate_sync

from .components import PARKED

Wat = Callable[[str], bytes]

# the plain path: ``add`` and ``ping``, which calls the host import ``block``
PLAIN = """(component
  (import "block" (func $block))
  (core func $block (canon lower (func $block)))
  (core module $m
    (import "" "block" (func $block))
    (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
    (func (export "ping") (result i32) (call $block) (i32.const 7)))
  (core instance $i (instantiate $m (with "" (instance (export "block" (func $block))))))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
  (func (export "ping") (result u32) (canon lift (core func $i "ping")))
)"""


def _in_thread(fn: Callable[[], Any]) -> BaseException | Any:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:
            out.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    assert not t.is_alive()
    return out[0]


def _refused(outcome: object, name: str) -> None:
    assert isinstance(outcome, ThreadRuleError), outcome
    assert isinstance(outcome, RuntimeError)
    assert name in str(outcome) and "thread rule" in str(outcome)


def test_the_plain_path_refuses_another_thread(wat: Wat) -> None:
    with instantiate_sync(wat(PLAIN), {"block": lambda: None}) as inst:
        _refused(_in_thread(lambda: inst.exports.add(1, 2)), "add")
        assert inst.exports.add(1, 2) == 3  # not poisoned


def test_the_plain_path_refuses_another_thread_while_a_call_runs(wat: Wat) -> None:
    seen: list[object] = []

    def block() -> None:
        seen.append(_in_thread(lambda: inst.exports.add(1, 2)))

    with instantiate_sync(wat(PLAIN), {"block": block}) as inst:
        assert inst.exports.ping() == 7
        _refused(seen[0], "add")
        assert inst.exports.add(2, 2) == 4


def test_the_async_facade_refuses_another_thread(wat: Wat) -> None:
    async def go() -> None:
        inst = await polyengine.instantiate(wat(PLAIN), {"block": lambda: None})
        outcome = _in_thread(lambda: asyncio.run(inst.exports.add(1, 2)))
        _refused(outcome, "add")
        assert await inst.exports.add(1, 2) == 3

    asyncio.run(go())


def test_the_task_model_refuses_another_thread_while_calls_are_parked(wat: Wat) -> None:
    async def go() -> None:
        loop = asyncio.get_running_loop()
        pending: list[asyncio.Future[int]] = []

        def get(x: int) -> asyncio.Future[int]:
            fut: asyncio.Future[int] = loop.create_future()
            pending.append(fut)
            return fut

        inst = await polyengine.instantiate(wat(PARKED), {"get": get})
        try:
            async with asyncio.timeout(30):
                first = asyncio.ensure_future(inst.exports.wait(1))
                while not pending:
                    await asyncio.sleep(0)
                outcome = _in_thread(lambda: asyncio.run(inst.exports.wait(5)))
                _refused(outcome, "wait")
                assert len(pending) == 1  # the refused call never reached the guest
                pending[0].set_result(10)
                assert await first == 11
                second = asyncio.ensure_future(inst.exports.wait(2))
                while len(pending) < 2:
                    await asyncio.sleep(0)
                pending[1].set_result(20)
                assert await second == 21  # not poisoned
        finally:
            inst.close()

    asyncio.run(go())


@pytest.mark.parametrize("path", ["sync facade", "task model"])
def test_a_blocking_call_from_another_thread_is_refused_not_trapped(wat: Wat, path: str) -> None:
    with instantiate_sync(wat(PARKED), {"get": lambda x: x}) as inst:
        if path == "sync facade":
            outcome = _in_thread(lambda: inst.exports.wait(1))
        else:
            outcome = _in_thread(lambda: asyncio.run(inst.instance.exports.wait(1)))
        _refused(outcome, "wait")
        assert inst.exports.wait(3) == 4
