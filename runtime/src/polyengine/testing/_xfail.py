"""The expected-failure list: one committed file, one ``<dir>/<file>:<line> <reason>`` a line.

``<dir>/<file>`` is the id of a converted wast file (for the official suite,
``values/strings`` names ``values/strings/strings.json``) and ``<line>`` the
line of the command in the ``.wast`` source. Blank lines and lines starting
with ``#`` are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_XFAIL_FILE = Path(__file__).with_name("xfail.txt")


@dataclass
class XfailList:
    """Expected failures keyed by ``(file id, line)``, with their reasons."""

    entries: dict[tuple[str, int], str] = field(default_factory=dict)
    source: str = "<empty>"

    def reason(self, file_id: str, line: int) -> str | None:
        return self.entries.get((file_id, line))

    def lines_for(self, file_id: str) -> dict[int, str]:
        return {line: why for (fid, line), why in self.entries.items() if fid == file_id}

    @classmethod
    def parse(cls, text: str, source: str = "<string>") -> XfailList:
        """Parse the xfail format; raise ``ValueError`` naming the offending line."""
        entries: dict[tuple[str, int], str] = {}
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            key, _, reason = line.partition(" ")
            file_id, colon, line_no = key.rpartition(":")
            if not colon or not file_id or not line_no.isdigit():
                raise ValueError(
                    f"{source}:{number}: expected '<dir>/<file>:<line> <reason>', got {line!r}"
                )
            if not reason.strip():
                raise ValueError(f"{source}:{number}: xfail {key} has no reason")
            if (file_id, int(line_no)) in entries:
                raise ValueError(f"{source}:{number}: duplicate xfail {key}")
            entries[(file_id, int(line_no))] = reason.strip()
        return cls(entries, source)

    @classmethod
    def load(cls, path: Path) -> XfailList:
        """Read an xfail file; a missing file is an error (``OSError``)."""
        return cls.parse(path.read_text(encoding="utf-8"), str(path))


def prune_xfail_file(path: Path, stale: set[tuple[str, int]]) -> list[str]:
    """Rewrite ``path`` without the entries keyed in ``stale``; return the removed lines.

    Comments, blank lines and every other entry are kept verbatim.
    """
    kept: list[str] = []
    removed: list[str] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        key = line.partition(" ")[0]
        file_id, colon, line_no = key.rpartition(":")
        if (
            line
            and not line.startswith("#")
            and colon
            and line_no.isdigit()
            and (file_id, int(line_no)) in stale
        ):
            removed.append(raw)
        else:
            kept.append(raw)
    if removed:
        path.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
    return removed
