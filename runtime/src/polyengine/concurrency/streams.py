"""The rendezvous state of streams and futures (CanonicalABI.md §Stream State,
§Future State).

One shared object per stream or future connects a readable and a writable
end. At most one side has an operation pending on it (buffer plus
callbacks); the other side's operation completes against it. Ends are
waitables with a copy state (:class:`CopyState`) that the built-ins drive.
Host-side readers and writers use the same shared objects with
host buffers (:mod:`.buffers`).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum, IntEnum
from typing import TYPE_CHECKING, TypeAlias, cast

from polyengine.types import model as m

from .buffers import (
    Buffer,
    DirectBuffer,
    ReadableBuffer,
    ReadableGuestBuffer,
    ReadAheadBuffer,
    WritableBuffer,
    none_or_number_type,
    transfer,
)
from .traps import TrapCode, ctrap
from .waitable import Waitable

if TYPE_CHECKING:
    from .store import InstanceState

__all__ = [
    "CopyEnd",
    "CopyResult",
    "CopyState",
    "OnCopy",
    "OnCopyDone",
    "ReadableFutureEnd",
    "ReadableStreamEnd",
    "ReclaimBuffer",
    "SharedFutureImpl",
    "SharedStreamImpl",
    "WritableFutureEnd",
    "WritableStreamEnd",
]


class CopyResult(IntEnum):
    """How a copy ended (the low 4 bits of a stream/future event payload)."""

    COMPLETED = 0
    DROPPED = 1
    CANCELLED = 2


ReclaimBuffer: TypeAlias = Callable[[], None]
OnCopy: TypeAlias = Callable[[ReclaimBuffer], None]
OnCopyDone: TypeAlias = Callable[[CopyResult], None]


def _check_same_instance(
    inst: InstanceState | None, pending: InstanceState | None, t: m.ValType | None, kind: str
) -> None:
    if inst is not None and inst is pending and not none_or_number_type(t):
        ctrap(
            TrapCode.SAME_INSTANCE_COPY,
            f"cannot read from and write to intra-component {kind} "
            "(same instance, non-numeric type)",
        )


class SharedStreamImpl:
    """Shared state of one stream (§Stream State ``SharedStreamImpl``).

    ``dropped`` is set once either end is dropped. The ``pending_*`` fields
    describe the one operation waiting for its counterpart (all ``None`` when
    idle); ``pending_inst`` is the instance that started it (``None`` for
    the host).
    """

    __slots__ = (
        "dropped",
        "pending_buffer",
        "pending_inst",
        "pending_on_copy",
        "pending_on_copy_done",
        "t",
    )

    def __init__(self, t: m.ValType | None) -> None:
        self.t = t
        self.dropped = False
        self.pending_inst: InstanceState | None = None
        self.pending_buffer: Buffer | None = None
        self.pending_on_copy: OnCopy | None = None
        self.pending_on_copy_done: OnCopyDone | None = None

    def reset_pending(self) -> None:
        self.pending_inst = None
        self.pending_buffer = None
        self.pending_on_copy = None
        self.pending_on_copy_done = None

    def set_pending(
        self,
        inst: InstanceState | None,
        buffer: Buffer | None,
        on_copy: OnCopy | None,
        on_copy_done: OnCopyDone | None,
    ) -> None:
        self.pending_inst = inst
        self.pending_buffer = buffer
        self.pending_on_copy = on_copy
        self.pending_on_copy_done = on_copy_done

    def reset_and_notify_pending(self, result: CopyResult) -> None:
        done = self.pending_on_copy_done
        assert done is not None
        self.reset_pending()
        done(result)

    def cancel(self) -> None:
        self.reset_and_notify_pending(CopyResult.CANCELLED)

    def drop(self) -> None:
        if not self.dropped:
            self.dropped = True
            if self.pending_buffer is not None:
                self.reset_and_notify_pending(CopyResult.DROPPED)

    def _no_progress(
        self,
        pending: Buffer,
        inst: InstanceState | None,
        buf: Buffer,
        on_copy: OnCopy,
        on_copy_done: OnCopyDone,
    ) -> None:
        """A host direct session (embedder-api A21) moved nothing at a rendezvous.

        The session ends and the other copy stays (or becomes) the parked
        one: no zero-progress completed copy is ever delivered to a guest.
        """
        if isinstance(pending, DirectBuffer):
            self.reset_and_notify_pending(CopyResult.COMPLETED)
            self.set_pending(inst, buf, on_copy, on_copy_done)
        else:
            assert isinstance(buf, DirectBuffer)
            on_copy_done(CopyResult.COMPLETED)

    def read(
        self,
        inst: InstanceState | None,
        dst: WritableBuffer,
        on_copy: OnCopy,
        on_copy_done: OnCopyDone,
    ) -> None:
        if self.dropped:
            on_copy_done(CopyResult.DROPPED)
            return
        pending = self.pending_buffer
        if pending is None:
            self.pending_inst = inst
            self.pending_buffer = dst
            self.pending_on_copy = on_copy
            self.pending_on_copy_done = on_copy_done
            return
        if inst is not None and inst is self.pending_inst:
            _check_same_instance(inst, inst, self.t, "stream")
        assert hasattr(pending, "read")  # isinstance_readable, without the call
        offered = pending.remain()
        if offered > 0:
            room = dst.remain()
            if room > 0:
                moved = dst.progress
                transfer(pending, dst, room if room < offered else offered)  # type: ignore[arg-type]
                if dst.progress == moved:
                    self._no_progress(pending, inst, dst, on_copy, on_copy_done)
                    return
                on_pending = self.pending_on_copy
                assert on_pending is not None
                on_pending(self.reset_pending)
            on_copy_done(CopyResult.COMPLETED)
        else:
            self.reset_and_notify_pending(CopyResult.COMPLETED)
            self.set_pending(inst, dst, on_copy, on_copy_done)

    def read_offered_bytes(self, n: int) -> bytes | None:
        """A host read of up to ``n`` bytes of a guest's ``stream<u8>`` write offered here.

        What :meth:`read` does for a host reader when a guest write with
        bytes left is pending (§"stream.read": the transfer, then the
        writer's ``on_copy``; the read completes), giving the bytes instead
        of filling a host buffer; ``None``, with nothing done, in any other
        state.
        """
        pending = self.pending_buffer
        if (
            self.dropped
            or pending.__class__ is not ReadableGuestBuffer
            or self.t.__class__ is not m.U8
            or self.pending_inst is None
        ):
            return None
        offered = pending.remain()
        if offered <= 0 or n <= 0:
            return None
        data = pending.take_bytes(n if n < offered else offered)
        on_pending = self.pending_on_copy
        assert on_pending is not None
        on_pending(self.reset_pending)
        return data

    def write(
        self,
        inst: InstanceState | None,
        src: ReadableBuffer,
        on_copy: OnCopy,
        on_copy_done: OnCopyDone,
    ) -> None:
        if self.dropped:
            on_copy_done(CopyResult.DROPPED)
            return
        pending = self.pending_buffer
        if pending is None:
            self.pending_inst = inst
            self.pending_buffer = src
            self.pending_on_copy = on_copy
            self.pending_on_copy_done = on_copy_done
            return
        if inst is not None:
            if inst is self.pending_inst:
                _check_same_instance(inst, inst, self.t, "stream")
            elif pending.__class__ is ReadAheadBuffer:
                pending.open_ahead()  # a guest writer meets the host
        assert hasattr(pending, "write")  # isinstance_writable, without the call
        room = pending.remain()
        if room > 0:
            offered = src.remain()
            if offered > 0:
                moved = src.progress
                transfer(src, pending, room if room < offered else offered)  # type: ignore[arg-type]
                if src.progress == moved:
                    self._no_progress(pending, inst, src, on_copy, on_copy_done)
                    return
                on_pending = self.pending_on_copy
                assert on_pending is not None
                on_pending(self.reset_pending)
            on_copy_done(CopyResult.COMPLETED)
        elif src.is_zero_length() and pending.is_zero_length():
            on_copy_done(CopyResult.COMPLETED)
        else:
            self.reset_and_notify_pending(CopyResult.COMPLETED)
            self.set_pending(inst, src, on_copy, on_copy_done)


def isinstance_readable(b: Buffer) -> bool:
    return hasattr(b, "read")


def isinstance_writable(b: Buffer) -> bool:
    return hasattr(b, "write")


class SharedFutureImpl:
    """Shared state of one future (§Future State ``SharedFutureImpl``)."""

    __slots__ = ("dropped", "pending_buffer", "pending_inst", "pending_on_copy_done", "t")

    def __init__(self, t: m.ValType | None) -> None:
        self.t = t
        self.dropped = False
        self.pending_inst: InstanceState | None = None
        self.pending_buffer: Buffer | None = None
        self.pending_on_copy_done: OnCopyDone | None = None

    def reset_pending(self) -> None:
        self.pending_inst = None
        self.pending_buffer = None
        self.pending_on_copy_done = None

    def set_pending(
        self, inst: InstanceState | None, buffer: Buffer | None, on_copy_done: OnCopyDone | None
    ) -> None:
        self.pending_inst = inst
        self.pending_buffer = buffer
        self.pending_on_copy_done = on_copy_done

    def reset_and_notify_pending(self, result: CopyResult) -> None:
        done = self.pending_on_copy_done
        assert done is not None
        self.reset_pending()
        done(result)

    def cancel(self) -> None:
        self.reset_and_notify_pending(CopyResult.CANCELLED)

    def drop(self) -> None:
        if not self.dropped:
            self.dropped = True
            if self.pending_buffer is not None:
                # only a write can be pending: the writer cannot drop before it wrote
                assert isinstance_readable(self.pending_buffer)
                self.reset_and_notify_pending(CopyResult.DROPPED)

    def read(
        self, inst: InstanceState | None, dst: WritableBuffer, on_copy_done: OnCopyDone
    ) -> None:
        assert not self.dropped and dst.remain() == 1
        pending = self.pending_buffer
        if pending is None:
            self.set_pending(inst, dst, on_copy_done)
            return
        if inst is not None and inst is self.pending_inst:
            _check_same_instance(inst, inst, self.t, "future")
        assert hasattr(pending, "read")  # isinstance_readable, without the call
        transfer(cast(ReadableBuffer, pending), dst, 1)
        self.reset_and_notify_pending(CopyResult.COMPLETED)
        on_copy_done(CopyResult.COMPLETED)

    def write(
        self, inst: InstanceState | None, src: ReadableBuffer, on_copy_done: OnCopyDone
    ) -> None:
        assert src.remain() == 1
        if self.dropped:
            on_copy_done(CopyResult.DROPPED)
            return
        pending = self.pending_buffer
        if pending is None:
            self.set_pending(inst, src, on_copy_done)
            return
        if inst is not None and inst is self.pending_inst:
            _check_same_instance(inst, inst, self.t, "future")
        assert hasattr(pending, "write")  # isinstance_writable, without the call
        transfer(src, cast(WritableBuffer, pending), 1)
        self.reset_and_notify_pending(CopyResult.COMPLETED)
        on_copy_done(CopyResult.COMPLETED)


class CopyState(Enum):
    """Copy state of a stream/future end (§Stream State ``CopyState``)."""

    IDLE = 1
    COPYING = 2
    CANCELLING_COPY = 3
    DONE = 4


class CopyEnd(Waitable):
    """One end of a stream or future, as a waitable with a copy state.

    ``kind`` (``"stream"``/``"future"``) and ``role`` (``"readable"``/
    ``"writable"``) name the end in trap messages.
    """

    __slots__ = ("shared", "state")
    kind = "stream"
    role = "readable"

    def __init__(self, shared: SharedStreamImpl | SharedFutureImpl) -> None:
        super().__init__()
        self.state = CopyState.IDLE
        self.shared = shared

    @property
    def t(self) -> m.ValType | None:
        return self.shared.t

    def copying(self) -> bool:
        return self.state in (CopyState.COPYING, CopyState.CANCELLING_COPY)

    def drop(self) -> None:
        state = self.state
        if state is CopyState.COPYING or state is CopyState.CANCELLING_COPY:  # copying()
            ctrap(TrapCode.BUSY, f"cannot drop busy {self.kind}")
        self.shared.drop()
        super().drop()


class ReadableStreamEnd(CopyEnd):
    __slots__ = ()
    shared: SharedStreamImpl

    if TYPE_CHECKING:  # CopyEnd.__init__ runs (no call of its own), for its shared type

        def __init__(self, shared: SharedStreamImpl) -> None: ...

    def copy(
        self,
        inst: InstanceState | None,
        dst: WritableBuffer,
        on_copy: OnCopy,
        on_copy_done: OnCopyDone,
    ) -> None:
        self.shared.read(inst, dst, on_copy, on_copy_done)


class WritableStreamEnd(CopyEnd):
    __slots__ = ()
    shared: SharedStreamImpl
    role = "writable"

    if TYPE_CHECKING:  # CopyEnd.__init__ runs (no call of its own), for its shared type

        def __init__(self, shared: SharedStreamImpl) -> None: ...

    def copy(
        self,
        inst: InstanceState | None,
        src: ReadableBuffer,
        on_copy: OnCopy,
        on_copy_done: OnCopyDone,
    ) -> None:
        self.shared.write(inst, src, on_copy, on_copy_done)


class ReadableFutureEnd(CopyEnd):
    __slots__ = ()
    shared: SharedFutureImpl
    kind = "future"

    if TYPE_CHECKING:  # CopyEnd.__init__ runs (no call of its own), for its shared type

        def __init__(self, shared: SharedFutureImpl) -> None: ...

    def copy(
        self, inst: InstanceState | None, dst: WritableBuffer, on_copy_done: OnCopyDone
    ) -> None:
        self.shared.read(inst, dst, on_copy_done)


class WritableFutureEnd(CopyEnd):
    __slots__ = ()
    shared: SharedFutureImpl
    kind = "future"
    role = "writable"

    if TYPE_CHECKING:  # CopyEnd.__init__ runs (no call of its own), for its shared type

        def __init__(self, shared: SharedFutureImpl) -> None: ...

    def copy(
        self, inst: InstanceState | None, src: ReadableBuffer, on_copy_done: OnCopyDone
    ) -> None:
        self.shared.write(inst, src, on_copy_done)

    def drop(self) -> None:
        if self.state is not CopyState.DONE:
            ctrap(
                TrapCode.COPY_STATE, "cannot drop future write end without first writing a value"
            )
        super().drop()
