"""Running a conventions scenario and recording what the engine does."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from .golden_guard import check_golden
from .probe_host import Transcript, describe, describe_exception

#: Seconds any single awaited step may take before it is recorded as a hang.
STEP_TIMEOUT = 10.0


async def attempt(t: Transcript, label: str, awaitable: Awaitable[Any], **fields: object) -> Any:
    """Await one step and record its value (with types) or the exception it raised."""
    try:
        async with asyncio.timeout(STEP_TIMEOUT):  # same task: no hop to another task
            value = await awaitable
    except TimeoutError:
        t.record("step", label=label, **fields, hang=f"no settlement within {STEP_TIMEOUT}s")
        return None
    except Exception as exc:
        t.record("step", label=label, **fields, raised=describe_exception(exc))
        return exc
    t.record("step", label=label, **fields, returned=describe(value))
    return value


async def method(obj: object, name: str, *args: object) -> Any:
    """Call ``obj.name(*args)`` and await it; a failed earlier step shows as an AttributeError."""
    return await getattr(obj, name)(*args)


def bound(obj: object, name: str, *args: object) -> Callable[[], Any]:
    """A deferred ``obj.name(*args)``: looked up only when the step runs."""
    return lambda: getattr(obj, name)(*args)


def attempt_sync(t: Transcript, label: str, fn: Callable[[], Any], **fields: object) -> Any:
    """Run one synchronous step and record its value or exception."""
    try:
        value = fn()
    except Exception as exc:
        t.record("step", label=label, **fields, raised=describe_exception(exc))
        return exc
    t.record("step", label=label, **fields, returned=describe(value))
    return value


def run_scenario(
    name: str, body: Callable[[Transcript], Coroutine[Any, Any, None]]
) -> list[dict[str, object]]:
    """Run ``body`` on a fresh event loop and compare its transcript with the golden."""
    t = Transcript()
    asyncio.run(body(t))
    check_golden(name, {"scenario": name, "transcript": t.entries})
    return t.entries
