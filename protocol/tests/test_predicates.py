"""Every recognition predicate against canonical instances, hand-rolled brands and look-alikes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import polyengine_protocol as pp

Predicate = Callable[[object], bool]

ERROR_PREDICATES: list[tuple[str, Predicate, str]] = [
    ("componentException", pp.is_component_exception, pp.COMPONENT_EXCEPTION),
    ("trap", pp.is_trap, pp.TRAP),
    ("dropped", pp.is_dropped_error, pp.DROPPED),
    ("peerTrapped", pp.is_peer_trapped_error, pp.PEER_TRAPPED),
    ("invalidHandle", pp.is_invalid_handle_error, pp.INVALID_HANDLE),
    ("streamProducer", pp.is_stream_producer_error, pp.STREAM_PRODUCER),
    ("wasiExit", pp.is_wasi_exit, pp.WASI_EXIT),
]

HANDLE_PREDICATES: list[tuple[str, Predicate, str]] = [
    ("stream", pp.is_stream, pp.STREAM),
    ("streamWriter", pp.is_stream_writer, pp.STREAM_WRITER),
    ("future", pp.is_future, pp.FUTURE),
    ("errorContext", pp.is_error_context, pp.ERROR_CONTEXT),
    ("pollable", pp.is_pollable, pp.POLLABLE),
    ("resourceState", pp.is_resource_wrapper, pp.RESOURCE_STATE),
]

ALL_PREDICATES = ERROR_PREDICATES + HANDLE_PREDICATES


class HandRolledExit(Exception):
    """What the WASI package's ExitError looks like to this package: the brand only."""

    __polyengine_brand__ = "polyengine.wasiExit/1"

    def __init__(self, code: int) -> None:
        super().__init__(f"exit {code}")
        self.code = code
        self.ok = code == 0


def canonical(name: str) -> object:
    """A canonical instance of each kind (handles: a minimal branded class, as the runtime's)."""
    errors: dict[str, object] = {
        "componentException": pp.ComponentException({"kind": "nope"}),
        "trap": pp.Trap("unreachable", "unreachable"),
        "dropped": pp.DroppedError(),
        "peerTrapped": pp.PeerTrappedError("peer trapped", progress=2),
        "invalidHandle": pp.InvalidHandleError("handle used after transfer"),
        "streamProducer": pp.StreamProducerError("producer failed", ValueError("x")),
        "wasiExit": HandRolledExit(3),
    }
    if name in errors:
        return errors[name]
    key = dict((n, k) for n, _, k in HANDLE_PREDICATES)[name]
    handle_class = type(f"Runtime_{name}", (pp.RealmLocal,), {"__polyengine_brand__": key})
    return handle_class()


def hand_rolled(key: str, *, exception: bool) -> object:
    """A zero-import hand-rolled value: a class carrying the brand key string."""
    if exception:
        cls = type("HandRolled", (Exception,), {"__polyengine_brand__": key})
        err = cls("hand-rolled")
        err.payload = {"kind": "x"}  # the component-exception shape needs a payload
        return err
    return type("HandRolled", (), {"__polyengine_brand__": key})()


LOOK_ALIKES: list[object] = [
    None,
    0,
    "polyengine.trap/1",
    {"__polyengine_brand__": "polyengine.trap/1", "payload": 1},
    [pp.TRAP],
    Exception("trap"),
    ValueError("polyengine.componentException/1"),
    type("Trap", (Exception,), {})("unbranded look-alike with the right name"),
    type("Stream", (), {"read": lambda self, n: b"", "drop": lambda self: None})(),
    object(),
]


@pytest.mark.parametrize(("name", "predicate", "key"), ALL_PREDICATES)
def test_canonical_instance_is_recognized_by_exactly_its_predicate(
    name: str, predicate: Predicate, key: str
) -> None:
    value = canonical(name)
    assert predicate(value)
    for other_name, other, _ in ALL_PREDICATES:
        if other_name != name:
            assert not other(value), other_name


@pytest.mark.parametrize(("name", "predicate", "key"), ALL_PREDICATES)
def test_hand_rolled_brand_is_honored(name: str, predicate: Predicate, key: str) -> None:
    is_error = (name, predicate, key) in ERROR_PREDICATES
    assert predicate(hand_rolled(key, exception=is_error))


@pytest.mark.parametrize(("name", "predicate", "key"), ALL_PREDICATES)
@pytest.mark.parametrize("value", LOOK_ALIKES, ids=lambda v: type(v).__name__)
def test_unbranded_look_alikes_are_not_recognized(
    name: str, predicate: Predicate, key: str, value: object
) -> None:
    assert not predicate(value)


@pytest.mark.parametrize(("name", "predicate", "key"), ERROR_PREDICATES)
def test_error_brands_require_an_exception(name: str, predicate: Predicate, key: str) -> None:
    assert not predicate(hand_rolled(key, exception=False))


def test_component_exception_requires_a_payload() -> None:
    cls = type("NoPayload", (Exception,), {"__polyengine_brand__": pp.COMPONENT_EXCEPTION})
    assert not pp.is_component_exception(cls("no payload"))
    err = cls("payload None is an empty err side")
    err.payload = None
    assert pp.is_component_exception(err)


def test_another_copy_is_recognized_through_a_brand_collection() -> None:
    class ForeignTrap(Exception):
        __polyengine_brand__ = frozenset({pp.TRAP})

    assert pp.is_trap(ForeignTrap("from another copy"))


def test_predicates_never_raise_on_strange_values() -> None:
    class Exploding:
        def __getattribute__(self, name: str) -> Any:
            raise RuntimeError(name)

    for _, predicate, _ in ALL_PREDICATES:
        assert predicate(Exploding()) is False
    assert pp.is_realm_local(Exploding()) is False
