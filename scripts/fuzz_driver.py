"""The shared driver of the fuzzing scripts (``fuzz_binary.py``, ``fuzz_translate.py``).

What both need around their own mutations and targets: the report of a run
(:class:`FuzzReport` with its :class:`Finding` rows), a per-input time limit
(:func:`time_limit`, raising :class:`Hang`), and the LEB128 encoder the
mutations write lengths and indices with.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["Finding", "FuzzReport", "Hang", "leb", "time_limit"]


@dataclass
class Finding:
    """One input that crashed or hung the code under test."""

    kind: str  # "crash" or "hang"
    mutation: str
    data: bytes
    detail: str


@dataclass
class FuzzReport:
    """Outcome of a fuzzing run."""

    inputs: int = 0
    accepted: int = 0
    rejected: int = 0
    slowest: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    @property
    def crashes(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "crash"]

    @property
    def hangs(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "hang"]


class Hang(BaseException):
    """Raised by the alarm handler; a BaseException so no ``except Exception`` swallows it."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the body after ``seconds`` where SIGALRM is usable (the elapsed time is
    checked by the caller in any case)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def leb(value: int, pad_to: int = 0) -> bytes:
    """``value`` as unsigned LEB128, padded (overlong) to at least ``pad_to`` bytes."""
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value or len(out) + 1 < pad_to:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)
