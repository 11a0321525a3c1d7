"""Process-boundary forms: ``to_cloneable`` and ``from_cloneable``.

embedder-api.md §"Realm boundaries and structured-clone-safe forms" (A20)
as python-mapping.md §8 translates it: a realm is a process, structured
clone is pickling. ``to_cloneable`` turns a value into plain data (dict,
list, tuple, str, int, float, bool, bytes, None) that pickles anywhere and,
when it holds no bytes, tuples or non-finite floats, survives ``json`` too;
``from_cloneable`` turns that data back into values branded by this copy.
The law, tested per taxonomy member: ``from_cloneable(pickle.loads(
pickle.dumps(to_cloneable(v))))`` answers every recognition predicate and
field access (payload, message, code, progress, ok, cause chains to full
depth, error-context message) exactly as ``v`` does.

Branded errors, error-contexts and unbranded exceptions are encoded as
envelopes: dicts whose ``"polyengine.cloneable/1"`` key holds the encoded
value's tag. WIT-mapped data cannot produce that key (record fields are
snake_case identifiers), and an input dict already carrying it is refused,
so no escaping is needed. The envelope is version-internal, never a wire
format or a storage format.

Realm-local values (streams, writers, futures, pollables, resource wrappers,
anything pilled) are refused with ``InvalidHandleError`` unless ``replace``
substitutes plain data for them. Every refusal names the path to the
offending leaf, such as ``payload.attempts[2].handle``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any, Final

from ._brands import (
    CLONEABLE_TAG,
    COMPONENT_EXCEPTION,
    DROPPED,
    ERROR_CONTEXT,
    FUTURE,
    INVALID_HANDLE,
    PEER_TRAPPED,
    POLLABLE,
    RESOURCE_STATE,
    STREAM,
    STREAM_PRODUCER,
    STREAM_WRITER,
    TRAP,
    WASI_EXIT,
    brands_of,
)
from ._errors import (
    UNSPECIFIED_TRAP_CODE,
    ComponentException,
    DroppedError,
    InvalidHandleError,
    PeerTrappedError,
    StreamProducerError,
    Trap,
    _rebuild,
    is_component_exception,
    is_dropped_error,
    is_invalid_handle_error,
    is_peer_trapped_error,
    is_stream_producer_error,
    is_trap,
    is_wasi_exit,
)
from ._handles import is_error_context, is_realm_local

__all__ = [
    "ClonedError",
    "Replace",
    "from_cloneable",
    "to_cloneable",
]

#: The tag of an unbranded exception's envelope.
ERROR_TAG: Final = "error"

#: A ``replace`` callback: given a realm-local leaf and its path, return the
#: plain data to send instead, or ``None`` (or the leaf itself) to refuse it.
Replace = Callable[[object, str], object]

_REALM_LOCAL_KINDS: Final = (
    (STREAM, "stream"),
    (STREAM_WRITER, "stream writer"),
    (FUTURE, "future"),
    (POLLABLE, "pollable"),
    (RESOURCE_STATE, "resource wrapper"),
)

_ERROR_TAGS: Final = (
    (COMPONENT_EXCEPTION, is_component_exception),
    (TRAP, is_trap),
    (DROPPED, is_dropped_error),
    (PEER_TRAPPED, is_peer_trapped_error),
    (INVALID_HANDLE, is_invalid_handle_error),
    (STREAM_PRODUCER, is_stream_producer_error),
    (WASI_EXIT, is_wasi_exit),
)

# Envelope fields per tag: (required, optional), besides the tag itself.
_COMMON_OPTIONAL: Final = frozenset({"stack", "notes", "cause"})
_FIELDS: Final[dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    COMPONENT_EXCEPTION: (frozenset({"message", "payload"}), _COMMON_OPTIONAL),
    TRAP: (frozenset({"message"}), _COMMON_OPTIONAL | {"code"}),
    DROPPED: (frozenset({"message"}), _COMMON_OPTIONAL),
    INVALID_HANDLE: (frozenset({"message"}), _COMMON_OPTIONAL),
    PEER_TRAPPED: (frozenset({"message", "cause"}), _COMMON_OPTIONAL | {"progress"}),
    STREAM_PRODUCER: (frozenset({"message", "cause"}), _COMMON_OPTIONAL),
    ERROR_CONTEXT: (frozenset({"message"}), frozenset()),
    WASI_EXIT: (frozenset({"message", "ok"}), _COMMON_OPTIONAL | {"code"}),
    ERROR_TAG: (frozenset({"name", "message"}), _COMMON_OPTIONAL),
}

_SCALARS: Final = (type(None), bool, int, float, str, bytes)

_SENDER_TRACEBACK: Final = "Traceback in the sending process (most recent call last):\n"


class ClonedError(Exception):
    """An unbranded exception after a crossing: its class name and message.

    The sending process's exception class is not imported on the receiving
    side (the data is plain, never code), so ``name`` records it: the bare
    name for builtins (``"ValueError"``), ``"module.QualName"`` otherwise.
    """

    name: str
    message: str

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        self.message = message
        super().__init__(f"{name}: {message}" if message else name)

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))

    def __repr__(self) -> str:
        return f"ClonedError({self.name!r}, {self.message!r})"


class _ClonedWasiExit(Exception):
    """A WASI exit unwind after a crossing, branded like the WASI package's ``ExitError``."""

    __polyengine_brand__ = WASI_EXIT
    message: str
    ok: bool
    code: int | None

    def __init__(self, message: str, ok: bool, code: int | None = None) -> None:
        self.message = message
        self.ok = ok
        self.code = code
        super().__init__(message)

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, ok={self.ok!r}, code={self.code!r})"


class _ErrorContextCarrier:
    """An error-context after a crossing: a branded carrier of its message.

    The runtime lowers any such carrier by minting a fresh local context
    (A20: error-contexts are message-valued).
    """

    __polyengine_brand__ = ERROR_CONTEXT
    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    def debug_message(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (_ErrorContextCarrier, (self.message,))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _ErrorContextCarrier):
            return NotImplemented
        return self.message == other.message

    def __hash__(self) -> int:
        return hash((ERROR_CONTEXT, self.message))

    def __repr__(self) -> str:
        return f"<error-context {self.message!r}>"


# Paths name the offending leaf in every refusal: fields and identifier keys
# as ``.name``, other keys as ``['key']``, positions as ``[2]``.


def _key_path(path: str, key: str) -> str:
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


def _index_path(path: str, index: int) -> str:
    return f"{path}[{index}]"


def _where(path: str) -> str:
    return f"at {path}" if path else "at the top level"


def _message_of(e: BaseException) -> str:
    message = getattr(e, "message", None)
    if isinstance(message, str):
        return str.__str__(message)
    try:
        return str.__str__(str(e))
    except Exception:
        return f"<unprintable {type(e).__qualname__} object>"


def _name_of(e: BaseException) -> str:
    if isinstance(e, ClonedError):
        return str.__str__(e.name)
    cls = type(e)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


class _Encoder:
    """One ``to_cloneable`` walk: the callback and the containers on the current path."""

    def __init__(self, replace: Replace | None) -> None:
        self.replace = replace
        self.active: set[int] = set()

    def enter(self, value: object, path: str) -> None:
        if id(value) in self.active:
            raise ValueError(f"to_cloneable: cyclic value {_where(path)}: it contains itself")
        self.active.add(id(value))

    def encode(self, value: object, path: str) -> object:
        if type(value) in _SCALARS:
            return value
        for tag, recognizes in _ERROR_TAGS:
            if recognizes(value):
                assert isinstance(value, BaseException)
                return self.error(value, tag, path)
        if is_error_context(value):
            return self.error_context(value, path)
        kind = self.realm_local_kind(value)
        if kind is not None:
            return self.realm_local(value, kind, path)
        if isinstance(value, BaseException):
            return self.error(value, ERROR_TAG, path)
        if isinstance(value, dict):
            return self.mapping(value, path)
        if isinstance(value, list | tuple):
            self.enter(value, path)
            items = [self.encode(item, _index_path(path, i)) for i, item in enumerate(value)]
            self.active.discard(id(value))
            return tuple(items) if isinstance(value, tuple) else items
        if isinstance(value, int):
            return int.__int__(value)
        if isinstance(value, float):
            return float.__float__(value)
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value)
        if isinstance(value, type):
            what = f"the class {value.__qualname__}"
        elif callable(value):
            what = "a function"
        else:
            what = f"an object of type {type(value).__qualname__}"
        raise TypeError(
            f"to_cloneable: cannot clone {what} {_where(path)}: only WIT-shaped plain data "
            "(dict, list, tuple, str, int, float, bool, bytes, None), protocol errors, "
            "error-contexts and exceptions cross a process boundary"
        )

    def mapping(self, value: dict[Any, Any], path: str) -> dict[str, object]:
        if CLONEABLE_TAG in value:
            raise ValueError(
                f"to_cloneable: the dict {_where(path)} already carries the envelope key "
                f"{CLONEABLE_TAG!r}; it is reserved for encoded values"
            )
        self.enter(value, path)
        out: dict[str, object] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"to_cloneable: the dict {_where(path)} has a key of type "
                    f"{type(key).__qualname__} ({key!r}); record keys are str"
                )
            out[str.__str__(key)] = self.encode(item, _key_path(path, key))
        self.active.discard(id(value))
        return out

    @staticmethod
    def realm_local_kind(value: object) -> str | None:
        brands = brands_of(value)
        for key, kind in _REALM_LOCAL_KINDS:
            if key in brands:
                return kind
        return "realm-local value" if is_realm_local(value) else None

    def realm_local(self, value: object, kind: str, path: str) -> object:
        if self.replace is not None:
            substitute = self.replace(value, path)
            if substitute is not None and substitute is not value:
                if self.realm_local_kind(substitute) is not None:
                    raise InvalidHandleError(
                        f"to_cloneable: replace returned a realm-local "
                        f"{type(substitute).__qualname__} for the {kind} {_where(path)}; "
                        "it must return plain data"
                    )
                return self.encode(substitute, path)
        raise InvalidHandleError(
            f"to_cloneable: cannot clone a {kind} ({type(value).__qualname__}) {_where(path)}: "
            "it is realm-local (its state lives in this process); pass replace=... to "
            "substitute plain data for it"
        )

    def error_context(self, value: object, path: str) -> dict[str, object]:
        message = getattr(value, "message", None)
        if not isinstance(message, str):
            debug_message = getattr(value, "debug_message", None)
            message = debug_message() if callable(debug_message) else None
        if not isinstance(message, str):
            raise TypeError(
                f"to_cloneable: the error-context {_where(path)} carries no str message"
            )
        return {CLONEABLE_TAG: ERROR_CONTEXT, "message": message}

    def error(self, e: BaseException, tag: str, path: str) -> dict[str, object]:
        self.enter(e, path)
        out: dict[str, object] = {CLONEABLE_TAG: tag, "message": _message_of(e)}
        if tag == ERROR_TAG:
            out["name"] = _name_of(e)
        elif tag == COMPONENT_EXCEPTION:
            out["payload"] = self.encode(getattr(e, "payload", None), _key_path(path, "payload"))
        elif tag == TRAP:
            code = getattr(e, "code", None)
            if isinstance(code, str) and code != UNSPECIFIED_TRAP_CODE:
                out["code"] = str.__str__(code)
        elif tag == PEER_TRAPPED:
            progress = getattr(e, "progress", None)
            if isinstance(progress, int) and not isinstance(progress, bool):
                out["progress"] = int(progress)
        elif tag == WASI_EXIT:
            out.update(self.exit_fields(e, path))
        cause = e.__cause__
        if cause is None:
            declared = getattr(e, "cause", None)
            cause = declared if isinstance(declared, BaseException) else None
        if cause is not None or tag in (PEER_TRAPPED, STREAM_PRODUCER):
            out["cause"] = None if cause is None else self.encode(cause, _key_path(path, "cause"))
        if e.__traceback__ is not None:
            out["stack"] = "".join(traceback.format_tb(e.__traceback__))
        notes = getattr(e, "__notes__", None)
        if isinstance(notes, list) and notes:
            out["notes"] = [str(n) for n in notes if isinstance(n, str)]
        self.active.discard(id(e))
        return out

    @staticmethod
    def exit_fields(e: BaseException, path: str) -> dict[str, object]:
        code = getattr(e, "code", None)
        if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
            raise TypeError(f"to_cloneable: the wasi exit {_where(path)} has a non-int code")
        ok = getattr(e, "ok", None)
        if not isinstance(ok, bool):
            if code is None:
                raise TypeError(
                    f"to_cloneable: the wasi exit {_where(path)} carries neither a bool ok "
                    "nor an int code"
                )
            ok = code == 0
        fields: dict[str, object] = {"ok": ok}
        if code is not None:
            fields["code"] = int(code)
        return fields


def to_cloneable(value: object, replace: Replace | None = None) -> object:
    """Encode ``value`` as plain data that crosses a process boundary (A20).

    Plain data (dicts with str keys, lists, tuples, str, int, float, bool,
    bytes, None) is copied into fresh containers; ``bytearray`` and
    ``memoryview`` become ``bytes``. Branded errors, error-contexts and
    unbranded exceptions become envelopes, their payloads and ``__cause__``
    chains walked to full depth. ``replace(leaf, path)`` is called for each
    realm-local leaf and its result is encoded in the leaf's place; a result
    of ``None`` or the leaf itself refuses the leaf. The top-level path is
    ``""``.

    Raises ``InvalidHandleError`` (a ``ValueError``) for a realm-local leaf
    nobody replaced, ``TypeError`` for anything that is not plain data
    (functions, other objects, non-str dict keys), ``ValueError`` for a
    cyclic value or a dict already carrying the envelope key. Every message
    names the path to the offending leaf.
    """
    try:
        return _Encoder(replace).encode(value, "")
    except RecursionError:
        raise ValueError(
            "to_cloneable: the value nests deeper than the interpreter's recursion limit"
        ) from None


class _Decoder:
    """One ``from_cloneable`` walk."""

    def __init__(self) -> None:
        self.active: set[int] = set()

    def decode(self, data: object, path: str) -> object:
        if type(data) in _SCALARS:
            return data
        if isinstance(data, dict):
            if id(data) in self.active:
                raise ValueError(f"from_cloneable: cyclic data {_where(path)}")
            self.active.add(id(data))
            try:
                if CLONEABLE_TAG in data:
                    return self.envelope(data, path)
                out: dict[str, object] = {}
                for key, item in data.items():
                    if not isinstance(key, str):
                        raise TypeError(
                            f"from_cloneable: the dict {_where(path)} has a key of type "
                            f"{type(key).__qualname__} ({key!r}); encoded dicts have str keys"
                        )
                    out[key] = self.decode(item, _key_path(path, key))
                return out
            finally:
                self.active.discard(id(data))
        if isinstance(data, list | tuple):
            if id(data) in self.active:
                raise ValueError(f"from_cloneable: cyclic data {_where(path)}")
            self.active.add(id(data))
            items = [self.decode(item, _index_path(path, i)) for i, item in enumerate(data)]
            self.active.discard(id(data))
            return tuple(items) if isinstance(data, tuple) else items
        raise TypeError(
            f"from_cloneable: unexpected object of type {type(data).__qualname__} "
            f"{_where(path)}: "
            "the input must be the plain data to_cloneable produces"
        )

    def envelope(self, data: dict[Any, Any], path: str) -> object:
        tag = data[CLONEABLE_TAG]
        if not isinstance(tag, str) or tag not in _FIELDS:
            raise TypeError(
                f"from_cloneable: unknown envelope tag {tag!r} {_where(path)}: the data comes "
                "from a different polyengine version, which is outside the supported matrix"
            )
        required, optional = _FIELDS[tag]
        present = set(data) - {CLONEABLE_TAG}
        missing = required - present
        unknown = present - required - optional
        if missing or unknown:
            problems = [f"missing {sorted(missing)}"] if missing else []
            problems += [f"unexpected {sorted(unknown)}"] if unknown else []
            raise ValueError(
                f"from_cloneable: malformed {tag!r} envelope {_where(path)}: "
                + ", ".join(problems)
            )
        message = self.field(data, "message", str, path)
        assert isinstance(message, str)
        if tag == ERROR_CONTEXT:
            return _ErrorContextCarrier(message)
        cause: BaseException | None = None
        if data.get("cause") is not None:
            decoded = self.decode(data["cause"], _key_path(path, "cause"))
            if not isinstance(decoded, BaseException):
                raise TypeError(
                    f"from_cloneable: the cause {_where(_key_path(path, 'cause'))} "
                    "is not an encoded exception"
                )
            cause = decoded
        error = self.rehydrate(tag, data, message, cause, path)
        error.__cause__ = cause
        notes = data.get("notes")
        if notes is not None:
            if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
                raise TypeError(
                    f"from_cloneable: the notes {_where(_key_path(path, 'notes'))} "
                    "are not a list of str"
                )
            for note in notes:
                error.add_note(note)
        stack = data.get("stack")
        if stack is not None:
            if not isinstance(stack, str):
                raise TypeError(
                    f"from_cloneable: the stack {_where(_key_path(path, 'stack'))} is not a str"
                )
            error.add_note(_SENDER_TRACEBACK + stack.rstrip("\n"))
        return error

    def rehydrate(
        self,
        tag: str,
        data: dict[Any, Any],
        message: str,
        cause: BaseException | None,
        path: str,
    ) -> BaseException:
        if tag == COMPONENT_EXCEPTION:
            payload = self.decode(data["payload"], _key_path(path, "payload"))
            return ComponentException(payload, message)
        if tag == TRAP:
            code = data.get("code")
            if code is None:
                return Trap(message)
            if not isinstance(code, str) or not code:
                raise TypeError(f"from_cloneable: the trap code {_where(path)} is not a str")
            return Trap(message, code)
        if tag == DROPPED:
            return DroppedError(message)
        if tag == INVALID_HANDLE:
            return InvalidHandleError(message)
        if tag == PEER_TRAPPED:
            progress = data.get("progress")
            if progress is not None and (
                type(progress) is not int or progress < 0
            ):
                raise TypeError(
                    f"from_cloneable: the progress {_where(path)} is not a non-negative int"
                )
            return PeerTrappedError(message, cause, progress)
        if tag == STREAM_PRODUCER:
            return StreamProducerError(message, cause)
        if tag == WASI_EXIT:
            ok = self.field(data, "ok", bool, path)
            code = data.get("code")
            if code is not None and type(code) is not int:
                raise TypeError(f"from_cloneable: the exit code {_where(path)} is not an int")
            assert isinstance(ok, bool)
            return _ClonedWasiExit(message, ok, code)
        assert tag == ERROR_TAG, tag
        name = self.field(data, "name", str, path)
        assert isinstance(name, str)
        return ClonedError(name, message)

    @staticmethod
    def field(data: dict[Any, Any], name: str, kind: type, path: str) -> object:
        value = data[name]
        if not isinstance(value, kind):
            raise TypeError(
                f"from_cloneable: the field {_where(_key_path(path, name))} is of type "
                f"{type(value).__qualname__}, not {kind.__qualname__}"
            )
        return value


def from_cloneable(data: object) -> object:
    """Decode the output of ``to_cloneable`` (after any pickle or json trip).

    Containers are rebuilt fresh; envelopes become values branded by this
    copy: the six protocol error classes, ``ClonedError`` for an unbranded
    exception (its ``name`` keeps the original class name), a branded
    exception carrying ``ok``/``code`` for a WASI exit, and a branded carrier
    of the message for an error-context. A sender traceback is attached as
    a note. Raises ``TypeError`` for an unknown envelope tag or anything that
    is not plain data, ``ValueError`` for a malformed envelope or cyclic
    data, each naming the path.
    """
    try:
        return _Decoder().decode(data, "")
    except RecursionError:
        raise ValueError(
            "from_cloneable: the data nests deeper than the interpreter's recursion limit"
        ) from None
