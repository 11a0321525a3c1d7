"""``polyengine.pool.Pool``: one component's instances in worker processes.

http-serve.md §7 (one box: a process per core) and python-mapping.md §8
(realm boundaries become process boundaries). Each worker holds one
instance whose imports its factory makes in the worker; a call goes to a
free worker, its arguments, result and error crossing as
``to_cloneable`` data (:mod:`polyengine.pool.wire`).

* Routing: a call takes the worker with the fewest calls in flight below
  ``concurrency``; when every worker is busy it waits, first come first
  served.
* Compile once: the first worker starts alone and fills the on-disk cache of
  compiled modules (``POLYENGINE_CACHE_DIR``); the others, and every
  replacement, load from it. The others boot Python meanwhile.
* A trap discards that worker's instance and the worker makes a new one; the
  process stays.
* A worker that dies (killed, a crash, an exit) fails its in-flight calls with
  :class:`WorkerDiedError` and is replaced; other workers' calls go on.
* ``async with`` / :meth:`Pool.close` refuse new calls, let the calls already
  made finish within ``grace`` seconds, then stop the workers.
* Cancelling a call tells its worker: an async export is cancelled there; a
  synchronous guest already running goes on to its end (or to its
  ``Limits.timeout``), and the worker takes no other call before it answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, Self

from polyengine.limits import Limits
from polyengine.pool.host import track_key
from polyengine.pool.process import WorkerProcess, describe_exit
from polyengine.pool.wire import (
    FactoryRef,
    ImportsSpec,
    decode_error,
    encode_args,
    factory_ref,
)

__all__ = [
    "Pool",
    "PoolClosedError",
    "PoolExports",
    "PoolInterface",
    "WorkerDiedError",
    "WorkerInfo",
    "WorkerStartError",
]

#: start attempts for one worker slot before the slot is left empty
_START_ATTEMPTS: Final = 3


class WorkerDiedError(RuntimeError):
    """A worker process died (killed, crashed, exited) while the call was in flight.

    ``pid`` and ``returncode`` (negative: the signal) say which and how; the
    pool starts a new worker in its place. Only the calls in flight on that
    worker fail.
    """

    def __init__(self, message: str, *, pid: int, returncode: int | None) -> None:
        super().__init__(message)
        self.pid = pid
        self.returncode = returncode


class WorkerStartError(RuntimeError):
    """A worker could not start: its cause is the worker's error (the factory's, ...)."""


class PoolClosedError(RuntimeError):
    """The pool is closed (or closing): the call was refused, or cut at the grace period's end."""


@dataclasses.dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A snapshot of one worker (``Pool.workers``)."""

    #: the worker's place in the pool (0 .. workers-1), kept by its replacements
    index: int
    #: the spawn's pool-wide number (a replacement gets a new one)
    serial: int
    pid: int
    #: calls answered by this process
    calls: int
    in_flight: int
    #: wall-clock times (``time.time()``) of the spawn and of the ready message
    spawned_at: float
    ready_at: float


class _Worker(WorkerProcess):
    def __init__(self, index: int, serial: int) -> None:
        super().__init__(serial)
        self.index = index
        self.ready = False
        self.dead = False
        self.busy = 0
        self.calls = 0
        self.inflight: dict[int, tuple[asyncio.Future[tuple[str, object]], str]] = {}
        self.reading: asyncio.Task[None] | None = None
        self.fatal: object = None


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class Pool:
    """A pool of worker processes, each holding an instance of ``component``.

    ``component`` is the binary (``bytes``), a path to it, or translation
    ``Artifacts``. ``imports`` names the factory that makes one instance's
    imports in a worker: ``"package.module:function"``,
    ``"path/to/file.py:function"`` or an importable callable, called as
    ``factory(instance_id)`` (or ``factory()``) and returning the imports
    mapping (or an awaitable of it); ``None`` for a component that imports
    nothing. ``workers`` defaults to the CPUs this process may use;
    ``concurrency`` is the number of calls in flight on one worker (more
    than 1 helps async exports only, which overlap on one instance);
    ``limits`` and ``suspend`` are :func:`polyengine.instantiate`'s;
    ``start_timeout`` bounds each worker's start (seconds).
    """

    def __init__(
        self,
        component: bytes | str | os.PathLike[str] | Any,
        imports: ImportsSpec = None,
        *,
        workers: int | None = None,
        concurrency: int = 1,
        limits: Limits | None = None,
        suspend: bool | None = None,
        start_timeout: float = 120.0,
    ) -> None:
        count = _cpu_count() if workers is None else workers
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"workers must be a positive int, not {workers!r}")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive int, not {concurrency!r}")
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be a polyengine.Limits, not {type(limits).__name__}")
        self._component = component
        self._factory: FactoryRef | None = factory_ref(imports)
        self.size = count
        self.concurrency = concurrency
        self._limits = limits
        self._suspend = suspend
        self._start_timeout = start_timeout
        self._slots: list[_Worker | None] = [None] * count
        self._serials = itertools.count()
        self._call_ids = itertools.count()
        self._waiters: deque[asyncio.Future[None]] = deque()
        #: calls inside :meth:`_acquire`: waiting for a worker, or woken and not yet resumed
        self._acquiring = 0
        self._replacing: set[asyncio.Task[None]] = set()
        self._init: dict[str, object] | None = None
        self._catalog: dict[str, Any] | None = None
        self._exports: PoolExports | None = None
        self._started = False
        self._closing = False
        self._closed = False
        self._done = asyncio.Event()
        self._broken: BaseException | None = None

    # -- lifecycle --------------------------------------------------------------------

    async def start(self) -> Self:
        """Translate, start the first worker, then the others; returns the pool.

        Raises ``TranslationError`` for a malformed component and
        :class:`WorkerStartError` (caused by the worker's error) when a
        worker cannot start; the pool is then closed.
        """
        if self._started:
            return self
        self._started = True
        component_bytes = await asyncio.to_thread(_component_bytes, self._component)
        self._init = {
            "role": "exports",
            "component": component_bytes,
            "factory": self._factory,
            "limits": None if self._limits is None else dataclasses.asdict(self._limits),
            "suspend": self._suspend,
            "sys_path": list(sys.path),
        }
        # Every process boots at once; only the first may instantiate (and compile).
        workers = [_Worker(i, next(self._serials)) for i in range(self.size)]
        try:
            for worker in workers:
                await worker.spawn()
                self._slots[worker.index] = worker
            await self._initialize(workers[0])
            await asyncio.gather(*(self._initialize(w) for w in workers[1:]))
        except BaseException:
            await self._stop_workers(grace=0.0)
            self._closing = self._closed = True
            self._done.set()
            raise
        return self

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self, grace: float = 30.0) -> None:
        """Refuse new calls, let those made finish (up to ``grace`` s), stop the workers.

        Calls still unanswered when the grace period ends fail with
        :class:`PoolClosedError`. Idempotent; a second caller waits for the first.
        """
        if self._closing:
            await self._done.wait()
            return
        self._closing = True
        deadline = time.monotonic() + max(0.0, grace)
        # A call woken for a free worker is out of ``_waiters`` but has not taken the
        # worker yet (it resumes on a later loop turn): ``_acquiring`` still counts it.
        while (self._acquiring or self._in_flight()) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self._closed = True
        for task in list(self._replacing):
            task.cancel()
        self._fail_waiters(PoolClosedError("the pool closed before a worker was free"))
        await self._stop_workers(grace=grace)
        self._done.set()

    async def _stop_workers(self, grace: float) -> None:
        workers = [w for w in self._slots if w is not None]
        for worker in workers:
            worker.send(("exit",))
            await worker.flush()
        deadline = time.monotonic() + min(5.0, max(grace, 0.5))
        for worker in workers:
            code = await worker.wait_exit(max(0.0, deadline - time.monotonic()))
            if code is None:
                worker.kill()
            self._fail_inflight(
                worker,
                lambda label: PoolClosedError(
                    f"{label}: the pool closed before the call finished"
                ),
            )
        for worker in workers:
            if worker.reading is not None:
                worker.reading.cancel()
            await worker.reap()
        self._slots = [None] * self.size

    # -- workers ----------------------------------------------------------------------

    async def _initialize(self, worker: _Worker) -> None:
        """Send the init message and wait for the worker's ready (or fatal) answer."""
        assert self._init is not None
        worker.send(self._init)
        await worker.flush()
        try:
            async with asyncio.timeout(self._start_timeout):
                message = await worker.receive()
        except TimeoutError:
            worker.kill()
            await worker.reap()
            raise WorkerStartError(
                f"pool worker {worker.index} (pid {worker.pid}) was not ready after "
                f"{self._start_timeout:g} s"
            ) from None
        if message is None or message[0] != "ready":
            cause = None
            if message is not None and message[0] == "fatal":
                cause = decode_error(message[1], f"pool worker {worker.index} (pid {worker.pid})")
            code = await worker.reap()
            how = "could not start" if cause is not None else describe_exit(code)
            raise WorkerStartError(
                f"pool worker {worker.index} (pid {worker.pid}) {how}"
                + (f": {cause}" if cause is not None else " before it was ready")
            ) from cause
        info = message[1]
        if self._catalog is None:
            self._catalog = info["catalog"]
        worker.ready_at = time.time()
        worker.ready = True
        worker.reading = asyncio.get_running_loop().create_task(self._read(worker))
        self._wake()

    async def _read(self, worker: _Worker) -> None:
        """Answers from ``worker`` until it is gone; then its death is handled."""
        while True:
            message = await worker.receive()
            if message is None:
                break
            kind = message[0]
            if kind == "fatal":
                worker.fatal = message[1]
                continue
            entry = worker.inflight.get(message[1])
            if entry is None:  # a call already failed by _fail_inflight
                continue
            if kind == "cancelled" and not entry[0].done():
                # The worker stopped a call nobody cancelled (it is stopping): the
                # end of the worker fails the call, saying why.
                continue
            del worker.inflight[message[1]]
            worker.busy -= 1
            worker.calls += 1
            if not entry[0].done():
                entry[0].set_result((kind, message[2] if len(message) > 2 else None))
            self._wake()
        await self._died(worker)

    async def _died(self, worker: _Worker) -> None:
        worker.ready = False
        worker.dead = True
        code = await worker.reap()
        how = describe_exit(code)
        cause = None
        if worker.fatal is not None:
            cause = decode_error(worker.fatal, f"pool worker {worker.index} (pid {worker.pid})")
            how = f"stopped: it could not make a new instance ({cause})"

        def died(label: str) -> BaseException:
            error = WorkerDiedError(
                f"{label}: pool worker {worker.index} (pid {worker.pid}) {how} while the "
                "call was in flight; the pool starts a new worker in its place",
                pid=worker.pid,
                returncode=code,
            )
            error.__cause__ = cause
            return error

        self._fail_inflight(worker, died)
        if self._closing or self._slots[worker.index] is not worker:
            return
        self._slots[worker.index] = None
        task = asyncio.get_running_loop().create_task(self._replace(worker.index))
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)

    async def _replace(self, index: int) -> None:
        error: BaseException | None = None
        for attempt in range(_START_ATTEMPTS):
            if attempt:
                await asyncio.sleep(0.2 * 2**attempt)
            worker = _Worker(index, next(self._serials))
            try:
                await worker.spawn()
                self._slots[index] = worker
                await self._initialize(worker)
                return
            except WorkerStartError as exc:
                error = exc
                self._slots[index] = None
            except BaseException:
                self._slots[index] = None
                worker.kill()
                await worker.reap()
                raise
        if not any(w is not None for w in self._slots) and not self._replacing - {
            asyncio.current_task()
        }:
            self._broken = error
            self._fail_waiters(
                WorkerStartError(f"no pool worker could be started: {error}")
            )

    def _fail_inflight(self, worker: _Worker, error: Callable[[str], BaseException]) -> None:
        entries, worker.inflight = worker.inflight, {}
        worker.busy = 0
        for future, label in entries.values():
            if not future.done():
                future.set_exception(error(label))
        self._wake()

    def _in_flight(self) -> int:
        return sum(w.busy for w in self._slots if w is not None)

    # -- calls ------------------------------------------------------------------------

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _fail_waiters(self, error: BaseException) -> None:
        waiters, self._waiters = self._waiters, deque()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_exception(error)

    async def _acquire(self) -> _Worker:
        self._acquiring += 1
        try:
            return await self._take_worker()
        finally:
            self._acquiring -= 1

    async def _take_worker(self) -> _Worker:
        while True:
            if self._closed:
                raise PoolClosedError("the pool is closed")
            if self._broken is not None:
                raise WorkerStartError(
                    f"no pool worker could be started: {self._broken}"
                ) from self._broken
            best: _Worker | None = None
            for worker in self._slots:
                if (
                    worker is not None
                    and worker.ready
                    and worker.busy < self.concurrency
                    and (best is None or worker.busy < best.busy)
                ):
                    best = worker
            if best is not None:
                best.busy += 1
                return best
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # pass the turn on
                raise

    async def call(self, interface: str | None, name: str, *args: object) -> Any:
        """Call export ``name`` (of ``interface``, or of the world when ``None``) on a worker.

        The form behind ``pool.exports``; returns the export's result.
        """
        label = name if interface is None else f"{interface}#{name}"
        if not self._started:
            raise RuntimeError("the pool is not started: use 'async with Pool(...)' or start()")
        if self._closing:
            raise PoolClosedError(f"{label}: the pool is closed")
        data = encode_args(label, args)
        worker = await self._acquire()
        call_id = next(self._call_ids)
        future: asyncio.Future[tuple[str, object]] = asyncio.get_running_loop().create_future()
        worker.inflight[call_id] = (future, label)
        worker.send(("call", call_id, interface, name, data))
        await worker.flush()
        try:
            kind, payload = await future
        except asyncio.CancelledError:
            if not worker.dead:
                worker.send(("cancel", call_id))
            raise
        if kind == "ok":
            from polyengine_protocol import from_cloneable

            return from_cloneable(payload)
        raise decode_error(payload, f"pool worker {worker.index} (pid {worker.pid})")

    @property
    def exports(self) -> PoolExports:
        """The component's exports: functions by attribute, interfaces by id (§7)."""
        if self._exports is None:
            if self._catalog is None:
                raise RuntimeError(
                    "the pool is not started: use 'async with Pool(...)' or start()"
                )
            self._exports = PoolExports(self, self._catalog)
        return self._exports

    @property
    def workers(self) -> tuple[WorkerInfo, ...]:
        """The live workers, by index."""
        return tuple(
            WorkerInfo(
                index=w.index,
                serial=w.serial,
                pid=w.pid,
                calls=w.calls,
                in_flight=w.busy,
                spawned_at=w.spawned_at,
                ready_at=w.ready_at,
            )
            for w in self._slots
            if w is not None and w.ready
        )

    def __repr__(self) -> str:
        state = "closed" if self._closed else "started" if self._started else "new"
        return f"<polyengine.pool.Pool {state} workers={self.size}>"


def _component_bytes(component: Any) -> bytes:
    """The binary of ``component``, translated here first (a malformed one fails here)."""
    from polyengine import translate
    from polyengine.translate import Artifacts

    if isinstance(component, Artifacts):
        return component.component_bytes
    if isinstance(component, bytes | bytearray | memoryview):
        data = bytes(component)
    elif isinstance(component, str | os.PathLike):
        data = Path(component).read_bytes()
    else:
        raise TypeError(
            "component must be bytes, a path or Artifacts, not "
            f"{type(component).__qualname__}"
        )
    translate(data)
    return data


class _Members:
    """The functions of a namespace (the world, or one interface) as pool calls."""

    def __init__(self, pool: Pool, interface: str | None, members: dict[str, Any]) -> None:
        self._pool = pool
        self._interface = interface
        self._names: frozenset[str] = frozenset(members.get("functions", ()))
        self._resources: frozenset[str] = frozenset(members.get("resources", ()))
        self._calls: dict[str, Callable[..., Any]] = {}

    @property
    def _label(self) -> str:
        return "the component" if self._interface is None else f"interface {self._interface}"

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        found = self._calls.get(name)
        if found is not None:
            return found
        if name in self._resources:
            raise AttributeError(
                f"{name} is a resource class of {self._label}: resources are realm-local and "
                "stay in the worker process (python-mapping.md §8); call functions that "
                "take and return plain data"
            )
        if name not in self._names:
            raise AttributeError(
                f"{self._label} has no export {name!r}; it exports {sorted(self._names)}"
            )
        found = self._calls[name] = _pool_function(self._pool, self._interface, name)
        return found

    def __dir__(self) -> list[str]:
        return sorted(self._names)


def _pool_function(pool: Pool, interface: str | None, name: str) -> Callable[..., Any]:
    async def call(*args: object) -> Any:
        return await pool.call(interface, name, *args)

    call.__name__ = name
    call.__qualname__ = name if interface is None else f"{interface}#{name}"
    return call


class PoolInterface(_Members):
    """One exported interface of the pool's component: its functions as pool calls."""


class PoolExports(_Members):
    """``pool.exports``: world-level functions by attribute, interfaces by id (§7)."""

    def __init__(self, pool: Pool, catalog: dict[str, Any]) -> None:
        super().__init__(pool, None, catalog)
        self._interfaces: dict[str, Any] = dict(catalog.get("interfaces", {}))
        self._tracks: dict[str, str] = dict(catalog.get("tracks", {}))
        self._namespaces: dict[str, PoolInterface] = {}

    def _resolve(self, key: object) -> str | None:
        """The exported id serving ``key``: itself, or the one on its version's track (§7)."""
        if not isinstance(key, str):
            return None
        if key in self._interfaces:
            return key
        track = track_key(key)
        return None if track is None else self._tracks.get(track)

    def __getitem__(self, key: str) -> PoolInterface:
        interface = self._resolve(key)
        if interface is None:
            raise KeyError(
                f"the component exports no interface {key!r}; "
                f"it exports {sorted(self._interfaces) or 'none'}"
            )
        found = self._namespaces.get(interface)
        if found is None:
            found = self._namespaces[interface] = PoolInterface(
                self._pool, interface, self._interfaces[interface]
            )
        return found

    def __contains__(self, key: object) -> bool:
        return self._resolve(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._interfaces)

    def interfaces(self) -> list[str]:
        return list(self._interfaces)
