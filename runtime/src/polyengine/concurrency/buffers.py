"""Buffers that streams and futures copy through (CanonicalABI.md §Buffer State).

A guest buffer is a (pointer, length) range of linear memory read or written
element by element through the canonical ABI's compiled codec; numeric
element types copy as raw bytes. Host buffers hold Python values. :func:`transfer` moves ``n``
elements from a readable to a writable buffer, with one ``memoryview`` slice
copy when both sides are guest memory of a raw element type.
"""

from __future__ import annotations

import struct
from collections import deque
from typing import Any, Protocol

from polyengine.abi.compile import Codec
from polyengine.abi.options import LiftLowerContext
from polyengine.types import model as m

from .traps import TrapCode, ctrap

__all__ = [
    "MAX_LENGTH",
    "Buffer",
    "DirectBuffer",
    "GuestBuffer",
    "HostReadableBuffer",
    "HostWritableBuffer",
    "QueuedBytes",
    "ReadableBuffer",
    "ReadAheadBuffer",
    "ReadableGuestBuffer",
    "WritableBuffer",
    "WritableGuestBuffer",
    "none_or_number_type",
    "transfer",
]

MAX_LENGTH = 2**28 - 1


_NUMERIC: dict[type[m.ValType], str] = {
    m.U8: "B",
    m.S8: "b",
    m.U16: "H",
    m.S16: "h",
    m.U32: "I",
    m.S32: "i",
    m.U64: "Q",
    m.S64: "q",
    m.F32: "f",
    m.F64: "d",
}


def none_or_number_type(t: m.ValType | None) -> bool:
    """The element types a stream may copy within one instance (§Stream State)."""
    return t is None or type(t) in _NUMERIC


class Buffer(Protocol):
    t: m.ValType | None
    progress: int

    def remain(self) -> int: ...

    def is_zero_length(self) -> bool: ...


class ReadableBuffer(Buffer, Protocol):
    def read(self, n: int) -> list[Any]: ...


class WritableBuffer(Buffer, Protocol):
    def write(self, vs: list[Any]) -> None: ...


class GuestBuffer:
    """A range of guest memory (§Buffer State ``BufferGuestImpl``).

    ``codec`` is the canonical ABI's compiled codec of the element type
    (``None`` only for the element-less ``stream``/``future``) and ``cx`` the
    lift/lower context of the built-in's options. Numeric elements move as
    raw bytes; others through ``codec.load``/``codec.store``. Traps when the
    range is too long, misaligned or out of bounds.

    ``fresh``: ``cx.mv`` was read for the bounds check and no guest code has
    run since, so a copy may use it as it is; the built-in that made the
    buffer clears it before it returns (the buffer may stay offered while
    the guest runs and grows its memory).
    """

    __slots__ = ("_fmt", "codec", "cx", "fresh", "length", "progress", "ptr", "t")

    def __init__(
        self,
        t: m.ValType | None,
        codec: Codec | None,
        cx: LiftLowerContext,
        ptr: int,
        length: int,
    ) -> None:
        if length > MAX_LENGTH:
            ctrap(TrapCode.OUT_OF_BOUNDS, f"buffer length {length} too large")
        self.fresh = False
        if t is not None and length > 0:
            assert codec is not None
            if ptr % codec.align != 0:
                ctrap(TrapCode.MISALIGNED, f"buffer pointer {ptr:#x} misaligned")
            if ptr + length * codec.size > len(_view(cx)):
                ctrap(
                    TrapCode.OUT_OF_BOUNDS, f"buffer [{ptr:#x}, +{length} elements) out of bounds"
                )
            self.fresh = True
        self.t = t
        self.codec = codec
        self.cx = cx
        self._fmt = _NUMERIC.get(type(t)) if t is not None else None
        self.ptr = ptr
        self.progress = 0
        self.length = length

    @property
    def raw(self) -> bool:
        """Elements are numbers, copied as bytes."""
        return self._fmt is not None

    def remain(self) -> int:
        return self.length - self.progress

    def is_zero_length(self) -> bool:
        return self.length == 0


class ReadableGuestBuffer(GuestBuffer):
    """Guest memory the writer of a stream/future copies values out of."""

    __slots__ = ()

    def read(self, n: int) -> list[Any]:
        assert n <= self.length - self.progress  # remain()
        if self.t is None:
            vs: list[Any] = [()] * n
        else:
            codec = self.codec
            assert codec is not None
            cx = self.cx
            if not self.fresh:
                cx.refresh()
            if self._fmt is not None:
                vs = list(struct.unpack_from(f"<{n}{self._fmt}", cx.mv, self.ptr))
            elif n == 1:  # a future's value, or one element
                vs = [codec.load(cx, self.ptr)]
            else:
                size = codec.size
                vs = [codec.load(cx, self.ptr + k * size) for k in range(n)]
            self.ptr += n * codec.size
        self.progress += n
        return vs

    def take_bytes(self, n: int) -> bytes:
        """The next ``n`` elements of a ``stream<u8>`` write, as bytes (one slice copy)."""
        assert self._fmt == "B" and n <= self.remain()
        ptr = self.ptr
        out = bytes(_fresh_view(self)[ptr : ptr + n])
        self.ptr = ptr + n
        self.progress += n
        return out


class WritableGuestBuffer(GuestBuffer):
    """Guest memory the reader of a stream/future receives values into."""

    __slots__ = ()

    def write(self, vs: list[Any]) -> None:
        assert len(vs) <= self.remain()
        if self.t is not None:
            codec = self.codec
            assert codec is not None
            cx = self.cx
            if not self.fresh:
                cx.refresh()
            if self._fmt is not None:
                struct.pack_into(f"<{len(vs)}{self._fmt}", cx.mv, self.ptr, *vs)
            else:
                size = codec.size
                for k, v in enumerate(vs):
                    codec.store(cx, v, self.ptr + k * size)
            self.ptr += len(vs) * codec.size
        self.progress += len(vs)


class HostReadableBuffer:
    """Host values offered to a reader (a host writer's source).

    For ``stream<u8>`` the values may be any bytes-like object; they then
    reach guest memory with one slice copy.
    """

    __slots__ = ("progress", "t", "values")

    def __init__(self, t: m.ValType | None, values: list[Any] | bytes | bytearray | memoryview):
        self.t = t
        self.values = values
        self.progress = 0

    @property
    def is_bytes(self) -> bool:
        return not isinstance(self.values, list)

    def remain(self) -> int:
        return len(self.values) - self.progress

    def is_zero_length(self) -> bool:
        return len(self.values) == 0

    def read(self, n: int) -> list[Any]:
        assert n <= self.remain()
        vs = self.values[self.progress : self.progress + n]
        self.progress += n
        return vs if isinstance(vs, list) else list(vs)

    def read_bytes(self, n: int) -> bytes | bytearray | memoryview:
        """The next ``n`` bytes, without a copy (the whole ``bytes`` or a view of it)."""
        assert n <= self.remain() and self.is_bytes
        values = self.values
        assert not isinstance(values, list)
        start = self.progress
        self.progress = start + n
        if start == 0 and n == len(values):
            return values
        return memoryview(values)[start : start + n]


class QueuedBytes(HostReadableBuffer):
    """Chunks of a ``stream<u8>`` a host writer offers one behind another.

    One offer (a host writer's pending buffer) that grows while it is
    offered: :meth:`push` adds a chunk at the back, a reader takes bytes
    from the front, across chunks; ``queued`` counts what is not taken yet.
    """

    __slots__ = ("chunks", "offset", "queued")

    def __init__(self, t: m.ValType | None) -> None:
        super().__init__(t, b"")
        self.chunks: deque[bytes | bytearray | memoryview] = deque()
        #: bytes of the first chunk already taken
        self.offset = 0
        self.queued = 0

    def push(self, data: bytes | bytearray | memoryview) -> None:
        if data:
            self.chunks.append(data)
            self.queued += len(data)

    def remain(self) -> int:
        return self.queued

    def is_zero_length(self) -> bool:
        return self.queued == 0

    def read(self, n: int) -> list[Any]:
        return list(self.read_bytes(n))

    def read_bytes(self, n: int) -> bytes | bytearray | memoryview:
        """The next ``n`` bytes: a chunk or a view of one, joined only across chunks."""
        assert 0 < n <= self.queued
        self.queued -= n
        self.progress += n
        chunks = self.chunks
        parts: list[bytes | bytearray | memoryview] = []
        while n:
            head = chunks[0]
            start = self.offset
            avail = len(head) - start
            if n >= avail:
                parts.append(head if start == 0 else memoryview(head)[start:])
                chunks.popleft()
                self.offset = 0
                n -= avail
            else:
                parts.append(memoryview(head)[start : start + n])
                self.offset = start + n
                n = 0
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def rest(self) -> bytes:
        """Everything not taken yet (the queue is left empty)."""
        return bytes(self.read_bytes(self.queued)) if self.queued else b""


class HostWritableBuffer:
    """Room for up to ``capacity`` values that a writer delivers to the host.

    For ``stream<u8>`` the values accumulate in a ``bytearray`` (``values``),
    filled from guest memory with one slice copy.
    """

    __slots__ = ("capacity", "progress", "t", "values")

    def __init__(self, t: m.ValType | None, capacity: int) -> None:
        self.t = t
        self.capacity = capacity
        self.values: list[Any] | bytearray = bytearray() if isinstance(t, m.U8) else []
        self.progress = 0

    def remain(self) -> int:
        return self.capacity - self.progress

    def is_zero_length(self) -> bool:
        return self.capacity == 0

    def write(self, vs: list[Any]) -> None:
        assert len(vs) <= self.capacity - self.progress  # remain()
        self.values.extend(vs)
        self.progress += len(vs)


class ReadAheadBuffer(HostWritableBuffer):
    """A host read of ``stream<u8>`` that may take ahead from a guest's writes.

    Its ``capacity`` is the read's count; a guest writer meeting it first
    calls :meth:`open_ahead`, which raises the capacity to ``ahead`` (the
    host reader's bound): the guest's write completes with everything that
    fits (CanonicalABI.md §"stream.write": the count the reader took), and
    the host keeps what the read does not return for its next reads. A
    host writer is told exactly what the read took (a host↔host rendezvous).
    """

    __slots__ = ("ahead",)

    def __init__(self, t: m.ValType | None, capacity: int, ahead: int) -> None:
        super().__init__(t, capacity)
        self.ahead = ahead

    def open_ahead(self) -> None:
        self.capacity = max(self.capacity, self.ahead)


class DirectBuffer:
    """A host buffer whose owner moves the elements itself at the rendezvous.

    The host side of a direct session (embedder-api A21): ``direct_transfer``
    moves at most ``n`` elements between the peer buffer and the host
    (advancing both buffers' ``progress``), and may move none, which ends
    the session while the peer's copy stays parked (never a zero-progress
    completed copy; see :class:`~.streams.SharedStreamImpl`).
    """

    __slots__ = ()

    def direct_transfer(self, peer: Any, n: int) -> None:
        raise NotImplementedError


def _view(cx: LiftLowerContext) -> memoryview:
    """The memory view of ``cx`` as of now (memory may have grown since it was read)."""
    memory = cx.opts.memory
    if memory is None:
        cx.refresh()
        return cx.mv
    mv = cx.mv = memory.view()
    return mv


def _fresh_view(b: GuestBuffer) -> memoryview:
    """The memory view of ``b``: as its bounds check read it while ``fresh``, else as of now."""
    return b.cx.mv if b.fresh else _view(b.cx)


def transfer(src: ReadableBuffer, dst: WritableBuffer, n: int) -> None:
    """Copy ``n`` elements from ``src`` to ``dst`` (one slice copy for raw guest memory)."""
    if n > 0:
        if isinstance(src, ReadableGuestBuffer) and src._fmt is not None:
            if isinstance(dst, WritableGuestBuffer) and dst._fmt is not None:
                assert src.codec is not None and dst.codec is not None
                nbytes = n * src.codec.size
                assert dst.codec.size == src.codec.size
                smv = _fresh_view(src)
                dmv = _fresh_view(dst)
                dst_ptr, src_ptr = dst.ptr, src.ptr
                dmv[dst_ptr : dst_ptr + nbytes] = smv[src_ptr : src_ptr + nbytes]
                src.ptr = src_ptr + nbytes
                src.progress += n
                dst.ptr = dst_ptr + nbytes
                dst.progress += n
                return
            if isinstance(dst, HostWritableBuffer) and isinstance(dst.values, bytearray):
                ptr = src.ptr
                dst.values += (src.cx.mv if src.fresh else _view(src.cx))[ptr : ptr + n]
                src.ptr = ptr + n
                src.progress += n
                dst.progress += n
                return
        elif isinstance(src, HostReadableBuffer) and not isinstance(src.values, list):
            if isinstance(dst, WritableGuestBuffer) and dst._fmt is not None:
                assert dst.codec is not None and dst.codec.size == 1
                ptr = dst.ptr
                _fresh_view(dst)[ptr : ptr + n] = src.read_bytes(n)
                dst.ptr = ptr + n
                dst.progress += n
                return
            if isinstance(dst, HostWritableBuffer) and isinstance(dst.values, bytearray):
                dst.values += src.read_bytes(n)
                dst.progress += n
                return
    if isinstance(src, DirectBuffer):
        src.direct_transfer(dst, n)
        return
    if isinstance(dst, DirectBuffer):
        dst.direct_transfer(src, n)
        return
    dst.write(src.read(n))
