"""The pool's workers: routing, traps, deaths, start failures, shutdown, the shared cache.

Each test starts its own pool (two workers at most) on the text-format guest
and bounds itself with ``asyncio.timeout``; the workers are this
interpreter's processes and stop with the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pool_hosts
import pytest

import polyengine.sync
from polyengine import LimitCode, Limits
from polyengine.pool import Pool, PoolClosedError, WorkerDiedError, WorkerStartError
from polyengine_protocol import is_trap

HOSTS = "pool_hosts:imports"


def run(main: Callable[[], Coroutine[Any, Any, None]], timeout: float = 60) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(timeout):
            await main()

    asyncio.run(bounded())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
    return True


async def _until(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def test_calls_route_to_free_workers_and_run_at_once(guest: bytes) -> None:
    async def main() -> None:
        async with Pool(guest, HOSTS, workers=2) as pool:
            pids = {w.pid for w in pool.workers}
            assert len(pids) == 2 and os.getpid() not in pids
            started = time.monotonic()
            answered = await asyncio.gather(*(pool.exports.nap(300) for _ in range(4)))
            elapsed = time.monotonic() - started
            # Two at a time on two workers: about 0.6 s, never the 1.2 s of one worker.
            assert set(answered) == pids
            assert elapsed < 1.1, elapsed
            assert sum(w.calls for w in pool.workers) == 4
            assert all(w.in_flight == 0 for w in pool.workers)

    run(main)


def test_concurrency_bounds_the_calls_in_flight_on_a_worker(guest: bytes) -> None:
    async def main() -> None:
        async with Pool(guest, HOSTS, workers=1, concurrency=1) as pool:
            calls = [asyncio.ensure_future(pool.exports.nap(200)) for _ in range(3)]
            await asyncio.sleep(0.1)
            assert [w.in_flight for w in pool.workers] == [1]
            started = time.monotonic()
            await asyncio.gather(*calls)
            assert time.monotonic() - started > 0.35  # the other two waited their turn

    run(main)


def test_a_trap_replaces_the_instance_and_keeps_the_worker(guest: bytes) -> None:
    async def main() -> None:
        async with Pool(guest, HOSTS, workers=1) as pool:
            (pid,) = {w.pid for w in pool.workers}
            assert [await pool.exports.counter() for _ in range(3)] == [1, 2, 3]
            with pytest.raises(Exception) as caught:
                await pool.exports.crash()
            assert is_trap(caught.value) and "unreachable" in str(caught.value)
            assert await pool.exports.counter() == 1  # a new instance counts again
            assert await pool.exports.whoami() == pid  # in the same process

    run(main)


def test_limits_reach_the_workers(guest: bytes) -> None:
    async def main() -> None:
        async with Pool(guest, HOSTS, workers=1, limits=Limits(timeout=0.2)) as pool:
            started = time.monotonic()
            with pytest.raises(Exception) as caught:
                await pool.exports.spin(4_000_000_000)  # seconds of guest loop
            assert is_trap(caught.value)
            assert caught.value.code == LimitCode.INTERRUPT  # type: ignore[attr-defined]
            assert time.monotonic() - started < 5
            assert await pool.exports.add(1, 2) == 3

    run(main)


@pytest.mark.parametrize(
    ("how", "died"),
    [(1, "exited with status 3"), (2, "was killed by SIGSEGV"), (3, "was killed by SIGKILL")],
    ids=["exit", "segfault", "kill"],
)
def test_a_worker_that_dies_in_its_call_fails_that_call_and_is_replaced(
    guest: bytes, how: int, died: str
) -> None:
    async def main() -> None:
        async with Pool(guest, HOSTS, workers=1) as pool:
            (before,) = pool.workers
            with pytest.raises(WorkerDiedError) as caught:
                await pool.exports.poke(how)
            assert f"poke: pool worker 0 (pid {before.pid}) {died}" in str(caught.value)
            assert caught.value.pid == before.pid
            await _until(lambda: len(pool.workers) == 1, "the replacement")
            (after,) = pool.workers
            assert after.pid != before.pid and after.serial == 1
            assert await pool.exports.whoami() == after.pid
            assert not _alive(before.pid)

    run(main)


def test_a_worker_killed_mid_call_fails_only_its_calls(guest: bytes) -> None:
    async def main() -> None:
        async with Pool(guest, HOSTS, workers=2) as pool:
            first, second = pool.workers
            calls = [asyncio.ensure_future(pool.exports.nap(1500)) for _ in range(2)]
            await _until(lambda: all(w.in_flight == 1 for w in pool.workers), "two calls")
            os.kill(first.pid, signal.SIGKILL)
            results = await asyncio.gather(*calls, return_exceptions=True)
            failed = [r for r in results if isinstance(r, BaseException)]
            assert len(failed) == 1 and isinstance(failed[0], WorkerDiedError), results
            assert failed[0].returncode == -signal.SIGKILL
            assert "was killed by SIGKILL while the call was in flight" in str(failed[0])
            assert second.pid in results
            await _until(lambda: len(pool.workers) == 2, "the replacement")
            pids = set(await asyncio.gather(*(pool.exports.nap(200) for _ in range(2))))
            assert second.pid in pids and first.pid not in pids and len(pids) == 2

    run(main)


def test_a_worker_that_cannot_make_a_new_instance_is_replaced(guest: bytes) -> None:
    async def main() -> None:
        async with Pool(guest, pool_hosts.second_instance_fails, workers=1) as pool:
            (before,) = pool.workers
            with pytest.raises(Exception) as caught:
                await pool.exports.crash()
            assert is_trap(caught.value)
            # The worker's factory refuses a second instance: the worker stops,
            # a new process (whose first instance is allowed) takes its place.
            await _until(
                lambda: [w.pid for w in pool.workers] not in ([], [before.pid]), "replacement"
            )
            assert await pool.exports.counter() == 1

    run(main)


def test_a_cancelled_call_frees_its_worker_when_the_worker_answers(guest: bytes) -> None:
    async def main() -> None:
        async with Pool(guest, HOSTS, workers=1) as pool:
            call = asyncio.ensure_future(pool.exports.nap(300))
            await asyncio.sleep(0.1)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert await pool.exports.add(1, 2) == 3

    run(main)


@pytest.mark.parametrize(
    ("factory", "error", "match"),
    [
        (pool_hosts.broken_imports, RuntimeError, "no database in this worker"),
        ("pool_hosts:not_a_mapping", TypeError, "returned list, not a mapping"),
        ("pool_hosts:missing", ImportError, "pool_hosts:missing does not exist"),
    ],
    ids=["raises", "not-a-mapping", "missing"],
)
def test_a_worker_that_cannot_start_names_why(
    guest: bytes, factory: Any, error: type[BaseException], match: str
) -> None:
    async def main() -> None:
        pool = Pool(guest, factory, workers=2)
        with pytest.raises(WorkerStartError, match=r"pool worker 0 .* could not start") as caught:
            await pool.start()
        assert isinstance(caught.value.__cause__, error)
        assert match in str(caught.value.__cause__)
        with pytest.raises(PoolClosedError):
            await pool.call(None, "add", 1, 2)

    run(main)


def test_factories_that_cannot_cross_are_refused_at_once(guest: bytes) -> None:
    with pytest.raises(TypeError, match="lambda or a local function"):
        Pool(guest, lambda i: {})
    with pytest.raises(ValueError, match=r"expected .package\.module:function."):
        Pool(guest, "pool_hosts.imports")
    with pytest.raises(ValueError, match="workers must be a positive int"):
        Pool(guest, HOSTS, workers=0)


def test_an_async_factory_without_the_instance_id(guest: bytes) -> None:
    async def main() -> None:
        async with Pool(guest, pool_hosts.async_imports, workers=1) as pool:
            assert await pool.exports.add(1, 2) == 3

    run(main)


def test_a_factory_named_by_file(guest: bytes) -> None:
    async def main() -> None:
        async with Pool(guest, f"{pool_hosts.__file__}:imports", workers=1) as pool:
            assert await pool.exports.add(1, 2) == 3

    run(main)


def test_close_waits_for_a_call_woken_for_a_free_worker(guest: bytes) -> None:
    # A queued call woken when a worker comes free leaves the queue at once but takes
    # the worker only when it resumes; close() must not close the pool in between.
    async def main() -> None:
        pool = await Pool(guest, HOSTS, workers=1).start()
        loop = asyncio.get_running_loop()

        def resume(waiter: asyncio.Future[None]) -> None:
            if not waiter.done():
                waiter.set_result(None)

        def late_wake() -> None:  # the woken call resumes 50 ms after leaving the queue
            while pool._waiters:
                waiter = pool._waiters.popleft()
                if not waiter.done():
                    loop.call_later(0.05, resume, waiter)
                    return

        pool._wake = late_wake  # type: ignore[method-assign]
        first = asyncio.ensure_future(pool.exports.nap(50))
        for _ in range(5):
            await asyncio.sleep(0)
        second = asyncio.ensure_future(pool.exports.nap(1))
        for _ in range(5):
            await asyncio.sleep(0)
        assert len(pool._waiters) == 1  # the second call is queued
        pid = pool.workers[0].pid  # read before close(), which may end before gather resumes us
        closing = asyncio.ensure_future(pool.close())
        try:
            pids = await asyncio.gather(first, second)
        finally:
            await closing
        assert pids[0] == pids[1] == pid

    run(main)


def test_close_lets_the_calls_in_flight_finish(guest: bytes) -> None:
    async def main() -> None:
        pool = await Pool(guest, HOSTS, workers=2).start()
        pids = [w.pid for w in pool.workers]
        calls = [asyncio.ensure_future(pool.exports.nap(400)) for _ in range(3)]
        await asyncio.sleep(0.1)
        closing = asyncio.ensure_future(pool.close())
        await asyncio.sleep(0)
        with pytest.raises(PoolClosedError, match="add: the pool is closed"):
            await pool.exports.add(1, 2)
        assert set(await asyncio.gather(*calls)) == set(pids)  # the queued one ran too
        await closing
        assert not any(_alive(pid) for pid in pids)

    run(main)


def test_close_cuts_calls_still_running_after_the_grace_period(guest: bytes) -> None:
    async def main() -> None:
        pool = await Pool(guest, HOSTS, workers=1).start()
        (worker,) = pool.workers
        call = asyncio.ensure_future(pool.exports.nap(5000))
        await asyncio.sleep(0.2)
        started = time.monotonic()
        await pool.close(grace=0.2)
        with pytest.raises(PoolClosedError, match="nap: the pool closed before the call"):
            await call
        assert time.monotonic() - started < 3
        assert not _alive(worker.pid)

    run(main)


def test_async_with_stops_the_workers(guest: bytes) -> None:
    async def main() -> None:
        async with Pool(guest, HOSTS, workers=2) as pool:
            pids = [w.pid for w in pool.workers]
        assert not any(_alive(pid) for pid in pids)
        assert pool.workers == ()

    run(main)


def _cache_files(cache: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(cache)): (p.stat().st_mtime_ns, p.stat().st_ino)
        for p in cache.rglob("*")
        if p.is_file()
    }


def test_workers_share_the_compile_cache(
    guest: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first worker compiles into the on-disk cache; later starts only load from it."""
    cache = tmp_path / "modules"
    monkeypatch.setenv("POLYENGINE_CACHE_DIR", str(cache))
    snapshots: list[dict[str, tuple[int, int]]] = []

    async def main() -> None:
        async with Pool(guest, HOSTS, workers=2) as pool:
            first, second = sorted(pool.workers, key=lambda w: w.ready_at)
            snapshots.append(_cache_files(cache))
            # Everything the pool compiled was written before the second worker
            # was told to start (it booted meanwhile, and then only loaded).
            written = max(m for m, _ in snapshots[0].values()) / 1e9
            assert written <= first.ready_at < second.ready_at
            os.kill(first.pid, signal.SIGKILL)
            with contextlib.suppress(WorkerDiedError):
                await pool.exports.add(1, 2)
            await _until(lambda: len(pool.workers) == 2, "the replacement")
            assert await pool.exports.add(1, 2) == 3
        snapshots.append(_cache_files(cache))
        async with Pool(guest, HOSTS, workers=2) as pool:
            assert await pool.exports.add(1, 2) == 3
        snapshots.append(_cache_files(cache))

    run(main)
    compiled = [name for name in snapshots[0] if name.endswith(".cwasm")]
    assert compiled, f"nothing was compiled into {cache}: {sorted(snapshots[0])}"
    # The replacement and a second pool's two workers compiled nothing: no
    # compiled module was written again.
    for later in snapshots[1:]:
        assert {k: v for k, v in later.items() if k in compiled} == {
            k: snapshots[0][k] for k in compiled
        }


def test_the_blocking_pool_serves_threads_at_once(guest: bytes) -> None:
    with polyengine.sync.Pool(guest, HOSTS, workers=2) as pool:
        pids = {w.pid for w in pool.workers}
        answers: list[int] = []
        threads = [
            threading.Thread(target=lambda: answers.append(pool.exports.nap(300)))
            for _ in range(2)
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert set(answers) == pids
        assert time.monotonic() - started < 0.59  # one worker would take 0.6 s
        assert pool.exports["test:pool/math@1.2.0"].mul(2, 3) == 6
        with pytest.raises(WorkerDiedError):
            pool.exports.poke(1)
    with pytest.raises(PoolClosedError):
        pool.exports.add(1, 2)


def test_the_blocking_pool_is_refused_in_a_running_loop(guest: bytes) -> None:
    async def main() -> None:
        with pytest.raises(polyengine.sync.SyncFacadeError, match="running event loop"):
            polyengine.sync.Pool(guest, HOSTS, workers=1)

    run(main)
