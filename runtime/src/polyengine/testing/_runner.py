"""Run ``json-from-wast`` output: read, validate and translate binaries; delegate execution.

What is checked here (the rest goes to an :class:`~polyengine.testing.executor.Executor`):

- ``module`` / ``module_definition``: the binary translates (core modules:
  the engine's core validator accepts it);
- ``assert_malformed`` / ``assert_invalid``: translation raises
  :class:`~polyengine.errors.TranslationError` (core modules: the core
  validator rejects it). Text commands are compiled with ``wasm-tools parse``
  first; for ``assert_malformed`` a text that ``wasm-tools`` itself rejects is
  a correct rejection;
- ``assert_uninstantiable`` / ``assert_unlinkable``: the binary translates,
  then the executor checks the instantiation.

Anything other than a ``TranslationError`` escaping the translator is a
failure ("crash"): bad input must get a clear error.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from polyengine.errors import TranslationError
from polyengine.testing._model import (
    Command,
    CommandResult,
    FileResult,
    LoadedModule,
    Outcome,
    Status,
)
from polyengine.testing._xfail import XfailList
from polyengine.testing.executor import Action, Executor, ExecutorFactory, NoExecution

Translator = Callable[[bytes], object]
CoreValidator = Callable[[bytes], None]

CORE_PREAMBLE = b"\0asm\x01\x00\x00\x00"


def is_core_module(data: bytes) -> bool:
    """``True`` when the preamble's layer field says core module (Binary.md §Component Definitions).

    The preamble is the magic, a 16-bit version and a 16-bit layer: layer 0 is
    a core module, layer 1 a component.
    """
    return len(data) >= 8 and data[:4] == b"\0asm" and data[6:8] == b"\x00\x00"


def find_translator() -> tuple[Translator | None, str]:
    """The translator to check binaries with, and a description of it.

    ``polyengine.translate.translate_component`` when present, else the bare
    binary reader ``polyengine.binary.read_component`` (malformed input only),
    else ``None``.
    """
    for module_name, attribute, what in (
        ("polyengine.translate", "translate_component", "translate_component"),
        ("polyengine.binary", "read_component", "read_component (binary reader only)"),
    ):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        function = getattr(module, attribute, None)
        if callable(function):
            return function, what
    return None, "no translator available"


def find_core_validator() -> CoreValidator | None:
    """``polyengine.engine._validate.validate_core_module`` if it exists."""
    try:
        module = importlib.import_module("polyengine.engine._validate")
    except ImportError:
        return None
    function = getattr(module, "validate_core_module", None)
    return function if callable(function) else None


def find_wasm_tools() -> Path | None:
    """The ``wasm-tools`` CLI next to the interpreter or on ``PATH``."""
    candidate = Path(sys.executable).parent / "wasm-tools"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which("wasm-tools")
    return Path(found) if found else None


class CommandTimeout(Exception):
    """One command ran past the runner's per-command time limit."""


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`CommandTimeout` after ``seconds`` (main thread with SIGALRM only)."""
    usable = (
        seconds is not None
        and seconds > 0
        and hasattr(signal, "SIGALRM")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return
    assert seconds is not None

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise CommandTimeout(f"timed out after {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class _Unavailable:
    """A binary that could not be produced; ``outcome`` says what to report."""

    outcome: Outcome


def file_id(json_path: Path) -> str:
    """``<dir>/<file>`` for a converted wast file.

    ``json-from-wast`` output laid out as ``<dir>/<file>/<file>.json`` gives
    ``<dir>/<file>``; a JSON file not in its own directory gives
    ``<parent>/<stem>``.
    """
    parent = json_path.parent
    if parent.name == json_path.stem:
        return f"{parent.parent.name}/{json_path.stem}"
    return f"{parent.name}/{json_path.stem}"


def discover(paths: list[Path]) -> list[tuple[str, Path, bool]]:
    """Every converted wast file under ``paths`` as ``(id, path, has_json)``, sorted.

    A leaf directory without any JSON (a file that failed to convert) is
    listed with ``has_json=False``. Raises ``FileNotFoundError`` for a path
    that does not exist.
    """
    found: list[tuple[str, Path, bool]] = []
    for path in paths:
        if path.is_file():
            found.append((file_id(path), path, True))
            continue
        if not path.is_dir():
            raise FileNotFoundError(f"no such file or directory: {path}")
        for root, dirs, files in os.walk(path):
            dirs.sort()
            root_path = Path(root)
            jsons = sorted(f for f in files if f.endswith(".json"))
            for name in jsons:
                found.append((file_id(root_path / name), root_path / name, True))
            if not jsons and not dirs:
                found.append((f"{root_path.parent.name}/{root_path.name}", root_path, False))
    return sorted(found, key=lambda entry: (entry[0], str(entry[1])))


class WastRunner:
    """Checks converted wast files; one instance runs any number of files.

    ``translate`` and ``validate_core`` default to the engine's own (see
    :func:`find_translator`, :func:`find_core_validator`); ``executor_factory``
    makes one :class:`Executor` per file.
    """

    def __init__(
        self,
        *,
        translate: Translator | None = None,
        validate_core: CoreValidator | None = None,
        executor_factory: ExecutorFactory = NoExecution,
        xfails: XfailList | None = None,
        wasm_tools: Path | None = None,
        timeout: float | None = 60.0,
        use_defaults: bool = True,
    ) -> None:
        self.translator_description = "custom translator"
        if translate is None and use_defaults:
            translate, self.translator_description = find_translator()
        if validate_core is None and use_defaults:
            validate_core = find_core_validator()
        if wasm_tools is None and use_defaults:
            wasm_tools = find_wasm_tools()
        self.translate = translate
        self.validate_core = validate_core
        self.executor_factory = executor_factory
        self.xfails = xfails if xfails is not None else XfailList()
        self.wasm_tools = wasm_tools
        self.timeout = timeout

    # ------------------------------------------------------------------ files

    def run_paths(self, paths: list[Path]) -> list[FileResult]:
        """Run every converted wast file under ``paths``."""
        results = []
        for fid, path, has_json in discover(paths):
            if has_json:
                results.append(self.run_file(path, fid))
            else:
                missing = FileResult(fid, path)
                missing.results.append(
                    CommandResult(0, "file", Status.SKIPPED, "no .json file (not converted)")
                )
                results.append(missing)
        return results

    def run_file(self, json_path: Path, fid: str | None = None) -> FileResult:
        """Run one ``json-from-wast`` document."""
        fid = fid or file_id(json_path)
        result = FileResult(fid, json_path)
        try:
            document = json.loads(json_path.read_text(encoding="utf-8"))
            raw_commands = document["commands"] if isinstance(document, dict) else None
            if not isinstance(raw_commands, list):
                raise ValueError("the document has no 'commands' list")
            commands = [Command.from_json(raw) for raw in raw_commands]
        except (OSError, ValueError, KeyError) as exc:
            result.error = f"cannot read {json_path}: {exc}"
            result.results.append(CommandResult(0, "file", Status.FAILED, result.error))
            return result

        try:
            executor = self.executor_factory()
        except Exception as exc:
            result.error = f"the executor factory failed: {type(exc).__name__}: {exc}"
            result.results.append(CommandResult(0, "file", Status.FAILED, result.error))
            return result
        state = _FileState(json_path.parent, executor)
        try:
            for command in commands:
                try:
                    with _time_limit(self.timeout):
                        outcome = self._check(command, state)
                except CommandTimeout as exc:
                    outcome = Outcome.failed(str(exc))
                result.results.append(self._verdict(fid, command, outcome))
        finally:
            close = getattr(state.executor, "close", None)
            if callable(close):
                close()

        seen = {c.line for c in commands}
        for line, reason in sorted(self.xfails.lines_for(fid).items()):
            if line not in seen:
                result.results.append(
                    CommandResult(
                        line,
                        "xfail",
                        Status.FAILED,
                        f"xfail entry matches no command: {reason}",
                        stale_xfail=True,
                    )
                )
        return result

    def _verdict(self, fid: str, command: Command, outcome: Outcome) -> CommandResult:
        expected = self.xfails.reason(fid, command.line)
        if outcome.ok is None:
            return CommandResult(command.line, command.type, Status.SKIPPED, outcome.message)
        if expected is None:
            status = Status.PASSED if outcome.ok else Status.FAILED
            return CommandResult(command.line, command.type, status, outcome.message)
        if outcome.ok and outcome.partial:
            # The expected failure may lie in the part that did not run.
            return CommandResult(
                command.line, command.type, Status.SKIPPED, f"xfail not checked: {outcome.message}"
            )
        if outcome.ok:
            return CommandResult(
                command.line,
                command.type,
                Status.FAILED,
                f"stale xfail (passed): {expected}",
                stale_xfail=True,
            )
        return CommandResult(
            command.line, command.type, Status.XFAIL, f"{expected} [{outcome.message}]"
        )

    # ------------------------------------------------------------------ commands

    def _check(self, command: Command, state: _FileState) -> Outcome:
        kind = command.type
        try:
            if kind in {"module", "module_definition"}:
                return self._define(command, state)
            if kind in {"assert_malformed", "assert_invalid"}:
                return self._reject(command, state)
            if kind in {"assert_uninstantiable", "assert_unlinkable"}:
                return self._uninstantiable(command, state)
            if kind == "module_instance":
                return self._module_instance(command, state)
            if kind in {"assert_return", "assert_trap", "action"}:
                return self._action(command, state)
            return state.executor.other(command)
        except CommandTimeout:
            raise
        except Exception as exc:
            return Outcome.failed(f"runner error: {type(exc).__name__}: {exc}")

    def _define(self, command: Command, state: _FileState) -> Outcome:
        loaded = self._load(command, state)
        if isinstance(loaded, _Unavailable):
            if command.type == "module":
                self._not_instantiated(command, state, command.name, loaded.outcome)
            return loaded.outcome
        if loaded.name is not None:
            state.modules[loaded.name] = loaded
        state.last = loaded
        what = (
            "validated core module"
            if loaded.is_core
            else f"translated ({self.translator_description})"
        )
        if command.type == "module_definition":
            return Outcome.passed(what)
        instantiated = self._execute(lambda: state.executor.instantiate(command, loaded))
        if instantiated.ok is None:
            # Translation is all that could be checked; it passed.
            return Outcome.passed(
                f"{what}; instantiation skipped: {instantiated.message}", partial=True
            )
        return instantiated

    def _reject(self, command: Command, state: _FileState) -> Outcome:
        malformed = command.type == "assert_malformed"
        data_or_outcome = self._binary(command, state, rejection_ok=malformed)
        if isinstance(data_or_outcome, _Unavailable):
            return data_or_outcome.outcome
        data = data_or_outcome
        if is_core_module(data):
            if self.validate_core is None:
                return Outcome.skipped("no core module validator available")
            try:
                self.validate_core(data)
            except TranslationError as exc:
                return Outcome.passed(f"rejected: {exc}")
            except Exception as exc:
                return Outcome.failed(f"crash: {type(exc).__name__}: {exc}")
            return Outcome.failed(f"core validator accepted it (expected: {command.text})")
        if self.translate is None:
            return Outcome.skipped(self.translator_description)
        try:
            self.translate(data)
        except TranslationError as exc:
            return Outcome.passed(f"rejected: {exc}")
        except CommandTimeout:
            raise
        except Exception as exc:
            return Outcome.failed(f"crash: {type(exc).__name__}: {exc}")
        word = "a malformed" if malformed else "an invalid"
        return Outcome.failed(f"translated {word} component (expected: {command.text})")

    def _uninstantiable(self, command: Command, state: _FileState) -> Outcome:
        loaded = self._load(command, state)
        if isinstance(loaded, _Unavailable):
            return loaded.outcome
        executor = state.executor
        if command.type == "assert_uninstantiable":
            return self._execute(
                lambda: executor.assert_uninstantiable(command, loaded, command.text)
            )
        return self._execute(lambda: executor.assert_unlinkable(command, loaded, command.text))

    def _module_instance(self, command: Command, state: _FileState) -> Outcome:
        name = command.raw.get("module")
        instance = command.raw.get("instance")
        module = state.modules.get(name) if isinstance(name, str) else None
        label = instance if isinstance(instance, str) else ""
        if module is None:
            if isinstance(name, str) and name in state.untranslated:
                outcome = Outcome.skipped(f"module {name} was not translated")
            else:
                outcome = Outcome.failed(f"module_instance of an unknown module {name!r}")
            self._not_instantiated(command, state, label or None, outcome)
            return outcome
        return self._execute(lambda: state.executor.module_instance(command, module, label))

    @staticmethod
    def _not_instantiated(
        command: Command, state: _FileState, name: str | None, outcome: Outcome
    ) -> None:
        """Tell the executor (if it listens) that ``command`` made no instance.

        Actions that follow must not reach the instance made before it. The
        hook is optional: ``not_instantiated(command, name, outcome)``.
        """
        hook = getattr(state.executor, "not_instantiated", None)
        if callable(hook):
            hook(command, name, outcome)

    def _action(self, command: Command, state: _FileState) -> Outcome:
        action = Action.of(command)
        executor = state.executor
        if command.type == "assert_return":
            expected = command.raw.get("expected", [])
            values = list(expected) if isinstance(expected, list) else []
            return self._execute(lambda: executor.assert_return(command, action, values))
        if command.type == "assert_trap":
            return self._execute(lambda: executor.assert_trap(command, action, command.text))
        return self._execute(lambda: executor.action(command, action))

    @staticmethod
    def _execute(call: Callable[[], Outcome]) -> Outcome:
        try:
            outcome: object = call()
        except CommandTimeout:
            raise
        except Exception as exc:
            return Outcome.failed(f"executor raised {type(exc).__name__}: {exc}")
        if not isinstance(outcome, Outcome):
            return Outcome.failed(f"executor returned {type(outcome).__name__}, not an Outcome")
        return outcome

    # ------------------------------------------------------------------ binaries

    def _load(self, command: Command, state: _FileState) -> LoadedModule | _Unavailable:
        """Read and check the binary of a command that must be valid."""
        data = self._binary(command, state, rejection_ok=False)
        if isinstance(data, _Unavailable):
            return self._untranslated(command, state, data)
        path = state.directory / (command.filename or "")
        if is_core_module(data):
            if self.validate_core is None:
                return self._untranslated(
                    command,
                    state,
                    _Unavailable(Outcome.skipped("no core module validator available")),
                )
            try:
                self.validate_core(data)
            except Exception as exc:
                return _Unavailable(Outcome.failed(f"core module rejected: {exc}"))
            return LoadedModule(command.name, path, data, None, True)
        if self.translate is None:
            return self._untranslated(
                command, state, _Unavailable(Outcome.skipped(self.translator_description))
            )
        try:
            plan = self.translate(data)
        except TranslationError as exc:
            return _Unavailable(Outcome.failed(f"translation failed: {exc}"))
        except CommandTimeout:
            raise
        except Exception as exc:
            return _Unavailable(Outcome.failed(f"crash: {type(exc).__name__}: {exc}"))
        return LoadedModule(command.name, path, data, plan, False)

    @staticmethod
    def _untranslated(command: Command, state: _FileState, why: _Unavailable) -> _Unavailable:
        if command.name is not None:
            state.untranslated.add(command.name)
        return why

    def _binary(
        self, command: Command, state: _FileState, *, rejection_ok: bool
    ) -> bytes | _Unavailable:
        """The command's binary; text is compiled with ``wasm-tools parse``.

        With ``rejection_ok`` a text that ``wasm-tools`` rejects is reported as
        a passed outcome (a correct rejection of malformed text).
        """
        if command.filename is None:
            return _Unavailable(Outcome.failed(f"{command.type} has no filename"))
        path = state.directory / command.filename
        if not path.is_file():
            return _Unavailable(Outcome.failed(f"missing file {command.filename}"))
        if command.module_type == "binary":
            return path.read_bytes()
        if command.module_type != "text":
            return _Unavailable(Outcome.failed(f"unknown module_type {command.module_type!r}"))
        if self.wasm_tools is None:
            return _Unavailable(Outcome.skipped("wasm-tools is not available to compile text"))
        with tempfile.TemporaryDirectory(prefix="wast-") as tmp:
            out = Path(tmp) / "out.wasm"
            proc = subprocess.run(
                [str(self.wasm_tools), "parse", str(path), "-o", str(out)],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if proc.returncode != 0:
                first = (proc.stderr.strip().splitlines() or ["(no message)"])[0]
                if rejection_ok:
                    return _Unavailable(Outcome.passed(f"text rejected by wasm-tools: {first}"))
                return _Unavailable(Outcome.skipped(f"wasm-tools cannot parse the text: {first}"))
            return out.read_bytes()


class _FileState:
    """What one file's commands share: its directory, modules and executor."""

    def __init__(self, directory: Path, executor: Executor) -> None:
        self.directory = directory
        self.executor = executor
        self.modules: dict[str, LoadedModule] = {}
        self.untranslated: set[str] = set()
        self.last: LoadedModule | None = None
