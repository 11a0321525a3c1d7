"""Reentrance through a host coroutine (Component Invariant #2, CanonicalABI.md §"canon lift").

A synchronous task parked in a ``suspending()`` host import is still on the
call stack: its instance (with the ancestors the call entered) must not be
entered again by that import. The task model leaves the instance while the
task is parked (other threads of the store keep running), so the stack is
tracked where it is known: the host coroutine of such an import runs in a
context whose :data:`ON_STACK` names those instances, and a host call into
one of them from that context traps "cannot enter component instance". An
unrelated host call (another asyncio task) is not reentrance.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from .store import InstanceState
from .traps import TrapCode, ctrap

__all__ = ["ON_STACK", "check_not_on_stack", "on_stack"]

#: the component instances (``id`` of their ``ci``) the context's call chain is inside
ON_STACK: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "polyengine_on_stack", default=frozenset()
)


@contextmanager
def on_stack(caller: InstanceState | None, sync: bool) -> Iterator[None]:
    """Mark ``caller`` (and its ancestors) as on the stack while a host coroutine starts.

    Only a synchronous caller task holds its instance (``sync``); an
    ``async`` one may be interleaved with other calls.
    """
    if caller is None or not sync:
        yield
        return
    ids = {id(ci) for ci in caller.ci.self_and_ancestors()}
    token = ON_STACK.set(ON_STACK.get() | ids)
    try:
        yield
    finally:
        ON_STACK.reset(token)


def check_not_on_stack(inst: InstanceState, what: str) -> None:
    """Trap when the current context's call chain is inside ``inst`` (reentrance)."""
    held = ON_STACK.get()
    if held and any(id(ci) in held for ci in inst.ci.self_and_ancestors()):
        ctrap(
            TrapCode.CANNOT_ENTER,
            f"cannot enter component instance {inst.ci.name} to call {what}: a synchronous "
            "call of it is parked in the host import making this call",
        )
