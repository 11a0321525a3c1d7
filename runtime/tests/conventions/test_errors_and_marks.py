"""The error model (python-mapping.md §3) and the marks of §4.

Errors: ``ComponentException`` both ways, a hand-rolled branded exception,
an unbranded exception (a trap naming the import, chained), a host-raised
``Trap``, a guest trap, and the poisoning that follows a trap. Marks: a
``suspending`` import parks its caller; an unmarked one returning an
awaitable traps naming the import; ``async func`` imports as coroutine
functions and plain functions; ``suspend=False``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine

from ..wat_probes import LIBC
from . import async_components as ac
from .components import Func, Interface, forwarder
from .probe_host import (
    Cancellable,
    Failures,
    HandMarkedNap,
    Marks,
    Transcript,
    describe_exception,
    suspending_function,
)
from .scenario import attempt, run_scenario

Wat = Callable[[str], bytes]

FAILURES = Interface(
    "probe:conv/failures@0.1.0",
    funcs=[
        Func("check", [("x", "u32")], "(result u32 (error string))"),
        Func("plain", [("x", "u32")], "u32"),
    ],
)
GUEST_TRAP = """
  (core module $trap (func (export "crash") unreachable))
  (core instance $trap (instantiate $trap))
  (func (export "crash") (canon lift (core func $trap "crash")))
"""


def test_error_model(wat: Wat) -> None:
    artifacts = polyengine.translate(wat(forwarder([FAILURES], extra=GUEST_TRAP)))

    async def fresh(t: Transcript) -> Any:
        return await polyengine.instantiate(artifacts, {FAILURES.key: Failures(t)})

    async def body(t: Transcript) -> None:
        inst = await fresh(t)
        await attempt(t, "check 5: ok", inst.exports.check(5))
        await attempt(t, "check 0: ComponentException from the host", inst.exports.check(0))
        await attempt(t, "check 1: hand-rolled branded exception", inst.exports.check(1))
        await attempt(t, "same instance still usable", inst.exports.plain(9))
        cases = [
            ("check", 2, "check 2: unbranded ValueError"),
            ("check", 3, "check 3: the host raises Trap"),
            ("check", 4, "check 4: the host raises a hand-rolled trap"),
            ("plain", 0, "plain 0: ComponentException without a result type"),
            ("plain", 1, "plain 1: unbranded KeyError"),
        ]
        for fn, arg, label in cases:
            inst = await fresh(t)
            await attempt(t, label, getattr(inst.exports, fn)(arg))
            await attempt(t, "the next call on that instance", inst.exports.plain(9))
        inst = await fresh(t)
        await attempt(t, "guest trap (unreachable)", inst.exports.crash())
        await attempt(t, "the next call after a guest trap", inst.exports.plain(9))

    run_scenario("error_model", body)


def test_keyboard_interrupt_is_never_swallowed(wat: Wat) -> None:
    artifacts = polyengine.translate(wat(forwarder([FAILURES])))

    def interrupt(x: int) -> int:
        raise KeyboardInterrupt

    async def call() -> None:
        inst = await polyengine.instantiate(
            artifacts, {FAILURES.key: {"check": interrupt, "plain": interrupt}}
        )
        await inst.exports.plain(1)

    with pytest.raises(KeyboardInterrupt) as info:
        asyncio.run(call())
    t = Transcript()
    t.record("escaped", exception=describe_exception(info.value))
    run_scenario("keyboard_interrupt", _replay(t))


def _replay(t: Transcript) -> Callable[[Transcript], Any]:
    async def body(into: Transcript) -> None:
        into.entries.extend(t.entries)

    return body


MARKS = Interface(
    "probe:conv/marks@0.1.0",
    funcs=[
        Func("nap", [("x", "u32")], "u32"),
        Func("nap-unmarked", [("x", "u32")], "u32"),
        Func("get", [("x", "u32")], "u32", is_async=True),
        Func("get-plain", [("x", "u32")], "u32", is_async=True),
    ],
)
NAPS = Interface("probe:conv/naps@0.1.0", funcs=[Func("nap", [("x", "u32")], "u32")])
START = f"""(component
  {LIBC}
  (import "nap-fn" (func $nap (param "x" u32) (result u32)))
  (core func $nap (canon lower (func $nap)))
  (core module $m
    (import "" "nap" (func $nap (param i32) (result i32)))
    (func $start (drop (call $nap (i32.const 1))))
    (start $start))
  (core instance $i (instantiate $m (with "" (instance (export "nap" (func $nap))))))
)"""
NAP_FN = [Func("nap-fn", [("x", "u32")], "u32")]


def test_marks(wat: Wat) -> None:
    artifacts = polyengine.translate(wat(forwarder([MARKS], bare=NAP_FN)))

    def imports(t: Transcript) -> dict[str, object]:
        return {MARKS.key: Marks(t), "nap_fn": suspending_function(t)}

    async def body(t: Transcript) -> None:
        inst = await polyengine.instantiate(artifacts, imports(t))
        await attempt(t, "nap: @suspending method parks and returns", inst.exports.nap(5))
        await attempt(t, "nap-fn: suspending() function form", inst.exports.nap_fn(5))
        inst2 = await polyengine.instantiate(
            artifacts, {MARKS.key: Marks(t), "nap_fn": HandMarkedNap(t)}
        )
        await attempt(t, "nap-fn: a hand-rolled mark (zero-import host)", inst2.exports.nap_fn(5))
        await attempt(t, "get: async import as a coroutine function", inst.exports.get(5))
        await attempt(t, "get-plain: async import as a plain function", inst.exports.get_plain(5))
        both = asyncio.gather(inst.exports.nap(1), inst.exports.nap(2))
        await attempt(t, "two parked naps at once", both)
        await attempt(
            t,
            "nap-unmarked: an awaitable from an unmarked sync import",
            inst.exports.nap_unmarked(5),
        )
        await attempt(t, "the next call on that instance", inst.exports.get_plain(1))

        inst = await attempt(
            t,
            "instantiate with suspend=False",
            polyengine.instantiate(artifacts, imports(t), suspend=False),
        )
        if isinstance(inst, polyengine.Instance):
            await attempt(t, "nap under suspend=False", inst.exports.nap(5))

        sync_only = polyengine.translate(wat(forwarder([NAPS])))
        naps = {NAPS.key: Marks(t)}
        inst = await attempt(
            t,
            "sync-only component with suspend=False",
            polyengine.instantiate(sync_only, naps, suspend=False),
        )
        if isinstance(inst, polyengine.Instance):
            await attempt(t, "marked nap under suspend=False", inst.exports.nap(5))
        inst = await polyengine.instantiate(sync_only, naps)
        await attempt(t, "marked nap, sync-only component, default suspend", inst.exports.nap(6))

        started = polyengine.translate(wat(START))
        await attempt(
            t,
            "a marked import reached from a start function",
            polyengine.instantiate(started, {"nap_fn": suspending_function(t)}),
        )
        await attempt(
            t,
            "an unmarked plain import reached from a start function",
            polyengine.instantiate(started, {"nap_fn": lambda x: x}),
        )

    run_scenario("marks", body)


def test_guest_cancellation_of_async_imports(wat: Wat) -> None:
    """A23/A24: discard by default, ``defer_cancel`` runs to completion, ``abortable`` cancels."""
    artifacts = polyengine.translate(wat(ac.CANCEL))

    async def body(t: Transcript) -> None:
        t.record(
            "subtask states",
            note="the result is state * 1000 + value; 4 = CANCELLED_BEFORE_RETURNED, 2 = RETURNED",
        )
        for label, member in [
            ("unmarked", "get"),
            ("defer_cancel", "get_deferred"),
            ("abortable", "get_abortable"),
        ]:
            host = Cancellable(t)
            inst = await polyengine.instantiate(artifacts, {"get": getattr(host, member)})
            await attempt(t, f"cancel-get(5): {label}", inst.exports.cancel_get(5))
            for _ in range(5):
                await asyncio.sleep(0)
            t.record(
                "host afterwards",
                label=label,
                still_waiting=bool(host.release and not host.release.done()),
            )
            if host.release is not None and not host.release.done():
                host.release.set_result(99)
                for _ in range(5):
                    await asyncio.sleep(0)

    run_scenario("cancellation", body)
