"""``wasi:http/types.fields``: HTTP headers and trailers (0.2 and 0.3).

A ``fields`` made by the guest (constructor, ``from-list``, ``clone``) is
mutable; one the host hands out (request and response headers) is
immutable, and ``set``/``append``/``delete`` fail with
``header-error.immutable`` (wasi:http types.wit, resource ``fields``).
Names compare case-insensitively; they are kept lowercased, as HTTP/2 and
hyper present them, with insertion order and duplicates preserved.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from polyengine_protocol import ComponentException, define_realm_local

__all__ = ["Fields", "FORBIDDEN_HEADERS", "valid_name", "valid_value", "header_error"]

#: Names a guest may not set (hop-by-hop and routing fields the host owns).
FORBIDDEN_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "host",
        "http2-settings",
    }
)

_TOKEN = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
#: the bytes of a token, and those a field value may hold (``bytes.translate`` deletes
#: them: what is left is what is not allowed)
_TOKEN_BYTES = bytes(sorted(_TOKEN))
_VALUE_BYTES = bytes([0x09, *range(0x20, 0x7F), *range(0x80, 0x100)])
#: a whole RFC 9110 token (``fullmatch``)
_TOKEN_RE = re.compile("[" + re.escape(_TOKEN_BYTES.decode("ascii")) + "]+")


def valid_name(name: object) -> bool:
    """A field name is a non-empty RFC 9110 token."""
    return isinstance(name, str) and _TOKEN_RE.fullmatch(name) is not None


def valid_value(value: object) -> bool:
    """A field value has no control bytes other than horizontal tab."""
    if not isinstance(value, bytes | bytearray | memoryview):
        return False
    return not bytes(value).translate(None, _VALUE_BYTES)


def header_error(kind: str) -> ComponentException[dict[str, object]]:
    return ComponentException({"kind": kind}, f"header-error.{kind}")


@define_realm_local
class Fields:
    """``fields``: an ordered multimap of lowercased names to byte values."""

    def __init__(self) -> None:
        self._entries: list[tuple[str, bytes]] = []
        self._mutable = True

    # -- host side ---------------------------------------------------------

    @classmethod
    def of(cls, entries: Iterable[tuple[str | bytes, bytes]], *, mutable: bool = False) -> Fields:
        """Host-made fields (immutable by default), names lowercased, unchecked."""
        made = cls()
        made._entries = [
            ((k.decode("latin-1") if isinstance(k, bytes) else k).lower(), bytes(v))
            for k, v in entries
        ]
        made._mutable = mutable
        return made

    @classmethod
    def adopt(cls, entries: list[tuple[str, bytes]]) -> Fields:
        """Host-made immutable fields holding ``entries`` itself: the caller made its
        names lowercase strings and its values ``bytes`` (:meth:`of` converts them)."""
        made = cls()
        made._entries = entries
        made._mutable = False
        return made

    def freeze(self) -> None:
        """Make these fields immutable (they now belong to a message)."""
        self._mutable = False

    @property
    def mutable(self) -> bool:
        return self._mutable

    def items(self) -> list[tuple[str, bytes]]:
        """The entries in order (host side)."""
        return list(self._entries)

    def first(self, name: str) -> bytes | None:
        key = name.lower()
        for k, v in self._entries:
            if k == key:
                return v
        return None

    # -- WIT ---------------------------------------------------------------

    @staticmethod
    def from_list(entries: Sequence[tuple[str, bytes]]) -> Fields:
        """``[static]fields.from-list``: invalid-syntax or forbidden on a bad entry."""
        made = Fields()
        kept = made._entries
        token = _TOKEN_RE.fullmatch
        for name, value in entries:
            if (
                name.__class__ is not str
                or token(name) is None
                or value.__class__ is not bytes
                or value.translate(None, _VALUE_BYTES)
            ) and not (valid_name(name) and valid_value(value)):
                raise header_error("invalid-syntax")
            key = name.lower()
            if key in FORBIDDEN_HEADERS:
                raise header_error("forbidden")
            kept.append((key, bytes(value)))
        return made

    def _check(self, name: str, values: Sequence[bytes] = ()) -> str:
        if not self._mutable:
            raise header_error("immutable")
        if not valid_name(name) or not all(valid_value(v) for v in values):
            raise header_error("invalid-syntax")
        key = name.lower()
        if key in FORBIDDEN_HEADERS:
            raise header_error("forbidden")
        return key

    def get(self, name: str) -> list[bytes]:
        """``get``: every value of ``name`` (none for an invalid name)."""
        if not valid_name(name):
            return []
        key = name.lower()
        return [v for k, v in self._entries if k == key]

    def has(self, name: str) -> bool:
        """``has``."""
        return bool(valid_name(name)) and any(k == name.lower() for k, _ in self._entries)

    def set(self, name: str, value: Sequence[bytes]) -> None:
        """``set``: replace every value of ``name``."""
        key = self._check(name, value)
        kept = [(k, v) for k, v in self._entries if k != key]
        self._entries = kept + [(key, bytes(v)) for v in value]

    def delete(self, name: str) -> None:
        """``delete``."""
        key = self._check(name)
        self._entries = [(k, v) for k, v in self._entries if k != key]

    def get_and_delete(self, name: str) -> list[bytes]:
        """``get-and-delete`` (0.3)."""
        key = self._check(name)
        found = [v for k, v in self._entries if k == key]
        self._entries = [(k, v) for k, v in self._entries if k != key]
        return found

    def append(self, name: str, value: bytes) -> None:
        """``append``."""
        key = self._check(name, [value])
        self._entries.append((key, bytes(value)))

    def entries(self) -> list[tuple[str, bytes]]:
        """``entries`` (0.2)."""
        return list(self._entries)

    def copy_all(self) -> list[tuple[str, bytes]]:
        """``copy-all`` (0.3)."""
        return list(self._entries)

    def clone(self) -> Fields:
        """``clone``: a mutable copy."""
        return Fields.of(self._entries, mutable=True)

    def __repr__(self) -> str:
        state = "mutable" if self._mutable else "immutable"
        return f"Fields({self._entries!r}, {state})"
