"""The canonical error classes of the host boundary.

embedder-api.md §"Error model" and §"Streams and futures" (A7, A8),
python-mapping.md §3 and §4. Every class carries its brand key as the class
attribute ``__polyengine_brand__``; the runtime recognizes errors by brand
(``is_trap`` and its siblings below), so these classes are conveniences, not gatekeepers.

Pickling keeps every field a class documents (payload, message, code,
progress, notes) and bypasses ``__init__`` on the way back, so subclasses
with their own constructor signature pickle too. Like every Python
exception, a pickled error loses its ``__cause__`` chain and traceback:
``to_cloneable`` is the form that keeps them (python-mapping.md §8).
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from typing import Any, ClassVar, Final, Generic, TypeVar

from ._brands import (
    COMPONENT_EXCEPTION,
    DROPPED,
    INVALID_HANDLE,
    PEER_TRAPPED,
    STREAM_PRODUCER,
    TRAP,
    WASI_EXIT,
    has_brand,
)

__all__ = [
    "ComponentException",
    "DroppedError",
    "InvalidHandleError",
    "PeerTrappedError",
    "StreamProducerError",
    "SuspensionUnavailable",
    "Trap",
    "UNSPECIFIED_TRAP_CODE",
    "is_component_exception",
    "is_dropped_error",
    "is_invalid_handle_error",
    "is_peer_trapped_error",
    "is_stream_producer_error",
    "is_trap",
    "is_wasi_exit",
]

E = TypeVar("E")

_payload_repr = reprlib.Repr()
_payload_repr.maxstring = 60
_payload_repr.maxother = 60
_payload_repr.maxlevel = 4

#: The code of a trap whose origin named none.
UNSPECIFIED_TRAP_CODE: Final = "unspecified"


def _rebuild(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """Unpickle a protocol error without calling its ``__init__``."""
    obj = cls.__new__(cls)
    obj.args = args
    obj.__dict__.update(state)
    return obj


def _check_message(message: object) -> str:
    if not isinstance(message, str):
        raise TypeError(f"an error message must be a str, not {type(message).__name__}")
    return message


def _check_cause(cause: object) -> BaseException | None:
    if cause is not None and not isinstance(cause, BaseException):
        raise TypeError(
            f"an error's cause must be an exception or None, not {type(cause).__name__}"
        )
    return cause


class _ProtocolError(Exception):
    """Shared behaviour: a ``message`` field, ``str()`` is the message, pickling."""

    __polyengine_brand__: ClassVar[str]
    message: str

    def __init__(self, message: str) -> None:
        self.message = _check_message(message)
        super().__init__(self.message)

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class ComponentException(_ProtocolError, Generic[E]):
    """An err result crossing the boundary (embedder-api.md §"Error model").

    A guest export returning ``err(e)`` raises ``ComponentException`` with
    ``payload == e``; a host import returns an err value by raising it. The
    payload is the err value shaped per python-mapping.md §2 (``None`` for an
    empty err side). Only this brand crosses the boundary as an err value: any
    other exception escaping a host import traps the calling instance.
    """

    __polyengine_brand__ = COMPONENT_EXCEPTION
    payload: E

    def __init__(self, payload: E, message: str | None = None) -> None:
        if message is None:
            message = f"component error result: {_payload_repr.repr(payload)}"
        super().__init__(message)
        self.payload = payload

    def __repr__(self) -> str:
        return f"ComponentException({self.payload!r}, message={self.message!r})"


class Trap(_ProtocolError):
    """A component-fatal fault (embedder-api.md §"Error model").

    ``code`` is a stable, machine-readable name chosen by whoever raised the
    trap (``"unreachable"``, ``"deadlock"``, ...); ``message`` is diagnostic
    text for humans and logs, never API. Match on the brand and the code,
    never on the message. Host code must not swallow a trap: the instance it
    escaped from is poisoned regardless.
    """

    __polyengine_brand__ = TRAP
    code: str

    def __init__(self, message: str, code: str = UNSPECIFIED_TRAP_CODE) -> None:
        if not isinstance(code, str) or not code:
            raise TypeError(f"a trap code must be a non-empty str, not {code!r}")
        super().__init__(message)
        self.code = str.__str__(code)  # a StrEnum member becomes its plain value

    def __repr__(self) -> str:
        return f"Trap({self.message!r}, code={self.code!r})"


class DroppedError(_ProtocolError):
    """Awaiting a future whose writable end dropped without a value.

    embedder-api.md §"Streams and futures": the discriminated rejection of a
    dropped future, never a value and never a hang.
    """

    __polyengine_brand__ = DROPPED

    def __init__(
        self, message: str = "the future's writable end was dropped without a value"
    ) -> None:
        super().__init__(message)


class InvalidHandleError(_ProtocolError, ValueError):
    """Handle misuse: a dropped, transferred or realm-local handle used where it cannot be.

    embedder-api.md §"Resources" and, since A20, handle misuse generally
    (``to_cloneable`` raises it for realm-local leaves). A ``ValueError``,
    like an operation on a closed file.
    """

    __polyengine_brand__ = INVALID_HANDLE


class PeerTrappedError(_ProtocolError):
    """A stream or future operation whose peer instance trapped (A7).

    ``cause`` chains to the fault (it is ``__cause__``, so ``raise`` shows the
    chain); ``progress`` is, for a write, the number of elements delivered
    before the fault, and ``None`` where no count applies.
    """

    __polyengine_brand__ = PEER_TRAPPED
    progress: int | None

    def __init__(
        self,
        message: str,
        cause: BaseException | None = None,
        progress: int | None = None,
    ) -> None:
        if progress is not None and (
            not isinstance(progress, int) or isinstance(progress, bool) or progress < 0
        ):
            raise TypeError(f"progress must be a non-negative int or None, not {progress!r}")
        super().__init__(message)
        self.__cause__ = _check_cause(cause)
        self.progress = progress

    @property
    def cause(self) -> BaseException | None:
        """The fault behind this error (the same object as ``__cause__``)."""
        return self.__cause__

    @cause.setter
    def cause(self, cause: BaseException | None) -> None:
        self.__cause__ = _check_cause(cause)

    def __repr__(self) -> str:
        return f"PeerTrappedError({self.message!r}, progress={self.progress!r})"


class StreamProducerError(_ProtocolError):
    """A host stream or future producer failed (embedder-api.md §"Streams and futures").

    The producer's own exception is the ``cause``; a failed producer is never
    presented as a clean end of stream.
    """

    __polyengine_brand__ = STREAM_PRODUCER

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.__cause__ = _check_cause(cause)

    @property
    def cause(self) -> BaseException | None:
        """The producer's failure (the same object as ``__cause__``)."""
        return self.__cause__

    @cause.setter
    def cause(self, cause: BaseException | None) -> None:
        self.__cause__ = _check_cause(cause)


class SuspensionUnavailable(RuntimeError):
    """A ``suspending``-marked import returned an awaitable where no frame can park.

    python-mapping.md §4 (the seed's NeedsJspi): raised at the park site when
    the instance runs with ``suspend=False`` or the engine offers no
    suspension, never silently degraded. It carries no brand: it is an
    embedder-side condition, not boundary vocabulary.
    """

    message: str

    def __init__(self, message: str) -> None:
        self.message = _check_message(message)
        super().__init__(self.message)

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


# Recognition (embedder-api.md §"Module identity", A9): an exception whose
# type carries the brand, whatever class or copy of this package minted it.


def _is_branded_exception(value: object, key: str) -> bool:
    # type() rather than isinstance(): a proxy's __class__ is never consulted.
    return issubclass(type(value), BaseException) and has_brand(value, key)


def is_component_exception(value: object) -> bool:
    """Whether ``value`` is an err-result exception: the brand plus a ``payload``.

    A branded exception without a ``payload`` attribute is not one: its err
    value would be unreadable.
    """
    if not _is_branded_exception(value, COMPONENT_EXCEPTION):
        return False
    try:
        return hasattr(value, "payload")
    except Exception:  # a payload property that raises is no readable payload
        return False


def is_trap(value: object) -> bool:
    """Whether ``value`` is a component-fatal trap (the ``polyengine.trap/1`` brand)."""
    return _is_branded_exception(value, TRAP)


def is_dropped_error(value: object) -> bool:
    """Whether ``value`` is a dropped-future rejection (``polyengine.dropped/1``)."""
    return _is_branded_exception(value, DROPPED)


def is_peer_trapped_error(value: object) -> bool:
    """Whether ``value`` is a peer-fault rejection (``polyengine.peerTrapped/1``)."""
    return _is_branded_exception(value, PEER_TRAPPED)


def is_invalid_handle_error(value: object) -> bool:
    """Whether ``value`` is a handle-misuse error (``polyengine.invalidHandle/1``)."""
    return _is_branded_exception(value, INVALID_HANDLE)


def is_stream_producer_error(value: object) -> bool:
    """Whether ``value`` is a producer failure (``polyengine.streamProducer/1``)."""
    return _is_branded_exception(value, STREAM_PRODUCER)


def is_wasi_exit(value: object) -> bool:
    """Whether ``value`` is a WASI exit unwind (``polyengine.wasiExit/1``).

    The WASI package defines the exit exception; this package only knows its
    brand (embedder-api.md §"Realm boundaries", the cloneable taxonomy).
    """
    return _is_branded_exception(value, WASI_EXIT)
