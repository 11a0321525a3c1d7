"""An :class:`~polyengine.testing.executor.Executor` on the public embedding API (experimental).

    python -m polyengine.testing.wast --executor embed PATH

Each component is instantiated with ``polyengine.instantiate`` and no host
imports, on a private event loop; actions call the world-level export of the
same (snake_case) name with arguments decoded by
:func:`~polyengine.testing.values.from_wast`. A component that needs imports
fails to instantiate (a ``LinkError``), which is reported as a failure. Trap
wording is not compared (python-mapping.md §3: messages are not API).
"""

from __future__ import annotations

import asyncio
import contextlib
import keyword
from collections.abc import Awaitable, Callable
from typing import TypeVar

from polyengine.testing._model import Command, LoadedModule, Outcome
from polyengine.testing.executor import Action
from polyengine.testing.values import from_wast, values_equal

T = TypeVar("T")


def _export_name(field: str) -> str:
    name = field.replace("-", "_")
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        name += "_"
    return name


def _is_trap(exc: BaseException) -> bool:
    try:
        from polyengine_protocol import Trap
    except ImportError:  # pragma: no cover - the protocol package ships with the runtime
        return False
    return isinstance(exc, Trap)


def _component_exception_payload(exc: BaseException) -> tuple[bool, object]:
    try:
        from polyengine_protocol import ComponentException
    except ImportError:  # pragma: no cover
        return False, None
    if isinstance(exc, ComponentException):
        return True, exc.payload
    return False, None


class EmbedExecutor:
    """Runs instances through ``polyengine.instantiate``; one executor per wast file."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._instances: dict[str, object] = {}
        self._current: object | None = None
        self._closers: list[Callable[[], None]] = []

    def close(self) -> None:
        """Close the file's instances and the private loop (the runner calls this)."""
        closers, self._closers = self._closers, []
        for close in closers:
            with contextlib.suppress(Exception):
                close()
        self._instances.clear()
        self._current = None
        if not self._loop.is_closed():
            self._loop.close()

    def _run(self, awaitable: Awaitable[T]) -> T:
        async def wrapper() -> T:
            return await awaitable

        if self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(wrapper())

    def _instantiate(self, module: LoadedModule) -> object:
        from polyengine import instantiate

        instance = self._run(instantiate(module.data))
        close = getattr(instance, "close", None)
        if callable(close):
            self._closers.append(close)
        return instance

    # ------------------------------------------------------------------ instances

    def instantiate(self, command: Command, module: LoadedModule) -> Outcome:
        if module.is_core:
            return Outcome.skipped("core module instantiation is not part of the component runner")
        try:
            instance = self._instantiate(module)
        except Exception as exc:
            return Outcome.failed(f"instantiation failed: {type(exc).__name__}: {exc}")
        self._current = instance
        if command.name is not None:
            self._instances[command.name] = instance
        return Outcome.passed("instantiated")

    def module_instance(self, command: Command, module: LoadedModule, instance: str) -> Outcome:
        try:
            created = self._instantiate(module)
        except Exception as exc:
            return Outcome.failed(f"instantiation failed: {type(exc).__name__}: {exc}")
        self._current = created
        if instance:
            self._instances[instance] = created
        return Outcome.passed("instantiated")

    def assert_uninstantiable(self, command: Command, module: LoadedModule, text: str) -> Outcome:
        try:
            self._instantiate(module)
        except Exception as exc:
            if _is_trap(exc):
                return Outcome.passed(f"trapped: {exc}")
            return Outcome.failed(f"expected a trap, got {type(exc).__name__}: {exc}")
        return Outcome.failed(f"instantiated (expected a trap: {text})")

    def assert_unlinkable(self, command: Command, module: LoadedModule, text: str) -> Outcome:
        from polyengine import LinkError

        try:
            self._instantiate(module)
        except LinkError as exc:
            return Outcome.passed(f"link error: {exc}")
        except Exception as exc:
            return Outcome.failed(f"expected a link error, got {type(exc).__name__}: {exc}")
        return Outcome.failed(f"linked (expected: {text})")

    # ------------------------------------------------------------------ actions

    def _invoke(self, action: Action) -> object:
        if action.type != "invoke":
            raise ValueError(f"unsupported action type {action.type!r}")
        instance = self._current if action.instance is None else self._instances[action.instance]
        if instance is None:
            raise LookupError("no instance to invoke")
        exports = getattr(instance, "exports")  # noqa: B009 (the facade is untyped here)
        function = getattr(exports, _export_name(action.field))
        args = [from_wast(arg) for arg in action.args]
        result = function(*args)
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            return self._run(result)
        return result

    def assert_return(self, command: Command, action: Action, expected: list[object]) -> Outcome:
        wanted = [from_wast(value) for value in expected]
        try:
            actual: object = self._invoke(action)
        except Exception as exc:
            is_err, payload = _component_exception_payload(exc)
            if not is_err:
                return Outcome.failed(f"raised {type(exc).__name__}: {exc}")
            actual = {"kind": "err"} if payload is None else {"kind": "err", "value": payload}
        if not wanted:
            if actual is None:
                return Outcome.passed()
            return Outcome.failed(f"returned {actual!r}, expected nothing")
        (want,) = wanted if len(wanted) == 1 else (tuple(wanted),)
        unwrapped = not (isinstance(actual, dict) and actual.get("kind") in {"ok", "err"})
        if isinstance(want, dict) and want.get("kind") in {"ok", "err"} and unwrapped:
            # the facade returns the ok payload of a result-typed export
            actual = {"kind": "ok"} if actual is None else {"kind": "ok", "value": actual}
        if values_equal(want, actual):
            return Outcome.passed()
        return Outcome.failed(f"returned {actual!r}, expected {want!r}")

    def assert_trap(self, command: Command, action: Action, text: str) -> Outcome:
        try:
            actual = self._invoke(action)
        except Exception as exc:
            if _is_trap(exc):
                return Outcome.passed(f"trapped: {exc}")
            return Outcome.failed(f"expected a trap ({text}), got {type(exc).__name__}: {exc}")
        return Outcome.failed(f"returned {actual!r}, expected a trap ({text})")

    def action(self, command: Command, action: Action) -> Outcome:
        try:
            self._invoke(action)
        except Exception as exc:
            return Outcome.failed(f"raised {type(exc).__name__}: {exc}")
        return Outcome.passed()

    def other(self, command: Command) -> Outcome:
        return Outcome.skipped(f"{command.type} is not supported by the embed executor")
