"""Host-implemented resources: world-level classes and type-checked resource positions.

python-mapping.md §5: a host resource is a plain class provided under the
resource's PascalCase name on its interface's provider, or at the top level
of the imports mapping for a world-level resource. A value lowered into an
``own``/``borrow`` of a host resource must be an instance of that class; one
lowered into a guest resource must be a wrapper of that very resource type.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

import polyengine
from polyengine.abi import HostResultError
from polyengine_protocol import is_trap, suspending

from .components import GUEST_RESOURCE, HOST_RESOURCE, Blob

Wat = Callable[[str], bytes]

#: a world-level resource ``cell`` with a constructor, a method, a static and
#: a function returning ``own<cell>``; exports pass cells in and out
WORLD_CELL = """
(component
  (import "cell" (type $cell (sub resource)))
  (import "[constructor]cell" (func $ctor (param "v" u32) (result (own $cell))))
  (import "[method]cell.get" (func $get (param "self" (borrow $cell)) (result u32)))
  (import "[static]cell.kind" (func $kind (result u32)))
  (import "make" (func $make (param "v" u32) (result (own $cell))))
  (core func $ctor (canon lower (func $ctor)))
  (core func $get (canon lower (func $get)))
  (core func $kind (canon lower (func $kind)))
  (core func $make (canon lower (func $make)))
  (core func $drop (canon resource.drop $cell))
  (core module $m
    (import "h" "ctor" (func $ctor (param i32) (result i32)))
    (import "h" "get" (func $get (param i32) (result i32)))
    (import "h" "kind" (func $kind (result i32)))
    (import "h" "make" (func $make (param i32) (result i32)))
    (import "h" "drop" (func $drop (param i32)))
    (func (export "run") (param i32) (result i32) (local $h i32) (local $n i32)
      (local.set $h (call $ctor (local.get 0)))
      (local.set $n (call $get (local.get $h)))
      (call $drop (local.get $h))
      (i32.add (local.get $n) (call $kind)))
    (func (export "made") (param i32) (result i32) (local $h i32) (local $n i32)
      (local.set $h (call $make (local.get 0)))
      (local.set $n (call $get (local.get $h)))
      (call $drop (local.get $h))
      (local.get $n))
    (func (export "keep") (param i32) (result i32) (local.get 0))
    (func (export "peek") (param i32) (result i32) (local $n i32)
      (local.set $n (call $get (local.get 0)))
      (call $drop (local.get 0))
      (local.get $n))
    (func (export "discard") (param i32) (call $drop (local.get 0))))
  (core instance $i (instantiate $m
    (with "h" (instance
      (export "ctor" (func $ctor)) (export "get" (func $get)) (export "kind" (func $kind))
      (export "make" (func $make)) (export "drop" (func $drop))))))
  (func (export "run") (param "v" u32) (result u32) (canon lift (core func $i "run")))
  (func (export "made") (param "v" u32) (result u32) (canon lift (core func $i "made")))
  (func (export "keep") (param "c" (own $cell)) (result (own $cell))
    (canon lift (core func $i "keep")))
  (func (export "peek") (param "c" (borrow $cell)) (result u32)
    (canon lift (core func $i "peek")))
  (func (export "discard") (param "c" (own $cell)) (canon lift (core func $i "discard")))
)
"""

#: a world-level resource the guest only receives (no member of it is imported)
WORLD_OPAQUE = """
(component
  (import "cell" (type $cell (sub resource)))
  (import "make" (func $make (param "v" u32) (result (own $cell))))
  (core func $make (canon lower (func $make)))
  (core func $drop (canon resource.drop $cell))
  (core module $m
    (import "h" "make" (func $make (param i32) (result i32)))
    (import "h" "drop" (func $drop (param i32)))
    (func (export "made") (param i32) (call $drop (call $make (local.get 0))))
    (func (export "keep") (param i32) (result i32) (local.get 0)))
  (core instance $i (instantiate $m
    (with "h" (instance (export "make" (func $make)) (export "drop" (func $drop))))))
  (func (export "made") (param "v" u32) (canon lift (core func $i "made")))
  (func (export "keep") (param "c" (own $cell)) (result (own $cell))
    (canon lift (core func $i "keep")))
)
"""


def run(coro: Any) -> Any:
    return asyncio.run(coro)


class Cell:
    """A host resource: ``__init__`` is the constructor, ``close`` the destructor."""

    closed: ClassVar[list[int]] = []

    def __init__(self, v: int) -> None:
        self.v = v

    def get(self) -> int:
        return self.v * 10

    @staticmethod
    def kind() -> int:
        return 3

    def close(self) -> None:
        Cell.closed.append(self.v)


class SubCell(Cell):
    pass


def world_imports(**extra: Any) -> dict[str, Any]:
    return {"Cell": Cell, "make": Cell, **extra}


# -- world-level resolution -------------------------------------------------------------


def test_world_level_resource_resolves_constructor_method_static(wat: Wat) -> None:
    Cell.closed = []

    async def main() -> None:
        inst = await polyengine.instantiate(wat(WORLD_CELL), world_imports())
        assert await inst.exports.run(4) == 43
        assert await inst.exports.made(5) == 50
        c = Cell(6)
        assert await inst.exports.peek(c) == 60
        assert await inst.exports.keep(c) is c
        await inst.exports.discard(c)

    run(main())
    # the guest's drops of its last own handles: run(4), made(5), discard(c)
    assert Cell.closed == [4, 5, 6]


def test_world_level_resource_on_the_task_model_path(wat: Wat) -> None:
    """A ``suspending()`` import puts the instance on the task model; the class still binds."""

    async def later(v: int) -> Cell:
        await asyncio.sleep(0)
        return Cell(v)

    async def main() -> None:
        imports = world_imports(make=suspending(later))
        inst = await polyengine.instantiate(wat(WORLD_CELL), imports)
        assert await inst.exports.run(1) == 13
        assert await inst.exports.made(2) == 20
        with pytest.raises(TypeError, match=r"parameter `c`: expected an instance of Cell"):
            await inst.exports.keep("not a cell")
        assert await inst.exports.run(1) == 13

    run(main())


def test_world_level_resource_class_missing_names_the_key(wat: Wat) -> None:
    component = wat(WORLD_CELL)
    with pytest.raises(polyengine.MissingImportError) as info:
        run(polyengine.instantiate(component, {"make": Cell}))
    message = str(info.value)
    assert "imports['Cell']" in message
    assert "resource 'cell'" in message
    assert "[constructor]cell" in message
    assert "imports['[constructor]cell']" not in message


@pytest.mark.parametrize("key", ["cell"])
def test_world_level_resource_class_under_another_spelling(wat: Wat, key: str) -> None:
    with pytest.raises(polyengine.MissingImportError) as info:
        run(polyengine.instantiate(wat(WORLD_CELL), {key: Cell, "make": Cell}))
    message = str(info.value)
    assert "imports['Cell']" in message
    assert f"imports[{key!r}] is given, but a resource class goes under 'Cell'" in message


def test_world_level_class_without_the_method(wat: Wat) -> None:
    class NoGet:
        def __init__(self, v: int) -> None:
            pass

        @staticmethod
        def kind() -> int:
            return 0

    with pytest.raises(polyengine.MissingImportError, match=r"\[method\]cell\.get.*'get'"):
        run(polyengine.instantiate(wat(WORLD_CELL), {"Cell": NoGet, "make": NoGet}))


def test_interface_level_resource_still_resolves(wat: Wat) -> None:
    store = SimpleNamespace(Blob=Blob, take=lambda b: 7, give=lambda: Blob("given"))

    async def main() -> None:
        inst = await polyengine.instantiate(wat(HOST_RESOURCE), {"test:demo/store": store})
        assert await inst.exports.run() == 105
        assert await inst.exports.round_trip() == 7

    run(main())


# -- type-checked host resource positions ---------------------------------------------


@pytest.mark.parametrize(
    ("export", "value", "kind", "got"),
    [
        ("keep", "not a cell", "own", "str 'not a cell'"),
        ("keep", None, "own", "NoneType None"),
        ("keep", 5, "own", "int 5"),
        ("peek", object(), "borrow", "object <object object"),
        ("discard", [], "own", "list []"),
    ],
)
def test_export_argument_must_be_an_instance_of_the_host_class(
    wat: Wat, export: str, value: object, kind: str, got: str
) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(WORLD_CELL), world_imports())
        with pytest.raises(TypeError) as info:
            await getattr(inst.exports, export)(value)
        assert not is_trap(info.value)
        message = str(info.value)
        assert message.startswith(f"parameter `c`: expected an instance of Cell for {kind}<cell>")
        assert got in message
        # refused before the call: the instance is not poisoned
        assert await inst.exports.run(2) == 23

    run(main())


def test_a_subclass_instance_is_accepted(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(WORLD_CELL), world_imports())
        s = SubCell(8)
        assert await inst.exports.peek(s) == 80
        assert await inst.exports.keep(s) is s

    run(main())


def test_host_import_result_must_be_an_instance_of_the_host_class(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(WORLD_CELL), world_imports(make=lambda v: "x"))
        with pytest.raises(HostResultError) as info:
            await inst.exports.made(1)
        assert str(info.value) == (
            "host import make returned a value of the wrong shape: result: expected an "
            "instance of Cell for own<cell> (the host class of that resource), got str 'x'"
        )

    run(main())


def test_interface_resource_result_checked_against_its_class(wat: Wat) -> None:
    class Blob:
        def __init__(self, init: str) -> None:
            self.init = init

        def size(self) -> int:
            return 0

        @staticmethod
        def kind() -> int:
            return 0

    class NotABlob:
        pass

    store = SimpleNamespace(Blob=Blob, take=lambda b: 7, give=NotABlob)

    async def main() -> None:
        inst = await polyengine.instantiate(wat(HOST_RESOURCE), {"test:demo/store": store})
        with pytest.raises(HostResultError) as info:
            await inst.exports.round_trip()
        message = str(info.value)
        assert message.startswith("host import test:demo/store#give returned a value of the wrong")
        assert "expected an instance of Blob for own<test:demo/store#blob>" in message
        assert "got NotABlob" in message

    run(main())


def test_class_given_for_a_resource_with_no_imported_member_still_binds(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(WORLD_OPAQUE), {"Cell": Cell, "make": Cell})
        await inst.exports.made(1)
        c = Cell(2)
        assert await inst.exports.keep(c) is c
        with pytest.raises(TypeError, match=r"expected an instance of Cell for own<cell>"):
            await inst.exports.keep(object())

    run(main())


def test_without_a_class_any_host_object_but_none_or_a_wrapper(wat: Wat) -> None:
    class Anything:
        pass

    async def main() -> None:
        inst = await polyengine.instantiate(wat(WORLD_OPAQUE), {"make": lambda v: Anything()})
        await inst.exports.made(1)
        a = Anything()
        assert await inst.exports.keep(a) is a
        with pytest.raises(
            TypeError, match=r"^parameter `c`: expected a host object for own<cell>"
        ):
            await inst.exports.keep(None)
        guest = await polyengine.instantiate(wat(GUEST_RESOURCE), {})
        wrapper = guest.exports.Counter(1)
        with pytest.raises(TypeError, match=r"got a Counter guest-resource wrapper"):
            await inst.exports.keep(wrapper)
        assert await wrapper.get() == 1

    run(main())


# -- type-checked guest resource positions -------------------------------------------


def test_guest_resource_argument_must_be_a_wrapper_of_that_type(wat: Wat) -> None:
    async def main() -> None:
        a = await polyengine.instantiate(wat(GUEST_RESOURCE), {})
        b = await polyengine.instantiate(wat(GUEST_RESOURCE), {})
        with pytest.raises(TypeError) as info:
            await a.exports.consume(None)
        assert str(info.value) == (
            "parameter `c`: expected a Counter resource object for own<counter>, got NoneType None"
        )
        foreign = b.exports.Counter(5)
        with pytest.raises(TypeError) as info:
            await a.exports.consume(foreign)
        assert str(info.value) == (
            "parameter `c`: expected a Counter resource object for own<counter>, got a "
            "Counter wrapper of another resource type or component instance"
        )
        # the refused wrapper was not taken: it still works where it belongs
        assert await foreign.get() == 5
        assert await b.exports.consume(foreign) == 5
        with pytest.raises(TypeError, match=r"expected a Counter resource object for own"):
            await a.exports.consume(Cell(1))

    run(main())


def test_guest_wrapper_in_a_host_resource_position_with_a_class(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(WORLD_CELL), world_imports())
        guest = await polyengine.instantiate(wat(GUEST_RESOURCE), {})
        wrapper = guest.exports.Counter(1)
        with pytest.raises(TypeError, match=r"expected an instance of Cell.*got Counter"):
            await inst.exports.keep(wrapper)
        assert await wrapper.get() == 1

    run(main())


#: a world-level resource and no lowered import at all: no trampoline is built
WORLD_NO_LOWER = """
(component
  (import "cell" (type $cell (sub resource)))
  (core module $m (func (export "keep") (param i32) (result i32) (local.get 0)))
  (core instance $i (instantiate $m))
  (func (export "keep") (param "c" (own $cell)) (result (own $cell))
    (canon lift (core func $i "keep")))
)
"""


def test_no_lowered_import_still_refuses_none(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(WORLD_NO_LOWER), {"Cell": Cell})
        c = Cell(1)
        assert await inst.exports.keep(c) is c
        with pytest.raises(TypeError, match=r"expected an instance of Cell for own<cell>"):
            await inst.exports.keep(None)

    run(main())


def test_no_lowered_import_binds_the_class(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(WORLD_NO_LOWER), {"Cell": Cell})
        with pytest.raises(TypeError, match=r"expected an instance of Cell for own<cell>"):
            await inst.exports.keep(object())

    run(main())
