"""``frozen_dataclass``: the type model's and plan's classes behave as frozen dataclasses do."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

from polyengine.types import model as m
from polyengine.types.record import frozen_dataclass


@frozen_dataclass(frozen=True, slots=True)
class Base:
    a: int


@frozen_dataclass(frozen=True, slots=True)
class Made(Base):
    b: str
    c: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class StdBase:
    a: int


@dataclasses.dataclass(frozen=True, slots=True)
class Std(StdBase):
    b: str
    c: tuple[int, ...] = ()


def test_the_same_behaviour_as_the_standard_decorator() -> None:
    ours, std = Made(1, "x", (2,)), Std(1, "x", (2,))
    assert repr(ours) == repr(std).replace("Std(", "Made(")
    assert ours == Made(1, "x", (2,)) and ours != Made(1, "y", (2,))
    assert hash(ours) == hash(Made(1, "x", (2,))) == hash(std)
    assert ours != std  # another class: never equal, as for dataclasses
    assert Made(1, b="x") == Made(a=1, b="x", c=())
    assert Made.__match_args__ == Std.__match_args__ == ("a", "b", "c")
    assert [f.name for f in dataclasses.fields(ours)] == ["a", "b", "c"]
    assert dataclasses.fields(Made)[2].default == ()
    assert dataclasses.is_dataclass(ours) and dataclasses.is_dataclass(Made)
    assert dataclasses.replace(ours, b="z") == Made(1, "z", (2,))
    assert dataclasses.asdict(ours) == {"a": 1, "b": "x", "c": (2,)}
    assert not hasattr(ours, "__dict__")
    assert Made.__init__.__qualname__ == "Made.__init__"
    match ours:
        case Made(a, b, c):
            assert (a, b, c) == (1, "x", (2,))
        case _:
            pytest.fail("no match")


def test_frozen() -> None:
    ours = Made(1, "x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours.a = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del ours.b  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "missing required argument: 'a'"),
        ((1,), {}, "missing required argument: 'b'"),
        ((1, "x", (), 4), {}, "takes 4 positional arguments but 5 were given"),
        ((1, "x"), {"a": 2}, "multiple values for argument 'a'"),
        ((1, "x"), {"d": 2}, "unexpected keyword argument 'd'"),
    ],
)
def test_bad_arguments_are_refused(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        Made(*args, **kwargs)


def test_pickle_and_copy_round_trip() -> None:
    t = m.Record((m.Field("f", m.List(m.Option(m.U8()), 4)), m.Field("g", m.String())))
    for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(t, protocol=proto)) == t
    assert copy.deepcopy(t) == t and copy.copy(t) == t
    with pytest.raises(TypeError, match="a state of 1 fields, expected 2"):
        m.List.__new__(m.List).__setstate__([m.U8()])


def test_unsupported_forms_are_refused() -> None:
    with pytest.raises(TypeError, match="frozen=True, slots=True only"):
        frozen_dataclass(frozen=True)

    class Plain:
        pass

    with pytest.raises(TypeError, match="bases made the same way"):

        @frozen_dataclass(frozen=True, slots=True)
        class Child(Plain):
            x: int

    with pytest.raises(TypeError, match="field\\(\\) is not supported"):

        @frozen_dataclass(frozen=True, slots=True)
        class WithField:
            x: list[int] = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="non-default argument 'y'"):

        @frozen_dataclass(frozen=True, slots=True)
        class Order:
            x: int = 0
            y: int  # type: ignore[misc]


def test_a_standard_dataclass_may_derive_from_one() -> None:
    @dataclasses.dataclass(frozen=True)
    class Derived(m.ValType):
        x: int

    assert Derived(1) == Derived(1) and dataclasses.fields(Derived)[0].name == "x"


class _CountedHash:
    """A field value that counts how often it is hashed."""

    calls = 0

    def __hash__(self) -> int:
        _CountedHash.calls += 1
        return 7


def test_the_hash_is_computed_once() -> None:
    """Values are immutable, so their hash (of the whole nested tree) is kept after the
    first use; copies and unpickled values compute their own, equal to it."""
    _CountedHash.calls = 0
    value = Made(1, "x", (_CountedHash(),))  # type: ignore[arg-type]
    first = hash(value)
    assert [hash(value) for _ in range(5)] == [first] * 5
    assert _CountedHash.calls == 1
    assert {value: 1}[value] == 1
    again = copy.copy(value)
    assert hash(again) == first and again == value
    assert _CountedHash.calls == 2
    assert "_record_hash" not in [f.name for f in dataclasses.fields(Made)]
    plain = Made(2, "y")
    assert hash(pickle.loads(pickle.dumps(plain))) == hash(plain)


def test_equal_types_of_distinct_objects_compare_once_and_stay_equal() -> None:
    """Two equal type trees made separately (a stream's element type against a
    built-in's) compare equal every time; the pair is remembered by identity, so
    their fields are compared once; unequal ones stay unequal."""
    from polyengine.types import record

    def tree() -> m.ValType:
        return m.Result(m.Option(m.List(m.U8())), m.Variant((m.Case("x", m.String()),)))

    a, b, other = tree(), tree(), m.Result(m.Option(m.List(m.U16())), None)
    assert a is not b
    record._EQUAL.clear()
    assert a == b and b == a
    assert (id(a), id(b)) in record._EQUAL
    calls = 0
    real = record._values

    def counted(self: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
        nonlocal calls
        calls += 1
        return real(self, names)

    record._values = counted  # type: ignore[assignment]
    try:
        assert a == b
        assert calls == 0  # remembered: no field walk
        assert a != other
    finally:
        record._values = real  # type: ignore[assignment]


def test_plan_records_are_compared_by_value_and_not_held() -> None:
    from polyengine.types import record

    record._EQUAL.clear()
    one, two = Made(1, "x", (2,)), Made(1, "x", (2,))
    assert one == two and one != Made(1, "x", (3,))
    assert not record._EQUAL  # not the type model: nothing remembered


def test_a_type_with_an_unhashable_field_compares_by_value_and_is_not_held() -> None:
    from polyengine.types import record

    record._EQUAL.clear()
    fields = [m.U8()]
    one, two = m.Tuple(fields), m.Tuple([m.U8()])  # type: ignore[arg-type]
    assert one == two
    assert (id(one), id(two)) not in record._EQUAL  # a list may change: not remembered
    fields.append(m.U8())
    assert one != two
