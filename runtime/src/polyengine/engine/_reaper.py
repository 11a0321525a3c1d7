"""Deleting closed stores off the caller's thread (architecture.md §4 and §5).

Deleting a wasmtime store unmaps its instances' memories and tables and
unregisters their code: a fresh componentize-py instance takes ~0.2 ms of
it, on the path of the request that closed it (§5: serving one instance per
request). Nothing of a closed store can run any more (its live call futures
are deleted first, as §4 requires, and its host entries dropped, see
``_StoreState.close``), and a store may be dropped on any thread, so
:func:`delete_store` hands the deletion to one thread of its own, whose
ctypes calls release the GIL: the work overlaps the next request.

The queue is bounded (:data:`LIMIT`); past it, after a fork (the thread is
not the child's) and once the interpreter is exiting, stores are deleted
in place, as before. At exit the queue is drained before the interpreter
goes. So is a store whose memories the host knows of hold less than
:data:`IN_PLACE_BYTES` (a component-text proxy's 64 KiB): deleting it takes
~10-20 us here, and handing it over cost more CPU than that (measured on
the hello proxy served one instance per request: ~1.17 against ~0.98 ms of
CPU per request, the deleting thread's included).

With the compiled call path the thread's loop and its queue are C
(``_accel_link.c`` ``reaper_loop``): the loop holds no GIL, so the thread
that closes and makes stores never waits for it. A loop in Python would take
the GIL back after each deletion, and then every ctypes call of the serving
thread (each releases the GIL) could hand it over and wait for its return:
that waiting cost more than the deletion it moved off the request. The
loop parks on a condition whenever its queue is empty and a push wakes it
(it never polls), as a ``SCHED_BATCH`` thread where Linux has them, so the
wake-up does not preempt the thread that pushed.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import deque
from typing import Any

from . import _ffi as ffi

__all__ = ["IN_PLACE_BYTES", "LIMIT", "delete_store", "drain"]

#: how many closed stores may wait for the thread before deletion happens in place
LIMIT = 16
#: a store whose known memories hold fewer bytes is deleted in place
IN_PLACE_BYTES = 1 << 20


class _Reaper:
    """The reaper thread and its queue; ``native`` (the default when the compiled
    call path is active): the queue and the loop are the extension's."""

    __slots__ = ("cv", "native", "open", "pending", "pid", "thread")

    def __init__(self, native: bool | None = None) -> None:
        self.cv = threading.Condition(threading.Lock())
        #: ``(store pointer, linker pointer)`` of each closed store not yet deleted
        #: (the Python queue; the native one is the extension's)
        self.pending: deque[tuple[int, int]] = deque()
        self.thread: threading.Thread | None = None
        self.open = True
        self.pid = os.getpid()
        #: the extension's reaper functions (``None``: the Python loop), found on first use
        self.native: Any = None if native is False else _UNSET

    def _native(self) -> Any:
        found = self.native
        if found is _UNSET:
            found = self.native = _NATIVE[0]
        return found

    def submit(self, store: int, linker: int) -> bool:
        """Queue the deletion (``False``: the caller deletes in place)."""
        if os.getpid() != self.pid:
            return False  # a forked child: the thread is the parent's
        native = self._native()
        if native is not None and self.thread is not None:
            queued: bool = native.reaper_push(store, linker, LIMIT)
            return queued  # the common case: no Python lock, no thread switch
        with self.cv:
            if not self.open or len(self.pending) >= LIMIT:
                return False
            if self.thread is None:
                target: Any = self._run
                if native is not None:
                    target = native.reaper_loop
                    args: tuple[int, ...] = (
                        ffi.address(ffi.store_delete),
                        ffi.address(ffi.linker_delete),
                    )
                else:
                    args = ()
                thread = threading.Thread(
                    target=target, args=args, name="polyengine-store-reaper", daemon=True
                )
                try:
                    thread.start()
                except RuntimeError:  # no new threads (the interpreter is shutting down)
                    self.open = False
                    return False
                self.thread = thread
            if native is not None:
                queued = native.reaper_push(store, linker, LIMIT)
                return queued
            self.pending.append((store, linker))
            self.cv.notify()
        return True

    def _run(self) -> None:
        while True:
            with self.cv:
                while not self.pending and self.open:
                    self.cv.wait()
                if not self.pending:
                    return
                store, linker = self.pending.popleft()
            _delete_now(store, linker)

    def drain(self) -> None:
        """Stop taking stores, wait for the thread, delete what is left here."""
        with self.cv:
            self.open = False
            self.cv.notify()
            thread = self.thread
        native = self.native if self.native is not _UNSET else None
        here = self.pid == os.getpid()
        if native is not None and here:
            native.reaper_close(False)  # the loop deletes what is queued, then returns
        if thread is not None and here:
            thread.join(timeout=10)
        if native is not None and here:
            # What a loop that did not finish in time has not taken is deleted here.
            for store, linker in native.reaper_close(True):
                _delete_now(store, linker)
        while True:
            with self.cv:
                if not self.pending:
                    return
                store, linker = self.pending.popleft()
            _delete_now(store, linker)


def _delete_now(store: int, linker: int) -> None:
    if store:
        ffi.store_delete(store)
    if linker:
        ffi.linker_delete(linker)


_UNSET: Any = object()
#: the extension's reaper functions, once the compiled call path is loaded (``set_native``)
_NATIVE: list[Any] = [None]


def set_native(accel: Any) -> None:
    """Use the loop and queue of the extension ``accel`` (``_accelerator.py`` calls this
    once it is loaded; ``None``, or an extension without them: the Python loop)."""
    _NATIVE[0] = accel if hasattr(accel, "reaper_loop") else None


_REAPER = _Reaper()


def delete_store(store: int, linker: int, mapped: int | None = None) -> None:
    """Delete a closed store and its async linker (either may be 0), on the reaper
    thread when it takes it, else here; ``mapped`` (the bytes of the store's known
    memories) under :data:`IN_PLACE_BYTES`: here."""
    if (mapped is not None and mapped < IN_PLACE_BYTES) or not _REAPER.submit(store, linker):
        _delete_now(store, linker)


def drain() -> None:
    """Delete every store still waiting; later ones are deleted in place."""
    _REAPER.drain()


atexit.register(drain)
