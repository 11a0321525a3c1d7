"""A bounded cursor over the input bytes: bytes, LEB128 integers and names.

Every read is checked against ``end`` (the end of the enclosing section or
component), so a truncated or lying size always becomes a
:class:`~polyengine.errors.TranslationError` carrying the absolute offset where
the problem was found and the section being read. Integer encodings follow the
core spec (Binary Format §Integers): an ``N``-bit integer takes at most
``ceil(N / 7)`` bytes, and the unused bits of the last byte must be zero
(unsigned) or copies of the sign bit (signed).
"""

from __future__ import annotations

from typing import NoReturn

from polyengine.errors import TranslationError

Buffer = bytes | memoryview


class Cursor:
    """Reads from ``buf[pos:end]``; all offsets are absolute offsets into ``buf``.

    ``section`` names the section being read, for error messages. ``depth``
    counts nesting of components and component/instance types, so that hostile
    input cannot exhaust the Python stack. ``names`` says whether
    ``component-name`` sections are decoded.
    """

    __slots__ = ("buf", "depth", "end", "is_bytes", "names", "pos", "section")

    MAX_DEPTH = 64

    def __init__(self, buf: Buffer, pos: int, end: int) -> None:
        assert 0 <= pos <= end <= len(buf)
        self.buf = buf
        self.is_bytes = isinstance(buf, bytes)
        self.pos = pos
        self.end = end
        self.section: str | None = None
        self.depth = 0
        self.names = True  # decode component-name sections

    # -- errors -------------------------------------------------------------

    def fail(self, message: str, offset: int | None = None) -> NoReturn:
        """Raise a :class:`TranslationError` at ``offset`` (default: the current position)."""
        raise TranslationError(message, self.pos if offset is None else offset, self.section)

    def eof(self, what: str, offset: int | None = None) -> NoReturn:
        """Raise the "unexpected end-of-file" error while reading ``what``."""
        self.fail(f"unexpected end-of-file while reading {what}", offset)

    def invalid_byte(self, byte: int, what: str, offset: int) -> NoReturn:
        """Raise the error for an unknown tag/opcode ``byte`` at ``offset``."""
        self.fail(f"invalid leading byte (0x{byte:x}) for {what}", offset)

    # -- limits ---------------------------------------------------------------

    @property
    def remaining(self) -> int:
        """Bytes left before ``end``."""
        return self.end - self.pos

    def enter(self) -> None:
        """Enter one nesting level (component or component/instance type)."""
        self.depth += 1
        if self.depth > self.MAX_DEPTH:
            self.fail(f"nesting deeper than {self.MAX_DEPTH} levels")

    def leave(self) -> None:
        """Leave a nesting level entered with :meth:`enter`."""
        assert self.depth > 0
        self.depth -= 1

    # -- bytes --------------------------------------------------------------

    def u8(self, what: str = "a byte") -> int:
        """One byte."""
        pos = self.pos
        if pos >= self.end:
            self.eof(what)
        self.pos = pos + 1
        return self.buf[pos]

    def peek(self, what: str = "a byte") -> int:
        """The next byte, without consuming it."""
        if self.pos >= self.end:
            self.eof(what)
        return self.buf[self.pos]

    def skip(self, n: int, what: str, length_offset: int | None = None) -> int:
        """Skip ``n`` bytes, returning the offset of the first one. When they
        run past ``end``, the error points at ``length_offset`` (the length
        field that promised them) if given."""
        pos = self.pos
        if n > self.end - pos:
            self._short(n, what, pos if length_offset is None else length_offset)
        self.pos = pos + n
        return pos

    def _short(self, n: int, what: str, offset: int) -> NoReturn:
        self.fail(
            f"unexpected end-of-file: {what} of {n} bytes but only {self.end - self.pos} remain",
            offset,
        )

    def flag(self, what: str) -> bool:
        """A ``0x00``/``0x01`` boolean immediate (``async?``, ``cancel?``, ``sh?``)."""
        pos = self.pos
        b = self.u8(what)
        if b > 1:
            self.fail(f"invalid boolean value 0x{b:x} for {what}", pos)
        return b == 1

    # -- integers -----------------------------------------------------------

    def u32(self, what: str = "a u32") -> int:
        """An unsigned LEB128 ``u32``."""
        pos = self.pos
        if pos < self.end:
            b = self.buf[pos]
            if b < 0x80:
                self.pos = pos + 1
                return b
        return self._uleb(32, what)

    def u64(self, what: str = "a u64") -> int:
        """An unsigned LEB128 ``u64``."""
        return self._uleb(64, what)

    def s33(self, what: str = "an s33") -> int:
        """A signed LEB128 ``s33`` (type indices in negative-SLEB type positions)."""
        return self._sleb(33, what)

    def s64(self, what: str = "an s64") -> int:
        """A signed LEB128 ``s64``."""
        return self._sleb(64, what)

    def _uleb(self, bits: int, what: str) -> int:
        buf = self.buf
        pos = self.pos
        end = self.end
        last = (bits + 6) // 7 - 1
        result = 0
        shift = 0
        i = 0
        while True:
            if pos >= end:
                self.eof(what, pos)
            b = buf[pos]
            if i == last:
                if b & 0x80:
                    self.fail(f"integer representation too long for {what}", pos)
                if b >> (bits - 7 * i):
                    self.fail(f"integer too large for {what}", pos)
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                self.pos = pos
                return result
            shift += 7
            i += 1

    def _sleb(self, bits: int, what: str) -> int:
        buf = self.buf
        pos = self.pos
        end = self.end
        last = (bits + 6) // 7 - 1
        result = 0
        shift = 0
        i = 0
        while True:
            if pos >= end:
                self.eof(what, pos)
            b = buf[pos]
            if i == last:
                if b & 0x80:
                    self.fail(f"integer representation too long for {what}", pos)
                used = bits - 7 * i  # value bits in this byte, sign bit included
                top = b >> (used - 1)
                if top != 0 and top != (0x7F >> (used - 1)):
                    self.fail(f"integer too large for {what}", pos)
            pos += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                if b & 0x40:
                    result -= 1 << shift
                self.pos = pos
                return result
            i += 1

    # -- vectors and names --------------------------------------------------

    def count(self, what: str, min_item_size: int = 1) -> int:
        """A ``vec`` length, checked against the bytes left (each item takes
        at least ``min_item_size`` bytes), so no loop or allocation can
        outgrow the input."""
        pos = self.pos
        n = self.u32(what)
        if n * min_item_size > self.end - self.pos:
            self.fail(
                f"unexpected end-of-file: {what} declares {n} items "
                f"but only {self.end - self.pos} bytes remain",
                pos,
            )
        return n

    def name(self, what: str = "a name") -> str:
        """A ``core:name``: a ``u32`` byte length and that many bytes of UTF-8."""
        buf = self.buf
        start = pos = self.pos
        end = self.end
        if pos < end and buf[pos] < 0x80:
            n = buf[pos]
            pos += 1
        else:
            n = self._uleb(32, what)
            pos = self.pos
        if n > end - pos:
            self.pos = pos
            self._short(n, what, start)
        self.pos = pos + n
        try:
            if self.is_bytes:
                return buf[pos : pos + n].decode()  # type: ignore[union-attr]
            return str(buf[pos : pos + n], "utf-8")
        except UnicodeDecodeError as e:
            self.fail(f"malformed UTF-8 encoding in {what}", pos + e.start)

    def expect_end(self, what: str) -> None:
        """Require that ``what`` was read exactly up to ``end``."""
        if self.pos != self.end:
            self.fail(
                f"{what} has {self.end - self.pos} unexpected trailing bytes "
                "(size does not match its contents)"
            )
