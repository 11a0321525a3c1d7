"""Canonical options and the lifting/lowering context.

CanonicalABI.md §"Canonical ABI Options" and §"Lifting and Lowering Context".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from polyengine.abi.memory import Memory, Realloc
from polyengine.abi.trap import TrapCode, trap
from polyengine.types.layout import PtrType

if TYPE_CHECKING:
    from polyengine.abi.resources import BorrowingTask, ComponentInstance, LendingSubtask

__all__ = ["CanonicalOptions", "LiftLowerContext", "StringEncoding"]

StringEncoding: TypeAlias = Literal["utf8", "utf16", "latin1+utf16"]

_EMPTY = memoryview(bytearray(0))


@dataclass(slots=True)
class CanonicalOptions:
    """The ``canonopt`` list of a ``canon lift``/``canon lower`` (§"Canonical ABI Options").

    ``memory`` and ``realloc`` are the engine's objects (see
    :mod:`polyengine.abi.memory`); ``post_return`` and ``callback`` are core
    functions as Python callables over core values. ``addrtype`` is the
    memory's address type (``"i64"`` for 64-bit memories).
    """

    string_encoding: StringEncoding = "utf8"
    memory: Memory | None = None
    realloc: Realloc | None = None
    post_return: Callable[..., Any] | None = None
    is_async: bool = False
    callback: Callable[..., Any] | None = None
    addrtype: PtrType = "i32"


class LiftLowerContext:
    """Ambient state of one lift or lower (CanonicalABI.md §"Lifting and Lowering Context").

    ``borrow_scope`` is the Task-like scope (``num_borrows``) when lowering
    ``borrow`` handles into a callee, or the Subtask-like scope
    (``add_lender``) when lifting them out of a caller; ``None`` when the
    types hold no ``borrow``.

    ``at`` and ``where`` say which value of which function is being lowered
    (set only around values that may hold a stream or future), so a host
    producer can be named by where it was passed.

    ``mv`` caches the memory's current view. It is read on first use (a
    call passing only scalars never asks the engine for a view) and again
    after every ``realloc`` call (the only guest code the ABI layer runs).
    Call :meth:`refresh` after anything else that may have run guest code.
    """

    __slots__ = ("at", "borrow_scope", "budget", "inst", "mv", "opts", "where")

    mv: memoryview

    def __init__(
        self,
        opts: CanonicalOptions,
        inst: ComponentInstance,
        borrow_scope: BorrowingTask | LendingSubtask | None = None,
    ) -> None:
        self.opts = opts
        self.inst = inst
        self.borrow_scope = borrow_scope
        #: what lists and strings may still read (see :meth:`charge`)
        self.budget = inst.lift_budget
        #: the value being lowered that may hold a stream or future: (its label, e.g.
        #: ``parameter `s```, and the whole value), so a host producer found inside it
        #: can be named where it was passed
        self.at: tuple[str, object] | None = None
        #: the function whose values these are (an export's or import's name), if known
        self.where: str | None = None

    def __getattr__(self, name: str) -> Any:
        # Reached only while the ``mv`` slot is unset: fetch the view lazily.
        if name != "mv":
            raise AttributeError(name)
        memory = self.opts.memory
        mv = memory.view() if memory is not None else _EMPTY
        self.mv = mv
        return mv

    def charge(self, nbytes: int, elements: int) -> None:
        """Count a list or string lifted out of memory; trap once the budget is spent.

        A guest can make lists whose elements all point at the same memory,
        so what a lift reads can be exponentially larger than the memory:
        every list and string lifted is counted (its bytes plus its
        elements) against the instance's budget for one lift.
        """
        left = self.budget - nbytes - elements
        self.budget = left
        if left < 0:
            trap(
                TrapCode.LIFT_LIMIT,
                f"lifting this value reads more than the {self.inst.lift_budget} bytes and "
                f"elements one call may lift (polyengine.Limits.max_lift_bytes)",
            )

    def refresh(self) -> None:
        """Forget the memory view; the next use re-reads it (memory may have grown)."""
        try:  # noqa: SIM105 - contextlib.suppress costs ~10x on this hot path
            del self.mv
        except AttributeError:
            pass

    def reallocate(
        self, old: int, old_byte_length: int, alignment: int, new_byte_length: int
    ) -> int:
        """Call the guest realloc with ``may_leave`` cleared (§"Lifting and Lowering Context").

        The returned pointer is masked to the address width; the memory view
        is re-read afterwards.
        """
        opts = self.opts
        realloc = opts.realloc
        if realloc is None:
            trap(TrapCode.MISSING_REALLOC, "lowering this value needs the realloc option")
        inst = self.inst
        assert inst.may_leave
        inst.may_leave = False
        try:
            ptr = realloc(old, old_byte_length, alignment, new_byte_length)
        finally:
            inst.may_leave = True
        try:  # noqa: SIM105 - self.refresh(), inline (contextlib.suppress costs ~10x)
            del self.mv
        except AttributeError:
            pass
        return ptr & (0xFFFFFFFF if opts.addrtype == "i32" else 0xFFFFFFFFFFFFFFFF)

    def allocate(self, alignment: int, byte_length: int) -> int:
        """A fresh block from ``realloc(0, 0, alignment, byte_length)``."""
        return self.reallocate(0, 0, alignment, byte_length)
