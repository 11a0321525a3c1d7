"""Handle tables, resource built-ins and own/borrow lifting and lowering."""

from __future__ import annotations

import struct
import weakref

import pytest
from abi_helpers import make_cx
from hypothesis import given
from hypothesis import strategies as st

from polyengine.abi.compile import Compiler
from polyengine.abi.functions import LiftedFunc, LoweredFunc
from polyengine.abi.resources import (
    CallBorrows,
    CallLenders,
    ComponentInstance,
    ResourceHandle,
    ResourceType,
    Table,
    canon_resource_drop,
    canon_resource_new,
    canon_resource_rep,
    lift_borrow,
    lift_own,
    lower_borrow,
    lower_own,
)
from polyengine.abi.trap import Trap, TrapCode
from polyengine.types.model import Borrow, FuncType, List, Option, Own


def _code(e: pytest.ExceptionInfo[Trap]) -> str:
    return e.value.code


def test_table_reserves_zero_and_reuses_freed_indices() -> None:
    t: Table[str] = Table()
    assert [t.add("a"), t.add("b"), t.add("c")] == [1, 2, 3]
    assert t.remove(2) == "b"
    assert t.remove(1) == "a"
    assert t.add("d") == 1  # last freed first
    assert t.add("e") == 2
    assert t.add("f") == 4
    assert len(t) == 4
    assert list(t) == ["d", "e", "c", "f"]
    for bad in (0, 5, 99):
        with pytest.raises(Trap) as e:
            t.get(bad)
        assert _code(e) == TrapCode.INVALID_HANDLE
    t.remove(3)
    with pytest.raises(Trap):
        t.remove(3)


def test_table_refuses_negative_indices() -> None:
    """A negative index names no element (never one counted from the end)."""
    t: Table[str] = Table()
    t.add("a")
    t.add("b")
    for bad in (-1, -2, -3):
        for op in (t.get, t.remove):
            with pytest.raises(Trap) as e:
                op(bad)
            assert _code(e) == TrapCode.INVALID_HANDLE
    assert list(t) == ["a", "b"]


def test_table_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Table, "MAX_LENGTH", 2)
    t: Table[int] = Table()
    t.add(1)
    t.add(2)
    with pytest.raises(Trap) as e:
        t.add(3)
    assert _code(e) == TrapCode.TABLE_FULL


def test_resource_new_rep_drop() -> None:
    inst = ComponentInstance()
    dropped: list[int] = []
    rt = ResourceType(inst, dropped.append, "counter")
    other = ResourceType(inst, None, "other")
    h = canon_resource_new(inst, rt, 42)
    assert h == 1
    assert canon_resource_rep(inst, rt, h) == 42
    with pytest.raises(Trap) as e:
        canon_resource_rep(inst, other, h)
    assert _code(e) == TrapCode.HANDLE_TYPE_MISMATCH
    with pytest.raises(Trap) as e:
        canon_resource_drop(inst, other, h)
    assert _code(e) == TrapCode.HANDLE_TYPE_MISMATCH
    # A failed drop already removed the handle (the instance is poisoned by the trap anyway).
    h = canon_resource_new(inst, rt, 43)
    canon_resource_drop(inst, rt, h)
    assert dropped == [43]
    with pytest.raises(Trap) as e:
        canon_resource_rep(inst, rt, h)
    assert _code(e) == TrapCode.INVALID_HANDLE


def test_may_leave_guards_builtins() -> None:
    inst = ComponentInstance()
    rt = ResourceType(inst)
    inst.may_leave = False
    with pytest.raises(Trap) as e:
        canon_resource_new(inst, rt, 1)
    assert _code(e) == TrapCode.MAY_NOT_LEAVE
    inst.may_leave = True
    h = canon_resource_new(inst, rt, 1)
    inst.may_leave = False
    with pytest.raises(Trap):
        canon_resource_drop(inst, rt, h)


def test_dropping_a_lent_handle_traps_and_lends_end_with_the_call() -> None:
    caller = ComponentInstance(name="caller")
    callee = ComponentInstance(name="callee")
    rt = ResourceType(caller, None, "r")
    h = canon_resource_new(caller, rt, 7)
    lenders = CallLenders()
    rep = lift_borrow(caller, h, rt, lenders)
    assert rep == 7
    borrows = CallBorrows()
    bh = lower_borrow(callee, rep, rt, borrows)
    assert borrows.num_borrows == 1
    # The caller cannot drop or transfer its handle while it is lent.
    with pytest.raises(Trap) as e:
        canon_resource_drop(caller, rt, h)
    assert _code(e) == TrapCode.HANDLE_LENT
    h = canon_resource_new(caller, rt, 8)
    rep = lift_borrow(caller, h, rt, lenders)
    with pytest.raises(Trap) as e:
        lift_own(caller, h, rt)
    assert _code(e) == TrapCode.HANDLE_LENT
    # The callee must drop its borrow before returning.
    with pytest.raises(Trap) as e:
        borrows.exit()
    assert _code(e) == TrapCode.BORROWS_OUTSTANDING
    canon_resource_drop(callee, rt, bh)
    assert borrows.num_borrows == 0
    borrows.exit()
    lenders.deliver_resolve()
    h2 = canon_resource_new(caller, rt, 9)
    lenders2 = CallLenders()
    lift_borrow(caller, h2, rt, lenders2)
    lenders2.deliver_resolve()
    canon_resource_drop(caller, rt, h2)


def test_borrow_into_the_implementing_instance_passes_the_rep() -> None:
    impl = ComponentInstance()
    rt = ResourceType(impl)
    scope = CallBorrows()
    assert lower_borrow(impl, 1234, rt, scope) == 1234
    assert scope.num_borrows == 0
    assert len(impl.handles) == 0


def test_lift_own_transfers_and_refuses_borrows() -> None:
    a, b = ComponentInstance(), ComponentInstance()
    rt = ResourceType(a)
    h = canon_resource_new(a, rt, 5)
    rep = lift_own(a, h, rt)
    assert rep == 5 and len(a.handles) == 0
    nh = lower_own(b, rep, rt)
    assert isinstance(b.handles.get(nh), ResourceHandle)
    scope = CallBorrows()
    c = ComponentInstance()
    bh = lower_borrow(c, 5, rt, scope)
    with pytest.raises(Trap) as e:
        lift_own(c, bh, rt)
    assert _code(e) == TrapCode.NOT_OWNED
    with pytest.raises(Trap) as e:
        lift_own(b, 99, rt)
    assert _code(e) == TrapCode.INVALID_HANDLE
    b.handles.add("not a handle")
    with pytest.raises(Trap) as e:
        lift_own(b, len(b.handles.array) - 1, rt)
    assert _code(e) == TrapCode.INVALID_HANDLE


def test_destructor_reentrance() -> None:
    parent = ComponentInstance(name="parent")
    child = ComponentInstance(parent, name="child")
    other = ComponentInstance(name="other")
    seen: list[bool] = []
    rt = ResourceType(other, lambda rep: seen.append(other.may_enter), "r")
    h = canon_resource_new(child, rt, 3)
    canon_resource_drop(child, rt, h)
    assert seen == [False]
    assert other.may_enter
    # The destructor's instance is already entered: dropping traps.
    other.may_enter = False
    h = canon_resource_new(child, rt, 4)
    with pytest.raises(Trap) as e:
        canon_resource_drop(child, rt, h)
    assert _code(e) == TrapCode.CANNOT_ENTER
    # Dropping a resource one implements is always allowed.
    own_rt = ResourceType(child, lambda rep: seen.append(True))
    child.may_enter = False
    canon_resource_drop(child, own_rt, canon_resource_new(child, own_rt, 1))
    assert seen[-1] is True


def test_entering_sets() -> None:
    p = ComponentInstance(name="p")
    c1 = ComponentInstance(p, name="c1")
    c2 = ComponentInstance(p, name="c2")
    assert p.entering_set(None) == {p}
    assert c1.entering_set(p) == {c1}
    assert p.entering_set(c2) == set()
    assert c1.entering_set(None) == {c1, p}
    p.enter_from(None)
    assert not c2.may_enter_from(None)
    assert c2.may_enter_from(c1)
    p.leave_to(None)
    assert c2.may_enter_from(None)


class _Host:
    """A host-object mapping for tests: reps index a list of Python objects."""

    def __init__(self) -> None:
        self.objects: list[object] = [None]

    def lift_own(self, rt: ResourceType, rep: int) -> object:
        return ("own", self.objects[rep])

    def lift_borrow(self, rt: ResourceType, rep: int) -> object:
        return ("borrow", self.objects[rep])

    def lower_own(self, rt: ResourceType, value: object) -> int:
        self.objects.append(value)
        return len(self.objects) - 1

    def lower_borrow(self, rt: ResourceType, value: object) -> int:
        return self.objects.index(value)


def test_codecs_lower_and_lift_handles_with_host_objects() -> None:
    host_rt = ResourceType(None, None, "host-thing")
    host = _Host()
    comp = Compiler(resource_type=lambda i: host_rt, host_resources=host)
    guest = ComponentInstance()
    borrows = CallBorrows()
    cx, _ = make_cx(inst=guest, borrow_scope=borrows)
    # Host calls a guest export taking list<own<r>> and borrow<r>.
    export = LiftedFunc.compile(comp, FuncType((("xs", List(Own(0))), ("b", Borrow(0))), None))
    thing = object()
    lent = object()
    host.objects.append(lent)
    flat = export.lower_params(cx, [[thing], lent])
    assert borrows.num_borrows == 1
    bh = guest.handles.get(int(flat[2]))
    assert isinstance(bh, ResourceHandle) and not bh.own and bh.rep == 1
    # Guest calls a host import returning option<own<r>>: the guest's handle moves out.
    h = canon_resource_new(guest, host_rt, 2)
    imp = LoweredFunc.compile(comp, FuncType((("x", Own(0)),), Option(Own(0))))
    assert imp.lift_params(cx, [h]) == [("own", thing)]
    with pytest.raises(Trap):
        guest.handles.get(h)
    assert imp.out_ptr_index == 1
    assert imp.lower_results(cx, "new", [h, 256]) == []
    disc, nh = struct.unpack_from("<BxxxI", cx.mv, 256)
    assert disc == 1
    assert canon_resource_rep(guest, host_rt, nh) == len(host.objects) - 1
    assert host.objects[-1] == "new"


def test_codecs_without_host_mapping_pass_reps() -> None:
    a, b = ComponentInstance(), ComponentInstance()
    rt = ResourceType(a)
    comp = Compiler(resource_type=lambda i: rt)
    own = comp.codec(Own(0))
    cxa, _ = make_cx(inst=a, borrow_scope=CallLenders())
    cxb, _ = make_cx(inst=b, borrow_scope=CallBorrows())
    h = canon_resource_new(a, rt, 77)
    rep = own.lift_flat(cxa, [h], 0)
    assert rep == 77
    out: list[int | float] = []
    own.lower_flat(cxb, rep, out)
    assert canon_resource_rep(b, rt, int(out[0])) == 77
    with pytest.raises(TypeError, match="resource rep"):
        own.lower_flat(cxb, "x", [])
    bor = comp.codec(Borrow(0))
    h2 = canon_resource_new(a, rt, 78)
    assert bor.lift_flat(cxa, [h2], 0) == 78
    assert a.handles.get(h2).num_lends == 1  # type: ignore[attr-defined]


def test_compiling_handles_needs_resource_types() -> None:
    with pytest.raises(ValueError, match="resource_type"):
        Compiler().codec(Own(0))


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.integers()),
            st.tuples(st.just("remove"), st.integers(0, 40)),
        ),
        max_size=60,
    )
)
def test_table_matches_a_free_list_model(ops: list[tuple[str, int]]) -> None:
    table: Table[int] = Table()
    live: dict[int, int] = {}
    free: list[int] = []
    size = 1
    for op, x in ops:
        if op == "add":
            if free:
                expect = free.pop()
            else:
                expect, size = size, size + 1
            assert table.add(x) == expect
            live[expect] = x
        elif x in live:
            assert table.remove(x) == live.pop(x)
            free.append(x)
        else:
            with pytest.raises(Trap):
                table.remove(x)
        assert len(table) == len(live)
        assert sorted(table) == sorted(live.values())


def test_resource_types_describe_themselves_deterministically() -> None:
    """Messages name a resource type without its object address (§"Resource State")."""
    inst = ComponentInstance(name="#3")
    first, second = ResourceType(inst), ResourceType(inst, None, "r")
    assert first.ordinal == 0 and second.ordinal == 1
    assert str(first) == first.describe() == "resource #0 of component instance #3"
    assert str(second) == "resource 'r' (#1 of component instance #3)"
    assert repr(first) == "<ResourceType resource #0 of component instance #3>"
    # each instance numbers the types it defines
    assert str(ResourceType(ComponentInstance(name="#4"))) == "resource #0 of component instance #4"
    assert str(ResourceType(ComponentInstance())) == "resource #0"
    assert str(ResourceType(None, None, "cell")) == "host resource 'cell'"
    assert repr(ResourceType(None)) == "<ResourceType host resource>"
    assert "0x" not in repr(ComponentInstance())


def test_the_entry_flags_are_slots_and_the_rest_a_dict() -> None:
    """``may_enter``/``may_leave`` are slots (read at fixed offsets by the compiled path)."""
    inst = ComponentInstance(None, "c")
    assert inst.may_enter is True and inst.may_leave is True
    assert "may_enter" not in vars(inst) and "may_leave" not in vars(inst)
    assert type(vars(ComponentInstance)["may_enter"]).__name__ == "member_descriptor"
    inst.may_enter = False
    assert inst.may_enter is False and "may_enter" not in vars(inst)
    inst.extra = 1  # type: ignore[attr-defined]
    assert vars(inst)["extra"] == 1
    assert weakref.ref(inst)() is inst
