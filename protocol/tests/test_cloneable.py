"""to_cloneable / from_cloneable: the round-trip law per taxonomy member, and every refusal."""

from __future__ import annotations

import enum
import json
import math
import pickle
from collections import OrderedDict, namedtuple
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polyengine_protocol as pp

TAG = "polyengine.cloneable/1"

PREDICATES: list[Callable[[object], bool]] = [
    pp.is_component_exception,
    pp.is_trap,
    pp.is_dropped_error,
    pp.is_peer_trapped_error,
    pp.is_invalid_handle_error,
    pp.is_stream_producer_error,
    pp.is_wasi_exit,
    pp.is_error_context,
    pp.is_stream,
    pp.is_stream_writer,
    pp.is_future,
]


# Values the runtime and the WASI package mint, as this package sees them.


class RuntimeErrorContext(pp.RealmLocal):
    __polyengine_brand__ = pp.ERROR_CONTEXT

    def __init__(self, message: str) -> None:
        self.message = message

    def debug_message(self) -> str:
        return self.message


class HandRolledErrorContext:
    """A zero-import error-context carrier that only has ``debug_message``."""

    __polyengine_brand__ = "polyengine.errorContext/1"

    def __init__(self, message: str) -> None:
        self._message = message

    def debug_message(self) -> str:
        return self._message


class ExitError(Exception):
    """The WASI package's exit unwind, known here by its brand only."""

    __polyengine_brand__ = "polyengine.wasiExit/1"

    def __init__(self, code: int) -> None:
        super().__init__(f"the guest exited with status {code}")
        self.code = code
        self.ok = code == 0


class HandRolledTrap(Exception):
    """A branded trap from code that never imported this package: no code field."""

    __polyengine_brand__ = "polyengine.trap/1"


class HandRolledComponentException(Exception):
    __polyengine_brand__ = "polyengine.componentException/1"

    def __init__(self, payload: object) -> None:
        super().__init__("hand-rolled err")
        self.payload = payload


class AppError(Exception):
    pass


def handle(key: str) -> object:
    return type("Handle", (pp.RealmLocal,), {"__polyengine_brand__": key})()


def chained(top: BaseException, *below: BaseException) -> BaseException:
    """``top`` caused by ``below[0]``, caused by ``below[1]``, ..."""
    current = top
    for cause in below:
        current.__cause__ = cause
        current = cause
    return top


def raised(error: BaseException) -> BaseException:
    """``error`` with a real traceback."""
    try:
        raise error
    except BaseException as caught:
        return caught


# The matcher view: everything the contract lets a receiver observe.


def view(value: object) -> object:
    if isinstance(value, BaseException) or pp.is_error_context(value):
        fields: dict[str, object] = {
            "predicates": tuple(p(value) for p in PREDICATES),
        }
        if pp.is_error_context(value):
            message = getattr(value, "message", None)
            fields["message"] = message if isinstance(message, str) else value.debug_message()  # type: ignore[attr-defined]
            return fields
        assert isinstance(value, BaseException)
        message = getattr(value, "message", None)
        fields["message"] = message if isinstance(message, str) else str(value)
        if pp.is_component_exception(value):
            fields["payload"] = view(value.payload)  # type: ignore[attr-defined]
        if pp.is_trap(value):
            fields["code"] = getattr(value, "code", pp.UNSPECIFIED_TRAP_CODE)
        if pp.is_peer_trapped_error(value):
            fields["progress"] = value.progress  # type: ignore[attr-defined]
        if pp.is_wasi_exit(value):
            fields["ok"] = value.ok  # type: ignore[attr-defined]
            fields["exit_code"] = value.code  # type: ignore[attr-defined]
        if not pp.brands_of(value):
            fields["name"] = value.name if isinstance(value, pp.ClonedError) else class_name(value)
        fields["cause"] = view(value.__cause__)
        return fields
    if isinstance(value, dict):
        return {k: view(v) for k, v in value.items()}
    if isinstance(value, list):
        return [view(v) for v in value]
    if isinstance(value, tuple):
        return tuple(view(v) for v in value)
    return value


def class_name(error: BaseException) -> str:
    cls = type(error)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def assert_plain(data: object) -> None:
    """The output contract: only plain data, every container fresh and exact."""
    if isinstance(data, dict):
        assert type(data) is dict
        for key, item in data.items():
            assert type(key) is str
            assert_plain(item)
    elif isinstance(data, list | tuple):
        assert type(data) in (list, tuple)
        for item in data:
            assert_plain(item)
    else:
        assert type(data) in (type(None), bool, int, float, str, bytes), type(data)


def json_shaped(data: object) -> bool:
    if isinstance(data, dict):
        return all(json_shaped(v) for v in data.values())
    if type(data) is list:
        return all(json_shaped(v) for v in data)
    if isinstance(data, float):
        return math.isfinite(data)
    return type(data) in (type(None), bool, int, str)


def crossings(value: object) -> list[object]:
    """``value`` after each kind of process crossing this package supports."""
    data = to_plain(value)
    results = [
        pp.from_cloneable(data),
        pp.from_cloneable(pickle.loads(pickle.dumps(data))),
        pp.from_cloneable(pickle.loads(pickle.dumps(data, protocol=0))),
    ]
    if json_shaped(data):
        results.append(pp.from_cloneable(json.loads(json.dumps(data))))
    return results


def to_plain(value: object) -> object:
    data = pp.to_cloneable(value)
    assert_plain(data)
    return data


NESTED_PAYLOAD = {
    "kind": "connection-refused",
    "value": {
        "attempts": [1, 2, {"address": "10.0.0.1", "port": 443}],
        "context": RuntimeErrorContext("dial failed"),
        "raw": b"\x00\xff",
        "pair": ("a", [("k", 1)]),
        "ratio": 0.5,
        "retry": None,
        "flags": {"read": True, "write": False},
    },
}

JSON_PAYLOAD = {"kind": "timed-out", "value": {"after_ms": 250, "hosts": ["a", "b"], "x": None}}


def peer_fault() -> BaseException:
    """The canonical A7 chain: the peer error, an unbranded poisoning record, the trap."""
    trap = pp.Trap("wasm `unreachable` instruction executed", "unreachable")
    poisoned = RuntimeError("the instance was poisoned by a trap")
    return pp.PeerTrappedError("the peer instance trapped", chained(poisoned, trap), 12)


TAXONOMY: dict[str, Callable[[], object]] = {
    "component-exception nested": lambda: pp.ComponentException(NESTED_PAYLOAD, "refused"),
    "component-exception json": lambda: pp.ComponentException(JSON_PAYLOAD),
    "component-exception empty": lambda: pp.ComponentException(None),
    "component-exception caused": lambda: chained(
        pp.ComponentException({"kind": "io"}), OSError("disk"), pp.Trap("deep", "deadlock")
    ),
    "component-exception hand-rolled": lambda: HandRolledComponentException([{"kind": "x"}]),
    "trap": lambda: pp.Trap("out of bounds memory access", "out-of-bounds"),
    "trap hand-rolled without code": lambda: HandRolledTrap("guest trapped"),
    "trap raised": lambda: raised(pp.Trap("raised", "unreachable")),
    "dropped": pp.DroppedError,
    "dropped caused": lambda: chained(pp.DroppedError("gone"), ValueError("why")),
    "invalid-handle": lambda: pp.InvalidHandleError("used after transfer"),
    "peer-trapped canonical chain": peer_fault,
    "peer-trapped without cause": lambda: pp.PeerTrappedError("peer trapped"),
    "peer-trapped progress zero": lambda: pp.PeerTrappedError("p", pp.Trap("t"), 0),
    "stream-producer": lambda: pp.StreamProducerError("producer failed", AppError("bug")),
    "stream-producer without cause": lambda: pp.StreamProducerError("producer failed"),
    "error-context": lambda: RuntimeErrorContext("a guest error"),
    "error-context hand-rolled": lambda: HandRolledErrorContext("hand-rolled"),
    "wasi-exit ok": lambda: ExitError(0),
    "wasi-exit failure": lambda: ExitError(3),
    "error builtin": lambda: ValueError("bad value"),
    "error keyerror": lambda: KeyError("missing"),
    "error custom": lambda: AppError("custom class"),
    "error empty message": RuntimeError,
    "error raised with notes": lambda: _noted(raised(AppError("noted"))),
    "record of everything": lambda: {
        "errors": [peer_fault(), pp.DroppedError(), ExitError(1)],
        "context": RuntimeErrorContext("in a record"),
        "value": {"kind": "ok", "value": [1, 2.5, "s", True, None]},
    },
    "deep cause chain": lambda: chained(
        *[pp.PeerTrappedError(f"level {i}", progress=i) for i in range(50)],
        pp.Trap("bottom", "unreachable"),
    ),
}


def _noted(error: BaseException) -> BaseException:
    error.add_note("first note")
    error.add_note("second note")
    return error


@pytest.mark.parametrize("name", TAXONOMY)
def test_round_trip_law(name: str) -> None:
    original = TAXONOMY[name]()
    expected = view(original)
    for back in crossings(original):
        assert view(back) == expected


def test_the_trap_at_the_bottom_of_a_peer_fault_survives() -> None:
    for back in crossings(peer_fault()):
        assert pp.is_peer_trapped_error(back)
        assert isinstance(back, pp.PeerTrappedError)
        assert back.progress == 12
        poisoned = back.cause
        assert isinstance(poisoned, pp.ClonedError) and poisoned.name == "RuntimeError"
        assert not pp.brands_of(poisoned)
        trap = poisoned.__cause__
        assert pp.is_trap(trap)
        assert isinstance(trap, pp.Trap) and trap.code == "unreachable"
        assert trap.__cause__ is None


def test_rehydrated_values_are_local_canonical_classes() -> None:
    back = pp.from_cloneable(pp.to_cloneable(HandRolledComponentException({"kind": "x"})))
    assert type(back) is pp.ComponentException
    exit_back = pp.from_cloneable(pp.to_cloneable(ExitError(4)))
    assert pp.is_wasi_exit(exit_back) and isinstance(exit_back, Exception)
    context = pp.from_cloneable(pp.to_cloneable(RuntimeErrorContext("m")))
    assert pp.is_error_context(context) and not pp.is_realm_local(context)
    assert context.message == "m" and context.debug_message() == "m"  # type: ignore[attr-defined]
    assert context == pp.from_cloneable(pp.to_cloneable(HandRolledErrorContext("m")))
    assert len({context, pp.from_cloneable(pp.to_cloneable(RuntimeErrorContext("m")))}) == 1


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_rehydrated_values_pickle_plainly(protocol: int) -> None:
    for make in TAXONOMY.values():
        back = pp.from_cloneable(pp.to_cloneable(make()))
        again = pickle.loads(pickle.dumps(back, protocol=protocol))
        assert type(again) is type(back)
        if isinstance(back, BaseException):
            assert pp.brands_of(again) == pp.brands_of(back)
            assert str(again) == str(back)


def test_a_second_crossing_is_stable() -> None:
    for name, make in TAXONOMY.items():
        if "raised" in name:
            continue  # the first crossing turns the traceback into a note
        data = pp.to_cloneable(make())
        assert pp.to_cloneable(pp.from_cloneable(data)) == data, name


def test_unbranded_names() -> None:
    data: Any = pp.to_cloneable([ValueError("v"), AppError("a"), KeyError("k")])
    assert [d["name"] for d in data] == [
        "ValueError",
        f"{AppError.__module__}.AppError",
        "KeyError",
    ]
    back: Any = pp.from_cloneable(data)
    assert str(back[0]) == "ValueError: v"
    assert back[2].message == "'k'"
    assert repr(back[0]) == "ClonedError('ValueError', 'v')"
    assert str(pp.ClonedError("RuntimeError", "")) == "RuntimeError"


def test_the_envelope_shape() -> None:
    assert pp.to_cloneable(pp.Trap("m", "unreachable")) == {
        TAG: "polyengine.trap/1",
        "message": "m",
        "code": "unreachable",
    }
    assert pp.to_cloneable(pp.PeerTrappedError("m")) == {
        TAG: "polyengine.peerTrapped/1",
        "message": "m",
        "cause": None,
    }
    assert pp.to_cloneable(ExitError(2)) == {
        TAG: "polyengine.wasiExit/1",
        "message": "the guest exited with status 2",
        "ok": False,
        "code": 2,
    }
    assert pp.to_cloneable(RuntimeErrorContext("c")) == {
        TAG: "polyengine.errorContext/1",
        "message": "c",
    }
    assert pp.to_cloneable(ValueError("v")) == {TAG: "error", "name": "ValueError", "message": "v"}


def test_the_sender_traceback_becomes_a_note() -> None:
    data: Any = pp.to_cloneable(raised(AppError("x")))
    assert "in raised" in data["stack"]
    back: Any = pp.from_cloneable(data)
    assert back.__notes__[-1].startswith("Traceback in the sending process")
    assert "in raised" in back.__notes__[-1]
    assert back.__traceback__ is None


def test_notes_cross() -> None:
    back: Any = pp.from_cloneable(pp.to_cloneable(_noted(pp.Trap("t"))))
    assert back.__notes__ == ["first note", "second note"]


def test_declared_cause_attribute_of_a_hand_rolled_error_is_walked() -> None:
    class HandRolledPeer(Exception):
        __polyengine_brand__ = "polyengine.peerTrapped/1"

        def __init__(self, cause: BaseException) -> None:
            super().__init__("hand-rolled peer fault")
            self.cause = cause
            self.progress = 1

    back: Any = pp.from_cloneable(pp.to_cloneable(HandRolledPeer(pp.Trap("t", "deadlock"))))
    assert pp.is_trap(back.cause) and back.cause.code == "deadlock" and back.progress == 1


def test_brand_precedence_over_the_pill() -> None:
    # An error-context carries both its brand and the pill: it encodes.
    assert pp.is_realm_local(RuntimeErrorContext("x"))
    assert pp.to_cloneable(RuntimeErrorContext("x")) == {TAG: pp.ERROR_CONTEXT, "message": "x"}


# Plain data.


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Kind(enum.StrEnum):
    OK = "ok"


Point = namedtuple("Point", "x y")


def test_plain_data_normalization() -> None:
    data = {
        "bytearray": bytearray(b"ab"),
        "memoryview": memoryview(b"cd"),
        "int": Level.HIGH,
        "str": Kind.OK,
        "tuple": Point(1, 2),
        "ordered": OrderedDict(a=1),
    }
    out: Any = pp.to_cloneable(data)
    assert_plain(out)
    assert out == {
        "bytearray": b"ab",
        "memoryview": b"cd",
        "int": 3,
        "str": "ok",
        "tuple": (1, 2),
        "ordered": {"a": 1},
    }
    assert type(out["int"]) is int and type(out["str"]) is str and type(out["tuple"]) is tuple


def test_containers_are_fresh_and_aliasing_is_not_a_cycle() -> None:
    shared = [1, 2]
    value = {"a": shared, "b": shared, "t": (shared, shared)}
    out: Any = pp.to_cloneable(value)
    assert out == {"a": [1, 2], "b": [1, 2], "t": ([1, 2], [1, 2])}
    assert out["a"] is not shared and out["a"] is not out["b"]
    back: Any = pp.from_cloneable(out)
    assert back == value and back["a"] is not out["a"]


def test_special_floats_pass_through_pickle() -> None:
    out: Any = pp.from_cloneable(pickle.loads(pickle.dumps(pp.to_cloneable([math.inf, -0.0]))))
    assert out[0] == math.inf and math.copysign(1, out[1]) == -1
    nan: Any = pp.to_cloneable(math.nan)
    assert math.isnan(nan)


wit_keys = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.binary(max_size=20)
)
plain_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(wit_keys | st.text(max_size=5), inner, max_size=4),
    max_leaves=25,
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(wit_keys, inner, max_size=4),
    max_leaves=25,
)


@given(plain_values)
def test_plain_data_round_trips_through_pickle(value: object) -> None:
    data = pp.to_cloneable(value)
    assert_plain(data)
    assert data == value
    assert pp.from_cloneable(pickle.loads(pickle.dumps(data))) == value


@given(json_values)
def test_json_shaped_data_round_trips_through_json(value: object) -> None:
    data = pp.to_cloneable(value)
    assert json_shaped(data)
    assert pp.from_cloneable(json.loads(json.dumps(data))) == value


def _error_trees(payloads: st.SearchStrategy[object]) -> st.SearchStrategy[BaseException]:
    leaf = st.one_of(
        st.builds(pp.Trap, st.text(max_size=10), st.sampled_from(["unreachable", "deadlock"])),
        st.builds(pp.DroppedError, st.text(max_size=10)),
        st.builds(pp.InvalidHandleError, st.text(max_size=10)),
        st.builds(ValueError, st.text(max_size=10)),
        st.builds(ExitError, st.integers(0, 255)),
    )

    def extend(inner: st.SearchStrategy[BaseException]) -> st.SearchStrategy[BaseException]:
        return st.one_of(
            st.builds(
                lambda p, m, c: chained(pp.ComponentException(p, m), c),
                payloads,
                st.text(max_size=10),
                inner,
            ),
            st.builds(
                pp.PeerTrappedError,
                st.text(max_size=10),
                inner,
                st.none() | st.integers(0, 2**32),
            ),
            st.builds(pp.StreamProducerError, st.text(max_size=10), inner),
            st.builds(lambda m, c: chained(AppError(m), c), st.text(max_size=10), inner),
        )

    return st.recursive(leaf, extend, max_leaves=6)


@settings(max_examples=60)
@given(_error_trees(plain_values))
def test_error_trees_round_trip_through_pickle(error: BaseException) -> None:
    expected = view(error)
    data = pp.to_cloneable(error)
    assert_plain(data)
    assert view(pp.from_cloneable(pickle.loads(pickle.dumps(data)))) == expected


@settings(max_examples=60)
@given(_error_trees(json_values))
def test_error_trees_round_trip_through_json(error: BaseException) -> None:
    expected = view(error)
    data = pp.to_cloneable(error)
    assert json_shaped(data)
    assert view(pp.from_cloneable(json.loads(json.dumps(data)))) == expected
