"""Scheduling policy: the one switch behind every nondeterministic choice.

Concurrency.md §Nondeterminism lists the points where the spec lets a host
choose (which ready thread runs next, which pending event a waitable set
delivers, whether a wait on an already-satisfied condition blocks). A
:class:`SchedulePolicy` makes every one of those choices. By default it is
deterministic (first come, first served). With ``POLYENGINE_SCHED_SEED=<n>``
in the environment (or ``SchedulePolicy(seed=n)``) it draws each choice from
``random.Random(n)``, so a test can explore the permitted orders and replay
any one of them.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import TypeVar

__all__ = ["SEED_ENV", "SchedulePolicy"]

SEED_ENV = "POLYENGINE_SCHED_SEED"

T = TypeVar("T")


class SchedulePolicy:
    """Deterministic FIFO choices, or seeded random ones.

    ``seed`` is ``None`` for FIFO. :meth:`from_env` reads
    ``POLYENGINE_SCHED_SEED``; a value that is not an integer is an error
    naming the variable.
    """

    __slots__ = ("_rng", "seed")

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self._rng = random.Random(seed) if seed is not None else None

    @classmethod
    def from_env(cls) -> SchedulePolicy:
        raw = os.environ.get(SEED_ENV)
        if raw is None or raw.strip() == "":
            return cls(None)
        try:
            return cls(int(raw, 0))
        except ValueError:
            raise ValueError(f"{SEED_ENV} must be an integer, got {raw!r}") from None

    @property
    def deterministic(self) -> bool:
        return self._rng is None

    def pick(self, candidates: Sequence[T]) -> T:
        """Choose one of ``candidates`` (non-empty): the first, or a seeded draw."""
        assert candidates
        if self._rng is None:
            return candidates[0]
        return candidates[self._rng.randrange(len(candidates))]

    def order(self, items: Sequence[T]) -> list[T]:
        """The order in which to consider ``items``: as given, or a seeded shuffle."""
        out = list(items)
        if self._rng is not None:
            self._rng.shuffle(out)
        return out

    def skip_block(self) -> bool:
        """Whether a wait whose condition already holds returns without blocking.

        FIFO never blocks needlessly; a seeded policy flips a coin (the spec's
        ``random.randint(0,1)`` in ``Thread.wait_until``).
        """
        if self._rng is None:
            return True
        return self._rng.random() < 0.5
