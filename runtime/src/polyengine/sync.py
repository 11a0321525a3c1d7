"""The blocking facade for scripts and REPLs (python-mapping.md §4).

``instantiate_sync(...)`` returns an instance whose exports are plain calls,
each driven to completion on a private event loop owned by the instance. It
is refused inside a running event loop, where ``await instantiate(...)`` is
the way.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine
from typing import Any


class SyncFacadeError(RuntimeError):
    """The blocking facade was used where it cannot work (inside a running loop)."""


def _refuse_in_running_loop(what: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise SyncFacadeError(
        f"polyengine.sync.{what} cannot run inside a running event loop; "
        "use 'await polyengine.instantiate(...)' there"
    )


class _SyncProxy:
    """Wraps a namespace so coroutine functions become blocking calls on ``loop``."""

    __slots__ = ("_loop", "_target")

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop):
        self._target = target
        self._loop = loop

    def _wrap(self, value: Any) -> Any:
        if inspect.iscoroutinefunction(value) or inspect.ismethod(value):
            loop = self._loop

            def call(*args: Any) -> Any:
                _refuse_in_running_loop("call")
                result = value(*args)
                if inspect.isawaitable(result):
                    return loop.run_until_complete(_as_coro(result))
                return result

            return call
        if isinstance(value, type) or callable(value):
            return value
        return _SyncProxy(value, self._loop)

    def __getattr__(self, name: str) -> Any:
        return self._wrap(getattr(self._target, name))

    def __getitem__(self, key: str) -> Any:
        return self._wrap(self._target[key])

    def __dir__(self) -> list[str]:
        return dir(self._target)


async def _as_coro(aw: Any) -> Any:
    return await aw


class SyncInstance:
    """An instance whose exports block; ``close()`` closes its private loop."""

    def __init__(self, instance: Any, loop: asyncio.AbstractEventLoop):
        self.instance = instance
        self._loop = loop
        self.exports = _SyncProxy(instance.exports, loop)

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


def instantiate_sync(
    artifacts: Any, imports: Any = None, **options: Any
) -> SyncInstance:
    """Blocking ``instantiate``: the same arguments, exports as plain calls."""
    from polyengine import instantiate

    instance, loop = run_sync(lambda: instantiate(artifacts, imports, **options))
    return SyncInstance(instance, loop)
