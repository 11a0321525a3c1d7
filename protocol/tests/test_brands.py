"""The brand table and brand recognition (embedder-api.md §"Module identity", A9/A19/A22)."""

from __future__ import annotations

from typing import Any

import pytest

import polyengine_protocol as pp

# The seed's brand table, transcribed verbatim (A19 spelling), in its order.
SEED_TABLE = [
    "polyengine.componentException/1",
    "polyengine.trap/1",
    "polyengine.dropped/1",
    "polyengine.peerTrapped/1",
    "polyengine.invalidHandle/1",
    "polyengine.streamProducer/1",
    "polyengine.suspending/1",
    "polyengine.deferCancel/1",
    "polyengine.abortable/1",
    "polyengine.stream/1",
    "polyengine.streamWriter/1",
    "polyengine.future/1",
    "polyengine.errorContext/1",
    "polyengine.resourceState/1",
    "polyengine.pollable/1",
    "polyengine.wasiExit/1",
    "polyengine.runtimeCopies/1",
]


def test_brand_keys_match_the_seed_table_verbatim() -> None:
    assert list(pp.BRAND_KEYS) == SEED_TABLE
    named = [
        pp.COMPONENT_EXCEPTION,
        pp.TRAP,
        pp.DROPPED,
        pp.PEER_TRAPPED,
        pp.INVALID_HANDLE,
        pp.STREAM_PRODUCER,
        pp.SUSPENDING,
        pp.DEFER_CANCEL,
        pp.ABORTABLE,
        pp.STREAM,
        pp.STREAM_WRITER,
        pp.FUTURE,
        pp.ERROR_CONTEXT,
        pp.RESOURCE_STATE,
        pp.POLLABLE,
        pp.WASI_EXIT,
        pp.RUNTIME_COPIES,
    ]
    assert named == SEED_TABLE


def test_realm_boundary_keys() -> None:
    assert pp.REALM_LOCAL == "polyengine.realmLocal/1"
    assert pp.CLONEABLE_TAG == "polyengine.cloneable/1"
    assert pp.BRAND_ATTRIBUTE == "__polyengine_brand__"
    assert pp.PROTOCOL_GENERATION == 1
    assert all(key.endswith(f"/{pp.PROTOCOL_GENERATION}") for key in SEED_TABLE)


def test_no_key_keeps_a_retired_spelling() -> None:
    for key in [*SEED_TABLE, pp.REALM_LOCAL, pp.CLONEABLE_TAG]:
        assert key.startswith("polyengine.")
        assert "witError" not in key
        assert "deltic" not in key


@pytest.mark.parametrize(
    ("cls", "key"),
    [
        (pp.ComponentException, pp.COMPONENT_EXCEPTION),
        (pp.Trap, pp.TRAP),
        (pp.DroppedError, pp.DROPPED),
        (pp.PeerTrappedError, pp.PEER_TRAPPED),
        (pp.InvalidHandleError, pp.INVALID_HANDLE),
        (pp.StreamProducerError, pp.STREAM_PRODUCER),
    ],
)
def test_each_error_class_carries_its_brand_as_a_class_attribute(cls: type, key: str) -> None:
    assert cls.__dict__["__polyengine_brand__"] == key


def test_brands_of_reads_one_key_or_a_collection() -> None:
    class One:
        __polyengine_brand__ = pp.STREAM

    class Several:
        __polyengine_brand__ = (pp.ERROR_CONTEXT, pp.POLLABLE)

    class Frozen:
        __polyengine_brand__ = frozenset({pp.FUTURE})

    class Junk:
        __polyengine_brand__ = 42

    class JunkItems:
        __polyengine_brand__ = (pp.STREAM, 7)

    assert pp.brands_of(One()) == {pp.STREAM}
    assert pp.brands_of(Several()) == {pp.ERROR_CONTEXT, pp.POLLABLE}
    assert pp.brands_of(Frozen()) == {pp.FUTURE}
    assert pp.brands_of(Junk()) == frozenset()
    assert pp.brands_of(JunkItems()) == {pp.STREAM}
    assert pp.has_brand(Several(), pp.POLLABLE)
    assert not pp.has_brand(One(), pp.FUTURE)


def test_a_class_is_not_its_instances() -> None:
    class Stream:
        __polyengine_brand__ = pp.STREAM

    assert pp.is_stream(Stream())
    assert not pp.is_stream(Stream)
    assert not pp.is_trap(pp.Trap)
    assert not pp.is_component_exception(pp.ComponentException)


def test_instance_attributes_and_getattr_are_not_brands() -> None:
    class Anything:
        def __getattr__(self, name: str) -> Any:
            return pp.STREAM

    obj = Anything()
    assert not pp.is_stream(obj)

    class Plain:
        pass

    plain = Plain()
    plain.__polyengine_brand__ = pp.STREAM  # type: ignore[attr-defined]
    assert not pp.is_stream(plain)


def test_a_hostile_metaclass_reads_as_no_brand() -> None:
    class Meta(type):
        def __getattribute__(cls, name: str) -> Any:
            if name == "__polyengine_brand__":
                raise RuntimeError("no")
            return super().__getattribute__(name)

    class Hostile(metaclass=Meta):
        pass

    assert pp.brands_of(Hostile()) == frozenset()


def test_subclasses_inherit_brands() -> None:
    class GuestTrap(pp.Trap):
        pass

    assert pp.is_trap(GuestTrap("x", "unreachable"))
