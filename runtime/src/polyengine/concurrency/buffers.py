"""Buffers that streams and futures copy through (CanonicalABI.md §Buffer State).

A guest buffer is a (pointer, length) range of linear memory read or written
element by element through an :class:`ElemCodec`; numeric element types copy
as raw bytes. Host buffers hold Python values. :func:`transfer` moves ``n``
elements from a readable to a writable buffer, with one ``memoryview`` slice
copy when both sides are guest memory of a raw element type.
"""

from __future__ import annotations

import struct
from typing import Any, Protocol

from polyengine.types import model as m

from .traps import TrapCode, ctrap_if

__all__ = [
    "MAX_LENGTH",
    "Buffer",
    "ElemCodec",
    "GuestBuffer",
    "HostReadableBuffer",
    "HostWritableBuffer",
    "Memory",
    "NumericCodec",
    "ReadableBuffer",
    "ReadableGuestBuffer",
    "WritableBuffer",
    "WritableGuestBuffer",
    "none_or_number_type",
    "numeric_codec",
    "transfer",
]

MAX_LENGTH = 2**28 - 1


class Memory(Protocol):
    """A guest linear memory: ``view()`` is re-read after anything that may grow it."""

    def view(self) -> memoryview: ...


class ElemCodec(Protocol):
    """Loads and stores elements of one type in one guest memory.

    ``raw`` is true when an element's bytes can be copied as they are
    (numbers, and nothing that owns handles or pointers).
    """

    size: int
    alignment: int
    raw: bool

    def load(self, ptr: int, n: int) -> list[Any]: ...

    def store(self, ptr: int, values: list[Any]) -> None: ...


_NUMERIC: dict[type[m.ValType], tuple[str, int]] = {
    m.U8: ("B", 1),
    m.S8: ("b", 1),
    m.U16: ("H", 2),
    m.S16: ("h", 2),
    m.U32: ("I", 4),
    m.S32: ("i", 4),
    m.U64: ("Q", 8),
    m.S64: ("q", 8),
    m.F32: ("f", 4),
    m.F64: ("d", 8),
}


def none_or_number_type(t: m.ValType | None) -> bool:
    """The element types a stream may copy within one instance (§Stream State)."""
    return t is None or type(t) in _NUMERIC


class NumericCodec:
    """:class:`ElemCodec` for a numeric element type, over a :class:`Memory`."""

    __slots__ = ("_fmt", "alignment", "memory", "raw", "size")

    def __init__(self, t: m.ValType, memory: Memory) -> None:
        code, size = _NUMERIC[type(t)]
        self._fmt = code
        self.size = size
        self.alignment = size
        self.raw = True
        self.memory = memory

    def load(self, ptr: int, n: int) -> list[Any]:
        view = self.memory.view()
        return list(struct.unpack_from(f"<{n}{self._fmt}", view, ptr))

    def store(self, ptr: int, values: list[Any]) -> None:
        view = self.memory.view()
        struct.pack_into(f"<{len(values)}{self._fmt}", view, ptr, *values)


def numeric_codec(t: m.ValType, memory: Memory) -> NumericCodec:
    """The codec of a numeric type ``t`` in ``memory``."""
    assert none_or_number_type(t) and t is not None
    return NumericCodec(t, memory)


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

    Traps when the range is too long, misaligned or out of bounds.
    ``codec`` is ``None`` only for the element-less ``stream``/``future``.
    """

    __slots__ = ("codec", "length", "memory", "progress", "ptr", "t")

    def __init__(
        self,
        t: m.ValType | None,
        codec: ElemCodec | None,
        memory: Memory | None,
        ptr: int,
        length: int,
    ) -> None:
        ctrap_if(length > MAX_LENGTH, TrapCode.OUT_OF_BOUNDS, f"buffer length {length} too large")
        if t is not None and length > 0:
            assert codec is not None and memory is not None
            ctrap_if(
                ptr % codec.alignment != 0,
                TrapCode.MISALIGNED,
                f"buffer pointer {ptr:#x} misaligned",
            )
            ctrap_if(
                ptr + length * codec.size > len(memory.view()),
                TrapCode.OUT_OF_BOUNDS,
                f"buffer [{ptr:#x}, +{length} elements) out of bounds",
            )
        self.t = t
        self.codec = codec
        self.memory = memory
        self.ptr = ptr
        self.progress = 0
        self.length = length

    def remain(self) -> int:
        return self.length - self.progress

    def is_zero_length(self) -> bool:
        return self.length == 0


class ReadableGuestBuffer(GuestBuffer):
    """Guest memory the writer of a stream/future copies values out of."""

    __slots__ = ()

    def read(self, n: int) -> list[Any]:
        assert n <= self.remain()
        if self.t is not None:
            assert self.codec is not None
            vs = self.codec.load(self.ptr, n)
            self.ptr += n * self.codec.size
        else:
            vs = [()] * n
        self.progress += n
        return vs


class WritableGuestBuffer(GuestBuffer):
    """Guest memory the reader of a stream/future receives values into."""

    __slots__ = ()

    def write(self, vs: list[Any]) -> None:
        assert len(vs) <= self.remain()
        if self.t is not None:
            assert self.codec is not None
            self.codec.store(self.ptr, vs)
            self.ptr += len(vs) * self.codec.size
        self.progress += len(vs)


class HostReadableBuffer:
    """Host values offered to a reader (a host writer's source)."""

    __slots__ = ("progress", "t", "values")

    def __init__(self, t: m.ValType | None, values: list[Any]) -> None:
        self.t = t
        self.values = values
        self.progress = 0

    def remain(self) -> int:
        return len(self.values) - self.progress

    def is_zero_length(self) -> bool:
        return len(self.values) == 0

    def read(self, n: int) -> list[Any]:
        assert n <= self.remain()
        vs = self.values[self.progress : self.progress + n]
        self.progress += n
        return vs


class HostWritableBuffer:
    """Room for up to ``capacity`` values that a writer delivers to the host."""

    __slots__ = ("capacity", "progress", "t", "values")

    def __init__(self, t: m.ValType | None, capacity: int) -> None:
        self.t = t
        self.capacity = capacity
        self.values: list[Any] = []
        self.progress = 0

    def remain(self) -> int:
        return self.capacity - self.progress

    def is_zero_length(self) -> bool:
        return self.capacity == 0

    def write(self, vs: list[Any]) -> None:
        assert len(vs) <= self.remain()
        self.values.extend(vs)
        self.progress += len(vs)


def transfer(src: ReadableBuffer, dst: WritableBuffer, n: int) -> None:
    """Copy ``n`` elements from ``src`` to ``dst`` (bulk when both are raw guest memory)."""
    if (
        n > 0
        and isinstance(src, ReadableGuestBuffer)
        and isinstance(dst, WritableGuestBuffer)
        and src.codec is not None
        and dst.codec is not None
        and src.codec.raw
        and dst.codec.raw
        and src.memory is not None
        and dst.memory is not None
    ):
        nbytes = n * src.codec.size
        assert dst.codec.size == src.codec.size
        sv = src.memory.view()
        dv = dst.memory.view()
        dv[dst.ptr : dst.ptr + nbytes] = sv[src.ptr : src.ptr + nbytes]
        src.ptr += nbytes
        src.progress += n
        dst.ptr += nbytes
        dst.progress += n
        return
    dst.write(src.read(n))
