"""Imports factories of the pool tests, made in the worker processes.

This folder is on ``sys.path`` (the conftest puts it there, and a worker
gets its parent's path), so the tests name a factory ``"pool_hosts:imports"``
or pass the function itself; the workers import this module.

``poke(how)`` does, in the worker: 0 nothing; 1 ``os._exit(3)``; 2 a
segfault (a read of address 0); 3 ``SIGKILL`` to itself; 10..16 raise one
member of the error taxonomy (:data:`RAISED`), each with a cause chain.
"""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace

from polyengine_protocol import (
    ComponentException,
    DroppedError,
    InvalidHandleError,
    PeerTrappedError,
    StreamProducerError,
    Trap,
)

#: ``poke`` codes that raise, and what each raises
RAISED = {
    10: "DroppedError",
    11: "InvalidHandleError",
    12: "PeerTrappedError",
    13: "StreamProducerError",
    14: "ValueError",
    15: "ExitError",
    16: "Trap",
}


def _raise(how: int) -> None:
    if how == 10:
        raise DroppedError("the writer dropped the future")
    if how == 11:
        raise InvalidHandleError("handle 7 was dropped")
    if how == 12:
        raise PeerTrappedError(
            "the peer trapped mid-write", Trap("the peer's fault", "unreachable"), 7
        )
    if how == 13:
        raise StreamProducerError("the producer failed", OSError("the disk is gone"))
    if how == 14:
        try:
            raise KeyError("missing")
        except KeyError as exc:
            raise ValueError("a bad value") from exc
    if how == 15:
        from polyengine_wasi import ExitError

        raise ExitError(3)
    if how == 16:
        error = Trap("the host gave up", "host-gave-up")
        error.__cause__ = ComponentException({"kind": "busy", "value": 3}, "busy")
        raise error


def poke(how: int) -> None:
    if how == 1:
        os._exit(3)
    if how == 2:
        import ctypes
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file of this crash
        ctypes.string_at(0)  # a read of address 0: a real segmentation fault
    if how == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    _raise(how)


def nap(ms: int) -> None:
    time.sleep(ms / 1000)


def imports(instance_id: int) -> dict[str, object]:
    """The guest's one import interface; ``pid`` is this worker's process id."""
    return {
        "test:pool/host": SimpleNamespace(poke=poke, pid=os.getpid, nap=nap),
    }




async def async_imports() -> dict[str, object]:
    """An ``async def`` factory without the instance id."""
    return imports(0)


def broken_imports(instance_id: int) -> dict[str, object]:
    raise RuntimeError("no database in this worker")


def second_instance_fails(instance_id: int) -> dict[str, object]:
    """The first instance of a worker is made; any replacement fails."""
    if instance_id > 0:
        raise RuntimeError(f"instance {instance_id}: the licence allows one instance")
    return imports(instance_id)


def not_a_mapping(instance_id: int) -> object:
    return [1, 2, 3]
