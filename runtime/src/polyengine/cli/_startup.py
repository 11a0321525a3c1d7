"""Start-up of ``polyengine run`` and ``invoke``: the plain synchronous path and its helpers.

A component with no 0.3 async features whose only ``suspending()`` imports
are writes to stdio and file streams runs on plain synchronous calls
(:func:`plain_path`), its coroutine stepped without an event loop
(:func:`drive`), ``SIGINT`` interrupting its guest through the store
(:func:`sigint_interrupts`); everything else runs on ``asyncio.run``. The
component file is mapped rather than read (:func:`read_component`), and the
cyclic garbage collector waits until the guest starts (:func:`start_up_gc`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mmap

    from polyengine.translate import Artifacts

__all__ = [
    "SIGINT_REASON",
    "cancelled_error",
    "drive",
    "guest_starts",
    "plain_path",
    "read_component",
    "sigint_interrupts",
    "start_up_gc",
]

#: Whether :func:`start_up_gc` holds the cyclic garbage collector off (until the guest runs).
_gc_held = False


@contextlib.contextmanager
def start_up_gc() -> Iterator[None]:
    """Hold the cyclic garbage collector off while a run starts up.

    Start-up (imports, the plan, instantiation) allocates many objects that
    live as long as the process, and collections among them only add
    pauses (~10% of a cached run). The collector resumes when the guest
    starts (:func:`guest_starts`), with what start-up made frozen out of
    its reach; if the guest never starts it resumes here. On the way out
    the frozen objects are given back to the collector.
    """
    global _gc_held
    import gc

    if _gc_held or not gc.isenabled():
        yield
        return
    gc.disable()
    _gc_held = True
    try:
        yield
    finally:
        if _gc_held:
            _gc_held = False
            gc.enable()
        else:
            gc.unfreeze()


def guest_starts() -> None:
    """The guest is about to run: the collector resumes (see :func:`start_up_gc`)."""
    global _gc_held
    if _gc_held:
        import gc

        _gc_held = False
        gc.freeze()
        gc.enable()


#: The ``suspending()``-marked WASI 0.2 imports that never park under the command
#: line's providers when the component reaches no socket or HTTP stream: the
#: streams it can write are the process's stdio and files, written in place.
_WRITES_IN_PLACE = frozenset(
    {
        "[method]output-stream.blocking-write-and-flush",
        "[method]output-stream.blocking-flush",
        "[method]output-stream.blocking-write-zeroes-and-flush",
    }
)
#: Interfaces whose streams may be sockets (their writes can wait).
_PARKING_PACKAGES = ("wasi:sockets/", "wasi:http/")


def plain_path(arts: Artifacts, marked: Callable[[tuple[str, ...]], bool]) -> bool:
    """Whether the component runs on plain synchronous calls (``suspend=False``).

    It does when the plan has no 0.3 async features and the only
    ``suspending()``-marked imports it uses are writes to output streams
    that cannot be sockets: under the command line's providers those
    complete in place, so no frame ever parks. The run then needs no event
    loop (asyncio is not imported) and no task model: the synchronous path,
    the task model's degenerate case. Any other component runs on the task
    model, driven by ``asyncio.run``.
    """
    from polyengine.instance import needs_task_model

    plan = arts.plan
    if any(imp.name.startswith(_PARKING_PACKAGES) for imp in plan.imports):
        return False

    def parks(path: tuple[str, ...]) -> bool:
        if not marked(path):
            return False
        return not (
            len(path) == 2
            and path[0].startswith("wasi:io/streams@0.2.")
            and path[1] in _WRITES_IN_PLACE
        )

    return not needs_task_model(plan, parks)


def drive(coro: Coroutine[Any, Any, int], *, plain: bool) -> int:
    """Run ``_execute``: on ``asyncio.run``, or directly on the plain synchronous path.

    On the plain path every call completes in place, so the coroutine never
    waits for an event loop: it is stepped here without one, and asyncio is
    not imported. A bare ``yield`` (``asyncio.sleep(0)``, a turn of the loop
    after an interrupt) is a turn with nothing else to run.
    """
    if not plain:
        import asyncio

        return asyncio.run(coro)
    try:
        while True:
            if coro.send(None) is not None:  # pragma: no cover - an invariant
                coro.close()
                raise RuntimeError("a call on the synchronous path waited for an event loop")
    except StopIteration as stop:
        result = stop.value
    assert isinstance(result, int)
    return result


def read_component(path: Path) -> tuple[os.stat_result, bytes | mmap.mmap]:
    """The component file's ``stat`` and contents: a read-only mapping of a regular file.

    Mapped, an unchanged file whose plan and compiled modules are cached is
    not read at all (an 18 MB guest would otherwise be copied in whole);
    other files (a pipe, an empty file) are read.
    """
    import mmap
    import stat

    with open(path, "rb") as f:
        before = os.fstat(f.fileno())
        if stat.S_ISREG(before.st_mode) and before.st_size > 0:
            try:
                return before, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                pass
        return before, f.read()


#: The reason a guest interrupted by ``SIGINT`` on the plain path traps with.
SIGINT_REASON = "interrupted by SIGINT"


@contextlib.contextmanager
def sigint_interrupts(instance: Any) -> Iterator[None]:
    """On the plain path, ``SIGINT`` interrupts the running guest (a trap, code ``interrupt``).

    On the task model ``asyncio.run`` cancels the main task, which interrupts
    the guest; with no event loop the handler asks the instance's store to
    interrupt its guest instead. A process that ignores ``SIGINT`` (or has
    its own handler) is left as it is.
    """
    import signal

    store = getattr(getattr(instance, "_runtime", None), "store", None)
    interrupt = getattr(store, "interrupt", None)
    if (
        interrupt is None
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def handler(_signum: int, _frame: object) -> None:
        interrupt(SIGINT_REASON)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def cancelled_error() -> type[BaseException]:
    """``asyncio.CancelledError`` once asyncio is in use (the plain path never imports it)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return KeyboardInterrupt
    error: type[BaseException] = asyncio.CancelledError
    return error
