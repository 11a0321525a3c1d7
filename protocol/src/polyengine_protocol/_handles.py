"""Handle protocols, handle recognition and the realm-local pill.

embedder-api.md §"Streams and futures" (A5, A7, A8, A15, A16, A21, A22) and
§"Realm boundaries and structured-clone-safe forms" (A20); python-mapping.md
§6 and §8. The protocols are structural: the runtime's concrete handle
classes conform to them and are not exported, host code types against these.
They are not ``runtime_checkable`` on purpose: a handle is recognized by its
brand (``is_stream`` and siblings), never by ``isinstance``.

A stream's chunk is ``bytes`` for ``stream<u8>`` and ``list[T]`` otherwise;
both are ``Chunk[T]`` (a ``Sequence[T]``, since ``bytes`` is a
``Sequence[int]``). An empty chunk from ``read`` is the end of the stream.
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Sequence,
)
from types import TracebackType
from typing import Any, Final, Literal, NoReturn, Protocol, Self, TypeAlias, TypeVar

from ._brands import (
    ERROR_CONTEXT,
    FUTURE,
    POLLABLE,
    REALM_LOCAL,
    RESOURCE_STATE,
    STREAM,
    STREAM_WRITER,
    has_brand,
)

__all__ = [
    "REALM_LOCAL_ATTRIBUTE",
    "ByteStreamSource",
    "Chunk",
    "DirectDestination",
    "DirectSource",
    "DirectVerdict",
    "ErrorContext",
    "Future",
    "FutureSource",
    "RealmLocal",
    "Stream",
    "StreamSource",
    "StreamWriter",
    "define_realm_local",
    "is_error_context",
    "is_future",
    "is_pollable",
    "is_realm_local",
    "is_resource_wrapper",
    "is_stream",
    "is_stream_writer",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
T_contra = TypeVar("T_contra", contravariant=True)
_Self = TypeVar("_Self")

#: A chunk of stream elements: ``bytes`` for ``stream<u8>``, ``list[T]`` otherwise.
Chunk: TypeAlias = Sequence[T]

#: A direct-session callback's verdict (A21): keep the session parked, or end it.
DirectVerdict: TypeAlias = Literal["more", "done"]


class DirectSource(Protocol):
    """The writer's unread bytes, offered to a ``read_direct`` callback (A21).

    Valid only while the callback runs: every call after it returns raises
    ``TypeError``. ``remaining()`` is re-derived on each call (a memory grow
    between rendezvous never yields a stale view) and is read-only by
    contract; ``mark_read(n)`` acknowledges ``n`` more bytes as taken,
    cumulatively within the invocation (over-marking raises).
    """

    def remaining(self) -> memoryview: ...

    def mark_read(self, n: int, /) -> None: ...


class DirectDestination(Protocol):
    """The reader's unfilled landing zone, offered to a ``write_direct`` callback (A21).

    Valid only while the callback runs. The embedder's own copy into
    ``remaining()`` is the one ABI copy; ``mark_written(n)`` acknowledges
    ``n`` more bytes as delivered, cumulatively within the invocation.
    """

    def remaining(self) -> memoryview: ...

    def mark_written(self, n: int, /) -> None: ...


class Stream(Protocol[T_co]):
    """The readable end of a ``stream<T>`` held by the host (python-mapping.md §6).

    ``async for chunk in stream`` reads to the end; ``read(max)`` reads at
    most ``max`` elements (an empty chunk is the end); ``read_direct`` runs a
    direct session (``stream<u8>`` only, A21) and resolves with its byte
    count; ``cancel_read()`` settles an in-flight read as the end (A8);
    ``drop()`` (also on leaving ``async with``) releases the end. A peer
    fault surfaces as ``PeerTrappedError``, never as a clean end (A7); one
    operation may be in flight at a time (A7).
    """

    def __aiter__(self) -> AsyncIterator[Chunk[T_co]]: ...

    def __anext__(self) -> Awaitable[Chunk[T_co]]: ...

    def read(self, max: int, /) -> Awaitable[Chunk[T_co]]: ...

    def read_direct(
        self, consume: Callable[[DirectSource], DirectVerdict], /
    ) -> Awaitable[int]: ...

    def cancel_read(self) -> None: ...

    def drop(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> None: ...


class StreamWriter(Protocol[T_contra]):
    """The writable end of a stream made by the application (python-mapping.md §6).

    ``write(chunk)`` offers a chunk and resolves with the number of elements
    the reader took; ``write_all(chunk)`` keeps offering until all are taken
    or the reader is gone, resolving with the total; ``write_direct`` runs a
    direct session (``stream<u8>`` only, A21); ``cancel_write()`` retracts an
    in-flight write; ``close()`` (also on leaving ``async with``) drops the
    end. A ``bytes`` chunk is borrowed until the returned awaitable settles
    (A5).
    """

    def write(self, chunk: Chunk[T_contra], /) -> Awaitable[int]: ...

    def write_all(self, chunk: Chunk[T_contra], /) -> Awaitable[int]: ...

    def write_direct(
        self, produce: Callable[[DirectDestination], DirectVerdict], /
    ) -> Awaitable[int]: ...

    def cancel_write(self) -> None: ...

    def close(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> None: ...


class Future(Protocol[T_co]):
    """The readable end of a ``future<T>`` held by the host (python-mapping.md §6).

    ``await future`` yields the value, or raises ``DroppedError`` when the
    writer dropped without one. ``drop()`` and ``cancel()`` are total and
    silent (A16): they never raise and never surface the producing call's
    failure, which stays with whoever awaits.
    """

    def __await__(self) -> Generator[Any, Any, T_co]: ...

    def drop(self) -> None: ...

    def cancel(self) -> None: ...


class ErrorContext(Protocol):
    """An ``error-context`` value: its state is exactly its debug message.

    Lowering accepts any value carrying the ``polyengine.errorContext/1``
    brand and a ``str`` ``message`` by minting a fresh local context (A20).
    """

    @property
    def message(self) -> str: ...

    def debug_message(self) -> str: ...


#: What lowering accepts for ``stream<T>`` (python-mapping.md §6): a ``Stream``
#: handle, an async iterable, or a finite sync iterable of elements.
StreamSource: TypeAlias = Stream[T] | AsyncIterable[T] | Iterable[T]

#: What lowering accepts for ``stream<u8>``: the sources of ``StreamSource[int]``
#: (``bytes`` is an iterable of ints), and iterables of bytes-like chunks.
ByteStreamSource: TypeAlias = (
    StreamSource[int]
    | AsyncIterable[bytes | bytearray | memoryview]
    | Iterable[bytes | bytearray | memoryview]
)

#: What lowering accepts for ``future<T>``: a ``Future`` handle or any awaitable
#: (coroutine, ``asyncio.Future``, ``Task``).
FutureSource: TypeAlias = Future[T] | Awaitable[T]


# Recognition of the stateful values (A22): by brand, whatever copy minted them.


def is_stream(value: object) -> bool:
    """Whether ``value`` is a stream handle (``polyengine.stream/1``)."""
    return has_brand(value, STREAM)


def is_stream_writer(value: object) -> bool:
    """Whether ``value`` is a stream writer (``polyengine.streamWriter/1``)."""
    return has_brand(value, STREAM_WRITER)


def is_future(value: object) -> bool:
    """Whether ``value`` is a future handle (``polyengine.future/1``)."""
    return has_brand(value, FUTURE)


def is_error_context(value: object) -> bool:
    """Whether ``value`` is an error-context (``polyengine.errorContext/1``)."""
    return has_brand(value, ERROR_CONTEXT)


def is_pollable(value: object) -> bool:
    """Whether ``value`` is a WASI pollable (``polyengine.pollable/1``)."""
    return has_brand(value, POLLABLE)


def is_resource_wrapper(value: object) -> bool:
    """Whether ``value`` is a guest-resource wrapper (``polyengine.resourceState/1``)."""
    return has_brand(value, RESOURCE_STATE)


# The realm-local pill (A20 in Python's terms, python-mapping.md §8): a realm
# is a process, structured clone is pickling. A pilled value refuses
# pickling at the sender instead of arriving as a husk in another process.
# Copies stay legal (a copy of a handle is the same handle, like a shared
# reference), so only a process crossing trips.

#: The attribute carrying the pill; its value is the key ``REALM_LOCAL``.
REALM_LOCAL_ATTRIBUTE: Final = "__polyengine_realm_local__"


def _refuse_pickle(obj: object) -> NoReturn:
    name = type(obj).__qualname__
    raise TypeError(
        f"cannot pickle {name!s}: it is realm-local (its state lives in this process, "
        f"so a copy in another process would be a husk); convert the value with "
        f"polyengine_protocol.to_cloneable(value, replace=...) to substitute plain data "
        f"for each {name} it holds"
    )


def _pill_reduce_ex(self: object, protocol: object) -> NoReturn:
    _refuse_pickle(self)


def _pill_reduce(self: object) -> NoReturn:
    _refuse_pickle(self)


def _pill_copy(self: _Self) -> _Self:
    return self


def _pill_deepcopy(self: _Self, memo: object) -> _Self:
    return self


class RealmLocal:
    """Base for values whose state lives in this process (handles, wrappers).

    Inheriting it installs the pill: ``pickle`` refuses the value with a
    ``TypeError`` naming the class and the remedy, ``copy.copy`` and
    ``copy.deepcopy`` return the value itself, and ``is_realm_local`` holds.
    """

    __slots__ = ()
    __polyengine_realm_local__: Final = REALM_LOCAL

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        _refuse_pickle(self)

    def __reduce__(self) -> NoReturn:
        _refuse_pickle(self)

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: Any) -> Self:
        return self


def define_realm_local(target: T) -> T:
    """Install the realm-local pill on a class, or on one object; returns ``target``.

    For a class, every instance refuses pickling and copies as itself. For
    an object, the pill is installed in its ``__dict__`` (pickle and
    ``copy.deepcopy`` consult instance attributes; ``copy.copy`` does not, so
    it refuses too); an object without a ``__dict__`` is refused with ``TypeError``: pill its
    class, or inherit ``RealmLocal``.
    """
    if isinstance(target, type):
        target.__polyengine_realm_local__ = REALM_LOCAL  # type: ignore[attr-defined]
        target.__reduce_ex__ = _pill_reduce_ex  # type: ignore[assignment]
        target.__reduce__ = _pill_reduce  # type: ignore[assignment]
        target.__copy__ = _pill_copy  # type: ignore[attr-defined]
        target.__deepcopy__ = _pill_deepcopy  # type: ignore[attr-defined]
        return target
    try:
        state = vars(target)
    except TypeError:
        raise TypeError(
            f"cannot pill an object of type {type(target).__qualname__}: it has no __dict__; "
            "pill its class with define_realm_local(cls), or inherit RealmLocal"
        ) from None
    state[REALM_LOCAL_ATTRIBUTE] = REALM_LOCAL
    state["__reduce_ex__"] = lambda protocol: _refuse_pickle(target)
    state["__reduce__"] = lambda: _refuse_pickle(target)
    state["__deepcopy__"] = lambda memo: target
    return target


def is_realm_local(value: object) -> bool:
    """Whether ``value`` carries the realm-local pill (on its class or itself)."""
    if issubclass(type(value), type):
        return False
    try:
        if getattr(type(value), REALM_LOCAL_ATTRIBUTE, None) == REALM_LOCAL:
            return True
        own = getattr(value, "__dict__", None)
    except Exception:  # a hostile __getattr__: an unreadable pill is no pill
        return False
    return isinstance(own, dict) and own.get(REALM_LOCAL_ATTRIBUTE) == REALM_LOCAL
