"""suspending / defer_cancel / abortable: both spellings, the class authority, the refusals."""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import pickle
from collections.abc import Callable
from typing import Any

import pytest

import polyengine_protocol as pp

MARKS: list[tuple[Callable[[Any], Any], Callable[[object], bool], str]] = [
    (pp.suspending, pp.is_suspending, pp.SUSPENDING),
    (pp.defer_cancel, pp.is_defer_cancel, pp.DEFER_CANCEL),
    (pp.abortable, pp.is_abortable, pp.ABORTABLE),
]
IDS = ["suspending", "defer_cancel", "abortable"]


def now() -> int:
    return 42


async def wait_for(how_long: int) -> int:
    await asyncio.sleep(0)
    return how_long


@pytest.mark.parametrize(("mark", "is_marked", "key"), MARKS, ids=IDS)
def test_function_wrapper_form(
    mark: Callable[[Any], Any], is_marked: Callable[[object], bool], key: str
) -> None:
    marked = mark(now)
    assert is_marked(marked)
    assert marked() == 42
    assert marked.__name__ == "now"
    assert marked.__wrapped__ is now
    assert not is_marked(now), "the original function is left untouched"
    assert pp.marks_of(marked) == {key}


@pp.suspending
def module_level(n: int) -> int:
    return n * 2


def test_marked_callables_pickle() -> None:
    assert pickle.loads(pickle.dumps(module_level)) is module_level
    assert pickle.loads(pickle.dumps(Socket.block)) is Socket.block
    by_value = pickle.loads(pickle.dumps(pp.defer_cancel(pp.suspending(len))))
    assert by_value is not len and by_value([1]) == 1
    assert pp.marks_of(by_value) == {pp.SUSPENDING, pp.DEFER_CANCEL}
    assert copy.copy(module_level) is module_level
    anonymous = pickle.loads(pickle.dumps(pp.abortable(functools.partial(max, 3))))
    assert anonymous(1) == 3 and pp.is_abortable(anonymous)


def test_only_its_own_mark() -> None:
    marked = pp.suspending(now)
    assert not pp.is_defer_cancel(marked)
    assert not pp.is_abortable(marked)


def test_several_marks_sit_on_one_function() -> None:
    marked = pp.abortable(pp.defer_cancel(pp.suspending(now)))
    assert pp.is_suspending(marked) and pp.is_defer_cancel(marked) and pp.is_abortable(marked)
    assert marked.__wrapped__ is now, "marks merge instead of nesting"
    assert marked() == 42
    assert "abortable, defer_cancel, suspending" in repr(marked)


def test_marking_twice_is_idempotent() -> None:
    twice = pp.suspending(pp.suspending(now))
    assert pp.marks_of(twice) == {pp.SUSPENDING}


def test_coroutine_functions_stay_coroutine_functions() -> None:
    marked = pp.abortable(wait_for)
    assert inspect.iscoroutinefunction(marked)
    assert str(inspect.signature(marked)) == "(how_long: 'int') -> 'int'"
    assert asyncio.run(marked(5)) == 5


def test_other_callables_are_wrapped() -> None:
    marked_builtin = pp.suspending(len)
    assert pp.is_suspending(marked_builtin) and marked_builtin([1, 2]) == 2
    marked_partial = pp.suspending(functools.partial(max, 3))
    assert pp.is_suspending(marked_partial) and marked_partial(1) == 3

    class Clock:
        def __init__(self) -> None:
            self.t = 7

        def now(self) -> int:
            return self.t

    clock = Clock()
    bound = pp.suspending(clock.now)
    assert pp.is_suspending(bound) and bound() == 7
    assert not pp.is_suspending(clock.now)


def test_hand_rolled_marks_are_honored() -> None:
    def f() -> None: ...

    f.__polyengine_brand__ = pp.SUSPENDING  # type: ignore[attr-defined]
    assert pp.is_suspending(f) and not pp.is_abortable(f)

    def g() -> None: ...

    g.__polyengine_brand__ = frozenset({pp.DEFER_CANCEL, pp.ABORTABLE})  # type: ignore[attr-defined]
    assert pp.is_defer_cancel(g) and pp.is_abortable(g) and not pp.is_suspending(g)
    assert pp.marks_of(pp.suspending(g)) == {pp.SUSPENDING, pp.DEFER_CANCEL, pp.ABORTABLE}


def test_unmarked_values() -> None:
    for value in [now, len, None, 3, "polyengine.suspending/1", object(), lambda: None]:
        assert not pp.is_suspending(value)
        assert pp.marks_of(value) == frozenset()


def test_non_mark_brands_are_not_marks() -> None:
    def f() -> None: ...

    f.__polyengine_brand__ = pp.STREAM  # type: ignore[attr-defined]
    assert pp.marks_of(f) == frozenset()


class Socket:
    """A host-implemented resource whose members carry every spelling of the marks."""

    def __init__(self, name: str) -> None:
        self.name = name

    @pp.suspending
    def block(self, n: int) -> tuple[str, int]:
        return (self.name, n)

    @pp.defer_cancel
    async def flush(self) -> str:
        return self.name

    @pp.suspending
    @staticmethod
    def create_outer(n: int) -> int:
        return n + 1

    @staticmethod
    @pp.suspending
    def create_inner(n: int) -> int:
        return n + 2

    @pp.abortable
    @classmethod
    def connect_outer(cls, n: int) -> tuple[type, int]:
        return (cls, n)

    @classmethod
    @pp.abortable
    def connect_inner(cls, n: int) -> tuple[type, int]:
        return (cls, n)

    @pp.suspending
    @pp.abortable
    @classmethod
    def both(cls) -> type:
        return cls

    def plain(self) -> str:
        return self.name


class SubSocket(Socket):
    pass


def test_instance_methods_bind_and_stay_marked() -> None:
    s = Socket("a")
    assert s.block(3) == ("a", 3)
    assert pp.is_suspending(s.block)
    assert pp.is_suspending(Socket.block)
    assert pp.is_suspending(inspect.getattr_static(Socket, "block"))
    assert pp.is_defer_cancel(s.flush) and asyncio.run(s.flush()) == "a"
    assert inspect.iscoroutinefunction(s.flush)
    assert str(inspect.signature(s.block)) == "(n: 'int') -> 'tuple[str, int]'"
    assert not pp.is_suspending(s.plain)


def test_staticmethods_in_either_order() -> None:
    s = Socket("a")
    for name, result in [("create_outer", 2), ("create_inner", 3)]:
        assert getattr(Socket, name)(1) == result
        assert getattr(s, name)(1) == result
        assert pp.is_suspending(getattr(Socket, name))
        assert pp.is_suspending(getattr(s, name))
        assert pp.is_suspending(Socket.__dict__[name]), "the staticmethod object itself"


def test_classmethods_in_either_order() -> None:
    s = Socket("a")
    for name in ["connect_outer", "connect_inner"]:
        assert getattr(Socket, name)(1) == (Socket, 1)
        assert getattr(s, name)(1) == (Socket, 1)
        assert getattr(SubSocket, name)(1) == (SubSocket, 1)
        assert pp.is_abortable(getattr(Socket, name))
        assert pp.is_abortable(getattr(s, name))
        assert pp.is_abortable(Socket.__dict__[name]), "the classmethod object itself"
    assert Socket.both() is Socket
    assert pp.marks_of(Socket.__dict__["both"]) == {pp.SUSPENDING, pp.ABORTABLE}


def test_the_class_is_the_authority_for_methods() -> None:
    s = Socket("a")

    def override(n: int) -> tuple[str, int]:
        return ("override", n)

    s.block = override  # type: ignore[method-assign]
    assert s.block(1) == ("override", 1), "the instance override changes the body..."
    assert pp.is_suspending(inspect.getattr_static(type(s), "block")), "...never the mark"
    other = Socket("b")
    assert pp.is_suspending(other.block), "other instances are unaffected"
    assert pp.is_suspending(SubSocket("c").block), "subclasses inherit marked methods"


def test_a_hand_marked_method_relays_through_bound_methods() -> None:
    class Pollable:
        def block(self) -> None: ...

        block.__polyengine_brand__ = pp.SUSPENDING  # type: ignore[attr-defined]

    assert pp.is_suspending(Pollable().block)


@pytest.mark.parametrize(("mark", "is_marked", "key"), MARKS, ids=IDS)
def test_constructors_are_refused_at_class_definition(
    mark: Callable[[Any], Any], is_marked: Callable[[object], bool], key: str
) -> None:
    with pytest.raises(TypeError, match=r"cannot mark .*__init__: constructors are never"):

        class A:
            @mark
            def __init__(self) -> None: ...

    with pytest.raises(TypeError, match=r"cannot mark .*__new__: constructors are never"):

        class B:
            @mark
            def __new__(cls) -> B:
                return object.__new__(cls)

    with pytest.raises(TypeError, match=r"cannot mark .*__new__: constructors are never"):

        class C:
            @mark
            @staticmethod
            def __new__(cls: type) -> object:
                return object.__new__(cls)


def _init(self: object) -> None: ...


def test_a_constructor_assigned_under_another_name_is_refused_by_set_name() -> None:
    # Python 3.11 wraps errors raised by __set_name__ in a RuntimeError.
    with pytest.raises((TypeError, RuntimeError)) as info:

        class A:
            __init__ = pp.suspending(_init)

    error: BaseException | None = info.value
    while error is not None and not isinstance(error, TypeError):
        error = error.__cause__
    assert error is not None
    assert "A.__init__: constructors are never markable" in str(error)


def test_the_same_function_is_fine_under_a_method_name() -> None:
    class A:
        init = pp.suspending(_init)

    assert pp.is_suspending(A().init)


def test_a_free_function_named_like_a_constructor_is_fine() -> None:
    # Only a class-body position makes a constructor.
    namespace: dict[str, Any] = {}
    exec("def __init__():\n    return 1\n", namespace)
    assert pp.suspending(namespace["__init__"])() == 1


@pytest.mark.parametrize(("mark", "is_marked", "key"), MARKS, ids=IDS)
def test_non_method_positions_are_refused(
    mark: Callable[[Any], Any], is_marked: Callable[[object], bool], key: str
) -> None:
    name = IDS[[k for _, _, k in MARKS].index(key)]
    with pytest.raises(TypeError, match=rf"{name} cannot mark a property"):

        class A:
            @mark
            @property
            def size(self) -> int:
                return 1

    with pytest.raises(TypeError, match=rf"{name} cannot mark a cached_property"):

        class B:
            @mark
            @functools.cached_property
            def size(self) -> int:
                return 1

    with pytest.raises(TypeError, match=rf"{name} marks callables, not int objects"):

        class C:
            limit = mark(3)

    with pytest.raises(TypeError, match=rf"{name} cannot mark the class Socket"):
        mark(Socket)
    with pytest.raises(TypeError, match=rf"{name} marks callables, not str objects"):
        mark(staticmethod("not callable"))
