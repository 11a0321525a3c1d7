"""The guest memory interface and a test implementation.

CanonicalABI.md §"Canonical ABI Options" describes ``memory`` (a core memory
instance) and ``realloc`` (a core function). The engine hands them to the ABI
layer as:

* a :class:`Memory`: ``view()`` returns a writable ``memoryview`` of format
  ``'B'`` over the memory's *current* bytes. Memory can grow (and, for a
  bytearray-backed memory, move) whenever the guest runs, so a view is
  re-read after every ``realloc`` call or other guest call;
* a :data:`Realloc`: ``realloc(old_ptr, old_size, align, new_size) -> ptr``,
  the guest's ``cabi_realloc``-style export as a Python callable returning
  the new pointer as an unsigned integer.

:class:`BytearrayMemory` implements both over a ``bytearray`` with a bump
allocator, for tests and benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias

__all__ = ["BytearrayMemory", "Memory", "Realloc"]

Realloc: TypeAlias = Callable[[int, int, int, int], int]

PAGE_SIZE = 65536


class Memory(Protocol):
    """A guest linear memory as the ABI layer sees it."""

    def view(self) -> memoryview:
        """A writable byte view of the whole memory at its current length."""
        ...


class BytearrayMemory:
    """A growable memory over a ``bytearray`` with a bump-allocating ``realloc``.

    Growing replaces the underlying ``bytearray`` (views handed out earlier
    keep the old bytes), so code that keeps a stale view after ``realloc``
    is caught by tests. ``realloc`` records every call in :attr:`calls` as
    ``(old_ptr, old_size, align, new_size, result)``.

    Addresses below ``heap_base`` are never handed out (tests use them as
    scratch space). ``realloc`` never reuses freed space: a shrink or grow returns a fresh
    block at the bump pointer with the old block's bytes copied over (up to
    the smaller of the two sizes). ``max_pages`` bounds growth; past it
    ``realloc`` raises ``MemoryError`` (a trap in a real guest).
    """

    def __init__(self, size: int = PAGE_SIZE, *, heap_base: int = 1024, max_pages: int = 1 << 14):
        self.buf = bytearray(size)
        self.next = heap_base
        self.max_pages = max_pages
        self.calls: list[tuple[int, int, int, int, int]] = []

    def view(self) -> memoryview:
        return memoryview(self.buf)

    def __len__(self) -> int:
        return len(self.buf)

    def grow_to(self, size: int) -> None:
        """Grow the memory to at least ``size`` bytes (a whole number of pages)."""
        if size <= len(self.buf):
            return
        pages = -(-size // PAGE_SIZE)
        if pages > self.max_pages:
            raise MemoryError(f"memory limit of {self.max_pages} pages reached")
        new = bytearray(pages * PAGE_SIZE)
        new[: len(self.buf)] = self.buf
        self.buf = new

    def realloc(self, old_ptr: int, old_size: int, align: int, new_size: int) -> int:
        assert align > 0 and align & (align - 1) == 0, align
        ptr = -(-self.next // align) * align
        self.grow_to(ptr + new_size)
        if old_ptr and old_size:
            n = min(old_size, new_size)
            self.buf[ptr : ptr + n] = self.buf[old_ptr : old_ptr + n]
        self.next = ptr + new_size
        self.calls.append((old_ptr, old_size, align, new_size, ptr))
        return ptr

    def write(self, ptr: int, data: bytes) -> None:
        """Copy ``data`` to ``ptr`` (a test helper)."""
        self.grow_to(ptr + len(data))
        self.buf[ptr : ptr + len(data)] = data

    def read(self, ptr: int, n: int) -> bytes:
        """The ``n`` bytes at ``ptr`` (a test helper)."""
        return bytes(self.buf[ptr : ptr + n])
