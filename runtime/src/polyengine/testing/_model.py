"""The data of a wast run: commands as read from ``json-from-wast`` output, and results.

``wasm-tools json-from-wast`` writes one JSON document per ``.wast`` file: a
``source_filename`` and a list of ``commands``, each a dict with a ``type``
(``module``, ``module_definition``, ``module_instance``, ``assert_return``,
``assert_trap``, ``assert_invalid``, ``assert_malformed``, ...), the ``line`` of
the command in the ``.wast`` source and, for module commands, the
``filename`` of the binary (or text) written next to the JSON.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path

#: Command types whose checking needs a running instance.
EXECUTION_COMMANDS = frozenset(
    {
        "assert_return",
        "assert_trap",
        "assert_exhaustion",
        "assert_exception",
        "assert_suspension",
        "action",
        "assert_uninstantiable",
        "assert_unlinkable",
        "module_instance",
        "register",
    }
)

#: Command types that only read, validate and translate a binary.
VALIDATION_COMMANDS = frozenset(
    {"module", "module_definition", "assert_malformed", "assert_invalid"}
)


class Status(enum.Enum):
    """The final verdict on one command, after the xfail list is applied."""

    PASSED = "passed"
    FAILED = "failed"
    XFAIL = "xfail"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Outcome:
    """What checking one command found, before the xfail list is consulted.

    ``ok`` is ``True`` (as expected), ``False`` (not as expected) or ``None``
    (not checked; ``message`` is then the reason).
    """

    ok: bool | None
    message: str = ""
    #: ``ok`` is ``True`` for what was checked, but part of the command was
    #: not run (a ``module`` translated while instantiation was skipped).
    partial: bool = False

    @classmethod
    def passed(cls, message: str = "", *, partial: bool = False) -> Outcome:
        return cls(True, message, partial)

    @classmethod
    def failed(cls, message: str) -> Outcome:
        return cls(False, message)

    @classmethod
    def skipped(cls, reason: str) -> Outcome:
        return cls(None, reason)


@dataclass(frozen=True)
class Command:
    """One command of a wast JSON file, with the fields the runner reads typed."""

    type: str
    line: int
    raw: dict[str, object]

    @property
    def filename(self) -> str | None:
        value = self.raw.get("filename")
        return value if isinstance(value, str) else None

    @property
    def module_type(self) -> str:
        value = self.raw.get("module_type")
        return value if isinstance(value, str) else "binary"

    @property
    def text(self) -> str:
        value = self.raw.get("text")
        return value if isinstance(value, str) else ""

    @property
    def name(self) -> str | None:
        value = self.raw.get("name")
        return value if isinstance(value, str) else None

    @classmethod
    def from_json(cls, raw: object) -> Command:
        """Read one command; raise ``ValueError`` naming what is wrong."""
        if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
            raise ValueError(f"a command must be an object, not {type(raw).__name__}")
        kind = raw.get("type")
        line = raw.get("line")
        if not isinstance(kind, str):
            raise ValueError(f"command without a string 'type': {raw!r:.120}")
        if not isinstance(line, int) or isinstance(line, bool):
            raise ValueError(f"{kind} command without an integer 'line'")
        return cls(kind, line, raw)


@dataclass(frozen=True)
class LoadedModule:
    """A component (or core module) binary a module command defined.

    ``plan`` is what the translator returned (``None`` for core modules and
    when only the binary reader was available).
    """

    name: str | None
    path: Path
    data: bytes
    plan: object | None
    is_core: bool


@dataclass(frozen=True)
class CommandResult:
    """The verdict on one command.

    ``stale_xfail`` marks a failure that is an xfail entry whose command
    passed (or that matches no command).
    """

    line: int
    type: str
    status: Status
    message: str = ""
    stale_xfail: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "line": self.line,
            "type": self.type,
            "status": self.status.value,
            "message": self.message,
        }


@dataclass
class FileResult:
    """The results for one converted wast file (one row of the report).

    ``id`` is ``<dir>/<file>``, the key of the xfail list.
    """

    id: str
    path: Path
    results: list[CommandResult] = field(default_factory=list)
    error: str | None = None

    def count(self, status: Status) -> int:
        return sum(1 for r in self.results if r.status is status)

    @property
    def commands(self) -> int:
        return len(self.results)

    def skip_reasons(self) -> dict[str, int]:
        """Each distinct skip reason with how many commands it covers."""
        reasons: dict[str, int] = {}
        for r in self.results:
            if r.status is Status.SKIPPED:
                reasons[r.message] = reasons.get(r.message, 0) + 1
        return reasons

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "path": str(self.path),
            "commands": self.commands,
            **{s.value: self.count(s) for s in Status},
            "skip_reasons": self.skip_reasons(),
            "error": self.error,
            "results": [r.to_json() for r in self.results],
        }


@dataclass(frozen=True)
class Totals:
    """The closing line's counts."""

    passed: int = 0
    failed: int = 0
    xfail: int = 0
    skipped: int = 0

    @classmethod
    def of(cls, files: list[FileResult]) -> Totals:
        return cls(
            passed=sum(f.count(Status.PASSED) for f in files),
            failed=sum(f.count(Status.FAILED) for f in files),
            xfail=sum(f.count(Status.XFAIL) for f in files),
            skipped=sum(f.count(Status.SKIPPED) for f in files),
        )

    def line(self) -> str:
        return (
            f"{self.passed} passed, {self.failed} failed, {self.xfail} xfail, "
            f"{self.skipped} skipped"
        )

    def to_json(self) -> dict[str, int]:
        return {
            "passed": self.passed,
            "failed": self.failed,
            "xfail": self.xfail,
            "skipped": self.skipped,
        }
