"""Deterministic FIFO scheduling and the seeded profile (Concurrency.md §Nondeterminism).

The seeded profile (``sched`` module docs) shuffles the threads that were
woken, keeps yielded threads last and each instance's yields in order, and
never blocks a wait whose condition already holds.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from polyengine.concurrency import InstanceState, Store, start_host_call
from polyengine.concurrency.builtins import canon_thread_yield
from polyengine.concurrency.fakes import stackful
from polyengine.concurrency.sched import SEED_ENV, SchedulePolicy
from polyengine.concurrency.thread import Suspends, Thread

Body = Callable[[Thread], Suspends[None]]


def drain(store: Store) -> int:
    n = 0
    while store.tick():
        n += 1
    return n


def interleaving(policy: SchedulePolicy, n_threads: int = 4, rounds: int = 4) -> list[str]:
    """Threads in separate instances, each yielding between its steps."""
    store = Store(policy)
    log: list[str] = []

    def body_for(tag: str) -> Body:
        def body(thread: Thread) -> Suspends[None]:
            for k in range(rounds):
                log.append(f"{tag}{k}")
                yield from canon_thread_yield(thread, False)

        return body

    calls = []
    for i in range(n_threads):
        inst = InstanceState(store, name=f"i{i}")
        calls.append(start_host_call(stackful(inst, body_for(chr(97 + i))), []))
    drain(store)
    assert all(c.resolved for c in calls)
    return log


def woken_interleaving(policy: SchedulePolicy, rounds: int = 3) -> list[str]:
    """Four threads (two tasks in each of two instances) woken together each round.

    Every thread waits on a condition the host makes true for all of them
    at once, so no rule of the seeded profile orders them: the order is
    entirely the seed's.
    """
    store = Store(policy)
    log: list[str] = []
    gates = [False] * rounds

    def gate_open(k: int) -> Callable[[], bool]:
        return lambda: gates[k]

    def body_for(tag: str) -> Body:
        def body(thread: Thread) -> Suspends[None]:
            for k in range(rounds):
                yield from thread.wait_until(gate_open(k))
                log.append(f"{tag}{k}")

        return body

    calls = []
    for inst_name in ("p", "q"):
        inst = InstanceState(store, name=inst_name)
        for j in range(2):
            calls.append(start_host_call(stackful(inst, body_for(f"{inst_name}{j}.")), []))
    assert log == []
    for k in range(rounds):
        gates[k] = True
        assert drain(store) == 4
        assert len(log) == 4 * (k + 1)
    assert all(c.resolved for c in calls)
    return log


# --------------------------------------------------------------------------- FIFO


def test_fifo_is_round_robin() -> None:
    assert interleaving(SchedulePolicy(None), 3, 3) == [
        "a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2",
    ]  # fmt: skip


def test_fifo_is_repeatable() -> None:
    assert interleaving(SchedulePolicy(None)) == interleaving(SchedulePolicy(None))


def test_fifo_resumes_woken_threads_in_waiting_order() -> None:
    assert woken_interleaving(SchedulePolicy(None), 2) == [
        "p0.0", "p1.0", "q0.0", "q1.0", "p0.1", "p1.1", "q0.1", "q1.1",
    ]  # fmt: skip


# --------------------------------------------------------------------------- seeded


def test_two_seeds_interleave_an_unconstrained_program_differently() -> None:
    """The seed is not a no-op: threads woken together run in the seed's order."""
    a = woken_interleaving(SchedulePolicy(1))
    b = woken_interleaving(SchedulePolicy(2))
    assert a != b
    assert a != woken_interleaving(SchedulePolicy(None))
    # each is still a valid interleaving: every thread's own steps keep their order
    for log in (a, b):
        for tag in ("p0.", "p1.", "q0.", "q1."):
            assert [s for s in log if s.startswith(tag)] == [f"{tag}{k}" for k in range(3)]


def test_the_same_seed_reproduces_the_same_interleaving() -> None:
    for seed in (1, 2, 4242):
        first = woken_interleaving(SchedulePolicy(seed))
        assert first == woken_interleaving(SchedulePolicy(seed))
        assert interleaving(SchedulePolicy(seed)) == interleaving(SchedulePolicy(seed))


def test_seeds_shuffle_the_yields_of_different_instances() -> None:
    fifo = interleaving(SchedulePolicy(None))
    orders = {tuple(interleaving(SchedulePolicy(seed))) for seed in range(8)}
    assert len(orders) > 1
    assert any(o != tuple(fifo) for o in orders)
    for o in orders:
        for tag in "abcd":
            assert [s for s in o if s.startswith(tag)] == [f"{tag}{k}" for k in range(4)]


def yield_and_wake(seed: int | None) -> list[str]:
    """One thread yields, then another one's condition comes true."""
    store = Store(SchedulePolicy(seed))
    log: list[str] = []
    gate = [False]

    def yielder(thread: Thread) -> Suspends[None]:
        log.append("y-yield")
        yield from canon_thread_yield(thread, False)
        log.append("y-back")

    def waiter(thread: Thread) -> Suspends[None]:
        yield from thread.wait_until(lambda: gate[0])
        log.append("w-woken")

    start_host_call(stackful(InstanceState(store, name="y"), yielder), [])
    start_host_call(stackful(InstanceState(store, name="w"), waiter), [])
    gate[0] = True
    drain(store)
    return log


def test_yielded_threads_run_after_woken_ones() -> None:
    """Rule 2: a thread that yielded waits while a woken thread is ready (both profiles)."""
    # FIFO too, as wasmtime's two queues: the yielder waited first, yet goes last
    assert yield_and_wake(None) == ["y-yield", "w-woken", "y-back"]
    for seed in range(10):
        assert yield_and_wake(seed) == ["y-yield", "w-woken", "y-back"], seed


def yields_in_two_instances(seed: int) -> list[str]:
    """Three tasks in each of two instances, each yielding between three steps."""
    store = Store(SchedulePolicy(seed))
    log: list[str] = []

    def body_for(tag: str) -> Body:
        def body(thread: Thread) -> Suspends[None]:
            for k in range(3):
                log.append(f"{tag}{k}")
                yield from canon_thread_yield(thread, False)

        return body

    for name in ("a", "b"):
        inst = InstanceState(store, name=name)
        for j in range(3):
            start_host_call(stackful(inst, body_for(f"{name}{j}.")), [])
    drain(store)
    return log


def test_seeded_keeps_each_instances_yields_in_order() -> None:
    """Rule 3: tasks of one instance that yield resume in yield order, every round."""
    seen = set()
    for seed in range(12):
        log = yields_in_two_instances(seed)
        for name in ("a", "b"):
            mine = [s for s in log if s.startswith(name)]
            assert mine == [f"{name}{j}.{k}" for k in range(3) for j in range(3)], seed
        seen.add(tuple(log))
    assert len(seen) > 1  # the two instances still interleave by seed


def test_seeded_wait_on_a_holding_condition_does_not_block() -> None:
    """Rule 1: the spec's coin flip in ``Thread.wait_until`` is not drawn."""
    for seed in range(16):
        store = Store(SchedulePolicy(seed))

        def body(thread: Thread) -> Suspends[None]:
            yield from thread.wait_until(lambda: True)

        call = start_host_call(stackful(InstanceState(store), body), [])
        assert call.resolved, seed
        assert not store.waiting


# --------------------------------------------------------------------------- env


def test_env_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SEED_ENV, "7")
    p = SchedulePolicy.from_env()
    assert p.seed == 7 and not p.deterministic and p.name == "seed=7"
    assert woken_interleaving(p) == woken_interleaving(SchedulePolicy(7))
    monkeypatch.setenv(SEED_ENV, "")
    assert SchedulePolicy.from_env().deterministic
    monkeypatch.delenv(SEED_ENV)
    assert Store().policy.deterministic
    assert Store().policy.name == "fifo"


def test_bad_env_seed_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SEED_ENV, "banana")
    with pytest.raises(ValueError, match=SEED_ENV):
        SchedulePolicy.from_env()
