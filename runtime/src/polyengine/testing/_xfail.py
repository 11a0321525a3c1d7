"""The expected-failure list: one committed file, one ``<dir>/<file>:<line> <reason>`` a line.

``<dir>/<file>`` is the id of a converted wast file (for the official suite,
``values/strings`` names ``values/strings/strings.json``) and ``<line>`` the
line of the command in the ``.wast`` source. Blank lines and lines starting
with ``#`` are ignored.

An entry may name the schedule it applies to, right after the key:
``<dir>/<file>:<line> [fifo] <reason>`` is expected to fail only under the
default FIFO schedule, ``[seeded]`` only under a ``POLYENGINE_SCHED_SEED``
schedule (see :mod:`polyengine.concurrency.sched`); under the other schedule
the command must pass. An entry without a tag applies to both. The schedule
is the process's own (read from the environment, as every store does)
unless ``schedule`` is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from polyengine.concurrency.sched import SchedulePolicy

DEFAULT_XFAIL_FILE = Path(__file__).with_name("xfail.txt")

Schedule = Literal["fifo", "seeded"]
SCHEDULES: tuple[Schedule, ...] = ("fifo", "seeded")


def current_schedule() -> Schedule:
    """``"fifo"``, or ``"seeded"`` when ``POLYENGINE_SCHED_SEED`` is set."""
    return "fifo" if SchedulePolicy.from_env().deterministic else "seeded"


def _split_entry(line: str) -> tuple[str, str, Schedule | None, str] | None:
    """``(file id, line number, schedule tag, reason)``, or ``None`` when malformed."""
    key, _, rest = line.partition(" ")
    file_id, colon, line_no = key.rpartition(":")
    if not colon or not file_id or not line_no.isdigit():
        return None
    rest = rest.strip()
    tag: Schedule | None = None
    if rest.startswith("["):
        word, close, reason = rest[1:].partition("]")
        if not close:
            return None
        for s in SCHEDULES:
            if word == s:
                tag = s
        if tag is None:
            raise ValueError(f"unknown schedule tag [{word}] (expected [fifo] or [seeded])")
        rest = reason.strip()
    return file_id, line_no, tag, rest


@dataclass
class XfailList:
    """Expected failures keyed by ``(file id, line)``, with their reasons.

    ``entries`` holds the entries that apply to ``schedule``; entries tagged
    for the other schedule are left out.
    """

    entries: dict[tuple[str, int], str] = field(default_factory=dict)
    source: str = "<empty>"
    schedule: Schedule = "fifo"

    def reason(self, file_id: str, line: int) -> str | None:
        return self.entries.get((file_id, line))

    def lines_for(self, file_id: str) -> dict[int, str]:
        return {line: why for (fid, line), why in self.entries.items() if fid == file_id}

    @classmethod
    def parse(
        cls, text: str, source: str = "<string>", schedule: Schedule | None = None
    ) -> XfailList:
        """Parse the xfail format; raise ``ValueError`` naming the offending line."""
        if schedule is None:
            schedule = current_schedule()
        entries: dict[tuple[str, int], str] = {}
        tags: dict[tuple[str, int], list[Schedule | None]] = {}
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                parts = _split_entry(line)
            except ValueError as exc:
                raise ValueError(f"{source}:{number}: {exc}: {line!r}") from None
            if parts is None:
                raise ValueError(
                    f"{source}:{number}: expected '<dir>/<file>:<line> <reason>' (a [fifo] or"
                    f" [seeded] tag may precede the reason), got {line!r}"
                )
            file_id, line_no, tag, reason = parts
            key = f"{file_id}:{line_no}"
            if not reason:
                raise ValueError(f"{source}:{number}: xfail {key} has no reason")
            k = (file_id, int(line_no))
            seen = tags.setdefault(k, [])
            if tag in seen or (seen and (tag is None or None in seen)):
                raise ValueError(f"{source}:{number}: duplicate xfail {key}")
            seen.append(tag)
            if tag is None or tag == schedule:
                entries[k] = reason
        return cls(entries, source, schedule)

    @classmethod
    def load(cls, path: Path, schedule: Schedule | None = None) -> XfailList:
        """Read an xfail file; a missing file is an error (``OSError``)."""
        return cls.parse(path.read_text(encoding="utf-8"), str(path), schedule)


def prune_xfail_file(
    path: Path, stale: set[tuple[str, int]], schedule: Schedule | None = None
) -> list[str]:
    """Rewrite ``path`` without the entries keyed in ``stale``; return the removed lines.

    Only entries that apply to ``schedule`` (default: the process's) are
    removed. Comments, blank lines and every other entry are kept verbatim.
    """
    if schedule is None:
        schedule = current_schedule()
    kept: list[str] = []
    removed: list[str] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        parts = None
        if line and not line.startswith("#"):
            try:
                parts = _split_entry(line)
            except ValueError:
                parts = None
        if (
            parts is not None
            and (parts[0], int(parts[1])) in stale
            and parts[2] in (None, schedule)
        ):
            removed.append(raw)
        else:
            kept.append(raw)
    if removed:
        path.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
    return removed
