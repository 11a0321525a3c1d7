"""``wasi:filesystem/types`` and ``preopens`` on the 0.3 track.

Every path operation is the 0.2 ``Descriptor``'s (``_filesystem``): the same
confinement walk, the same read-only rule, the same errno table. This module
changes only the shape: ``async func``s run the shared operation on a worker
thread (``asyncio.to_thread``, so a slow disk never blocks the event loop),
enums that became variants in 0.3 (``descriptor-type``, ``error-code``) are
``{"kind": ...}`` dicts (python-mapping.md §2), and the byte and entry
streams are async generators that touch the file only when the guest pulls
the next chunk, so the guest's reading pace is the disk's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from types import SimpleNamespace
from typing import Any, TypeVar

from polyengine_protocol import ComponentException, define_realm_local

from . import _filesystem as p2
from ._filesystem import Preopen

__all__ = ["Descriptor3", "types_provider_p3", "preopens_provider_p3"]

T = TypeVar("T")
Result = dict[str, Any]

#: Bytes read from the file per guest pull.
READ_CHUNK = 1 << 20


def _variant(code: object) -> dict[str, Any]:
    return {"kind": code} if code != "unknown" else {"kind": "other", "value": None}


def _lift_error(exc: ComponentException[Any]) -> ComponentException[Any]:
    return ComponentException(_variant(exc.payload), str(exc))


def _stat3(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "type": _variant(record["type"])}


async def _off_loop(fn: Callable[..., T], *args: Any) -> T:
    """Run a shared 0.2 operation on a worker thread, in 0.3's error shape."""
    try:
        return await asyncio.to_thread(fn, *args)
    except ComponentException as exc:
        raise _lift_error(exc) from exc


def _now(fn: Callable[..., T], *args: Any) -> T:
    try:
        return fn(*args)
    except ComponentException as exc:
        raise _lift_error(exc) from exc


def _start(coro: Coroutine[Any, Any, Result]) -> Awaitable[Result]:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return coro
    return loop.create_task(coro)


class _Outcome:
    """The completion future of one stream: settled when the stream ends."""

    def __init__(self) -> None:
        self._result: Result | None = None
        self._event: asyncio.Event | None = None

    def settle(self, result: Result) -> None:
        if self._result is None:
            self._result = result
            if self._event is not None:
                self._event.set()

    async def wait(self) -> Result:
        if self._result is None:
            self._event = asyncio.Event()
            await self._event.wait()
        assert self._result is not None
        return self._result


def _err(exc: BaseException) -> Result:
    if isinstance(exc, ComponentException):
        return {"kind": "err", "value": _variant(exc.payload)}
    if isinstance(exc, OSError):
        return {"kind": "err", "value": _variant(p2.ERRNO_CODES.get(exc.errno or 0, "io"))}
    raise exc


@define_realm_local
class Descriptor3:
    """``wasi:filesystem/types.descriptor`` (0.3) over a shared 0.2 descriptor."""

    def __init__(self, inner: p2.Descriptor) -> None:
        self._inner = inner

    def __repr__(self) -> str:
        return f"<0.3 {self._inner!r}>"

    def _peer(self, other: object, op: str) -> p2.Descriptor:
        if not isinstance(other, Descriptor3):
            raise TypeError(f"{op}: expected a Descriptor, got {type(other).__name__}")
        return other._inner

    # -- streams ------------------------------------------------------------------

    def read_via_stream(self, offset: int) -> tuple[AsyncIterator[bytes], Awaitable[Result]]:
        outcome = _Outcome()
        try:
            fd = self._inner._file_fd("read-via-stream", write=False, on_directory="is-directory")
        except ComponentException as exc:
            outcome.settle(_err(exc))

            async def nothing() -> AsyncIterator[bytes]:
                empty: tuple[bytes, ...] = ()
                for chunk in empty:
                    yield chunk

            return nothing(), outcome.wait()

        async def chunks() -> AsyncIterator[bytes]:
            position = offset
            result: Result = {"kind": "ok"}
            try:
                while True:
                    data = await asyncio.to_thread(os.pread, fd, READ_CHUNK, position)
                    if not data:
                        break
                    position += len(data)
                    yield data
            except (OSError, OverflowError) as exc:
                result = _err(exc if isinstance(exc, OSError) else OSError(22, str(exc)))
            finally:
                outcome.settle(result)

        return chunks(), outcome.wait()

    def _drain(self, op: str, data: AsyncIterable[bytes], offset: int | None) -> Awaitable[Result]:
        async def consume() -> Result:
            try:
                fd = self._inner._file_fd(op, write=True)
                position = offset
                async for chunk in data:
                    view = bytes(chunk)
                    while view:
                        at = os.fstat(fd).st_size if position is None else position
                        written = await asyncio.to_thread(os.pwrite, fd, view, at)
                        if position is not None:
                            position += written
                        view = view[written:]
            except (ComponentException, OSError) as exc:
                with contextlib.suppress(Exception):
                    close = getattr(data, "drop", None) or getattr(data, "aclose", None)
                    if callable(close):
                        maybe = close()
                        if asyncio.iscoroutine(maybe):
                            await maybe
                return _err(exc)
            return {"kind": "ok"}

        return _start(consume())

    def write_via_stream(self, data: AsyncIterable[bytes], offset: int) -> Awaitable[Result]:
        return self._drain("write-via-stream", data, offset)

    def append_via_stream(self, data: AsyncIterable[bytes]) -> Awaitable[Result]:
        return self._drain("append-via-stream", data, None)

    def read_directory(self) -> tuple[AsyncIterator[dict[str, Any]], Awaitable[Result]]:
        outcome = _Outcome()
        inner = self._inner

        async def entries() -> AsyncIterator[dict[str, Any]]:
            result: Result = {"kind": "ok"}
            listing: p2.DirectoryEntryStream | None = None
            try:
                listing = await asyncio.to_thread(inner.read_directory)
                while (entry := await asyncio.to_thread(listing.read_directory_entry)) is not None:
                    yield {"type": _variant(entry["type"]), "name": entry["name"]}
            except ComponentException as exc:
                result = _err(exc)
            finally:
                if listing is not None:
                    listing.close()
                outcome.settle(result)

        return entries(), outcome.wait()

    # -- the descriptor itself ----------------------------------------------------------

    async def advise(self, offset: int, length: int, advice: str) -> None:
        _now(self._inner.advise, offset, length, advice)

    async def sync_data(self) -> None:
        await _off_loop(self._inner.sync_data)

    async def sync(self) -> None:
        await _off_loop(self._inner.sync)

    async def get_flags(self) -> dict[str, bool]:
        return _now(self._inner.get_flags)

    async def get_type(self) -> dict[str, Any]:
        return _variant(await _off_loop(self._inner.get_type))

    async def set_size(self, size: int) -> None:
        await _off_loop(self._inner.set_size, size)

    async def set_times(self, data_access_timestamp: Mapping[str, Any],
                        data_modification_timestamp: Mapping[str, Any]) -> None:
        await _off_loop(self._inner.set_times, data_access_timestamp,
                        data_modification_timestamp)

    async def stat(self) -> dict[str, Any]:
        return _stat3(await _off_loop(self._inner.stat))

    async def is_same_object(self, other: Descriptor3) -> bool:
        peer = self._peer(other, "is-same-object")
        try:
            return await _off_loop(self._inner.is_same_object, peer)
        except ComponentException:
            return False

    async def metadata_hash(self) -> dict[str, int]:
        return await _off_loop(self._inner.metadata_hash)

    # -- paths below a directory ------------------------------------------------------

    async def stat_at(self, path_flags: Mapping[str, bool], path: str) -> dict[str, Any]:
        return _stat3(await _off_loop(self._inner.stat_at, path_flags, path))

    async def metadata_hash_at(self, path_flags: Mapping[str, bool], path: str) -> dict[str, int]:
        return await _off_loop(self._inner.metadata_hash_at, path_flags, path)

    async def set_times_at(self, path_flags: Mapping[str, bool], path: str,
                           data_access_timestamp: Mapping[str, Any],
                           data_modification_timestamp: Mapping[str, Any]) -> None:
        await _off_loop(self._inner.set_times_at, path_flags, path, data_access_timestamp,
                        data_modification_timestamp)

    async def create_directory_at(self, path: str) -> None:
        await _off_loop(self._inner.create_directory_at, path)

    async def open_at(self, path_flags: Mapping[str, bool], path: str,
                      open_flags: Mapping[str, bool], flags: Mapping[str, bool]) -> Descriptor3:
        return Descriptor3(await _off_loop(self._inner.open_at, path_flags, path, open_flags,
                                           flags))

    async def readlink_at(self, path: str) -> str:
        return await _off_loop(self._inner.readlink_at, path)

    async def remove_directory_at(self, path: str) -> None:
        await _off_loop(self._inner.remove_directory_at, path)

    async def unlink_file_at(self, path: str) -> None:
        await _off_loop(self._inner.unlink_file_at, path)

    async def symlink_at(self, old_path: str, new_path: str) -> None:
        await _off_loop(self._inner.symlink_at, old_path, new_path)

    async def link_at(self, old_path_flags: Mapping[str, bool], old_path: str,
                      new_descriptor: Descriptor3, new_path: str) -> None:
        peer = self._peer(new_descriptor, "link-at")
        await _off_loop(self._inner.link_at, old_path_flags, old_path, peer, new_path)

    async def rename_at(self, old_path: str, new_descriptor: Descriptor3, new_path: str) -> None:
        peer = self._peer(new_descriptor, "rename-at")
        await _off_loop(self._inner.rename_at, old_path, peer, new_path)

    def close(self) -> None:
        """The resource destructor (idempotent)."""
        self._inner.close()


def types_provider_p3() -> SimpleNamespace:
    """``wasi:filesystem/types@0.3``."""
    return SimpleNamespace(Descriptor=Descriptor3)


def preopens_provider_p3(preopens: list[Preopen]) -> SimpleNamespace:
    """``wasi:filesystem/preopens@0.3``."""

    def get_directories() -> list[tuple[Descriptor3, str]]:
        return [(Descriptor3(p.descriptor()), p.guest_path) for p in preopens]

    return SimpleNamespace(get_directories=get_directories)
