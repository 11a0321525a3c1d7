"""One component instance held for callers in other processes (a pool worker, a Ray replica).

The instance is made in this process from imports its factory makes here
(python-mapping.md §8: providers are realm-local). Calls arrive as the
export's name and ``to_cloneable`` arguments, and leave as ``to_cloneable``
results or error envelopes (:mod:`polyengine.pool.wire`). A ``Trap`` (or a
WASI exit) poisons the instance (embedder-api.md §"Error model"): it is
discarded and a new one is made from the factory, so the next call runs on
a fresh instance; the callers whose calls were on the old one see the trap.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable
from typing import Any

from polyengine.limits import Limits
from polyengine.pool.wire import encode_error, encode_result, make_imports
from polyengine_protocol import from_cloneable, is_trap, is_wasi_exit

__all__ = ["InstanceHost", "catalog_of", "track_key"]

#: a reply: ``(True, result data)`` or ``(False, error envelope)``
Reply = tuple[bool, object]


def _members(namespace: Any) -> tuple[list[str], list[str]]:
    """The function names and resource class names of an exports namespace."""
    functions: list[str] = []
    resources: list[str] = []
    for name in dir(namespace):
        if name.startswith("_"):
            continue
        value = getattr(namespace, name)
        if isinstance(value, type):
            resources.append(name)
        elif callable(value):
            functions.append(name)
    return sorted(functions), sorted(resources)


_SEMVER = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
)


def track_key(key: str) -> str | None:
    """``ns:pkg/i@1`` for ``ns:pkg/i@1.2.3``, ``ns:pkg/i@0.2`` for ``...@0.2.1``; else ``None``.

    The compatibility track of a full semver version (python-mapping.md §7):
    the major version from 1 on, ``0.minor`` below; ``0.0.z`` and
    prereleases have none and match exactly only.
    """
    base, sep, version = key.partition("@")
    found = _SEMVER.match(version) if sep else None
    if found is None or found.group(4):
        return None
    major, minor = int(found.group(1)), int(found.group(2))
    if major:
        return f"{base}@{major}"
    return f"{base}@0.{minor}" if minor else None


def catalog_of(instance: Any) -> dict[str, object]:
    """What an instance exports, as plain data a caller in another process can use.

    ``functions`` and ``resources`` are the world-level names;
    ``interfaces`` maps each exported interface id to its function and
    resource names; ``tracks`` maps a track (:func:`track_key`) to the id
    that serves the versions on it, as the instance's own lookup answers
    for a version of that track.
    """
    exports = instance.exports
    functions, resources = _members(exports)
    interfaces: dict[str, object] = {}
    tracks: dict[str, str] = {}
    for interface in exports.interfaces():
        namespace = exports[interface]
        names, classes = _members(namespace)
        interfaces[interface] = {"functions": names, "resources": classes}
        track = track_key(interface)
        if track is None:
            continue
        base, _, version = track.partition("@")
        probe = f"{base}@{version}.0" if "." in version else f"{base}@{version}.0.0"
        try:
            served = exports[probe]
        except KeyError:
            continue
        if served is namespace:
            tracks[track] = interface
    return {
        "functions": functions,
        "resources": resources,
        "interfaces": interfaces,
        "tracks": tracks,
    }


class InstanceHost:
    """The instance of one process, replaced after it traps.

    ``factory(instance_id)`` (or ``factory()``) makes each instance's
    imports; ``instance_id`` counts the instances this process made, from
    0. ``on_broken(error)`` is called when a replacement cannot be made
    (the factory or the instantiation failed); without it, the next call
    tries again.
    """

    def __init__(
        self,
        artifacts: Any,
        factory: Callable[..., Any] | None,
        *,
        limits: Limits | None = None,
        suspend: bool | None = None,
        on_broken: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._artifacts = artifacts
        self._factory = factory
        self._limits = limits
        self._suspend = suspend
        self._on_broken = on_broken
        self._ids = itertools.count()
        #: the current instance; ``None`` while a replacement is being made
        self._instance: Any = None
        #: the replacement being made after a trap, awaited by the calls that arrive meanwhile
        self._renewing: asyncio.Task[Any] | None = None
        #: bumped at each replacement: a trap only discards the instance it came from
        self.generation = 0
        #: instances made so far
        self.instances = 0
        #: calls that ended in a trap (or a WASI exit)
        self.traps = 0
        self._functions: dict[tuple[str | None, str], Any] = {}

    async def start(self) -> dict[str, object]:
        """Make the first instance and describe its exports (:func:`catalog_of`)."""
        self._instance = await self._make()
        return catalog_of(self._instance)

    async def _make(self) -> Any:
        from polyengine import instantiate

        imports = await make_imports(self._factory, next(self._ids))
        instance = await instantiate(
            self._artifacts, imports, limits=self._limits, suspend=self._suspend
        )
        self.instances += 1
        return instance

    async def _current(self) -> Any:
        while self._instance is None:
            if self._renewing is None:
                self._renewing = asyncio.get_running_loop().create_task(self._renew())
            await asyncio.shield(self._renewing)
        return self._instance

    async def _renew(self) -> None:
        try:
            self._instance = await self._make()
        except Exception as exc:
            if self._on_broken is not None:
                self._on_broken(exc)
            raise
        finally:
            self._renewing = None

    def _discard(self) -> None:
        instance, self._instance = self._instance, None
        self._functions.clear()
        self.generation += 1
        if instance is not None:
            instance.close()
        if self._renewing is None:
            # Make the replacement now, while no call waits for it.
            task = asyncio.get_running_loop().create_task(self._renew())
            task.add_done_callback(_consume)
            self._renewing = task

    def _function(self, instance: Any, interface: str | None, name: str) -> Any:
        key = (interface, name)
        found = self._functions.get(key)
        if found is not None:
            return found
        namespace = instance.exports if interface is None else instance.exports[interface]
        found = getattr(namespace, name)
        if isinstance(found, type):
            raise TypeError(
                f"{name} is a resource class: resources are realm-local and stay in the "
                "process that holds the instance; export functions that take and return "
                "plain data to use them from another process"
            )
        self._functions[key] = found
        return found

    async def call(self, interface: str | None, name: str, args: object) -> Reply:
        """Call an export with cloneable ``args``; the result or the error, cloneable."""
        label = name if interface is None else f"{interface}#{name}"
        try:
            instance = await self._current()
        except Exception as exc:
            return False, encode_error(exc)
        generation = self.generation
        try:
            function = self._function(instance, interface, name)
            values = from_cloneable(args)
            if not isinstance(values, list):
                raise TypeError(f"{label}: the arguments are not a list")
            result = await function(*values)
            return True, encode_result(label, result)
        except Exception as exc:
            if (is_trap(exc) or is_wasi_exit(exc)) and generation == self.generation:
                self.traps += 1
                self._discard()
            return False, encode_error(exc)

    def close(self) -> None:
        """Close the instance (idempotent); a replacement being made is cancelled."""
        if self._renewing is not None:
            self._renewing.cancel()
            self._renewing = None
        instance, self._instance = self._instance, None
        if instance is not None:
            instance.close()


def _consume(task: asyncio.Task[Any]) -> None:
    """Retrieve a background replacement's failure (it is reported to the next call)."""
    if not task.cancelled():
        task.exception()
