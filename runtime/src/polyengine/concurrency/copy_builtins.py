"""Stream and future built-ins (CanonicalABI.md §🔀 ``canon {stream,future}.*``).

Same calling convention as :mod:`.builtins`: ``canon_<name>(thread,
*immediates, *flat_args)``. The immediates of a copy are the stream or
future type and a :class:`CopyOptions`: the built-in's canonical options
(``async``, ``memory``, ``realloc``, string encoding) and the element
type's codec compiled for those options by the canonical ABI layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from polyengine.abi.compile import Codec
from polyengine.abi.options import CanonicalOptions, LiftLowerContext
from polyengine.engine import memory_parts
from polyengine.types.model import U8, Future, Stream

from .buffers import (
    MAX_LENGTH,
    HostReadableBuffer,
    HostWritableBuffer,
    QueuedBytes,
    ReadableGuestBuffer,
    ReadAheadBuffer,
    WritableGuestBuffer,
)
from .builtins import BLOCKED, get_handle, same_type
from .pipe import HostFedStream
from .store import Store
from .streams import (
    CopyEnd,
    CopyResult,
    CopyState,
    ReadableFutureEnd,
    ReadableStreamEnd,
    ReclaimBuffer,
    SharedFutureImpl,
    SharedStreamImpl,
    WritableFutureEnd,
    WritableStreamEnd,
)
from .thread import CoreVal, Suspends, Thread
from .traps import TrapCode, ctrap, ctrap_if
from .waitable import EventCode, EventTuple

__all__ = [
    "CopyOptions",
    "arm_stream_copy",
    "canon_future_cancel_read",
    "canon_future_cancel_write",
    "canon_future_drop_readable",
    "canon_future_drop_writable",
    "canon_future_new",
    "canon_future_read",
    "canon_future_write",
    "canon_stream_cancel_read",
    "canon_stream_cancel_write",
    "canon_stream_drop_readable",
    "canon_stream_drop_writable",
    "canon_stream_new",
    "canon_stream_read",
    "canon_stream_write",
    "end_builtin",
    "future_copy_builtin",
    "stream_copy_builtin",
]


@dataclass(frozen=True, slots=True)
class CopyOptions:
    """Static options of a ``stream``/``future`` ``read``/``write`` built-in.

    ``codec`` is ``None`` exactly for the element-less ``stream``/``future``.
    ``async_`` is ``opts.is_async``, read once here rather than on every copy.
    """

    opts: CanonicalOptions = field(default_factory=CanonicalOptions)
    codec: Codec | None = None
    async_: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "async_", self.opts.is_async)


def canon_stream_new(thread: Thread, stream_t: Stream) -> list[CoreVal]:
    """``stream.new``: both ends in the handle table, packed ``ri | wi << 32``."""
    inst = thread.inst
    ci = inst.ci
    if not ci.may_leave or inst.record.poisoned is not None:
        inst.check_may_leave()  # traps
    shared = SharedStreamImpl(stream_t.t)
    handles = ci.handles
    ri = handles.add(ReadableStreamEnd(shared))
    wi = handles.add(WritableStreamEnd(shared))
    return [ri | (wi << 32)]


def canon_future_new(thread: Thread, future_t: Future) -> list[CoreVal]:
    """``future.new``: both ends in the handle table, packed ``ri | wi << 32``."""
    inst = thread.inst
    ci = inst.ci
    if not ci.may_leave or inst.record.poisoned is not None:
        inst.check_may_leave()  # traps
    shared = SharedFutureImpl(future_t.t)
    handles = ci.handles
    ri = handles.add(ReadableFutureEnd(shared))
    wi = handles.add(WritableFutureEnd(shared))
    return [ri | (wi << 32)]


def _end(thread: Thread, i: int, end_t: type[CopyEnd], what: str, t: Stream | Future) -> Any:
    """The ``end_t`` at handle ``i`` for a built-in typed ``t``: :func:`~.builtins.get_handle`
    and the element type check every stream and future built-in makes."""
    try:
        e = thread.inst.ci.handles.array[i]
    except IndexError:
        e = None
    if e.__class__ is not end_t or i < 0:
        e = get_handle(thread, i, end_t, what)  # a subclass, or traps
    # the element types are usually the same object, else equal ones compared before
    et = e.shared.t
    if et is not t.t and not same_type(et, t.t):
        ctrap(TrapCode.HANDLE_TYPE_MISMATCH, f"{what} {i} has another element type")
    return e


def _copy_prologue(  # noqa: PLR0917 - the spec's parameter list
    thread: Thread,
    end_t: type[CopyEnd],
    what: str,
    t: Stream | Future,
    async_: bool,
    i: int,
) -> CopyEnd:
    inst = thread.inst
    if not inst.ci.may_leave or inst.record.poisoned is not None:
        inst.check_may_leave()  # traps
    if not async_:
        thread.check_may_block()
    e: CopyEnd = _end(thread, i, end_t, what, t)
    if e.state is not CopyState.IDLE:  # the message is formatted only for the trap
        ctrap(TrapCode.COPY_STATE, _state_message(e, what))
    if e.wset is not None and not async_:
        ctrap(
            TrapCode.WAITABLE_SET,
            "waitable cannot be used synchronously while added to a waitable set",
        )
    return e


def _state_message(e: CopyEnd, what: str) -> str:
    if e.state is CopyState.DONE:
        return _done_message(e, "read from" if e.role == "readable" else "write to")
    return f"{what} already has a copy in progress"


def _done_message(e: CopyEnd, verb: str) -> str:
    """Why a done end cannot be used (the wording other hosts use)."""
    if e.kind == "future":
        if e.role == "readable":
            return f"cannot {verb} future after previous read succeeded"
        return f"cannot {verb} future after previous write succeeded or readable end dropped"
    other = "writable" if e.role == "readable" else "readable"
    return f"cannot {verb} stream after being notified that the {other} end dropped"


def _stream_copy_now(  # noqa: PLR0917 - the spec's parameter list
    thread: Thread,
    reading: bool,
    stream_t: Stream,
    opts: CopyOptions,
    i: int,
    ptr: int,
    n: int,
) -> list[CoreVal] | Suspends[list[CoreVal]]:
    """``stream.read`` (``reading``) or ``stream.write`` up to where it would block.

    Its results when the copy completes at once (or the built-in is
    ``async``), and only otherwise the generator that waits for the copy's
    event: a copy that completes at once costs no generator.
    """
    end_t = ReadableStreamEnd if reading else WritableStreamEnd
    event_code = EventCode.STREAM_READ if reading else EventCode.STREAM_WRITE
    what = "readable stream end" if reading else "writable stream end"
    async_ = opts.async_
    e = _copy_prologue(thread, end_t, what, stream_t, async_, i)
    inst = thread.task.inst
    cx = LiftLowerContext(opts.opts, inst.ci, None)
    # ``e.copy`` without the indirection: the end's shared state takes the copy
    shared: SharedStreamImpl = e.shared  # type: ignore[assignment]  # a stream end's
    if reading:
        dst = WritableGuestBuffer(stream_t.t, opts.codec, cx, ptr, n)
        copy = _StreamCopy(e, dst, event_code, i)
        e.state = CopyState.COPYING
        try:
            shared.read(inst, dst, copy.on_copy, copy.on_copy_done)
        finally:
            dst.fresh = False  # offered on: the guest may grow its memory
    else:
        src = ReadableGuestBuffer(stream_t.t, opts.codec, cx, ptr, n)
        copy = _StreamCopy(e, src, event_code, i)
        e.state = CopyState.COPYING
        try:
            shared.write(inst, src, copy.on_copy, copy.on_copy_done)
        finally:
            src.fresh = False  # offered on: the guest may grow its memory
    return _copy_outcome(thread, e, event_code, i, async_)


def _copy_outcome(
    thread: Thread, e: CopyEnd, event_code: EventCode, i: int, async_: bool
) -> list[CoreVal] | Suspends[list[CoreVal]]:
    """What a stream or future copy just offered returns (§"stream.read",
    §"future.read"): its event's payload when it completed at once, ``BLOCKED``
    when ``async``, else the generator that waits for its event."""
    store = thread.inst.store
    if e.pending_event is None:
        if not async_:
            return _copy_wait(thread, e, event_code, i)
        store.wake()
        return [BLOCKED]
    pending, e.pending_event = e.pending_event, None  # e.get_pending_event(), inline
    code, index, payload = pending()
    assert code is event_code and index == i and payload != BLOCKED
    store.wake()
    return [payload]


def _copy_wait(
    thread: Thread, e: CopyEnd, event_code: EventCode, i: int
) -> Suspends[list[CoreVal]]:
    """A synchronous copy that did not complete at once: wait for its event."""
    yield from e.wait_for_pending_event(thread)
    code, index, payload = e.get_pending_event()
    assert code is event_code and index == i and payload != BLOCKED
    thread.task.inst.store.wake()
    return [payload]


def _stream_copy(  # noqa: PLR0917 - the spec's parameter list
    thread: Thread, reading: bool, stream_t: Stream, opts: CopyOptions, i: int, ptr: int, n: int
) -> Suspends[list[CoreVal]]:
    """:func:`_stream_copy_now` as a generator throughout."""
    out = _stream_copy_now(thread, reading, stream_t, opts, i, ptr, n)
    if isinstance(out, list):
        return out
    return (yield from out)


def stream_copy_builtin(
    reading: bool, stream_t: Stream, opts: CopyOptions
) -> Callable[[Thread, list[CoreVal]], list[CoreVal] | Suspends[list[CoreVal]]]:
    """``stream.read``/``stream.write`` with its immediates bound, as the engine calls it.

    ``fn(thread, [i, ptr, n])`` is :func:`_stream_copy_now`: the results
    when the copy completes at once, else the generator that waits (same
    behaviour as :func:`canon_stream_read` and :func:`canon_stream_write`).
    """

    def call(thread: Thread, args: list[CoreVal]) -> list[CoreVal] | Suspends[list[CoreVal]]:
        i, ptr, n = args
        return _stream_copy_now(thread, reading, stream_t, opts, int(i), int(ptr), int(n))

    return call


#: what the compiled copy compares against: the idle state, the host buffer types and
#: the shared stream types whose read and write it does
_ARM_CONSTANTS = (
    CopyState.IDLE,
    ReadAheadBuffer,
    HostWritableBuffer,
    QueuedBytes,
    HostReadableBuffer,
    SharedStreamImpl,
    HostFedStream,
)


def _no_context() -> NoReturn:
    raise RuntimeError("the compiled stream copy reads engine memories only")


def arm_stream_copy(
    env: Any, store: Store, reading: bool, stream_t: Stream, opts: CopyOptions
) -> None:
    """Arm the compiled path's env of a ``stream<u8>`` copy built-in (``_accel_streams.c``).

    ``env.arm`` gets what the copy needs to complete a guest's ``stream.read``
    or ``stream.write`` against a ready host end in C (CanonicalABI.md
    §"stream.read", §"stream.write": the host's pending operation meets the
    guest's at once); another element type or memory leaves it unarmed, and
    every call goes to the Python built-in.
    """
    if not isinstance(stream_t.t, U8):
        return
    memory = memory_parts(opts.opts.memory)
    if memory is None:
        return
    end_t = ReadableStreamEnd if reading else WritableStreamEnd
    env.arm(
        store,
        reading,
        opts.async_,
        end_t,
        stream_t.t,
        opts.opts,
        memory,
        _no_context,
        _ARM_CONSTANTS,
    )


class _GuestCopy:
    """A guest's copy in flight (§"stream.read", §"future.read"): one object per
    copy instead of closures, whose ``event`` is the end's pending event once
    the copy made progress or ended with ``result``."""

    __slots__ = ("buffer", "e", "event_code", "i", "result")

    def __init__(
        self,
        e: CopyEnd,
        buffer: ReadableGuestBuffer | WritableGuestBuffer,
        event_code: EventCode,
        i: int,
    ) -> None:
        self.e = e
        self.buffer = buffer
        self.event_code = event_code
        self.i = i
        self.result = CopyResult.COMPLETED


class _StreamCopy(_GuestCopy):
    """A stream copy: once the other side made progress, ``reclaim`` gives the
    buffer back before the event is read."""

    __slots__ = ("reclaim",)

    def __init__(
        self,
        e: CopyEnd,
        buffer: ReadableGuestBuffer | WritableGuestBuffer,
        event_code: EventCode,
        i: int,
    ) -> None:
        super().__init__(e, buffer, event_code, i)
        self.reclaim: ReclaimBuffer = _noop

    def event(self) -> EventTuple:
        self.reclaim()
        e = self.e
        assert e.state is CopyState.COPYING or e.state is CopyState.CANCELLING_COPY  # copying()
        result = self.result
        e.state = CopyState.DONE if result is CopyResult.DROPPED else CopyState.IDLE
        progress = self.buffer.progress
        assert progress <= MAX_LENGTH
        return (self.event_code, self.i, int(result) | (progress << 4))

    def on_copy(self, reclaim_buffer: ReclaimBuffer) -> None:
        self.result = CopyResult.COMPLETED
        self.reclaim = reclaim_buffer
        self.e.set_pending_event(self.event)

    def on_copy_done(self, result: CopyResult) -> None:
        self.result = result
        self.reclaim = _noop
        self.e.set_pending_event(self.event)


def _noop() -> None:
    pass


def canon_stream_read(  # noqa: PLR0917 - the spec's parameter list
    thread: Thread, stream_t: Stream, opts: CopyOptions, i: int, ptr: int, n: int
) -> Suspends[list[CoreVal]]:
    """``stream.read``: read up to ``n`` elements into ``ptr``."""
    return (yield from _stream_copy(thread, True, stream_t, opts, i, ptr, n))


def canon_stream_write(  # noqa: PLR0917 - the spec's parameter list
    thread: Thread, stream_t: Stream, opts: CopyOptions, i: int, ptr: int, n: int
) -> Suspends[list[CoreVal]]:
    """``stream.write``: write up to ``n`` elements from ``ptr``."""
    return (yield from _stream_copy(thread, False, stream_t, opts, i, ptr, n))


def _future_copy_now(  # noqa: PLR0917 - the spec's parameter list
    thread: Thread,
    reading: bool,
    future_t: Future,
    opts: CopyOptions,
    i: int,
    ptr: int,
) -> list[CoreVal] | Suspends[list[CoreVal]]:
    """``future.read`` (``reading``) or ``future.write`` up to where it would block.

    As :func:`_stream_copy_now`: the results when the copy completes at once
    (or the built-in is ``async``), and only otherwise the generator that
    waits for the copy's event.
    """
    if reading:
        end_t: type[CopyEnd] = ReadableFutureEnd
        event_code = EventCode.FUTURE_READ
        what = "readable future end"
    else:
        end_t = WritableFutureEnd
        event_code = EventCode.FUTURE_WRITE
        what = "writable future end"
    async_ = opts.async_
    e = _copy_prologue(thread, end_t, what, future_t, async_, i)
    inst = thread.inst
    cx = LiftLowerContext(opts.opts, inst.ci, None)
    # ``e.copy`` without the indirection: the end's shared state takes the copy
    shared: SharedFutureImpl = e.shared  # type: ignore[assignment]  # a future end's
    if reading:
        dst = WritableGuestBuffer(future_t.t, opts.codec, cx, ptr, 1)
        copy = _FutureCopy(e, dst, event_code, i)
        e.state = CopyState.COPYING
        try:
            shared.read(inst, dst, copy.on_copy_done)
        finally:
            dst.fresh = False  # offered on: the guest may grow its memory
    else:
        src = ReadableGuestBuffer(future_t.t, opts.codec, cx, ptr, 1)
        copy = _FutureCopy(e, src, event_code, i)
        e.state = CopyState.COPYING
        try:
            shared.write(inst, src, copy.on_copy_done)
        finally:
            src.fresh = False  # offered on: the guest may grow its memory
    return _copy_outcome(thread, e, event_code, i, async_)


def _future_copy(  # noqa: PLR0917 - the spec's parameter list
    thread: Thread, reading: bool, future_t: Future, opts: CopyOptions, i: int, ptr: int
) -> Suspends[list[CoreVal]]:
    """:func:`_future_copy_now` as a generator throughout."""
    out = _future_copy_now(thread, reading, future_t, opts, i, ptr)
    if isinstance(out, list):
        return out
    return (yield from out)


def future_copy_builtin(
    reading: bool, future_t: Future, opts: CopyOptions
) -> Callable[[Thread, list[CoreVal]], list[CoreVal] | Suspends[list[CoreVal]]]:
    """``future.read``/``future.write`` with its immediates bound, as the engine calls it.

    ``fn(thread, [i, ptr])`` is :func:`_future_copy_now` (same behaviour as
    :func:`canon_future_read` and :func:`canon_future_write`).
    """

    def call(thread: Thread, args: list[CoreVal]) -> list[CoreVal] | Suspends[list[CoreVal]]:
        return _future_copy_now(thread, reading, future_t, opts, int(args[0]), int(args[1]))

    return call


class _FutureCopy(_GuestCopy):
    """A future copy: a completed or dropped copy leaves the end done, a cancelled
    one idle."""

    __slots__ = ()

    def event(self) -> EventTuple:
        result = self.result
        assert (self.buffer.remain() == 0) == (result is CopyResult.COMPLETED)
        e = self.e
        assert e.state is CopyState.COPYING or e.state is CopyState.CANCELLING_COPY  # copying()
        e.state = CopyState.IDLE if result is CopyResult.CANCELLED else CopyState.DONE
        return (self.event_code, self.i, int(result))

    def on_copy_done(self, result: CopyResult) -> None:
        assert result is not CopyResult.DROPPED or self.event_code is EventCode.FUTURE_WRITE
        self.result = result
        self.e.set_pending_event(self.event)


def canon_future_read(
    thread: Thread, future_t: Future, opts: CopyOptions, i: int, ptr: int
) -> Suspends[list[CoreVal]]:
    """``future.read``: receive the value into ``ptr``."""
    return (yield from _future_copy(thread, True, future_t, opts, i, ptr))


def canon_future_write(
    thread: Thread, future_t: Future, opts: CopyOptions, i: int, ptr: int
) -> Suspends[list[CoreVal]]:
    """``future.write``: deliver the value at ``ptr``."""
    return (yield from _future_copy(thread, False, future_t, opts, i, ptr))


def _cancel_copy(  # noqa: PLR0917 - the spec's parameter list
    thread: Thread,
    end_t: type[CopyEnd],
    what: str,
    event_code: EventCode,
    t: Stream | Future,
    async_: bool,
    i: int,
) -> Suspends[list[CoreVal]]:
    inst = thread.inst
    inst.check_may_leave()
    if not async_:
        thread.check_may_block()
    e: CopyEnd = get_handle(thread, i, end_t, what)
    # the element types are usually the same object: compare deeply only when not
    et = e.shared.t
    if et is not t.t and et != t.t:
        ctrap(TrapCode.HANDLE_TYPE_MISMATCH, f"{what} {i} has another element type")
    if e.state is not CopyState.COPYING or e.has_sync_waiter:
        ctrap(TrapCode.COPY_STATE, f"no copy in progress on {what} {i} to cancel")
    ctrap_if(
        e.in_waitable_set() and not async_,
        TrapCode.WAITABLE_SET,
        "waitable cannot be used synchronously while added to a waitable set",
    )
    e.state = CopyState.CANCELLING_COPY
    if not e.has_pending_event():
        e.shared.cancel()
        if not e.has_pending_event():
            if not async_:
                yield from e.wait_for_pending_event(thread)
            else:
                return [BLOCKED]
    code, index, payload = e.get_pending_event()
    assert not e.copying() and code is event_code and index == i
    return [payload]


def canon_stream_cancel_read(
    thread: Thread, stream_t: Stream, async_: bool, i: int
) -> Suspends[list[CoreVal]]:
    """``stream.cancel-read``."""
    return (
        yield from _cancel_copy(
            thread,
            ReadableStreamEnd,
            "readable stream end",
            EventCode.STREAM_READ,
            stream_t,
            async_,
            i,
        )
    )


def canon_stream_cancel_write(
    thread: Thread, stream_t: Stream, async_: bool, i: int
) -> Suspends[list[CoreVal]]:
    """``stream.cancel-write``."""
    return (
        yield from _cancel_copy(
            thread,
            WritableStreamEnd,
            "writable stream end",
            EventCode.STREAM_WRITE,
            stream_t,
            async_,
            i,
        )
    )


def canon_future_cancel_read(
    thread: Thread, future_t: Future, async_: bool, i: int
) -> Suspends[list[CoreVal]]:
    """``future.cancel-read``."""
    return (
        yield from _cancel_copy(
            thread,
            ReadableFutureEnd,
            "readable future end",
            EventCode.FUTURE_READ,
            future_t,
            async_,
            i,
        )
    )


def canon_future_cancel_write(
    thread: Thread, future_t: Future, async_: bool, i: int
) -> Suspends[list[CoreVal]]:
    """``future.cancel-write``."""
    return (
        yield from _cancel_copy(
            thread,
            WritableFutureEnd,
            "writable future end",
            EventCode.FUTURE_WRITE,
            future_t,
            async_,
            i,
        )
    )


def _drop(
    thread: Thread, end_t: type[CopyEnd], what: str, t: Stream | Future, i: int
) -> list[CoreVal]:
    inst = thread.inst
    ci = inst.ci
    if not ci.may_leave or inst.record.poisoned is not None:
        inst.check_may_leave()  # traps
    e: CopyEnd = _end(thread, i, end_t, what, t)
    e.drop()
    ci.handles.remove(i)
    inst.store.wake()
    return []


def canon_stream_drop_readable(thread: Thread, stream_t: Stream, i: int) -> list[CoreVal]:
    """``stream.drop-readable``."""
    return _drop(thread, ReadableStreamEnd, "readable stream end", stream_t, i)


def canon_stream_drop_writable(thread: Thread, stream_t: Stream, i: int) -> list[CoreVal]:
    """``stream.drop-writable``."""
    return _drop(thread, WritableStreamEnd, "writable stream end", stream_t, i)


def canon_future_drop_readable(thread: Thread, future_t: Future, i: int) -> list[CoreVal]:
    """``future.drop-readable``."""
    return _drop(thread, ReadableFutureEnd, "readable future end", future_t, i)


def canon_future_drop_writable(thread: Thread, future_t: Future, i: int) -> list[CoreVal]:
    """``future.drop-writable``: traps unless the value was written (or the reader dropped)."""
    return _drop(thread, WritableFutureEnd, "writable future end", future_t, i)


#: the ``drop-*`` built-ins: the end each drops and its name in trap messages
_DROPS: dict[str, tuple[type[CopyEnd], str]] = {
    "stream.drop-readable": (ReadableStreamEnd, "readable stream end"),
    "stream.drop-writable": (WritableStreamEnd, "writable stream end"),
    "future.drop-readable": (ReadableFutureEnd, "readable future end"),
    "future.drop-writable": (WritableFutureEnd, "writable future end"),
}


def end_builtin(
    kind: str, t: Stream | Future
) -> Callable[[Thread, list[CoreVal]], list[CoreVal]]:
    """``stream.new``, ``future.new`` or a ``drop-*`` built-in with its type bound.

    ``fn(thread, flat_args)`` as the engine calls it: the same as
    :func:`canon_stream_new`, :func:`canon_future_new` and the
    ``canon_*_drop_*`` functions, one call less.
    """
    if kind == "stream.new":
        assert isinstance(t, Stream)
        stream_t = t
        return lambda thread, _args: canon_stream_new(thread, stream_t)
    if kind == "future.new":
        assert isinstance(t, Future)
        future_t = t
        return lambda thread, _args: canon_future_new(thread, future_t)
    end_t, what = _DROPS[kind]

    def drop(thread: Thread, args: list[CoreVal]) -> list[CoreVal]:
        return _drop(thread, end_t, what, t, int(args[0]))

    return drop
