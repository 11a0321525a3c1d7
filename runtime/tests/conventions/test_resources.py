"""Resources at the boundary (python-mapping.md §5, the seed's 2x4 ownership table).

Host-implemented: the probe host's ``Cell`` class is provided under its
PascalCase name on its interface's provider; the forwarder exports the
constructor, method and static as plain functions, plus ``take`` (own in),
``inspect`` (borrow in), ``give`` (own out) and ``drop-cell``.
Guest-implemented: a ``counter`` resource whose wrappers the embedder holds.
"""

from __future__ import annotations

import gc
import pickle
from collections.abc import Callable
from typing import Any

import polyengine
from polyengine_protocol import is_resource_wrapper, marks_of

from .components import Func, Interface, forwarder
from .probe_host import Cell, Cells, SlowCell, Transcript, describe
from .scenario import attempt, attempt_sync, bound, method, run_scenario

Wat = Callable[[str], bytes]

CELLS = Interface(
    "probe:conv/cells@0.1.0",
    resources=["cell"],
    funcs=[
        Func("[constructor]cell", [("init", "string")], "(own $cell)", export="cell-new"),
        Func("[method]cell.get", [("self", "(borrow $cell)")], "string", export="cell-get"),
        Func("[static]cell.kind", [], "u32", export="cell-kind"),
        Func("take", [("c", "(own $cell)")], "string"),
        Func("inspect", [("c", "(borrow $cell)")], "string"),
        Func("give", [("init", "string")], "(own $cell)"),
    ],
)


def test_host_implemented_resource(wat: Wat) -> None:
    component = wat(forwarder([CELLS]))

    async def body(t: Transcript) -> None:
        cells = Cells(t)
        inst = await polyengine.instantiate(component, {CELLS.key: cells})
        x = inst.exports
        c = await attempt(
            t, "cell-new: the guest constructs, then returns own to the embedder", x.cell_new("a")
        )
        t.record("identity", note="the embedder got a host Cell", value=isinstance(c, Cell))
        await attempt(t, "cell-kind: static", x.cell_kind())
        await attempt(t, "cell-get: embedder passes borrow of that instance", x.cell_get(c))
        await attempt(t, "inspect: borrow of a never-registered instance", x.inspect(Cell("fresh")))
        await attempt(t, "take: own passed through the guest back to the host", x.take(c))
        t.record("identity", note="take received the same object", value=cells.kept[-1] is c)
        t.record(
            "closed",
            note="no dispose call for an own handed back",
            value=bool(getattr(c, "closed", None)),
        )
        g = await attempt(
            t, "give: the host passes own to the guest, which returns it", x.give("g")
        )
        t.record(
            "closed",
            note="given instance after the round trip",
            value=bool(getattr(g, "closed", None)),
        )
        doomed = Cell("doomed")
        await attempt(
            t, "drop-cell: own passed in, the guest drops its last handle", x.drop_cell(doomed)
        )
        t.record("closed", note="dropped instance", value=doomed.closed)
        t.record("made", count=Cell.made)
        for label, fn, arg in [
            ("cell-get: a str where borrow<cell> is expected", "cell_get", "not a cell"),
            ("take: None where own<cell> is expected", "take", None),
            ("take: an int where own<cell> is expected", "take", 5),
        ]:
            inst = await polyengine.instantiate(component, {CELLS.key: Cells(t)})
            await attempt(t, label, getattr(inst.exports, fn)(arg))

    run_scenario("resources_host", body)


WORLD_CELL = [
    Func("[constructor]cell", [("init", "string")], "(own $cell)", export="cell-new"),
    Func("[method]cell.get", [("self", "(borrow $cell)")], "string", export="cell-get"),
    Func("[static]cell.kind", [], "u32", export="cell-kind"),
    Func("take-cell", [("c", "(own $cell)")], "string", export="take"),
]


def test_world_level_host_resource(wat: Wat) -> None:
    """A world-level resource: its class sits at the top level of the imports mapping."""
    component = wat(forwarder([], bare=WORLD_CELL, bare_resources=("cell",)))

    async def body(t: Transcript) -> None:
        cells = Cells(t)
        t.record(
            "required-imports",
            leaves=[leaf.name for leaf in polyengine.required_imports(component)],
        )
        imports = {"Cell": Cell, "take_cell": cells.take}
        inst = await attempt(
            t,
            "instantiate: the class under its PascalCase name",
            polyengine.instantiate(component, imports),
        )
        if not isinstance(inst, polyengine.Instance):
            return
        c = await attempt(t, "cell-new", inst.exports.cell_new("w"))
        await attempt(t, "cell-get", inst.exports.cell_get(c))
        await attempt(t, "cell-kind", inst.exports.cell_kind())
        await attempt(t, "take", inst.exports.take(c))
        await attempt(t, "drop-cell", inst.exports.drop_cell(Cell("gone")))
        await attempt(
            t,
            "instantiate: the class under its kebab name",
            polyengine.instantiate(component, {"cell": Cell, "take_cell": cells.take}),
        )

    run_scenario("resources_world_level", body)


def test_host_resource_with_a_suspending_method(wat: Wat) -> None:
    component = wat(forwarder([CELLS]))

    async def body(t: Transcript) -> None:
        cells = Cells(t)
        provider = {
            "Cell": SlowCell,
            "take": cells.take,
            "inspect": cells.inspect,
            "give": cells.give,
        }
        inst = await polyengine.instantiate(component, {CELLS.key: provider})
        c = await attempt(t, "cell-new", inst.exports.cell_new("s"))
        await attempt(t, "cell-get: the @suspending method parks", inst.exports.cell_get(c))
        t.record("marked on the class", marks=sorted(marks_of(SlowCell.get)))
        await attempt(t, "drop-cell", inst.exports.drop_cell(c))

    run_scenario("resources_host_suspending_method", body)


def test_host_resource_without_close(wat: Wat) -> None:
    """The platform-class pattern: a class with no ``close`` is fine as a host resource."""
    component = wat(forwarder([CELLS]))

    class Plain:
        def __init__(self, init: str) -> None:
            self.init = init

        def get(self) -> str:
            return self.init.upper()

        @staticmethod
        def kind() -> int:
            return 1

    async def body(t: Transcript) -> None:
        provider: dict[str, Any] = {
            "Cell": Plain,
            "take": lambda c: type(c).__name__,
            "inspect": lambda c: c.get(),
            "give": Plain,
        }
        inst = await polyengine.instantiate(component, {CELLS.key: provider})
        p = await attempt(t, "cell-new", inst.exports.cell_new("plain"))
        await attempt(t, "cell-get", inst.exports.cell_get(p))
        await attempt(t, "drop-cell without close()", inst.exports.drop_cell(Plain("x")))
        await attempt(t, "take", inst.exports.take(p))

    run_scenario("resources_host_without_close", body)


GUEST_COUNTER = """
(component
  (core module $d
    (global $drops (mut i32) (i32.const 0))
    (global $last (mut i32) (i32.const 0))
    (func (export "dtor") (param i32)
      (global.set $last (local.get 0))
      (global.set $drops (i32.add (global.get $drops) (i32.const 1))))
    (func (export "drops") (result i32) (global.get $drops))
    (func (export "last") (result i32) (global.get $last)))
  (core instance $d (instantiate $d))
  (type $counter (resource (rep i32) (dtor (core func $d "dtor"))))
  (core func $new (canon resource.new $counter))
  (core func $rep (canon resource.rep $counter))
  (core func $drop (canon resource.drop $counter))
  (core module $m
    (import "h" "new" (func $new (param i32) (result i32)))
    (import "h" "rep" (func $rep (param i32) (result i32)))
    (import "h" "drop" (func $drop (param i32)))
    (func (export "ctor") (param i32) (result i32) (call $new (local.get 0)))
    (func (export "get") (param i32) (result i32) (local.get 0))
    (func (export "peek") (param i32) (result i32) (i32.add (local.get 0) (i32.const 1000)))
    (func (export "consume") (param i32) (result i32)
      (local $v i32)
      (local.set $v (call $rep (local.get 0)))
      (call $drop (local.get 0))
      (local.get $v))
    (func (export "make") (param i32) (result i32) (call $new (local.get 0))))
  (core instance $i (instantiate $m
    (with "h" (instance (export "new" (func $new)) (export "rep" (func $rep))
      (export "drop" (func $drop))))))
  (export $c "counter" (type $counter))
  (func (export "[constructor]counter") (param "v" u32) (result (own $c))
    (canon lift (core func $i "ctor")))
  (func (export "[method]counter.get") (param "self" (borrow $c)) (result u32)
    (canon lift (core func $i "get")))
  (func (export "peek") (param "c" (borrow $c)) (result u32)
    (canon lift (core func $i "peek")))
  (func (export "consume") (param "c" (own $c)) (result u32)
    (canon lift (core func $i "consume")))
  (func (export "make") (param "v" u32) (result (own $c))
    (canon lift (core func $i "make")))
  (func (export "drops") (result u32) (canon lift (core func $d "drops")))
  (func (export "last") (result u32) (canon lift (core func $d "last")))
)
"""


def test_guest_implemented_resource(wat: Wat) -> None:
    component = wat(GUEST_COUNTER)

    async def body(t: Transcript) -> None:
        inst = await polyengine.instantiate(component, {})
        x = inst.exports
        counter = x.Counter
        t.record("class", name=getattr(counter, "__name__", "?"))
        c = attempt_sync(t, "Counter(7): the constructor is synchronous", lambda: counter(7))
        t.record("wrapper", is_resource_wrapper=is_resource_wrapper(c), described=describe(c))
        await attempt(t, "c.get(): a method is a coroutine function", method(c, "get"))
        await attempt(t, "peek(c): host passes borrow (the guest sees its rep + 1000)", x.peek(c))
        await attempt(t, "c.get() after a borrow: still valid", method(c, "get"))
        m = await attempt(t, "make(5): host receives own", x.make(5))
        await attempt(t, "consume(m): host passes own", x.consume(m))
        await attempt(t, "m.get() after own was passed", method(m, "get"))
        attempt_sync(t, "m.drop() after own was passed", bound(m, "drop"))
        await attempt(t, "drops so far", x.drops())
        attempt_sync(t, "c.drop()", bound(c, "drop"))
        await attempt(t, "drops, last", _pair(x.drops(), x.last()))
        attempt_sync(t, "c.drop() again", bound(c, "drop"))
        await attempt(t, "c.get() after drop", method(c, "get"))

        def with_block() -> Any:
            with counter(3) as w:
                return type(w).__name__

        attempt_sync(t, "with Counter(3): drops on exit", with_block)
        await attempt(t, "drops, last", _pair(x.drops(), x.last()))
        attempt_sync(t, "Counter(11) left to the collector", lambda: type(counter(11)).__name__)
        gc.collect()
        await attempt(t, "a leaked wrapper is dropped by the finalizer", _pair(x.drops(), x.last()))
        p = attempt_sync(t, "Counter(1)", lambda: counter(1))
        attempt_sync(t, "pickle.dumps(wrapper)", lambda: pickle.dumps(p))
        await attempt(t, "peek(None)", x.peek(None))
        await attempt(t, "peek(an int)", x.peek(1))
        attempt_sync(t, "p.drop()", bound(p, "drop"))
        t.record(
            "not constructible",
            row="host receives borrow<guest R>",
            why="no import of a single component can name a resource the component defines",
        )

    run_scenario("resources_guest", body)


async def _pair(a: Any, b: Any) -> tuple[Any, Any]:
    return (await a, await b)
