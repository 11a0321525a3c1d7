"""The instance pool of :class:`polyengine.asgi.App` and its new-instance gate.

http-serve.md §6 (instance model): wasmtime serve's reuse limit, the
concurrency limit of a 0.3 instance and the idle timeout; a request that
needs a new instance waits for a turn (instantiating blocks the loop).

Like wasmtime serve, the instances live on an engine with the pooling
allocator (``App(pooling_allocator=False)``, ``serve -O pooling-allocator=n``:
the on-demand one), its pool sized by :func:`pooling_for` from what one
instance of the component takes and how many the serving policy keeps at
once, up to :data:`POOL_INSTANCES_MAX`. A full pool fails no request: the
instance it cannot hold is made with the on-demand allocator.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from polyengine import Instance, instantiate
from polyengine.asgi._io import instance_imports
from polyengine.engine import EngineConfig, PoolingConfig, PoolLimitError, component_needs
from polyengine.translate import Artifacts
from polyengine.translate.plan import StaticModule

if TYPE_CHECKING:
    from polyengine.asgi import App

P2_HANDLER = "wasi:http/incoming-handler@0.2"
P3_HANDLER = "wasi:http/handler@0.3"

#: concurrent requests the pool is sized for when the app admits any number
DEFAULT_CONCURRENCY = 1000
#: the most bytes of a freed memory slot kept mapped (zeroed) for the next instance
KEEP_RESIDENT_MAX = 64 * 1024 * 1024
_MiB = 1024 * 1024
#: the most instances a pool holds (each memory slot reserves 4 GiB of address space)
POOL_INSTANCES_MAX = 64
_TOTALS = ("total_core_instances", "total_memories", "total_tables", "total_stacks")


def pooling_for(
    artifacts: Artifacts,
    *,
    concurrency: int | None,
    concurrent_reuse: int | None,
    prewarm: int,
    keep_resident: int | None = None,
) -> EngineConfig:
    """The engine of a pool serving ``artifacts``: the pooling allocator, sized for
    the instances the policy can hold at once (those answering ``concurrency``
    requests, ``concurrent_reuse`` at a time on a 0.3 service, doubled for the
    ones still finishing past their reuse limit, at most
    :data:`POOL_INSTANCES_MAX`, plus the prewarmed ones) and two fiber
    stacks per request.

    A freed memory slot keeps ``keep_resident`` bytes mapped for the next
    instance (zeroed on the store reaper's thread, off the event loop);
    by default twice the component's largest initial memory, whole MiB, at
    most :data:`KEEP_RESIDENT_MAX`: the pages a new instance touches first
    are then mapped already, and the zeroing, whose cost grows with the
    size, stops where the instance's memory likely ends (bench/README.md,
    "serve", the pooling allocator: the measurements behind it). Fiber
    stacks keep none (keeping them measured no faster)."""
    plan = artifacts.plan
    needs = component_needs(
        [artifacts.module_view(i) for i in range(len(plan.modules))],
        [
            core.module.index
            for core in plan.core_instances
            if isinstance(core.module, StaticModule)
        ],
    )
    requests = concurrency or DEFAULT_CONCURRENCY
    p2, p3 = _handlers(export.name for export in plan.exports)
    serving = 2 * math.ceil(requests / (concurrent_reuse or 16)) if p3 and not p2 else requests
    serving = min(serving, POOL_INSTANCES_MAX)
    instances = serving + prewarm + 8
    stacks = 2 * requests + 64
    if keep_resident is None:
        keep_resident = min(KEEP_RESIDENT_MAX, max(_MiB, -(-2 * needs.memory_bytes // _MiB) * _MiB))
    pooling = PoolingConfig.for_instances(needs, instances, stacks, keep_resident=keep_resident)
    return EngineConfig(pooling=pooling)


def _handlers(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """The wasi:http 0.2 and 0.3 handler exports among ``names`` (a 0.2 one is served)."""
    p2: list[str] = []
    p3: list[str] = []
    for name in names:
        if name.startswith(P2_HANDLER):
            p2.append(name)
        elif name.startswith(P3_HANDLER):
            p3.append(name)
    return p2, p3


@dataclass
class _Slot:
    instance: Instance
    handler: Any
    instance_id: int
    #: requests it serves in all (the app's reuse) and at once (0.2: 1)
    reuse: int = 1
    concurrency: int = 1
    uses: int = 0
    active: int = 0
    idle_since: float = field(default_factory=time.monotonic)
    broken: bool = False
    p3: bool = False


class _Pool:
    """Instances with a reuse limit, a concurrency limit and an idle timeout."""

    def __init__(self, app: App) -> None:
        self._app = app
        self._idle: deque[_Slot] = deque()
        #: 0.3 instances serving requests, shared up to the concurrency limit
        self._shared: list[_Slot] = []
        self._warming: set[asyncio.Task[None]] = set()
        #: instances past their last request, closed at the loop's next turn
        self._retired: list[Instance] = []
        self._ids = itertools.count()
        self.created = 0
        self.discarded = 0
        #: instances made on demand because the pool was full
        self.overflowed = 0
        self.engine_config: EngineConfig | None = None
        if app.pooling_allocator:
            self.engine_config = pooling_for(
                app.artifacts(),
                concurrency=app.max_concurrent_requests,
                concurrent_reuse=app.concurrent_reuse,
                prewarm=app.prewarm,
            )

    async def _instantiate(self, artifacts: Artifacts, imports: Any) -> Instance:
        """A new instance: from the pool, else (the pool full) on demand."""
        limits = self._app.limits
        if self.engine_config is not None:
            try:
                return await instantiate(
                    artifacts, imports, limits=limits, engine_config=self.engine_config
                )
            except PoolLimitError as exc:
                if exc.limit not in _TOTALS:
                    raise
            self.overflowed += 1
        return await instantiate(artifacts, imports, limits=limits)

    async def _new(self) -> _Slot:
        instance_id = next(self._ids)
        artifacts = self._app.artifacts()
        imports = instance_imports(self._app.imports_factory, instance_id, artifacts)
        instance = await self._instantiate(artifacts, imports)
        names = list(instance.exports)
        p2, p3 = _handlers(names)
        if not p2 and not p3:
            instance.close()
            raise TypeError(
                "the component exports no wasi:http/incoming-handler@0.2.x (a 0.2 proxy) "
                f"or wasi:http/handler@0.3.x (a 0.3 service); it exports {names or 'nothing'}"
            )
        handler = instance.exports[(p2 or p3)[0]]
        self.created += 1
        slot = _Slot(instance, handler, instance_id, p3=not p2)
        slot.reuse = self._app.reuse_for(slot)
        slot.concurrency = self._app.concurrent_for(slot)
        return slot

    def take(self) -> _Slot | None:
        """An instance ready for one more request, now counted as serving it; ``None``
        when there is none (:meth:`acquire` makes one). An idle instance past the idle
        timeout is closed on the way."""
        for shared in self._shared:
            if (
                not shared.broken
                and shared.uses < shared.reuse
                and shared.active < shared.concurrency
            ):
                shared.uses += 1
                shared.active += 1
                return shared
        idle = self._idle
        if not idle:
            return None
        now = time.monotonic()
        timeout = self._app.idle_timeout
        while idle:
            slot = idle.popleft()
            if slot.uses > 0 and now - slot.idle_since > timeout:
                self._close(slot)
                continue
            return self._taken(slot)
        return None

    def _taken(self, slot: _Slot) -> _Slot:
        slot.uses += 1
        slot.active += 1
        if slot.p3:
            self._shared.append(slot)
        if self._app.prewarm:
            self._refill()
        return slot

    def _close(self, slot: _Slot) -> None:
        """Let an instance go: it is closed at the event loop's next turn, after the
        response of its last request is out (a close frees the whole instance, ~0.5 ms
        for a large guest, which no request needs to wait for)."""
        self.discarded += 1
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop to come back to: closed now
            slot.instance.close()
            return
        retired = self._retired
        retired.append(slot.instance)
        if len(retired) == 1:
            loop.call_soon(self._close_retired)

    def _close_retired(self) -> None:
        retired, self._retired = self._retired, []
        for instance in retired:
            instance.close()

    async def acquire(self) -> _Slot:
        """An instance for one more request: a ready one, else a new one."""
        slot = self.take()
        if slot is None:
            # the instances let go of first: their memories and stacks go back to the
            # engine's pool before a new instance takes its own
            self._close_retired()
            slot = self._taken(await self._new())
        return slot

    def release(self, slot: _Slot) -> None:
        slot.active -= 1
        if slot.broken or slot.uses >= slot.reuse:
            if slot.active == 0:
                if slot in self._shared:
                    self._shared.remove(slot)
                self._close(slot)
            return
        if slot.p3:
            if slot.active == 0:
                self._shared.remove(slot)
                slot.idle_since = time.monotonic()
                self._idle.append(slot)
            return
        slot.idle_since = time.monotonic()
        self._idle.append(slot)

    def _refill(self) -> None:
        want = self._app.prewarm - len(self._idle) - len(self._warming)
        for _ in range(max(0, want)):
            task = asyncio.get_running_loop().create_task(self._warm())
            self._warming.add(task)
            task.add_done_callback(self._warming.discard)

    async def _warm(self) -> None:
        slot = await self._new()
        self._idle.append(slot)

    async def prewarm(self, count: int) -> None:
        for _ in range(count):
            self._idle.append(await self._new())

    def close(self) -> None:
        """Close every instance now (those let go of included)."""
        for task in list(self._warming):
            task.cancel()
        slots = [*self._idle, *self._shared]
        self._idle.clear()
        self._shared.clear()
        self.discarded += len(slots)
        for slot in slots:
            slot.instance.close()
        self._close_retired()


class _Gate:
    """At most ``limit`` requests at once (``max_concurrent_requests``); the others
    wait in arrival order. A request that finds room enters without awaiting."""

    __slots__ = ("_waiters", "free")

    def __init__(self, limit: int) -> None:
        #: requests that may still enter now
        self.free = limit
        #: the requests waiting for room, first come first
        self._waiters: deque[asyncio.Future[None]] = deque()

    def try_enter(self) -> bool:
        """Enter if there is room and nobody waits for it."""
        if self.free > 0 and not self._waiters:
            self.free -= 1
            return True
        return False

    async def enter(self) -> None:
        """Enter, waiting for room if there is none."""
        if self.try_enter():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.leave()  # given room as it was cancelled: the room goes on
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    def leave(self) -> None:
        """A request is done: the first one waiting enters, else there is room."""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


#: Requests on new instances that may be instantiating or answering at once.
_FRESH_AT_ONCE = 2
#: Seconds a request on a new instance may hold its turn before it starts answering.
_FRESH_HOLD = 0.1


class _Turn:
    """One request's share of the new-instance gate, given back once."""

    def __init__(self, gate: asyncio.Semaphore) -> None:
        self._gate = gate
        self._held = False
        self._timer: asyncio.TimerHandle | None = None

    async def take(self) -> None:
        await self._gate.acquire()
        self._held = True
        self._timer = asyncio.get_running_loop().call_later(_FRESH_HOLD, self.give_back)

    def give_back(self) -> None:
        if self._held:
            self._held = False
            self._gate.release()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
