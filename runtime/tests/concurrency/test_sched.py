"""Deterministic FIFO scheduling and the seeded shuffle (Concurrency.md §Nondeterminism)."""

from __future__ import annotations

import pytest

from polyengine.concurrency import InstanceState, Store, start_host_call
from polyengine.concurrency.builtins import canon_thread_yield
from polyengine.concurrency.fakes import stackful
from polyengine.concurrency.sched import SEED_ENV, SchedulePolicy
from polyengine.concurrency.thread import Suspends, Thread


def interleaving(policy: SchedulePolicy, n_threads: int = 4, rounds: int = 4) -> list[str]:
    store = Store(policy)
    log: list[str] = []

    def body_for(tag: str) -> object:
        def body(thread: Thread) -> Suspends[None]:
            for k in range(rounds):
                log.append(f"{tag}{k}")
                yield from canon_thread_yield(thread, False)

        return body

    calls = []
    for i in range(n_threads):
        inst = InstanceState(store, name=f"i{i}")
        calls.append(start_host_call(stackful(inst, body_for(chr(97 + i))), []))  # type: ignore[arg-type]
    while store.tick():
        pass
    assert all(c.resolved for c in calls)
    return log


def test_fifo_is_round_robin() -> None:
    assert interleaving(SchedulePolicy(None), 3, 3) == [
        "a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2",
    ]  # fmt: skip


def test_fifo_is_repeatable() -> None:
    assert interleaving(SchedulePolicy(None)) == interleaving(SchedulePolicy(None))


def test_same_seed_same_order() -> None:
    for seed in (0, 1, 12345):
        assert interleaving(SchedulePolicy(seed)) == interleaving(SchedulePolicy(seed))


def test_seeds_explore_other_orders() -> None:
    fifo = interleaving(SchedulePolicy(None))
    orders = {tuple(interleaving(SchedulePolicy(seed))) for seed in range(8)}
    assert any(o != tuple(fifo) for o in orders)
    assert len(orders) > 1
    # every order is a valid interleaving: each thread's own steps stay in order
    for o in orders:
        for tag in "abcd":
            mine = [s for s in o if s.startswith(tag)]
            assert mine == [f"{tag}{k}" for k in range(4)]


def test_env_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SEED_ENV, "7")
    p = SchedulePolicy.from_env()
    assert p.seed == 7 and not p.deterministic
    assert interleaving(p) == interleaving(SchedulePolicy(7))
    monkeypatch.setenv(SEED_ENV, "")
    assert SchedulePolicy.from_env().deterministic
    monkeypatch.delenv(SEED_ENV)
    assert Store().policy.deterministic


def test_bad_env_seed_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SEED_ENV, "banana")
    with pytest.raises(ValueError, match=SEED_ENV):
        SchedulePolicy.from_env()
