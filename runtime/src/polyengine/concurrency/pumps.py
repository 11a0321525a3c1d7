"""Host producers pumped into a stream or a future (CanonicalABI.md §Stream
State and §Future State, with a host operation as the writer;
embedder-api.md §"Streams and futures", A8, A13; python-mapping.md §6).

A natural Python producer lowered into a guest (an async iterable or a
finite sync iterable for a stream, any awaitable for a future) is fed into
the shared stream or future by a host operation of the store's
:class:`~.driver.Driver` (spawned by the caller), so a guest waiting on it
is never declared deadlocked while the host may still act:

* :func:`pump_stream` writes a stream source into a :class:`~.pipe.Pipe`
  (bound to the guest-visible :class:`~.pipe.HostFedStream`);
* :func:`pump_future` awaits a future source and writes its value into a
  :class:`~.pipe.HostFedFuture`.

A producer whose stream or future dies while it is parked is cancelled
(A13); a failed producer is a :class:`StreamProducerError` naming where it
was passed (``site``), which traps a guest reading on (A8: never a clean
end). Elements holding ``own<R>`` are converted by an
:class:`ElementOffer` as they are offered; the resources of elements the
reader never takes are released (destroyed), exactly as if it had taken
and dropped them.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from polyengine_protocol import PeerTrappedError, StreamProducerError

from .host_ends import HostFutureWriter
from .pipe import Chunk, HostFedFuture, Pipe, producer_trap
from .store import Store
from .streams import CopyResult

__all__ = ["PUMP_CHUNK", "ElementOffer", "producer_error", "pump_future", "pump_stream"]

#: the most elements a pump reads from a host stream source at once
PUMP_CHUNK = 64 * 1024


class ElementOffer(Protocol):
    """How host elements holding ``own<R>`` become raw elements (and are released unread)."""

    def lower(self, v: Any) -> tuple[Any, Any]:
        """The raw element for ``v`` and what it holds (handed to :meth:`release`)."""
        ...

    def release(self, held: Any) -> None:
        """Destroy the resources of an element the reader never took."""
        ...


def producer_error(site: str, exc: BaseException) -> StreamProducerError:
    """The failure of a host producer, naming where it was passed (its cause is ``exc``)."""
    return StreamProducerError(f"producer for {site} raised {type(exc).__name__}: {exc}", exc)


def _byte_chunk(item: Any) -> bytes:
    if isinstance(item, bytes | bytearray | memoryview):
        return bytes(item)
    if isinstance(item, int):
        return bytes((item,))
    return bytes(item)


async def pump_stream(
    src: Any,
    u8: bool,
    pipe: Pipe,
    own: ElementOffer | None,
    site: str,
    *,
    chunks: Callable[[int], Awaitable[Chunk]] | None = None,
    done: Callable[[], None] | None = None,
) -> None:
    """Feed ``src`` into ``pipe``, then end the stream.

    ``chunks(n)``, when given, reads the source chunk by chunk (another
    stream; an empty chunk is its end) and ``done()`` lets go of it
    afterwards. Otherwise ``src`` is a ``bytes``-like value, an async
    iterable (one element per item, ``bytes`` items concatenated for a
    ``stream<u8>``) or a finite iterable. A failure of ``src`` reaches the
    reader as :class:`StreamProducerError` naming ``site``.
    """
    try:
        if chunks is not None:
            while True:
                chunk = await chunks(PUMP_CHUNK)
                if not chunk or not await _send(pipe, chunk, own):
                    break
        elif isinstance(src, bytes | bytearray | memoryview):
            await pipe.write_all(src if u8 else list(src))
        elif hasattr(src, "__aiter__"):
            await _pump_async(src, u8, pipe, own)
        else:
            items = list(src)
            whole = b"".join(_byte_chunk(x) for x in items) if u8 else items
            if whole:
                await _send(pipe, whole, own)
        await pipe.flush_ahead()
    except PeerTrappedError:
        pass  # the reader's instance trapped: nothing left to feed
    except Exception as exc:
        # what the producer gave before it failed reaches the reader first
        with contextlib.suppress(PeerTrappedError):
            await pipe.flush_ahead()
        pipe.fail(producer_error(site, exc))
        return
    finally:
        if done is not None:
            done()
    pipe.close()


async def _send(pipe: Pipe, chunk: Chunk, own: ElementOffer | None) -> bool:
    """Write ``chunk``; whether all of it was taken.

    Resources inside elements are registered (host objects) or taken
    (guest wrappers) as they are offered; those of elements the reader
    never takes (it dropped the stream, or its instance trapped) are
    released (A13).
    """
    if own is None:
        return await pipe.write_ahead(chunk)
    raws: list[Any] = []
    helds: list[Any] = []
    try:
        for v in chunk:
            raw, held = own.lower(v)
            raws.append(raw)
            helds.append(held)
    except BaseException:
        for held in helds:
            own.release(held)
        raise
    taken = 0
    try:
        taken = await pipe.write_all(raws)
    except PeerTrappedError as exc:
        taken = exc.progress or 0
        raise
    finally:
        for held in helds[taken:]:
            own.release(held)
    return taken == len(raws)


class _Pull:
    """The state of a pump's pull from its source (A13 cancellation)."""

    __slots__ = ("interrupted", "parked", "stopped")

    def __init__(self) -> None:
        #: a pull is in flight (the pump awaits the source)
        self.parked = False
        #: the stream died during a pull: the pump stops after it
        self.stopped = False
        #: the pump task was cancelled to interrupt the pull
        self.interrupted = False


async def _pump_async(src: Any, u8: bool, pipe: Pipe, own: ElementOffer | None) -> None:
    """Pull ``src`` item by item into ``pipe`` inside this one task.

    A pull that is ready costs one ``__anext__`` step (no task or wait
    per item). A pull that parks is interrupted when the stream dies
    (A13): a source with a ``cancel()`` method is asked to stop and its
    pending pull drained (a straggler element goes to the un-taken
    release path); otherwise this task is cancelled at the pull, so an
    async generator sees ``CancelledError`` at its await.
    """
    it = src.__aiter__()
    anext = it.__anext__
    dead = pipe.dead_future()
    task = asyncio.current_task()
    assert task is not None
    pull = _Pull()

    def reader_gone(_: object) -> None:
        if not pull.parked or pull.stopped:
            return
        pull.stopped = True
        cancel = getattr(src, "cancel", None)
        if callable(cancel) and not isinstance(src, asyncio.Future):
            with contextlib.suppress(Exception):
                cancel()
        else:
            pull.interrupted = True
            task.cancel()

    dead.add_done_callback(reader_gone)
    try:
        while not dead.done():
            pull.parked = True
            try:
                item = await anext()
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if pull.interrupted:
                    task.uncancel()
                    return
                raise
            except Exception:
                if pull.stopped:
                    return  # a cancelled source's last pull failed: nothing left to feed
                raise
            finally:
                pull.parked = False
            if pull.stopped:
                if pull.interrupted:
                    task.uncancel()  # the source swallowed the cancellation
                if own is not None:
                    # an element never offered: its resources are destroyed (A13)
                    with contextlib.suppress(Exception):
                        own.release(own.lower(item)[1])
                return
            chunk: Chunk = _byte_chunk(item) if u8 else [item]
            if own is None:
                if not await pipe.write_ahead(chunk):  # (_send's own case, without its frame)
                    return
            elif not await _send(pipe, chunk, own):
                return
    finally:
        dead.remove_done_callback(reader_gone)
        close = getattr(it, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()


async def pump_future(
    src: Awaitable[Any],
    w: HostFutureWriter,
    shared: HostFedFuture,
    site: str,
    *,
    done: Callable[[], None] | None = None,
) -> None:
    """Await ``src`` and write its value into ``shared`` through the host end ``w``.

    When the future dies before the value arrives (its reader dropped it
    unread) the producer is cancelled (A13): the await is interrupted,
    which cancels an ``asyncio.Future`` or ``Task`` being awaited and
    throws ``CancelledError`` into a coroutine; an awaitable with a
    ``cancel()`` method is also asked to stop, and a coroutine that never
    started is closed; ``done()``, when given, then lets go of the source.
    """
    store = w.store
    task = asyncio.current_task()
    assert task is not None
    pull = _Pull()

    def reader_gone() -> None:
        pull.stopped = True
        if pull.parked:
            pull.interrupted = True
            task.cancel()

    shared.on_drop = reader_gone
    try:
        if pull.stopped or shared.dropped:
            pull.stopped = True  # the future died before its producer was awaited
            _cancel_source(src)
            return
        pull.parked = True
        try:
            value = await src
        finally:
            pull.parked = False
    except asyncio.CancelledError:
        if pull.interrupted:
            task.uncancel()
            _cancel_source(src)
            return
        # A8: abandonment, never DROPPED: the guest reader traps at its rendezvous
        shared.on_drop = None
        _abandon(
            store,
            w,
            _Abandoned("the host dropped the writable end of a future without writing a value"),
        )
        return
    except Exception as exc:
        shared.on_drop = None
        if pull.stopped:
            return  # the future died meanwhile: nobody is left to tell
        _abandon(store, w, producer_error(site, exc))
        return
    finally:
        if pull.stopped:
            if not w.closed:
                w.drop()  # let go of the dead future: no host work left (A15)
            if done is not None:
                done()
    shared.on_drop = None
    if pull.interrupted:
        task.uncancel()  # the source swallowed the cancellation and produced anyway
    if not w.closed:
        await w.write(value)  # a future that died meanwhile takes nothing (DROPPED)


class _Abandoned(Exception):
    """A host future source was cancelled before it produced a value (A8)."""


def _abandon(store: Store, w: HostFutureWriter, failure: BaseException) -> None:
    """The producer of a host future failed or was abandoned: its guest reader traps."""
    shared = w.shared
    if isinstance(shared, HostFedFuture):
        shared.failure = failure
    pending = shared.pending_inst
    if shared.pending_buffer is not None:
        if pending is not None:
            store.poison(pending, producer_trap(failure))  # type: ignore[arg-type]
        else:
            shared.reset_and_notify_pending(CopyResult.DROPPED)
    # a host reader sees the failure (or DroppedError); a later guest read traps
    shared.dropped = True
    w._close()


def _cancel_source(src: object) -> None:
    """Stop a future source that is no longer awaited (A13)."""
    if inspect.iscoroutine(src):
        src.close()  # never started, or already finished: closing is harmless
        return
    cancel = getattr(src, "cancel", None)
    if callable(cancel):
        with contextlib.suppress(Exception):
            cancel()
