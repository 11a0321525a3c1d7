"""The brand vocabulary and brand recognition.

embedder-api.md §"Module identity and @polyengine/protocol" (A9, A18, A19, A22)
and python-mapping.md §3. Every brand key is a generation-suffixed string,
spelled exactly as the contract's table spells it. A class carries its brand
as the class attribute ``__polyengine_brand__`` (one key, or a tuple or
frozenset of keys), and recognition reads that attribute from the value's
type, never ``isinstance`` against a concrete class: a value minted by
another copy of this package, or by a hand-rolled class carrying the right
attribute, is recognized alike.

Brands are contract markers, not a security boundary.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ABORTABLE",
    "BRAND_ATTRIBUTE",
    "BRAND_KEYS",
    "CLONEABLE_TAG",
    "COMPONENT_EXCEPTION",
    "DEFER_CANCEL",
    "DROPPED",
    "ERROR_CONTEXT",
    "FUTURE",
    "INVALID_HANDLE",
    "PEER_TRAPPED",
    "POLLABLE",
    "REALM_LOCAL",
    "RESOURCE_STATE",
    "RUNTIME_COPIES",
    "STREAM",
    "STREAM_PRODUCER",
    "STREAM_WRITER",
    "SUSPENDING",
    "TRAP",
    "WASI_EXIT",
    "brands_of",
    "has_brand",
]

# The brand table (embedder-api.md §"Module identity", A19 spelling).
COMPONENT_EXCEPTION: Final = "polyengine.componentException/1"
TRAP: Final = "polyengine.trap/1"
DROPPED: Final = "polyengine.dropped/1"
PEER_TRAPPED: Final = "polyengine.peerTrapped/1"
INVALID_HANDLE: Final = "polyengine.invalidHandle/1"
STREAM_PRODUCER: Final = "polyengine.streamProducer/1"
SUSPENDING: Final = "polyengine.suspending/1"
DEFER_CANCEL: Final = "polyengine.deferCancel/1"
ABORTABLE: Final = "polyengine.abortable/1"
STREAM: Final = "polyengine.stream/1"
STREAM_WRITER: Final = "polyengine.streamWriter/1"
FUTURE: Final = "polyengine.future/1"
ERROR_CONTEXT: Final = "polyengine.errorContext/1"
RESOURCE_STATE: Final = "polyengine.resourceState/1"
POLLABLE: Final = "polyengine.pollable/1"
WASI_EXIT: Final = "polyengine.wasiExit/1"
RUNTIME_COPIES: Final = "polyengine.runtimeCopies/1"

# Keys of the realm-boundary surface (embedder-api.md §"Realm boundaries
# and structured-clone-safe forms", A20): the realm-local pill and the tag
# property of a cloneable envelope.
REALM_LOCAL: Final = "polyengine.realmLocal/1"
CLONEABLE_TAG: Final = "polyengine.cloneable/1"

#: Every key of the brand table, in the table's order.
BRAND_KEYS: Final[tuple[str, ...]] = (
    COMPONENT_EXCEPTION,
    TRAP,
    DROPPED,
    PEER_TRAPPED,
    INVALID_HANDLE,
    STREAM_PRODUCER,
    SUSPENDING,
    DEFER_CANCEL,
    ABORTABLE,
    STREAM,
    STREAM_WRITER,
    FUTURE,
    ERROR_CONTEXT,
    RESOURCE_STATE,
    POLLABLE,
    WASI_EXIT,
    RUNTIME_COPIES,
)

#: The class attribute that carries a brand.
BRAND_ATTRIBUTE: Final = "__polyengine_brand__"

_NO_BRANDS: Final[frozenset[str]] = frozenset()


def _keys(carried: object) -> frozenset[str]:
    """Normalize a carried brand value: one key, or a tuple/frozenset of keys."""
    if isinstance(carried, str):
        return frozenset((carried,))
    if isinstance(carried, tuple | frozenset | set):
        return frozenset(k for k in carried if isinstance(k, str))
    return _NO_BRANDS


def brands_of(value: object) -> frozenset[str]:
    """The brand keys ``value`` carries through its type's ``__polyengine_brand__``.

    The attribute is read from the type, so a class object is not mistaken
    for one of its instances and an instance-level ``__getattr__`` is never
    consulted.
    """
    try:
        carried = getattr(type(value), BRAND_ATTRIBUTE, None)
    except Exception:  # a hostile metaclass: an unreadable brand is no brand
        return _NO_BRANDS
    return _keys(carried)


def has_brand(value: object, key: str) -> bool:
    """Whether ``value``'s type carries the brand ``key``."""
    return key in brands_of(value)
