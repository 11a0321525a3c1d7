"""The canonical error classes: fields, validation, messages and pickling."""

from __future__ import annotations

import copy
import enum
import pickle
from collections.abc import Callable
from typing import Any

import pytest

import polyengine_protocol as pp


class GuestTrap(pp.Trap):
    """A subclass with its own constructor signature still pickles (init is bypassed)."""

    def __init__(self, func: str) -> None:
        super().__init__(f"{func} trapped", "unreachable")
        self.func = func


def roundtrip(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def test_component_exception_fields() -> None:
    e = pp.ComponentException({"kind": "timed-out"}, "took too long")
    assert e.payload == {"kind": "timed-out"}
    assert e.message == "took too long"
    assert str(e) == "took too long"
    assert isinstance(e, Exception)


def test_component_exception_default_message_is_bounded() -> None:
    e = pp.ComponentException({"kind": "x", "value": "y" * 10_000})
    assert e.message.startswith("component error result: ")
    assert "'x'" in e.message
    assert len(e.message) < 300
    assert pp.ComponentException(None).payload is None


def test_trap_fields_and_code() -> None:
    t = pp.Trap("wasm `unreachable` instruction executed", "unreachable")
    assert (t.message, t.code, str(t)) == (
        "wasm `unreachable` instruction executed",
        "unreachable",
        "wasm `unreachable` instruction executed",
    )
    assert pp.Trap("no code given").code == pp.UNSPECIFIED_TRAP_CODE == "unspecified"
    assert repr(t) == "Trap('wasm `unreachable` instruction executed', code='unreachable')"


def test_a_str_enum_code_becomes_its_plain_value() -> None:
    class TrapCode(enum.StrEnum):
        INVALID_UTF8 = "invalid-utf8"

    t = pp.Trap("bad string", TrapCode.INVALID_UTF8)
    assert type(t.code) is str and t.code == "invalid-utf8" == TrapCode.INVALID_UTF8
    assert pp.to_cloneable(t) == {
        pp.CLONEABLE_TAG: pp.TRAP,
        "message": "bad string",
        "code": "invalid-utf8",
    }


@pytest.mark.parametrize("code", ["", 3, None])
def test_trap_refuses_a_bad_code(code: Any) -> None:
    with pytest.raises(TypeError, match="trap code must be a non-empty str"):
        pp.Trap("m", code)


def test_messages_must_be_str() -> None:
    with pytest.raises(TypeError, match="error message must be a str, not int"):
        pp.Trap(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="error message must be a str, not bytes"):
        pp.ComponentException(1, b"m")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a str"):
        pp.SuspensionUnavailable(None)  # type: ignore[arg-type]


def test_dropped_error_has_a_default_message() -> None:
    assert "dropped" in pp.DroppedError().message
    assert pp.DroppedError("custom").message == "custom"


def test_invalid_handle_error_is_a_value_error() -> None:
    assert isinstance(pp.InvalidHandleError("closed"), ValueError)


def test_peer_trapped_error_cause_is_the_dunder_cause() -> None:
    trap = pp.Trap("boom", "unreachable")
    e = pp.PeerTrappedError("the peer trapped", trap, 5)
    assert e.cause is trap
    assert e.__cause__ is trap
    assert e.progress == 5
    e.cause = None
    assert e.__cause__ is None
    assert pp.PeerTrappedError("no count").progress is None


@pytest.mark.parametrize("progress", [-1, 1.5, True, "3"])
def test_peer_trapped_error_refuses_a_bad_progress(progress: Any) -> None:
    with pytest.raises(TypeError, match="progress must be a non-negative int or None"):
        pp.PeerTrappedError("m", None, progress)


def test_causes_must_be_exceptions() -> None:
    with pytest.raises(TypeError, match="cause must be an exception or None, not str"):
        pp.PeerTrappedError("m", "not an exception")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cause must be an exception or None"):
        pp.StreamProducerError("m", 3)  # type: ignore[arg-type]
    e = pp.StreamProducerError("m")
    with pytest.raises(TypeError):
        e.cause = "x"  # type: ignore[assignment]


def test_stream_producer_error_cause() -> None:
    boom = OSError("connection reset")
    e = pp.StreamProducerError("the producer failed", boom)
    assert e.cause is boom and e.__cause__ is boom


def test_suspension_unavailable_is_an_unbranded_runtime_error() -> None:
    e = pp.SuspensionUnavailable("suspend=False")
    assert isinstance(e, RuntimeError)
    assert pp.brands_of(e) == frozenset()
    back = roundtrip(e)
    assert type(back) is pp.SuspensionUnavailable and back.message == "suspend=False"


ALL_ERRORS: list[Callable[[], Exception]] = [
    lambda: pp.ComponentException({"kind": "err", "value": [1, (2, b"\x00"), {"x": None}]}, "m"),
    lambda: pp.ComponentException(None),
    lambda: pp.Trap("out of bounds memory access", "out-of-bounds"),
    lambda: pp.Trap("plain"),
    pp.DroppedError,
    lambda: pp.DroppedError("custom"),
    lambda: pp.InvalidHandleError("used after transfer"),
    lambda: pp.PeerTrappedError("peer trapped", pp.Trap("x"), 7),
    lambda: pp.PeerTrappedError("peer trapped"),
    lambda: pp.StreamProducerError("producer failed", ValueError("v")),
    lambda: pp.SuspensionUnavailable("no suspension"),
    lambda: GuestTrap("run"),
]


FIELDS = ("payload", "message", "code", "progress", "func", "args")


@pytest.mark.parametrize("make", ALL_ERRORS, ids=lambda make: repr(make()))
@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_plain_pickling_keeps_every_field(make: Callable[[], Any], protocol: int) -> None:
    error = make()
    error.add_note("a note survives")
    back = pickle.loads(pickle.dumps(error, protocol=protocol))
    assert type(back) is type(error)
    assert pp.brands_of(back) == pp.brands_of(error)
    for field in FIELDS:
        assert getattr(back, field, "absent") == getattr(error, field, "absent"), field
    assert str(back) == str(error)
    assert back.__notes__ == ["a note survives"]


def test_plain_pickling_drops_the_cause_chain_like_every_exception() -> None:
    # python-mapping.md §8: to_cloneable is the form that keeps cause chains.
    e = pp.PeerTrappedError("peer trapped", pp.Trap("x"), 1)
    assert roundtrip(e).cause is None


def test_unpicklable_payload_fails_at_the_sender() -> None:
    e = pp.ComponentException({"callback": lambda: None})
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(e)


def test_copy_keeps_fields() -> None:
    e = pp.PeerTrappedError("m", None, 3)
    assert copy.copy(e).progress == 3
    assert copy.deepcopy(pp.ComponentException([1, [2]])).payload == [1, [2]]


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (pp.ComponentException(1, "m"), "ComponentException(1, message='m')"),
        (pp.PeerTrappedError("m", None, 2), "PeerTrappedError('m', progress=2)"),
        (pp.DroppedError("d"), "DroppedError('d')"),
        (pp.InvalidHandleError("i"), "InvalidHandleError('i')"),
    ],
)
def test_reprs(error: Exception, expected: str) -> None:
    assert repr(error) == expected


def test_component_exception_is_generic_for_annotations() -> None:
    alias = pp.ComponentException[dict[str, str]]
    assert alias.__origin__ is pp.ComponentException  # type: ignore[attr-defined]
