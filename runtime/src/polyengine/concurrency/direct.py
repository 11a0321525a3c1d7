"""Direct-access byte edges of ``stream<u8>`` (embedder-api.md §"Streams and
futures", amendment A21; python-mapping.md §6).

A direct session is a host operation whose callback runs once per
rendezvous, synchronously, with a scoped view of the peer's bytes: for
``write_direct`` the reader's unfilled landing zone
(:class:`DirectDestinationView`), for ``read_direct`` the writer's unread
bytes (:class:`DirectSourceView`). When the peer is a guest the view
aliases its linear memory, so the embedder's own copy is the one copy.

The callback answers ``"more"`` (stay parked for the next rendezvous) or
``"done"``; only marks made before a clean return count. ``"done"`` with
nothing marked is retraction (the peer's copy stays parked); ``"more"`` with
nothing marked, a bad verdict or a raising callback fail the session and
discard that invocation's marks.

:class:`DirectSession` is a :class:`~.buffers.DirectBuffer` parked on a
shared stream like any host buffer (CanonicalABI.md §Stream State: the
session is the host's pending buffer of a copy); :func:`run_on_shared`
drives one to its end. The embed layer's ``Stream.read_direct`` and
``StreamWriter.write_direct`` run on these.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

from polyengine.types import model as m

from .buffers import (
    MAX_LENGTH,
    DirectBuffer,
    HostReadableBuffer,
    HostWritableBuffer,
    ReadableGuestBuffer,
    WritableGuestBuffer,
)
from .store import Store
from .streams import CopyResult, SharedStreamImpl

__all__ = [
    "DirectDestinationView",
    "DirectReadSession",
    "DirectSession",
    "DirectSourceView",
    "DirectWriteSession",
    "run_on_shared",
]

Callback = Callable[[Any], str]


class _View:
    __slots__ = ("_dead", "_mv", "marked")

    _what = "direct view"

    def __init__(self, mv: memoryview) -> None:
        self._mv = mv
        self.marked = 0
        self._dead = False

    def _live(self) -> None:
        if self._dead:
            raise TypeError(
                f"this {self._what} is only valid while its callback runs "
                "(views are scoped to one invocation)"
            )

    def _mark(self, n: int) -> None:
        self._live()
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TypeError(f"a mark is a non-negative int, not {n!r}")
        if self.marked + n > len(self._mv):
            raise ValueError(
                f"cannot mark {n} more bytes: only {len(self._mv) - self.marked} remain"
            )
        self.marked += n


class DirectSourceView(_View):
    """The writer's unread bytes, offered to a ``read_direct`` callback."""

    __slots__ = ()
    _what = "direct source"

    def remaining(self) -> memoryview:
        """A read-only view of the bytes not marked read yet."""
        self._live()
        return self._mv[self.marked :].toreadonly()

    def mark_read(self, n: int, /) -> None:
        """Take ``n`` more bytes (cumulative within the invocation)."""
        self._mark(n)


class DirectDestinationView(_View):
    """The reader's unfilled landing zone, offered to a ``write_direct`` callback."""

    __slots__ = ()
    _what = "direct destination"

    def remaining(self) -> memoryview:
        """A writable view of the room not marked written yet."""
        self._live()
        return self._mv[self.marked :]

    def mark_written(self, n: int, /) -> None:
        """Deliver ``n`` more bytes (cumulative within the invocation)."""
        self._mark(n)


class DirectSession(DirectBuffer):
    """One direct session: its callback, running total and outcome."""

    __slots__ = ("callback", "failure", "finished", "progress", "t")

    def __init__(self, callback: Callback) -> None:
        self.callback = callback
        self.t: m.ValType | None = m.U8()
        #: bytes moved over the whole session (the buffer's progress)
        self.progress = 0
        self.finished = False
        self.failure: BaseException | None = None

    def remain(self) -> int:
        return 0 if self.finished else MAX_LENGTH

    def is_zero_length(self) -> bool:
        return False

    def _invoke(self, view: _View) -> int:
        """Run the callback once; the bytes it marked (0 when it failed or retracted)."""
        try:
            verdict = self.callback(view)
        except BaseException as exc:
            view._dead = True
            self.finished = True
            self.failure = exc
            return 0
        view._dead = True
        k = view.marked
        if verdict == "done":
            self.finished = True
        elif verdict == "more":
            if k == 0:
                self.finished = True
                self.failure = TypeError(
                    "a direct session callback returned 'more' with nothing marked"
                )
                return 0
        else:
            self.finished = True
            self.failure = TypeError(
                f"a direct session callback returns 'more' or 'done', not {verdict!r}"
            )
            return 0
        self.progress += k
        return k

    def run_view(self, mv: memoryview) -> int:
        raise NotImplementedError

    def guest_transfer(self, peer: WritableGuestBuffer | ReadableGuestBuffer, n: int) -> None:
        """Run the callback over ``n`` bytes of the guest buffer ``peer`` in place."""
        cx = peer.cx
        cx.refresh()
        k = self.run_view(cx.mv[peer.ptr : peer.ptr + n])
        peer.ptr += k
        peer.progress += k


class DirectWriteSession(DirectSession):
    """``write_direct``: the callback fills the reader's landing zone."""

    __slots__ = ()

    def read(self, n: int) -> list[Any]:
        raise AssertionError("a direct session moves its bytes itself")

    def run_view(self, mv: memoryview) -> int:
        return self._invoke(DirectDestinationView(mv))

    def direct_transfer(self, peer: Any, n: int) -> None:
        if isinstance(peer, WritableGuestBuffer):
            self.guest_transfer(peer, n)
        else:
            assert isinstance(peer, HostWritableBuffer)
            scratch = bytearray(n)
            k = self.run_view(memoryview(scratch))
            if k:
                del scratch[k:]
                peer.values.extend(scratch)
                peer.progress += k


class DirectReadSession(DirectSession):
    """``read_direct``: the callback takes from the writer's unread bytes."""

    __slots__ = ()

    def write(self, vs: list[Any]) -> None:
        raise AssertionError("a direct session moves its bytes itself")

    def run_view(self, mv: memoryview) -> int:
        return self._invoke(DirectSourceView(mv))

    def direct_transfer(self, peer: Any, n: int) -> None:
        if isinstance(peer, ReadableGuestBuffer):
            self.guest_transfer(peer, n)
        else:
            assert isinstance(peer, HostReadableBuffer) and peer.is_bytes
            start = peer.progress
            values = cast(bytes, peer.values)
            k = self.run_view(memoryview(values)[start : start + n])
            peer.progress += k


async def run_on_shared(
    store: Store, shared: SharedStreamImpl, session: DirectSession
) -> CopyResult:
    """Drive ``session`` on ``shared`` until it finishes or the stream ends.

    Returns how the last copy ended (``DROPPED`` when the other end went
    away, ``CANCELLED`` when the session was retracted by a cancel).
    Cancelling the caller retracts a parked session.
    """
    loop = asyncio.get_running_loop()
    reading = isinstance(session, DirectReadSession)
    while True:
        fut: asyncio.Future[CopyResult] = loop.create_future()

        def on_copy(reclaim: Callable[[], None], fut: asyncio.Future[CopyResult] = fut) -> None:
            # a parked session stays parked while its callback asks for more
            if session.finished:
                reclaim()
                if not fut.done():
                    fut.set_result(CopyResult.COMPLETED)

        def on_done(result: CopyResult, fut: asyncio.Future[CopyResult] = fut) -> None:
            if not fut.done():
                fut.set_result(result)

        if reading:
            shared.read(None, session, on_copy, on_done)  # type: ignore[arg-type]
        else:
            shared.write(None, session, on_copy, on_done)  # type: ignore[arg-type]
        store.wake()
        try:
            result = await asyncio.shield(fut)
        except asyncio.CancelledError:
            retract(shared, session)
            store.wake()
            raise
        if session.finished or result is not CopyResult.COMPLETED:
            return result


def retract(shared: SharedStreamImpl, session: DirectSession) -> bool:
    """Retract ``session`` if it is parked on ``shared`` (cancel_read/cancel_write)."""
    if shared.pending_buffer is session:
        session.finished = True
        shared.cancel()
        return True
    return False
