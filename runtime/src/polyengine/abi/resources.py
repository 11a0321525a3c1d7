"""Component instance state, handle tables and resources.

CanonicalABI.md §"Component Instances", §"Table State", §"Resource State",
§"Loading"/§"Storing" (``lift_own``, ``lift_borrow``, ``lower_own``,
``lower_borrow``) and §"`canon resource.new`", §"`canon resource.drop`",
§"`canon resource.rep`".

The borrow bookkeeping is expressed against two small protocols so that the
concurrency layer's ``Task`` and ``Subtask`` plug in directly:

* :class:`BorrowingTask` (the callee's task: ``num_borrows``), used when
  lowering a ``borrow`` into the callee;
* :class:`LendingSubtask` (the caller's subtask: ``add_lender``), used when
  lifting a ``borrow`` out of the caller.

:class:`CallBorrows` and :class:`CallLenders` are minimal implementations
for synchronous calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Generic, NoReturn, Protocol, TypeVar

from polyengine.abi.trap import TrapCode, trap, trap_if

if TYPE_CHECKING:
    from polyengine.abi.codec import AsyncValueHooks

__all__ = [
    "BorrowingTask",
    "CallBorrows",
    "CallLenders",
    "ComponentInstance",
    "HostResources",
    "LendingSubtask",
    "ResourceHandle",
    "ResourceType",
    "Table",
    "canon_resource_drop",
    "canon_resource_new",
    "canon_resource_rep",
    "lift_borrow",
    "lift_own",
    "lower_borrow",
    "lower_own",
]

E = TypeVar("E")


class Table(Generic[E]):
    """A growable array of elements addressed by ``i32`` index (CanonicalABI.md §"Table State").

    Index 0 is reserved (never valid); freed indices are reused last-freed
    first; at most :attr:`MAX_LENGTH` elements.
    """

    MAX_LENGTH = 2**28 - 1

    def __init__(self) -> None:
        self.array: list[E | None] = [None]
        self.free: list[int] = []

    def __iter__(self) -> Iterator[E]:
        return (e for e in self.array if e is not None)

    def __len__(self) -> int:
        """The number of live elements."""
        return len(self.array) - 1 - len(self.free)

    def get(self, i: int) -> E:
        """The element at ``i``; traps when out of range or free."""
        try:
            e = self.array[i]
        except IndexError:
            _unknown(i)
        if e is None or i < 0:  # (index 0 is never valid: its slot stays None)
            _unknown(i)
        return e

    def add(self, e: E) -> int:
        """Store ``e`` in a free slot (reused first) and return its index."""
        free = self.free
        if free:
            i = free.pop()
            array = self.array
            assert array[i] is None
            array[i] = e
            return i
        array = self.array
        i = len(array)
        if i > Table.MAX_LENGTH:
            trap(TrapCode.TABLE_FULL, "handle table is full")
        array.append(e)
        return i

    def remove(self, i: int) -> E:
        """Take the element at ``i`` out of the table; traps like :meth:`get`."""
        array = self.array
        try:  # get, inline
            e = array[i]
        except IndexError:
            _unknown(i)
        if e is None or i < 0:
            _unknown(i)
        array[i] = None
        self.free.append(i)
        return e


def _unknown(i: int) -> NoReturn:
    trap(TrapCode.INVALID_HANDLE, f"unknown handle index {i}")


class ComponentInstance:
    """Per-instance runtime state (CanonicalABI.md §"Component Instances").

    Kept to what the value ABI and resources need; the concurrency layer
    extends it (by subclassing) with the rest of the spec's fields
    (``threads``, ``backpressure``, ``num_waiting_to_enter``,
    ``exclusive_thread``) and with waitables stored in :attr:`handles`.

    Invariants: ``handles`` holds every i32-addressed object of the instance
    (resource handles now; waitables, waitable sets and error contexts
    later); ``may_leave`` is false exactly while the instance runs code that
    must not call out (``realloc``, ``post-return``); ``may_enter`` is false
    while a call has entered the instance (or an ancestor) and not left.

    The two flags are slots (every other attribute lives in ``__dict__``):
    the compiled export call and ``realloc`` step read and write them at
    their member's fixed offset rather than as dict entries.
    """

    __slots__ = ("__dict__", "__weakref__", "may_enter", "may_leave")

    #: bytes plus elements one lift or lower may read out of guest memory
    #: (``Limits.max_lift_bytes``): bounds nested lists aliasing one range
    lift_budget: int = 1 << 30
    #: the runtime's resource types by plan index, and the host's table of
    #: host-implemented objects, shared by every component instance of one
    #: runtime: what a codec compiled with ``late_resources`` reads at call
    #: time (the runtime sets them; see :class:`~polyengine.abi.compile.Compiler`)
    rtypes: Sequence[ResourceType] = ()
    host_table: HostResources | None = None
    #: the task model's host-side stream/future hooks of the runtime, what a codec
    #: compiled with ``late_async_values`` reads at call time (the runtime sets it)
    host_async_values: AsyncValueHooks | None = None

    def __init__(self, parent: ComponentInstance | None = None, name: str = "") -> None:
        self.parent = parent
        self.name = name
        self.handles: Table[object] = Table()
        self.may_enter = True
        self.may_leave = True
        #: how many resource types this instance defines (numbers them for messages)
        self.resource_types_defined = 0

    def __repr__(self) -> str:
        return f"<ComponentInstance {self.name or '(unnamed)'}>"

    def may_enter_from(self, caller: ComponentInstance | None) -> bool:
        """Whether a call from ``caller`` (``None``: the host) may enter this instance."""
        return all(inst.may_enter for inst in self.entering_set(caller))

    def enter_from(self, caller: ComponentInstance | None) -> None:
        for inst in self.entering_set(caller):
            assert inst.may_enter
            inst.may_enter = False

    def leave_to(self, caller: ComponentInstance | None) -> None:
        for inst in self.entering_set(caller):
            assert not inst.may_enter
            inst.may_enter = True

    def entering_set(self, caller: ComponentInstance | None) -> set[ComponentInstance]:
        """This instance and its ancestors, less those the caller is already inside."""
        s = self.self_and_ancestors()
        if caller is not None:
            s -= caller.self_and_ancestors()
        return s

    def self_and_ancestors(self) -> set[ComponentInstance]:
        s: set[ComponentInstance] = set()
        inst: ComponentInstance | None = self
        while inst is not None:
            s.add(inst)
            inst = inst.parent
        return s


class ResourceType:
    """A runtime resource type (CanonicalABI.md §"Resource State").

    Compared by identity. ``impl`` is the defining instance (``None`` for a
    host-defined resource); ``dtor`` receives the representation when the
    last owning handle is dropped (a guest destructor, or the embed layer's
    hook for host resources). ``name`` is for messages only.

    A type defined by an instance is numbered in the order that instance
    defines its types (:attr:`ordinal`), so a type with no name still has a
    description that is the same on every run (:meth:`describe`), never an
    object address.
    """

    __slots__ = ("dtor", "impl", "name", "ordinal")

    def __init__(
        self,
        impl: ComponentInstance | None,
        dtor: Callable[[int], None] | None = None,
        name: str = "",
    ) -> None:
        self.impl = impl
        self.dtor = dtor
        self.name = name
        self.ordinal: int | None = None
        if impl is not None:
            self.ordinal = impl.resource_types_defined
            impl.resource_types_defined += 1

    def describe(self) -> str:
        """A deterministic, human-readable description for messages.

        ``resource 'r' (#1 of component instance #0)`` for a type a guest
        defines (``resource #1 of component instance #0`` when it has no
        name), ``host resource 'r'`` for one the host implements.
        """
        impl = self.impl
        if impl is None:
            return f"host resource {self.name!r}" if self.name else "host resource"
        where = f"#{self.ordinal}"
        if impl.name:
            where += f" of component instance {impl.name}"
        if self.name:
            return f"resource {self.name!r} ({where})"
        return f"resource {where}"

    def __str__(self) -> str:
        return self.describe()

    def __repr__(self) -> str:
        return f"<ResourceType {self.describe()}>"


class BorrowingTask(Protocol):
    """The callee side of a call that received ``borrow`` handles (the spec's ``Task``)."""

    num_borrows: int


class LendingSubtask(Protocol):
    """The caller side of a call that lent handles (the spec's ``Subtask``)."""

    def add_lender(self, lending_handle: ResourceHandle) -> None: ...


class ResourceHandle:
    """An element of :attr:`ComponentInstance.handles` for a resource (§"Resource State").

    ``num_lends`` counts live borrows lent out of this handle; an owning
    handle with lends can neither be dropped nor transferred.
    """

    __slots__ = ("borrow_scope", "num_lends", "own", "rep", "rt")

    def __init__(
        self,
        rt: ResourceType,
        rep: int,
        own: bool,
        borrow_scope: BorrowingTask | None = None,
    ) -> None:
        self.rt = rt
        self.rep = rep
        self.own = own
        self.borrow_scope = borrow_scope
        self.num_lends = 0

    def __repr__(self) -> str:
        kind = "own" if self.own else "borrow"
        return f"<ResourceHandle {kind} {self.rt!r} rep={self.rep} lends={self.num_lends}>"


class CallBorrows:
    """A minimal :class:`BorrowingTask` for one synchronous call into an instance.

    Call :meth:`exit` when the callee returns: it traps if the callee still
    holds borrowed handles it has not dropped (``Task.return_``'s check).
    """

    def __init__(self) -> None:
        self.num_borrows = 0

    def exit(self) -> None:
        if self.num_borrows > 0:
            trap(
                TrapCode.BORROWS_OUTSTANDING,
                f"borrow handles still remain at the end of the call ({self.num_borrows})",
            )


class CallLenders:
    """A minimal :class:`LendingSubtask` for one synchronous call out of an instance.

    :meth:`deliver_resolve` releases the lends when the callee returns.
    """

    def __init__(self) -> None:
        self.lenders: list[ResourceHandle] | None = []

    def add_lender(self, lending_handle: ResourceHandle) -> None:
        assert self.lenders is not None, "lend after the call resolved"
        lending_handle.num_lends += 1
        self.lenders.append(lending_handle)

    def deliver_resolve(self) -> None:
        assert self.lenders is not None, "resolve delivered twice"
        for h in self.lenders:
            h.num_lends -= 1
        self.lenders = None


# --- §"Loading" / §"Storing": handle types -----------------------------------


def _resource_handle(
    inst: ComponentInstance, h: object, i: int, rt: ResourceType
) -> ResourceHandle:
    if type(h) is ResourceHandle and h.rt is rt:
        return h
    if not isinstance(h, ResourceHandle):
        trap(
            TrapCode.INVALID_HANDLE,
            f"handle index {i} used with the wrong type, expected {rt!r} but found "
            f"{type(h).__name__}",
        )
    if h.rt is not rt:
        trap(
            TrapCode.HANDLE_TYPE_MISMATCH,
            f"handle index {i} used with the wrong type, expected {rt!r} but found {h.rt!r}",
        )
    return h


def lift_own(inst: ComponentInstance, i: int, rt: ResourceType) -> int:
    """Take an owning handle out of ``inst`` and return its rep (§"Loading", ``lift_own``).

    The handle is removed before the checks, as in the spec: a trap poisons
    the instance anyway.
    """
    h = inst.handles.remove(i)
    if h.__class__ is not ResourceHandle or h.rt is not rt:  # _resource_handle's fast path
        h = _resource_handle(inst, h, i, rt)
    if h.num_lends:
        _lent_trap(i)
    if not h.own:
        trap(TrapCode.NOT_OWNED, f"cannot lift an owned resource from borrow handle index {i}")
    return h.rep


def _lent_trap(i: int) -> NoReturn:
    trap(TrapCode.HANDLE_LENT, f"cannot remove owned resource while borrowed (handle index {i})")


def lift_borrow(inst: ComponentInstance, i: int, rt: ResourceType, scope: LendingSubtask) -> int:
    """Read the rep of handle ``i``, lending it for the call (§"Loading", ``lift_borrow``)."""
    assert scope is not None, "lifting a borrow needs the call's lending scope (borrow_scope)"
    h = inst.handles.get(i)
    if h.__class__ is not ResourceHandle or h.rt is not rt:  # _resource_handle's fast path
        h = _resource_handle(inst, h, i, rt)
    scope.add_lender(h)
    return h.rep


def lower_own(inst: ComponentInstance, rep: int, rt: ResourceType) -> int:
    """A new owning handle for ``rep`` in ``inst`` (§"Storing", ``lower_own``)."""
    return inst.handles.add(ResourceHandle(rt, rep, own=True))


def lower_borrow(inst: ComponentInstance, rep: int, rt: ResourceType, scope: BorrowingTask) -> int:
    """A borrow handle for ``rep`` in ``inst`` (§"Storing", ``lower_borrow``).

    Into the resource's own implementation the rep itself is passed.
    """
    assert scope is not None, "lowering a borrow needs the callee's task scope (borrow_scope)"
    if inst is rt.impl:
        return rep
    h = ResourceHandle(rt, rep, own=False, borrow_scope=scope)
    scope.num_borrows += 1
    return inst.handles.add(h)


# --- §"canon resource.new/drop/rep" ------------------------------------------


def canon_resource_new(inst: ComponentInstance, rt: ResourceType, rep: int) -> int:
    """``resource.new``: a new owning handle for ``rep`` (§"`canon resource.new`")."""
    trap_if(
        not inst.may_leave,
        TrapCode.MAY_NOT_LEAVE,
        "cannot leave component instance (resource.new)",
    )
    return inst.handles.add(ResourceHandle(rt, rep, own=True))


def canon_resource_drop(inst: ComponentInstance, rt: ResourceType, i: int) -> None:
    """``resource.drop``: remove handle ``i``; run the destructor for an owning one.

    CanonicalABI.md §"`canon resource.drop`". Dropping a lent-out owning
    handle traps; dropping a borrow ends it in its task's scope. A guest
    destructor runs as a call into ``rt.impl`` (reentrance checked).
    """
    if not inst.may_leave:
        trap(TrapCode.MAY_NOT_LEAVE, "cannot leave component instance (resource.drop)")
    h = inst.handles.remove(i)
    if h.__class__ is not ResourceHandle or h.rt is not rt:  # _resource_handle's fast path
        h = _resource_handle(inst, h, i, rt)
    if h.num_lends:
        _lent_trap(i)
    if not h.own:
        assert h.borrow_scope is not None
        h.borrow_scope.num_borrows -= 1
        return
    assert h.borrow_scope is None
    if rt.dtor is None:
        return
    callee = rt.impl
    if callee is None:
        rt.dtor(h.rep)
        return
    trap_if(
        not callee.may_enter_from(inst),
        TrapCode.CANNOT_ENTER,
        f"cannot enter component instance {callee!r} to run the destructor of {rt!r}",
    )
    callee.enter_from(inst)
    try:
        rt.dtor(h.rep)
    finally:
        callee.leave_to(inst)


def canon_resource_rep(inst: ComponentInstance, rt: ResourceType, i: int) -> int:
    """``resource.rep``: the representation behind handle ``i`` (§"`canon resource.rep`")."""
    return _resource_handle(inst, inst.handles.get(i), i, rt).rep


class HostResources(Protocol):
    """How the embed layer maps host objects to resource representations.

    The ABI lifts a handle out of a guest to a rep and lowers a rep into a
    guest; a compiled codec given a ``HostResources`` converts at that seam,
    so host values are resource objects: ``lift_*`` gets the rep a guest
    handed over and returns the Python object the host sees; ``lower_*``
    gets the Python object the host passed and returns the rep.
    """

    def lift_own(self, rt: ResourceType, rep: int) -> object: ...

    def lift_borrow(self, rt: ResourceType, rep: int) -> object: ...

    def lower_own(self, rt: ResourceType, value: object) -> int: ...

    def lower_borrow(self, rt: ResourceType, value: object) -> int: ...
