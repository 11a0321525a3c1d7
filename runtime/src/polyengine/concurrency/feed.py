"""A host future fed by an ``asyncio.Future``, with callbacks instead of a task.

python-mapping.md §6 and the contract's §"Streams and futures" (A8, A13,
A15): what :func:`~.pumps.pump_future` does for any awaitable, done for the
common source (an ``asyncio.Future``, such as a wasi:http transmission
result) by the future's own done-callback: no task, no coroutine and no
event-loop step per future.

* the source settles: its value is offered to the reader (the writer end
  stays open until the reader takes it or drops the future); a failure or
  a cancellation abandons the future, and a guest reader then traps (A8);
* the reader drops the future first: the source is cancelled (A13) and the
  writer end let go one loop callback later (A15).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .host_ends import HostFutureWriter
from .pipe import HostFedFuture
from .pumps import _abandon, _Abandoned, producer_error
from .streams import CopyResult

__all__ = ["feed_future"]


def feed_future(
    src: asyncio.Future[Any],
    w: HostFutureWriter,
    shared: HostFedFuture,
    site: object,
    settled: Callable[[], None],
) -> None:
    """Write ``src``'s value into ``shared`` through ``w`` once it settles.

    ``site`` names where the future was passed (its ``str``, made only for a
    producer error); ``settled()`` runs once the feed is over (the driver's
    ``run_ready``), as a loop callback: the readers the feed readied run.
    """
    feed = _Feed(src, w, shared, site, settled)
    shared.on_drop = feed.reader_gone
    src.add_done_callback(feed.value_in)


class _Feed:
    """One feed of :func:`feed_future`: its callbacks, as one object (not four closures)."""

    __slots__ = ("settled", "shared", "site", "src", "w")

    def __init__(
        self,
        src: asyncio.Future[Any],
        w: HostFutureWriter,
        shared: HostFedFuture,
        site: object,
        settled: Callable[[], None],
    ) -> None:
        self.src = src
        self.w = w
        self.shared = shared
        self.site = site
        self.settled = settled

    def value_in(self, fut: asyncio.Future[Any]) -> None:
        """The source settled: offer its value, or abandon the future."""
        self.shared.on_drop = None
        w = self.w
        if fut.cancelled():
            _abandon(w.store, w, _Abandoned(_CANCELLED))
        else:
            exc = fut.exception()
            if exc is not None:
                _abandon(w.store, w, producer_error(str(self.site), exc))
            elif not w.closed:
                w.offer(fut.result(), self.offered)
                return
        self.settled()

    def offered(self, _result: CopyResult) -> None:
        self.settled()

    def reader_gone(self) -> None:
        """The reader dropped the future first: cancel the source, let the writer go."""
        src = self.src
        src.remove_done_callback(self.value_in)
        loop = src.get_loop()
        if loop.is_closed():  # nothing can run any more: let go at once
            self.let_go()
            return
        src.cancel()
        loop.call_soon(self.let_go)

    def let_go(self) -> None:
        w = self.w
        if not w.closed:
            w.drop()
        self.settled()


_CANCELLED = "the host dropped the writable end of a future without writing a value"
