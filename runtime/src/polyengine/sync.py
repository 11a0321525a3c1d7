"""The blocking facade for scripts and REPLs (python-mapping.md §4).

``instantiate_sync(...)`` returns an instance whose exports are plain calls,
each driven to completion on a private event loop owned by the instance. It
is refused inside a running event loop, where ``await instantiate(...)`` is
the way.

A call first runs the export's coroutine directly, with the private loop
made the running loop (as ``run_until_complete`` would) and in a copy of the
caller's context (as a task would): an export of a synchronous store never
suspends, so it completes in that one step, without a task or a turn of the
loop. A coroutine that does suspend is handed, as it is, to a task on the
private loop and finished there.

Between calls nothing runs: the private loop turns only while a call is
made, and a call returns as soon as its export does. Work a guest leaves
running after returning (a task waiting on an async host import, embedder-api
A11) progresses during later calls' loop turns or in
``SyncInstance.run_background(seconds)``, which turns the loop for that long;
``await polyengine.instantiate(...)`` on a running loop services it
continuously.

The methods of the instance's guest resources block the same way (the
resource classes belong to the instance, so they are given blocking methods
in place, whatever way a wrapper is obtained). After ``close()`` a call
raises the closed-store error, as ``await`` does on a closed instance.

``Pool(...)`` is the blocking form of :class:`polyengine.pool.Pool`: the
pool runs on a private event loop in a thread of its own, and its exports
are plain calls that may be made from any thread at once (each waits for a
free worker).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import types
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from polyengine.pool import WorkerInfo

_T = TypeVar("_T")

_get_running_loop = asyncio._get_running_loop
_set_running_loop = asyncio._set_running_loop


class SyncFacadeError(RuntimeError):
    """The blocking facade was used where it cannot work (inside a running loop)."""


def _refuse_in_running_loop(what: str) -> None:
    if _get_running_loop() is None:
        return
    raise SyncFacadeError(
        f"polyengine.sync.{what} cannot run inside a running event loop; "
        "use 'await polyengine.instantiate(...)' there"
    )


@types.coroutine
def _resume(coro: Coroutine[Any, Any, Any], yielded: Any) -> Generator[Any, Any, Any]:
    """Continue ``coro`` (which has yielded ``yielded``) under the task that awaits this."""
    while True:
        try:
            sent = yield yielded
        except BaseException as exc:  # thrown in by the task (cancellation)
            try:
                yielded = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
            continue
        try:
            yielded = coro.send(sent)
        except StopIteration as stop:
            return stop.value


async def _finish(coro: Coroutine[Any, Any, Any], yielded: Any) -> Any:
    return await _resume(coro, yielded)


def _closed() -> BaseException:
    from polyengine.engine import StoreClosedError

    return StoreClosedError("the store is closed (the instance's close() was called)")


def _drive(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to completion on ``loop``; directly while it does not suspend."""
    if loop.is_closed():
        coro.close()
        raise _closed()
    if loop.is_running():
        try:  # run_until_complete says why it cannot run
            return loop.run_until_complete(coro)
        finally:
            coro.close()
    context = contextvars.copy_context()
    _set_running_loop(loop)
    try:
        yielded = context.run(coro.send, None)
    except StopIteration as stop:
        return stop.value
    finally:
        _set_running_loop(None)
    task = loop.create_task(_finish(coro, yielded), context=context)
    return loop.run_until_complete(task)


async def _as_coro(aw: Any) -> Any:
    return await aw


def _blocking_call(
    loop: asyncio.AbstractEventLoop,
    export: Callable[..., Any],
    blocking: Callable[..., Any],
) -> Callable[..., Any]:
    """A synchronous-path export's plain form, called as :func:`_drive` runs a coroutine.

    The export never suspends, so the call is made directly, with the
    private loop made the running loop and in a copy of the caller's context,
    exactly as its coroutine's one step would run; a closed loop takes the
    coroutine's path, which says so. For a store on the compiled call path
    that call is the engine's (``engine.blocking_driver``), which makes the
    direct call of the export's ``_polyengine_direct()`` in C and hands every
    other case to the Python call below.
    """

    def call(*args: Any) -> Any:
        if _get_running_loop() is not None:
            _refuse_in_running_loop("call")
        if loop.is_closed():
            return _drive(loop, export(*args))
        context = contextvars.copy_context()
        _set_running_loop(loop)
        try:
            return context.run(blocking, *args)
        finally:
            _set_running_loop(None)

    direct = getattr(export, "_polyengine_direct", None)
    if not callable(direct):  # a store on the pure call path
        return call
    from polyengine import engine

    driver = engine.blocking_driver(loop, direct, call, _get_running_loop, _set_running_loop)
    return call if driver is None else driver


class _SyncProxy:
    """Wraps a namespace so coroutine functions become blocking calls on ``loop``.

    What an attribute or item wraps is built once and cached: the namespaces
    of an instance's exports do not change.
    """

    __slots__ = ("_attrs", "_items", "_loop", "_target")

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop):
        self._target = target
        self._loop = loop
        self._attrs: dict[str, Any] = {}
        self._items: dict[Any, Any] = {}

    def _wrap(self, value: Any) -> Any:
        blocking = getattr(value, "_polyengine_blocking", None)
        if callable(blocking) and inspect.isfunction(value):
            return _blocking_call(self._loop, value, blocking)
        if inspect.iscoroutinefunction(value) or inspect.ismethod(value):
            loop = self._loop

            def call(*args: Any) -> Any:
                if _get_running_loop() is not None:
                    _refuse_in_running_loop("call")
                result = value(*args)
                if type(result) is types.CoroutineType:
                    return _drive(loop, result)
                if inspect.isawaitable(result):
                    if loop.is_closed():
                        raise _closed()
                    return loop.run_until_complete(_as_coro(result))
                return result

            return call
        if isinstance(value, type) or callable(value):
            return value
        return _SyncProxy(value, self._loop)

    def __getattr__(self, name: str) -> Any:
        found = self._attrs.get(name)
        if found is None:
            found = self._attrs[name] = self._wrap(getattr(self._target, name))
        return found

    def __getitem__(self, key: str) -> Any:
        try:
            return self._items[key]
        except KeyError:
            found = self._items[key] = self._wrap(self._target[key])
            return found
        except TypeError:  # an unhashable key: the target decides
            return self._wrap(self._target[key])

    def __dir__(self) -> list[str]:
        return dir(self._target)


class SyncInstance:
    """An instance whose exports block; ``close()`` closes its private loop."""

    def __init__(self, instance: Any, loop: asyncio.AbstractEventLoop):
        self.instance = instance
        self._loop = loop
        self.exports = _SyncProxy(instance.exports, loop)
        _block_resource_methods(instance.exports, self.exports)

    def run_background(self, seconds: float) -> None:
        """Turn the private loop for ``seconds``, so the guest's background work progresses.

        The facade's loop runs only while a call is made, and a call returns
        as soon as its export does: work a guest left running after it
        returned (a task waiting on an async host import, embedder-api A11)
        is serviced only here. Its failure surfaces on the next call.
        """
        loop = self._loop
        if loop.is_closed():
            raise _closed()
        _refuse_in_running_loop("SyncInstance.run_background")
        loop.run_until_complete(asyncio.sleep(seconds))

    def close(self) -> None:
        """Close the instance, cancel what still runs on the private loop, close the loop."""
        loop = self._loop
        if loop.is_closed():
            return
        try:
            close = getattr(self.instance, "close", None)
            if close is not None:
                close()
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    def __enter__(self) -> SyncInstance:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _block_resource_methods(exports: Any, proxy: _SyncProxy) -> None:
    """Give the guest resource classes of ``exports`` blocking methods, in place.

    The classes are the instance's own (its exports built them), so every
    wrapper of them, constructed or returned by an export, blocks.
    """
    from polyengine_protocol import RESOURCE_STATE

    namespaces = [exports, *(exports[name] for name in exports.interfaces())]
    for ns in namespaces:
        for value in vars(ns).values():
            if not (
                isinstance(value, type)
                and getattr(value, "__polyengine_brand__", None) == RESOURCE_STATE
            ):
                continue
            for name, member in list(vars(value).items()):
                if name.startswith("_"):
                    continue
                if isinstance(member, staticmethod):
                    fn = member.__func__
                    if inspect.iscoroutinefunction(fn):
                        setattr(value, name, staticmethod(proxy._wrap(fn)))
                elif inspect.iscoroutinefunction(member):
                    setattr(value, name, proxy._wrap(member))


def run_sync(
    factory: Callable[[], Coroutine[Any, Any, Any]],
) -> tuple[Any, asyncio.AbstractEventLoop]:
    """Run ``factory()`` to completion on a new private loop and return both."""
    _refuse_in_running_loop("instantiate_sync")
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(factory()), loop
    except BaseException:
        loop.close()
        raise


def instantiate_sync(artifacts: Any, imports: Any = None, **options: Any) -> SyncInstance:
    """Blocking ``instantiate``: the same arguments, exports as plain calls."""
    from polyengine import instantiate

    instance, loop = run_sync(lambda: instantiate(artifacts, imports, **options))
    return SyncInstance(instance, loop)


class _BlockingMembers:
    """Exports of a :class:`Pool` (the world's or one interface's) as blocking calls."""

    def __init__(self, pool: Pool, members: Any, interface: str | None) -> None:
        self._pool = pool
        self._members = members
        self._interface = interface
        self._calls: dict[str, Callable[..., Any]] = {}

    def __getattr__(self, name: str) -> Callable[..., Any]:
        found = self._calls.get(name)
        if found is None:
            getattr(self._members, name)  # an unknown name or a resource class is refused here
            pool, interface = self._pool, self._interface

            def call(*args: Any) -> Any:
                return pool.call(interface, name, *args)

            call.__name__ = name
            found = self._calls[name] = call
        return found

    def __dir__(self) -> list[str]:
        return dir(self._members)


class _BlockingExports(_BlockingMembers):
    def __getitem__(self, key: str) -> _BlockingMembers:
        namespace = self._members[key]
        return _BlockingMembers(self._pool, namespace, namespace._interface)

    def __contains__(self, key: object) -> bool:
        return key in self._members


class Pool:
    """The blocking form of :class:`polyengine.pool.Pool` (the same arguments).

    The constructor starts the workers; ``exports`` are plain calls, callable
    from several threads at once; ``close()`` (or leaving a ``with`` block)
    lets the calls made finish, then stops the workers. Refused inside a
    running event loop, where ``async with polyengine.pool.Pool(...)`` is the way.
    """

    def __init__(self, component: Any, imports: Any = None, **options: Any) -> None:
        _refuse_in_running_loop("Pool")
        from polyengine.pool import Pool as AsyncPool

        self._pool = AsyncPool(component, imports, **options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="polyengine-pool", daemon=True
        )
        self._thread.start()
        try:
            self._run(self._pool.start())
        except BaseException:
            self._stop_loop()
            raise
        self.exports = _BlockingExports(self, self._pool.exports, None)

    def _run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        if _get_running_loop() is not None:
            coro.close()
            _refuse_in_running_loop("Pool")
        if self._loop.is_closed():
            coro.close()
            from polyengine.pool import PoolClosedError

            raise PoolClosedError("the pool is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def call(self, interface: str | None, name: str, *args: Any) -> Any:
        """Call export ``name`` (of ``interface``, or of the world when ``None``) and wait."""
        return self._run(self._pool.call(interface, name, *args))

    @property
    def workers(self) -> tuple[WorkerInfo, ...]:
        return self._pool.workers

    def close(self, grace: float = 30.0) -> None:
        """Let the calls made finish (up to ``grace`` s), stop the workers and the loop."""
        if self._loop.is_closed():
            return
        try:
            self._run(self._pool.close(grace))
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
