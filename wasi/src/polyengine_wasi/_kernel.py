"""The parking kernel: ``wasi:io/poll`` pollables and the ``poll`` function.

embedder-api.md §"WASI examination" (amendment A6): a pollable is a thin
object over host-supplied readiness. ``Pollable(ready, wait)`` is publicly
constructible so that any provider (timers, streams, sockets, an embedder's
own glue) hands the kernel pollables it treats uniformly:

* ``ready()`` answers synchronously whether the event has happened;
* ``wait()`` returns an awaitable that completes at the next event that may
  have changed readiness (spurious wake-ups are fine: the kernel re-checks
  ``ready()`` after every wake).

``block`` and ``poll`` are sync WIT functions that must park the calling
frame when nothing is ready yet, so they carry the ``suspending`` mark
(python-mapping.md §4) and take a synchronous fast path when the answer is
already known: a ready pollable costs no suspension.
"""

from __future__ import annotations

import select
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from polyengine_protocol import POLLABLE, Trap, define_realm_local, suspending

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "Pollable",
    "poll",
    "ready_pollable",
    "timer_pollable",
    "fd_pollable",
    "wait_fd",
    "fd_ready",
    "monotonic_now",
]

def monotonic_now() -> int:
    """The host's monotonic clock in nanoseconds (wasi:clocks monotonic-clock)."""
    return time.monotonic_ns()


@define_realm_local
class Pollable:
    """``wasi:io/poll.pollable``: readiness plus a way to wait for it.

    Branded ``polyengine.pollable/1`` and realm-local (pickling refuses).

    ``ready`` is a zero-argument callable answering whether the event has
    happened; ``wait`` is a zero-argument callable returning an awaitable that
    completes at the next event that may have changed the answer.
    """

    __polyengine_brand__ = POLLABLE

    def __init__(
        self, ready: Callable[[], bool], wait: Callable[[], Awaitable[object]]
    ) -> None:
        if not callable(ready) or not callable(wait):
            raise TypeError("Pollable(ready, wait) takes two callables")
        self._ready_fn = ready
        self._wait_fn = wait

    def ready(self) -> bool:
        """WIT ``[method]pollable.ready``: whether the event has happened."""
        return bool(self._ready_fn())

    def wait(self) -> Awaitable[object]:
        """Host-side: an awaitable completing at the next possible change."""
        return self._wait_fn()

    @suspending
    def block(self) -> Awaitable[None] | None:
        """WIT ``[method]pollable.block``: return once ready, parking if need be."""
        if self.ready():
            return None
        return self._block()

    async def _block(self) -> None:
        while not self.ready():
            await self.wait()


async def _nothing() -> None:
    return None


def ready_pollable() -> Pollable:
    """A pollable that is always ready."""
    return Pollable(lambda: True, _nothing)


def timer_pollable(deadline_ns: int) -> Pollable:
    """A pollable ready once the monotonic clock reaches ``deadline_ns``."""

    async def sleep_until() -> None:
        import asyncio

        remaining = deadline_ns - monotonic_now()
        if remaining > 0:
            # Round up so that one wake-up normally suffices.
            await asyncio.sleep((remaining + 999) / 1e9)

    return Pollable(lambda: monotonic_now() >= deadline_ns, sleep_until)


#: Waiters per (loop, fd, direction): one selector registration wakes them all,
#: so two pollables over one descriptor never displace each other.
_fd_waiters: dict[tuple[int, int, bool], list[asyncio.Future[None]]] = {}


async def wait_fd(fd: int, *, write: bool) -> None:
    """Wait until ``fd`` is readable (or writable) on the running event loop."""
    import asyncio

    loop = asyncio.get_running_loop()
    key = (id(loop), fd, write)
    fut: asyncio.Future[None] = loop.create_future()
    waiters = _fd_waiters.get(key)
    if waiters is None:
        waiters = _fd_waiters[key] = []

        def wake() -> None:
            for waiter in _fd_waiters.pop(key, []):
                if not waiter.done():
                    waiter.set_result(None)
            _unregister(loop, fd, write)

        if write:
            loop.add_writer(fd, wake)
        else:
            loop.add_reader(fd, wake)
    waiters.append(fut)
    try:
        await fut
    finally:
        remaining = _fd_waiters.get(key)
        if remaining is not None:
            if fut in remaining:
                remaining.remove(fut)
            if not remaining:
                del _fd_waiters[key]
                _unregister(loop, fd, write)


def _unregister(loop: asyncio.AbstractEventLoop, fd: int, write: bool) -> None:
    if loop.is_closed():
        return
    if write:
        loop.remove_writer(fd)
    else:
        loop.remove_reader(fd)


def fd_ready(fd: int, *, write: bool) -> bool:
    """Whether ``fd`` is readable (or writable) now; a closed fd counts as ready.

    ``select.poll`` rather than ``select.select``, which refuses descriptors
    numbered 1024 and above.
    """
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT if write else select.POLLIN)
    return bool(poller.poll(0))


def fd_pollable(fd: int, *, write: bool, ready: Callable[[], bool]) -> Pollable:
    """A pollable over a file descriptor's readiness, with ``ready`` the check."""
    return Pollable(ready, lambda: wait_fd(fd, write=write))


@suspending
def poll(in_: Sequence[Pollable]) -> list[int] | Awaitable[list[int]]:
    """WIT ``wasi:io/poll.poll``: the indices of the ready pollables.

    Returns at once when at least one is ready; otherwise parks until one is.
    An empty list traps, as the interface requires.
    """
    pollables = list(in_)
    if not pollables:
        raise Trap("wasi:io/poll#poll: the list of pollables is empty")
    if len(pollables) > 0xFFFF_FFFF:
        raise Trap("wasi:io/poll#poll: too many pollables")
    indices = _ready_indices(pollables)
    if indices:
        return indices
    return _poll_parked(pollables)


def _ready_indices(pollables: Sequence[Pollable]) -> list[int]:
    return [i for i, p in enumerate(pollables) if p.ready()]


async def _poll_parked(pollables: list[Pollable]) -> list[int]:
    import asyncio

    while True:
        waiters = [asyncio.ensure_future(p.wait()) for p in pollables]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)
        indices = _ready_indices(pollables)
        if indices:
            return indices
