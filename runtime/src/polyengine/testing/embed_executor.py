"""An :class:`~polyengine.testing.executor.Executor` over the embedding API.

Every command that needs a live instance runs through the same door an
application uses: ``await polyengine.instantiate(artifacts, imports)`` and
the coroutine functions of ``instance.exports`` (python-mapping.md §4, §7).
One event loop is made per wast file (the runner makes one executor per
file); each command runs to completion on it.

Values cross in the python-mapping.md §2 shapes (:mod:`polyengine.testing.values`).
A ``result``-typed export returns its ok value or raises
``ComponentException`` on the facade; the executor folds both back into the
``{"kind": "ok"|"err", ...}`` shape so the suite's ``{"Ok": v}`` /
``{"Err": e}`` expectations compare directly.

Trap wording differs between engines: ``assert_trap`` passes when the
expected text is a substring of our trap message, or when a line of
``trap_equivalents.txt`` (``expected-substring | our-substring | reason``)
pairs the two wordings.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import polyengine
from polyengine.embed import parse_func_name, snake
from polyengine.errors import LinkError
from polyengine.testing._model import Command, LoadedModule, Outcome
from polyengine.testing._runner import CommandTimeout
from polyengine.testing.executor import Action
from polyengine.testing.values import from_wast, values_equal
from polyengine.translate import Artifacts, Plan
from polyengine.translate import plan as pln
from polyengine.types.model import FuncType, Result
from polyengine_protocol import is_component_exception, is_trap

__all__ = [
    "DEFAULT_EQUIVALENTS_FILE",
    "EmbedExecutor",
    "TrapEquivalent",
    "TrapEquivalents",
    "make_executor",
]

DEFAULT_EQUIVALENTS_FILE = Path(__file__).with_name("trap_equivalents.txt")

T = TypeVar("T")


# --------------------------------------------------------------------------- trap wording


@dataclass(frozen=True)
class TrapEquivalent:
    """One confirmed pairing of an expected trap wording with ours."""

    expected: str
    ours: str
    reason: str


@dataclass(frozen=True)
class TrapEquivalents:
    """The table of ``trap_equivalents.txt``: wordings that name the same trap."""

    entries: tuple[TrapEquivalent, ...] = ()

    @classmethod
    def parse(cls, text: str, source: str = "<string>") -> TrapEquivalents:
        """Parse ``expected-substring | our-substring | reason`` lines.

        Blank lines and ``#`` comments are ignored; raise ``ValueError``
        naming the offending line otherwise.
        """
        entries: list[TrapEquivalent] = []
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = [part.strip() for part in line.split("|")]
            if len(parts) != 3 or not all(parts):
                raise ValueError(
                    f"{source}:{number}: expected 'expected-substring | our-substring | "
                    f"reason', got {line!r}"
                )
            entries.append(TrapEquivalent(parts[0], parts[1], parts[2]))
        return cls(tuple(entries))

    @classmethod
    def load(cls, path: Path) -> TrapEquivalents:
        """Read a table file (``OSError`` when it cannot be read)."""
        return cls.parse(path.read_text(encoding="utf-8"), str(path))

    def match(self, expected: str, ours: str) -> str | None:
        """Why ``ours`` names the trap ``expected`` names, or ``None`` when it does not.

        A plain substring match needs no entry; otherwise the first entry
        whose expected side occurs in ``expected`` and whose side occurs in
        ``ours`` decides.
        """
        if expected in ours:
            return "substring"
        for entry in self.entries:
            if entry.expected in expected and entry.ours in ours:
                return f"equivalent wording: {entry.reason}"
        return None


# --------------------------------------------------------------------------- instances


class _Live:
    """An instantiated component with its export signatures by name."""

    def __init__(self, instance: polyengine.Instance, plan: Plan) -> None:
        self.instance = instance
        self.plan = plan

    def function(self, name: str) -> tuple[Callable[..., Awaitable[Any]], FuncType]:
        """The export coroutine function and its type for the wast field ``name``.

        ``name`` is a root function export, or ``interface#function`` for a
        function of an exported interface. Raise ``LookupError`` naming what
        is missing.
        """
        interface, sep, member = name.rpartition("#")
        if sep:
            exported = self._export(self.plan.exports, interface)
            if not isinstance(exported.item, pln.ExportedInstance):
                raise LookupError(f"export {interface!r} is not an instance")
            lift = self._lift(exported.item.items, member)
            namespace: Any = self.instance.exports[interface]
        else:
            lift = self._lift(self.plan.exports, name)
            member = name
            namespace = self.instance.exports
        parsed = parse_func_name(member)
        if parsed.kind != "func":
            raise LookupError(f"export {name!r} is a resource {parsed.kind}, not a function")
        function = getattr(namespace, snake(parsed.name))
        return function, lift.type

    @staticmethod
    def _export(items: tuple[pln.Export, ...], name: str) -> pln.Export:
        for export in items:
            if export.name == name:
                return export
        raise LookupError(
            f"no export named {name!r} (exports: {sorted(e.name for e in items) or 'none'})"
        )

    def _lift(self, items: tuple[pln.Export, ...], name: str) -> pln.Lift:
        export = self._export(items, name)
        if not isinstance(export.item, pln.Lift):
            raise LookupError(f"export {name!r} is not a function")
        return export.item

    def close(self) -> None:
        self.instance.close()


@dataclass(frozen=True)
class _Missing:
    """The place of an instance that could not be made: ``why``, and whether
    that was a skip (an import the harness cannot provide) or a failure."""

    line: int
    why: str
    skip: bool
    #: the binary of a core module (it has no instance, but ``register`` can supply it)
    core: bytes | None = None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _fold_result(ft: FuncType, value: object) -> object:
    """A ``result``-typed export's return value as the ``{"kind": "ok", ...}`` value."""
    assert isinstance(ft.result, Result)
    if ft.result.ok is None:
        return {"kind": "ok"}
    return {"kind": "ok", "value": value}


def _fold_error(ft: FuncType, exc: BaseException) -> object | None:
    """The ``{"kind": "err", ...}`` value of a ``ComponentException`` from a
    ``result``-typed export, or ``None`` when ``exc`` is not such an error."""
    if not isinstance(ft.result, Result) or not is_component_exception(exc):
        return None
    if ft.result.error is None:
        return {"kind": "err"}
    return {"kind": "err", "value": getattr(exc, "payload", None)}


class EmbedExecutor:
    """Runs instance commands through ``polyengine.instantiate`` and the exports facade.

    Keeps the most recent instance (actions without a module name address
    it) and the named ones (``(component $name ...)`` and
    ``module_instance``). ``register`` makes an instance's exports (or a core
    module's binary) importable under a name; a component is instantiated
    with the registered items its root imports name, checked at link time
    by ``polyengine.instantiate``. A component needing an import nothing was
    registered for is skipped (the harness has no host to offer it), except
    under ``assert_unlinkable``, where that import "was not found".
    """

    def __init__(self, equivalents: TrapEquivalents | None = None) -> None:
        self.equivalents = (
            equivalents
            if equivalents is not None
            else TrapEquivalents.load(DEFAULT_EQUIVALENTS_FILE)
        )
        self._loop = asyncio.new_event_loop()
        self._instances: dict[str, _Live | _Missing] = {}
        self._current: _Live | _Missing | None = None
        self._all: list[_Live] = []
        #: what ``register`` made importable, by name: an instance's exports, a core module
        self._registered: dict[str, object] = {}
        self._finalizer = weakref.finalize(self, _shutdown, self._loop, self._all)

    # ---------------------------------------------------------------- lifecycle

    @property
    def closed(self) -> bool:
        """``True`` once :meth:`close` ran (or the executor was collected)."""
        return not self._finalizer.alive

    def close(self) -> None:
        """Close every instance and the event loop (idempotent)."""
        self._current = None
        self._instances.clear()
        self._finalizer()

    def _run(self, awaitable: Awaitable[T]) -> T:
        async def wrapper() -> T:
            return await awaitable

        return self._loop.run_until_complete(wrapper())

    def _instantiate(self, module: LoadedModule) -> _Live:
        """Instantiate ``module`` with no imports; exceptions propagate."""
        if not isinstance(module.plan, Plan):
            raise TypeError(f"{module.path.name} was not translated to a Plan")
        artifacts = Artifacts(module.plan, module.data)
        imports = {
            imp.name: self._registered[imp.name]
            for imp in module.plan.imports
            if imp.name in self._registered
        }
        instance = self._run(polyengine.instantiate(artifacts, imports))
        return _Live(instance, module.plan)

    def _unprovidable(self, module: LoadedModule) -> str | None:
        """Why the harness cannot instantiate ``module``, or ``None``.

        The imports it can provide are what ``register`` made importable.
        """
        if module.is_core:
            return "a core module has no component instance to run"
        if not isinstance(module.plan, Plan):
            return "no translation available"
        needed = polyengine.required_imports(Artifacts(module.plan, module.data))
        missing = [leaf for leaf in needed if leaf.path[0] not in self._registered]
        if missing:
            names = ", ".join(f"{leaf.name} ({leaf.kind})" for leaf in missing)
            return f"imports the harness cannot provide: {names}"
        return None

    def register(self, command: Command) -> Outcome:
        """``(register "as" $name?)``: make an instance (or core module) importable as ``as``.

        A component instance is supplied as its exports; a core module
        (which this executor does not instantiate) as its binary, for a
        component's ``core module`` import.
        """
        alias = command.raw.get("as")
        name = command.raw.get("name")
        if not isinstance(alias, str):
            return Outcome.failed("register without an 'as' name")
        found = self._instances.get(name) if isinstance(name, str) else self._current
        if found is None:
            return Outcome.failed(f"register of an unknown instance {name!r}")
        if isinstance(found, _Live):
            self._registered[alias] = found.instance.exports
            return Outcome.passed(f"registered as {alias!r}")
        if found.core is not None:
            self._registered[alias] = found.core
            return Outcome.passed(f"registered core module as {alias!r}")
        self._registered.pop(alias, None)
        what = f"the instance of line {found.line} does not exist: {found.why}"
        return Outcome.skipped(what) if found.skip else Outcome.failed(what)

    def _keep(self, live: _Live | _Missing, name: str | None) -> None:
        """Make ``live`` the instance actions address (and ``name``'s, if given)."""
        if isinstance(live, _Live):
            self._all.append(live)
        if name:
            self._instances[name] = live
        self._current = live

    def _start(self, command: Command, module: LoadedModule, name: str | None) -> Outcome:
        why = self._unprovidable(module)
        if why is not None:
            core = module.data if module.is_core else None
            self._keep(_Missing(command.line, why, skip=True, core=core), name)
            return Outcome.skipped(why)
        try:
            live = self._instantiate(module)
        except CommandTimeout:
            raise
        except Exception as exc:
            message = f"instantiation failed: {_describe(exc)}"
            self._keep(_Missing(command.line, message, skip=False), name)
            return Outcome.failed(message)
        self._keep(live, name)
        return Outcome.passed("instantiated")

    # ---------------------------------------------------------------- Executor

    def instantiate(self, command: Command, module: LoadedModule) -> Outcome:
        return self._start(command, module, module.name)

    def module_instance(self, command: Command, module: LoadedModule, instance: str) -> Outcome:
        return self._start(command, module, instance or None)

    def assert_return(self, command: Command, action: Action, expected: list[object]) -> Outcome:
        prepared = self._prepare(action)
        if isinstance(prepared, Outcome):
            return prepared
        function, ft, args = prepared
        try:
            wanted = [from_wast(value) for value in expected]
        except ValueError as exc:
            return Outcome.failed(f"malformed expected value: {exc}")
        if len(wanted) != (0 if ft.result is None else 1):
            return Outcome.failed(
                f"{action.field} has {0 if ft.result is None else 1} result(s), "
                f"{len(wanted)} expected"
            )
        try:
            value = self._call(function, ft, args)
        except CommandTimeout:
            raise
        except Exception as exc:
            return Outcome.failed(f"{action.field} raised {_describe(exc)}")
        if not wanted:
            if value is not None:
                return Outcome.failed(f"{action.field} returned {value!r:.200}, expected nothing")
            return Outcome.passed()
        if values_equal(wanted[0], value):
            return Outcome.passed()
        return Outcome.failed(
            f"{action.field} returned {value!r:.200}, expected {wanted[0]!r:.200}"
        )

    def assert_trap(self, command: Command, action: Action, text: str) -> Outcome:
        prepared = self._prepare(action)
        if isinstance(prepared, Outcome):
            return prepared
        function, ft, args = prepared
        try:
            value = self._call(function, ft, args)
        except CommandTimeout:
            raise
        except Exception as exc:
            return self._trap_outcome(exc, text, action.field)
        return Outcome.failed(f"{action.field} returned {value!r:.200}; expected a trap: {text}")

    def action(self, command: Command, action: Action) -> Outcome:
        prepared = self._prepare(action)
        if isinstance(prepared, Outcome):
            return prepared
        function, ft, args = prepared
        try:
            self._call(function, ft, args)
        except CommandTimeout:
            raise
        except Exception as exc:
            return Outcome.failed(f"{action.field} raised {_describe(exc)}")
        return Outcome.passed()

    def assert_uninstantiable(self, command: Command, module: LoadedModule, text: str) -> Outcome:
        why = self._unprovidable(module)
        if why is not None:
            return Outcome.skipped(why)
        try:
            live = self._instantiate(module)
        except CommandTimeout:
            raise
        except Exception as exc:
            return self._trap_outcome(exc, text, "instantiation")
        live.close()
        return Outcome.failed(f"instantiation succeeded; expected a trap: {text}")

    def assert_unlinkable(self, command: Command, module: LoadedModule, text: str) -> Outcome:
        if module.is_core or not isinstance(module.plan, Plan):
            return Outcome.skipped("no component translation to link")
        absent = [imp.name for imp in module.plan.imports if imp.name not in self._registered]
        if absent:
            message = f"import '{absent[0]}' was not found (nothing is registered under it)"
            why = self.equivalents.match(text, message)
            if why is None:
                return Outcome.failed(f"link error {message!r}; expected {text!r}")
            return Outcome.passed(f"link error ({why}): {message}")
        try:
            live = self._instantiate(module)
        except CommandTimeout:
            raise
        except LinkError as exc:
            message = str(exc)
            why = self.equivalents.match(text, message)
            if why is None:
                return Outcome.failed(f"link error {message!r}; expected {text!r}")
            return Outcome.passed(f"link error ({why}): {message}")
        except Exception as exc:
            return Outcome.failed(f"expected a link error ({text}), got {_describe(exc)}")
        live.close()
        return Outcome.failed(f"instantiation succeeded; expected a link error: {text}")

    def not_instantiated(self, command: Command, name: str | None, outcome: Outcome) -> None:
        """The runner's notice that ``command`` made no instance (its binary
        did not translate, or it named an unknown definition): later actions
        on it report that instead of reaching an older instance."""
        why = outcome.message or "not instantiated"
        self._keep(_Missing(command.line, why, skip=outcome.ok is None), name)

    def other(self, command: Command) -> Outcome:
        if command.type == "register":
            return self.register(command)
        return Outcome.skipped(f"{command.type} is not supported by the embed executor")

    # ---------------------------------------------------------------- helpers

    def _prepare(
        self, action: Action
    ) -> Outcome | tuple[Callable[..., Awaitable[Any]], FuncType, list[object]]:
        """The export to call and its decoded arguments, or the outcome that ends the command."""
        if action.type != "invoke":
            return Outcome.skipped(f"{action.type} actions are not supported")
        if action.instance is not None:
            found = self._instances.get(action.instance)
            if found is None:
                return Outcome.failed(f"no instance named {action.instance!r}")
        elif self._current is None:
            return Outcome.failed("no instance to act on (no component was instantiated)")
        else:
            found = self._current
        if isinstance(found, _Missing):
            what = f"the instance of line {found.line} does not exist: {found.why}"
            return Outcome.skipped(what) if found.skip else Outcome.failed(what)
        live = found
        try:
            function, ft = live.function(action.field)
        except (LookupError, AttributeError) as exc:
            return Outcome.failed(f"cannot find export: {exc}")
        try:
            args = [from_wast(arg) for arg in action.args]
        except ValueError as exc:
            return Outcome.failed(f"malformed argument: {exc}")
        return function, ft, args

    def _call(
        self, function: Callable[..., Awaitable[Any]], ft: FuncType, args: list[object]
    ) -> object:
        """Await ``function(*args)``; a result-typed export's err comes back as a value."""
        try:
            value = self._run(function(*args))
        except Exception as exc:
            folded = _fold_error(ft, exc)
            if folded is None:
                raise
            return folded
        if isinstance(ft.result, Result):
            return _fold_result(ft, value)
        return value

    def _trap_outcome(self, exc: BaseException, text: str, what: str) -> Outcome:
        if not is_trap(exc):
            return Outcome.failed(f"{what} raised {_describe(exc)}; expected a trap: {text}")
        message = str(exc)
        why = self.equivalents.match(text, message)
        if why is None:
            return Outcome.failed(f"trapped with {message!r}; expected {text!r}")
        return Outcome.passed(f"trapped ({why}): {message}")


def _shutdown(loop: asyncio.AbstractEventLoop, instances: list[_Live]) -> None:
    """Close the instances, cancel what they left on the loop, close the loop."""
    for live in instances:
        live.close()
    instances.clear()
    if loop.is_closed():
        return
    try:
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending and not loop.is_running():
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    finally:
        loop.close()


def make_executor() -> EmbedExecutor:
    """The factory for ``--executor polyengine.testing.embed_executor:make_executor``."""
    return EmbedExecutor()
