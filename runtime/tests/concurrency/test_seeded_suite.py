"""Seeded schedules (Concurrency.md §Nondeterminism): a trap that escapes a
thread resumed by ``Store.tick`` settles the host call waiting on it, and the
official async suite under ``POLYENGINE_SCHED_SEED`` 1 and 4242.

The suite part runs only when ``POLYENGINE_CM_SUITE`` points at the converted
official suite. Two of its files rely on choices the spec leaves open, so a
seeded run may legitimately fail commands there (and only there):

* ``async/async-calls-sync``: after ``unblock``, both ``blocking-call``
  callback threads of the inner instance are ready at once; the test expects
  the one serving subtask 2 to finish first (it checks that each subtask's
  result equals its index, the inner counter being handed out in start
  order). ``Store.tick`` resumes any ready thread (definitions.py
  ``Store.tick``, ``random.choice`` over ``waiting``; Concurrency.md: "the
  order in which they are resumed is nondeterministic", and the same for
  tasks released from backpressure), so subtask 5 may start before subtask 4.
* ``async/big-interleaving-test``: ``await``/``await-readable`` are stackful
  async exports that call ``waitable-set.wait`` when the event is already
  pending, called through an async ``canon lower``; the program then expects
  code 2 (RETURNED). ``Thread.wait_until`` may block even when its condition
  holds (definitions.py, the ``random.randint(0,1)`` conjunct; Concurrency.md:
  "whether or not the thread blocks and transfers execution to an async
  caller ... is nondeterministic"), which makes the call report STARTED, or
  leaves the readable end copying so a later drop traps. The instance is
  reused, so later commands fail as "poisoned".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from polyengine.abi.trap import Trap
from polyengine.concurrency import InstanceState, Store, canon_lower, start_host_call
from polyengine.concurrency.builtins import canon_thread_yield
from polyengine.concurrency.fakes import py_lifted, py_lowered
from polyengine.concurrency.sched import SEED_ENV, SchedulePolicy
from polyengine.concurrency.thread import CoreVal, Suspends, Thread

SUITE = os.environ.get("POLYENGINE_CM_SUITE")
NOT_SET = "POLYENGINE_CM_SUITE is not set (converted official suite)"

#: files whose expectations depend on a choice the spec leaves open (see above)
SPEC_OPEN = {"async/async-calls-sync", "async/big-interleaving-test"}


def test_trap_in_a_ticked_callee_settles_the_waiting_call() -> None:
    """The callee's trap poisons the caller while the caller's thread runs;
    the tick that resumed that thread still fails the caller's task."""
    store = Store(SchedulePolicy(None))
    d, c = InstanceState(store, name="d"), InstanceState(store, name="c")

    def boom(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from ()
        raise Trap("callee trapped")

    lower = py_lowered(py_lifted(c, boom))

    def caller(thread: Thread, _a: list[CoreVal]) -> Suspends[list[CoreVal]]:
        yield from canon_thread_yield(thread, False)
        yield from canon_lower(lower, thread, [])
        return []

    call = start_host_call(py_lifted(d, caller, is_async=True), [])
    assert not call.settled
    with pytest.raises(Trap, match="callee trapped"):
        store.tick()
    assert c.poisoned is not None and d.poisoned is not None
    assert call.trap is not None and "callee trapped" in str(call.trap)
    assert not store.waiting


def _run_suite(seed: int | None) -> dict[str, list[str]]:
    assert SUITE is not None
    env = dict(os.environ)
    env.pop(SEED_ENV, None)
    if seed is not None:
        env[SEED_ENV] = str(seed)
    out = subprocess.run(
        [sys.executable, "-m", "polyengine.testing.wast", "--executor", "embed", "--json",
         str(Path(SUITE) / "async")],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    report = json.loads(out.stdout)
    failed: dict[str, list[str]] = {}
    for f in report["files"]:
        bad = [f"{r['line']}: {r['message']}" for r in f["results"] if r["status"] == "failed"]
        if bad or f.get("error"):
            failed[f["id"]] = bad + ([f["error"]] if f.get("error") else [])
    return failed


@pytest.mark.skipif(not SUITE, reason=NOT_SET)
def test_default_schedule_passes_the_async_suite() -> None:
    assert _run_suite(None) == {}


@pytest.mark.skipif(not SUITE, reason=NOT_SET)
@pytest.mark.parametrize("seed", [1, 4242])
def test_seeded_schedule_fails_only_where_the_spec_leaves_the_order_open(seed: int) -> None:
    failed = _run_suite(seed)
    unexpected = {fid: lines for fid, lines in failed.items() if fid not in SPEC_OPEN}
    assert unexpected == {}
