"""xfail entries limited to one schedule: ``[fifo]`` / ``[seeded]`` tags."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyengine.concurrency.sched import SEED_ENV
from polyengine.testing import XfailList
from polyengine.testing._xfail import DEFAULT_XFAIL_FILE, current_schedule, prune_xfail_file

TEXT = (
    "d/f:1 fails everywhere\n"
    "d/f:2 [fifo] fails under fifo only\n"
    "d/f:3 [seeded] fails under a seed only\n"
    "d/f:4 [fifo] fifo reason\n"
    "d/f:4 [seeded] seeded reason\n"
)


def test_entries_apply_to_their_schedule() -> None:
    fifo = XfailList.parse(TEXT, schedule="fifo")
    assert fifo.entries == {
        ("d/f", 1): "fails everywhere",
        ("d/f", 2): "fails under fifo only",
        ("d/f", 4): "fifo reason",
    }
    seeded = XfailList.parse(TEXT, schedule="seeded")
    assert seeded.entries == {
        ("d/f", 1): "fails everywhere",
        ("d/f", 3): "fails under a seed only",
        ("d/f", 4): "seeded reason",
    }
    assert seeded.schedule == "seeded"


def test_the_default_schedule_is_the_processs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SEED_ENV, raising=False)
    assert current_schedule() == "fifo"
    assert ("d/f", 2) in XfailList.parse(TEXT).entries
    monkeypatch.setenv(SEED_ENV, "4242")
    assert current_schedule() == "seeded"
    entries = XfailList.parse(TEXT).entries
    assert ("d/f", 3) in entries and ("d/f", 2) not in entries


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("d/f:1 [sometimes] reason\n", r"unknown schedule tag \[sometimes\]"),
        ("d/f:1 [fifo\n", "expected '<dir>/<file>:<line> <reason>'"),
        ("d/f:1 [seeded]\n", "has no reason"),
        ("d/f:1 a\nd/f:1 [fifo] b\n", "duplicate xfail d/f:1"),
        ("d/f:1 [fifo] a\nd/f:1 b\n", "duplicate xfail d/f:1"),
        ("d/f:1 [seeded] a\nd/f:1 [seeded] b\n", "duplicate xfail d/f:1"),
    ],
)
def test_tag_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        XfailList.parse(text, "xf.txt", schedule="fifo")
    with pytest.raises(ValueError, match=r"xf\.txt:"):
        XfailList.parse(text, "xf.txt", schedule="seeded")


def test_prune_removes_only_entries_of_the_schedule(tmp_path: Path) -> None:
    path = tmp_path / "xfail.txt"
    path.write_text(TEXT, encoding="utf-8")
    removed = prune_xfail_file(path, {("d/f", 2), ("d/f", 3), ("d/f", 4)}, schedule="fifo")
    assert removed == ["d/f:2 [fifo] fails under fifo only", "d/f:4 [fifo] fifo reason"]
    assert path.read_text(encoding="utf-8") == (
        "d/f:1 fails everywhere\n"
        "d/f:3 [seeded] fails under a seed only\n"
        "d/f:4 [seeded] seeded reason\n"
    )


def test_committed_file_parses_under_both_schedules() -> None:
    fifo = XfailList.load(DEFAULT_XFAIL_FILE, schedule="fifo")
    seeded = XfailList.load(DEFAULT_XFAIL_FILE, schedule="seeded")
    assert all(fifo.entries.values()) and all(seeded.entries.values())
    # the sync canon_lift loop's nyi case passes under both: the deterministic profile
    # resumes woken threads before yielded ones, as the seeded profile does
    key = ("async/during-sync-call-no-exclusive-resume", 119)
    assert key not in fifo.entries and key not in seeded.entries
    assert fifo.entries == seeded.entries
