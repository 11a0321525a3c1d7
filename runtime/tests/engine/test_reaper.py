"""Closed stores are deleted on the reaper thread, in place when it cannot take them."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from polyengine.engine import CoreModule, EngineStore, _reaper, instantiate

Wat = Callable[..., CoreModule]

MODULE = '(module (memory (export "m") 1) (table 4 funcref) (func (export "f")))'


@pytest.fixture
def deletions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, str]]]:
    """Each real deletion as ``(store pointer, thread name)``, on a reaper of its own."""
    seen: list[tuple[int, str]] = []
    real = _reaper._delete_now

    def record(store: int, linker: int) -> None:
        seen.append((store, threading.current_thread().name))
        real(store, linker)

    monkeypatch.setattr(_reaper, "_delete_now", record)
    monkeypatch.setattr(_reaper, "_REAPER", _reaper._Reaper(native=False))
    monkeypatch.setattr(_reaper, "IN_PLACE_BYTES", 0)  # every store goes to the reaper
    yield seen
    _reaper.drain()


def _closed_store(wat: Wat) -> int:
    store = EngineStore()
    instantiate(store, wat(MODULE), []).func("f").call_raw([])
    ptr = store._state.store_ptr
    store.close()
    assert store._state.store_ptr == 0 and store.closed
    return ptr


def _wait_for(cond: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not cond():
        assert time.monotonic() < deadline, "the reaper did not delete the store"
        time.sleep(0.001)


def test_a_closed_store_is_deleted_on_the_reaper_thread(
    wat: Wat, deletions: list[tuple[int, str]]
) -> None:
    # Stores of earlier tests that the collector closes meanwhile go the same way,
    # and a deleted store's address may come back for the next one.
    ptr = _closed_store(wat)
    _wait_for(lambda: any(d[0] == ptr for d in deletions))
    ptrs = [_closed_store(wat) for _ in range(5)]
    _wait_for(lambda: len(deletions) >= 6 and {d[0] for d in deletions} >= set(ptrs))
    assert {name for _, name in deletions} == {"polyengine-store-reaper"}


def test_past_the_bound_and_after_a_drain_stores_are_deleted_in_place(
    wat: Wat, deletions: list[tuple[int, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    recorded = _reaper._delete_now

    def held(store: int, linker: int) -> None:
        if threading.current_thread().name == "polyengine-store-reaper":
            assert gate.wait(10)
        recorded(store, linker)

    monkeypatch.setattr(_reaper, "_delete_now", held)
    me = threading.current_thread().name
    # The reaper holds the first store; the queue takes LIMIT more; past that
    # a store is deleted by the thread that closed it.
    closed = [_closed_store(wat) for _ in range(_reaper.LIMIT + 3)]
    in_place = [d for d in deletions if d[0] in closed]
    assert in_place, "no store was deleted in place past the bound"
    assert {name for _, name in in_place} == {me}
    assert in_place[-1][0] == closed[-1]
    gate.set()
    _reaper.drain()  # waits for the thread, which deletes what it held and queued
    assert sorted(ptr for ptr, _ in deletions if ptr in closed) == sorted(closed)
    assert not _reaper._REAPER.pending
    late = _closed_store(wat)  # the reaper no longer takes stores
    assert (late, me) in deletions


def test_in_a_forked_child_the_store_is_deleted_in_place(
    wat: Wat, deletions: list[tuple[int, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_reaper._REAPER, "pid", -1)  # as if this were a forked child
    ptr = _closed_store(wat)
    assert (ptr, threading.current_thread().name) in deletions
    assert _reaper._REAPER.thread is None


def test_a_process_that_closes_many_stores_exits_cleanly(
    run_isolated: Callable[[str], subprocess.CompletedProcess[str]],
) -> None:
    proc = run_isolated(
        """
        import wasmtime
        from polyengine.engine import EngineStore, compile_module, instantiate
        mod = compile_module(wasmtime.wat2wasm('(module (memory 1) (func (export "f")))'))
        for _ in range(200):
            store = EngineStore()
            instantiate(store, mod, []).func("f").call_raw([])
            store.close()
        kept = [EngineStore() for _ in range(20)]  # closed by their finalizers at exit
        print("DONE")
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "DONE" in proc.stdout
    assert "panicked" not in proc.stderr


def _native() -> object:
    from polyengine.engine._accelerator import ACCEL

    if not hasattr(ACCEL, "reaper_loop"):
        pytest.skip("the compiled call path is not active")
    return ACCEL


def test_with_the_compiled_path_the_loop_is_native(
    wat: Wat, monkeypatch: pytest.MonkeyPatch
) -> None:
    accel: Any = _native()
    in_place: list[int] = []
    real = _reaper._delete_now

    def record(store: int, linker: int) -> None:
        in_place.append(store)
        real(store, linker)

    monkeypatch.setattr(_reaper, "_delete_now", record)
    monkeypatch.setattr(_reaper, "IN_PLACE_BYTES", 0)
    _closed_store(wat)  # starts the thread if no earlier test did
    reaper = _reaper._REAPER
    assert reaper.native is accel and reaper.thread is not None
    assert reaper.thread.name == "polyengine-store-reaper" and reaper.thread.is_alive()
    before = accel.reaper_state()[1]
    ptrs = [_closed_store(wat) for _ in range(5)]
    _wait_for(lambda: accel.reaper_state()[1] >= before + 5)
    assert not set(ptrs) & set(in_place), "a store was deleted in place"
    assert not reaper.pending  # the Python queue is not used


def test_the_native_queue_refuses_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    accel: Any = _native()
    # A limit of 0 takes nothing: the caller deletes in place (nothing is queued).
    assert accel.reaper_push(0, 0, 0) is False
    with pytest.raises(ValueError, match="null function address"):
        accel.reaper_loop(0, 0)


def test_a_drained_native_reaper_deletes_later_stores_in_place(
    run_isolated: Callable[[str], subprocess.CompletedProcess[str]],
) -> None:
    _native()
    proc = run_isolated(
        """
        import threading, wasmtime
        from polyengine.engine import EngineStore, compile_module, instantiate, _reaper
        from polyengine.engine._accelerator import ACCEL
        _reaper.IN_PLACE_BYTES = 0
        mod = compile_module(wasmtime.wat2wasm('(module (memory 1) (func (export "f")))'))
        def closed():
            store = EngineStore()
            instantiate(store, mod, []).func("f").call_raw([])
            ptr = store._state.store_ptr
            store.close()
            return ptr
        for _ in range(100):
            closed()
        thread = _reaper._REAPER.thread
        _reaper.drain()
        queued, deleted, open_ = ACCEL.reaper_state()
        assert (queued, open_) == (0, False), (queued, open_)
        assert not thread.is_alive()
        seen = []
        real = _reaper._delete_now
        _reaper._delete_now = lambda s, l: (seen.append(s), real(s, l))
        late = closed()
        assert seen == [late], seen
        assert ACCEL.reaper_state()[1] == deleted
        print("DONE", deleted)
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "DONE" in proc.stdout
    assert "panicked" not in proc.stderr


def test_a_store_with_small_memories_is_deleted_in_place(
    wat: Wat, deletions: list[tuple[int, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_reaper, "IN_PLACE_BYTES", 1 << 20)
    me = threading.current_thread().name

    def closed(pages: int) -> int:
        store = EngineStore()
        inst = instantiate(store, wat(f'(module (memory (export "m") {pages}))'), [])
        assert inst.memory("m").size() == pages << 16  # a memory the host knows of
        ptr = store._state.store_ptr
        store.close()
        return ptr

    before = len(deletions)
    small = closed(1)  # 64 KiB
    assert (small, me) in deletions[before:]
    before = len(deletions)
    big = closed(32)  # 2 MiB (its address may be the small one's, deleted already)
    _wait_for(lambda: (big, "polyengine-store-reaper") in deletions[before:])
    assert (big, me) not in deletions[before:]


def _voluntary_switches(native_id: int) -> int:
    with open(f"/proc/self/task/{native_id}/status") as status:
        for line in status:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches line")


def test_the_native_loop_parks_until_a_store_arrives(
    wat: Wat, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Between deletions the loop waits on its condition without a timeout: it
    # does not wake up on its own (no polling), and a push wakes it at once.
    accel: Any = _native()
    monkeypatch.setattr(_reaper, "IN_PLACE_BYTES", 0)
    _closed_store(wat)  # starts the thread if no earlier test did
    thread = _reaper._REAPER.thread
    assert thread is not None and thread.native_id is not None
    try:
        _voluntary_switches(thread.native_id)
    except OSError:
        pytest.skip("no /proc task status here")
    for _ in range(3):
        before = accel.reaper_state()[1]
        _closed_store(wat)
        _wait_for(lambda done=before + 1: accel.reaper_state()[1] >= done)
        time.sleep(0.02)  # what the deletion's wake-up leaves settles
        idle = _voluntary_switches(thread.native_id)
        time.sleep(0.1)
        assert accel.reaper_state()[0] == 0
        woken = _voluntary_switches(thread.native_id) - idle
        # (a store the collector closes meanwhile may wake it once or twice)
        assert woken <= 4, f"the idle reaper woke {woken} times in 0.1 s"
