"""The seam between the wast runner and whatever can run components.

The runner reads, validates and translates binaries itself; every command that
needs a live instance goes to an :class:`Executor`. The embedding layer
supplies a real one (``--executor package.module:factory`` on the command
line); until then :class:`NoExecution` skips those commands with a reason.

A fresh executor is made per wast file (``factory()``), so an executor may keep
the file's instances as plain attributes; if it has a ``close()`` method, the
runner calls it when the file is done.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from polyengine.testing._model import Command, LoadedModule, Outcome

NOT_IMPLEMENTED = "execution not implemented yet"


@dataclass(frozen=True)
class Action:
    """An ``invoke`` (or ``get``) action of a wast command.

    ``instance`` is the named instance the action addresses (``None``: the most
    recently instantiated one); ``args`` are the JSON values as written by
    ``json-from-wast`` (``{"type": "u32", "value": "42"}`` and so on).
    """

    type: str
    field: str
    instance: str | None
    args: tuple[object, ...]

    @classmethod
    def of(cls, command: Command) -> Action:
        """The action of ``command``; raise ``ValueError`` if it has none."""
        raw = command.raw.get("action")
        if not isinstance(raw, dict):
            raise ValueError(f"{command.type} at line {command.line} has no action")
        kind = raw.get("type")
        name = raw.get("field")
        instance = raw.get("module", raw.get("instance"))
        args = raw.get("args", [])
        if not isinstance(kind, str) or not isinstance(name, str):
            raise ValueError(f"{command.type} at line {command.line}: malformed action")
        if not isinstance(args, list):
            raise ValueError(f"{command.type} at line {command.line}: action args not a list")
        return cls(kind, name, instance if isinstance(instance, str) else None, tuple(args))


@runtime_checkable
class Executor(Protocol):
    """Runs the commands that need an instance; one method per command type.

    Each method returns an :class:`Outcome`: passed, failed (with what was
    observed) or skipped (with the reason). An exception escaping a method is
    reported as a failure of that command.
    """

    def instantiate(self, command: Command, module: LoadedModule) -> Outcome:
        """``module``: instantiate a just-defined (and translated) component."""
        ...

    def module_instance(self, command: Command, module: LoadedModule, instance: str) -> Outcome:
        """``module_instance``: instantiate the defined ``module`` as ``instance``."""
        ...

    def assert_return(self, command: Command, action: Action, expected: list[object]) -> Outcome:
        """``assert_return``: the action returns ``expected`` (wast JSON values)."""
        ...

    def assert_trap(self, command: Command, action: Action, text: str) -> Outcome:
        """``assert_trap``: the action traps (``text`` is the expected wording)."""
        ...

    def action(self, command: Command, action: Action) -> Outcome:
        """``action``: run the action for its effects; it must not trap."""
        ...

    def assert_uninstantiable(self, command: Command, module: LoadedModule, text: str) -> Outcome:
        """``assert_uninstantiable``: instantiating the valid ``module`` traps."""
        ...

    def assert_unlinkable(self, command: Command, module: LoadedModule, text: str) -> Outcome:
        """``assert_unlinkable``: the valid ``module``'s imports cannot be satisfied."""
        ...

    def other(self, command: Command) -> Outcome:
        """Any other command type (``register``, ``assert_exhaustion``, ...)."""
        ...


class NoExecution:
    """The executor used until the embedding layer supplies one: skips everything.

    ``instantiate`` is skipped too, which the runner reports as a passed
    ``module`` command when translation succeeded (translation is all that
    was checked).
    """

    def __init__(self, reason: str = NOT_IMPLEMENTED) -> None:
        self.reason = reason

    def instantiate(self, command: Command, module: LoadedModule) -> Outcome:
        return Outcome.skipped(self.reason)

    def module_instance(self, command: Command, module: LoadedModule, instance: str) -> Outcome:
        return Outcome.skipped(self.reason)

    def assert_return(self, command: Command, action: Action, expected: list[object]) -> Outcome:
        return Outcome.skipped(self.reason)

    def assert_trap(self, command: Command, action: Action, text: str) -> Outcome:
        return Outcome.skipped(self.reason)

    def action(self, command: Command, action: Action) -> Outcome:
        return Outcome.skipped(self.reason)

    def assert_uninstantiable(self, command: Command, module: LoadedModule, text: str) -> Outcome:
        return Outcome.skipped(self.reason)

    def assert_unlinkable(self, command: Command, module: LoadedModule, text: str) -> Outcome:
        return Outcome.skipped(self.reason)

    def other(self, command: Command) -> Outcome:
        return Outcome.skipped(self.reason)


ExecutorFactory = Callable[[], Executor]


#: Short names accepted by :func:`load_executor_factory`.
EXECUTOR_ALIASES = {
    "none": "polyengine.testing.executor:NoExecution",
    "embed": "polyengine.testing.embed_executor:EmbedExecutor",
}


def load_executor_factory(spec: str) -> ExecutorFactory:
    """Resolve ``package.module:attribute`` (or an alias) to a zero-argument executor factory.

    Aliases: ``none`` (skip execution) and ``embed`` (run on ``polyengine.instantiate``).
    Raises ``ValueError`` naming what could not be found.
    """
    spec = EXECUTOR_ALIASES.get(spec, spec)
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"executor must be 'package.module:factory', not {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import executor module {module_name!r}: {exc}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"{module_name!r} has no callable {attribute!r}")

    def make() -> Executor:
        executor = factory()
        if not isinstance(executor, Executor):
            raise TypeError(f"{spec} returned {type(executor).__name__}, not an Executor")
        return executor

    return make
