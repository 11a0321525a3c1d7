"""Loading and storing strings, with every transcoding path.

CanonicalABI.md §"Loading" (``load_string``, ``load_string_from_range``) and
§"Storing" (``store_string``, ``store_string_into_range`` and its copy and
transcoding helpers). Bytes move with ``str.encode``/``str(buffer, codec)``
straight between Python strings and guest memory, never per code unit.

Two kinds of source value are stored:

* a :class:`StringValue` (the spec's ``(str, encoding, tagged_code_units)``
  triple, produced by lifting from another guest): stored with the spec's
  exact allocation strategy, including its ``realloc`` growth and shrink
  sequences, so cross-component calls behave as the spec describes;
* a host ``str``: encoded first, then stored with one exact allocation
  (:func:`store_host_string`). Surrogate code points, which a Python ``str``
  can hold but a component string cannot, become U+FFFD (python-mapping.md §2).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from typing import NamedTuple

from polyengine.abi.errors import LowerValueError
from polyengine.abi.options import LiftLowerContext, StringEncoding
from polyengine.abi.trap import Trap, TrapCode, range_trap, trap_if
from polyengine.types.layout import PtrType, ptr_size

__all__ = [
    "MAX_STRING_BYTE_LENGTH",
    "REALLOC_I32_MAX",
    "StringValue",
    "load_string_from_range",
    "make_string_decoder",
    "make_string_encoder",
    "store_host_string",
    "store_string_into_range",
    "transcode_string",
    "utf16_tag",
]

REALLOC_I32_MAX = 2**32 - 1
MAX_STRING_BYTE_LENGTH = (1 << 28) - 1

USV_ERRORS = "polyengine.usv"


_REPLACEMENT = {"utf-8": "\ufffd".encode(), "utf-16-le": "\ufffd".encode("utf-16-le")}


def _replace_surrogates(exc: UnicodeError) -> tuple[bytes, int]:
    # The UTF encoders take only bytes (or ASCII) back from an error handler.
    if isinstance(exc, UnicodeEncodeError) and exc.encoding in _REPLACEMENT:
        return (_REPLACEMENT[exc.encoding] * (exc.end - exc.start), exc.end)
    raise exc


codecs.register_error(USV_ERRORS, _replace_surrogates)

_ANY_UTF16_TAG = (1 << 31) | (1 << 63)
_NON_ASCII = re.compile(rb"[\x80-\xff]")
_NON_LATIN1 = re.compile("[^\x00-\xff]")


class StringValue(NamedTuple):
    """A lifted string with its source encoding and tagged code-unit count (§"Loading")."""

    s: str
    encoding: StringEncoding
    tagged_code_units: int


def utf16_tag(ptr_type: PtrType) -> int:
    """The high bit marking UTF-16 in a ``latin1+utf16`` length (§"Loading")."""
    return 1 << (ptr_size(ptr_type) * 8 - 1)


# --- §"Loading" ----------------------------------------------------------------


def make_string_decoder(
    encoding: StringEncoding, ptr_type: PtrType = "i32"
) -> Callable[[memoryview, int, int], str]:
    """A decoder ``(mv, ptr, tagged_code_units) -> str`` for one string encoding.

    Implements the checks of ``load_string_from_range`` (§"Loading"): length
    limit, alignment, bounds, and valid UTF-8/UTF-16 (each a :class:`Trap`).
    """
    tag = utf16_tag(ptr_type)

    def check(mv: memoryview, ptr: int, byte_length: int, align: int) -> None:
        if byte_length > MAX_STRING_BYTE_LENGTH or ptr & (align - 1) or ptr + byte_length > len(mv):
            range_trap(
                "string",
                ptr,
                byte_length,
                align,
                len(mv),
                limit=MAX_STRING_BYTE_LENGTH,
                too_long_code=TrapCode.STRING_TOO_LONG,
            )

    def decode_utf8(mv: memoryview, ptr: int, units: int) -> str:
        if units > MAX_STRING_BYTE_LENGTH or ptr + units > len(mv):  # check(), its common case
            check(mv, ptr, units, 1)
        try:
            return str(mv[ptr : ptr + units], "utf-8")
        except UnicodeDecodeError as e:
            truncated = e.reason == "unexpected end of data"
            kind = "incomplete utf-8 byte sequence" if truncated else "invalid utf-8"
            msg = f"{kind}: string at {ptr}, byte {e.start}: {e.reason}"
            raise Trap(msg, TrapCode.INVALID_UTF8) from None

    def decode_utf16(mv: memoryview, ptr: int, units: int) -> str:
        check(mv, ptr, 2 * units, 2)
        try:
            return str(mv[ptr : ptr + 2 * units], "utf-16-le")
        except UnicodeDecodeError as e:
            raise Trap(
                f"invalid utf-16: string at {ptr}, byte {e.start}: {e.reason}",
                TrapCode.INVALID_UTF16,
            ) from None

    def decode_compact(mv: memoryview, ptr: int, tagged: int) -> str:
        if tagged & tag:
            return decode_utf16(mv, ptr, tagged ^ tag)
        check(mv, ptr, tagged, 2)
        return str(mv[ptr : ptr + tagged], "latin-1")

    match encoding:
        case "utf8":
            return decode_utf8
        case "utf16":
            return decode_utf16
        case "latin1+utf16":
            return decode_compact
    raise AssertionError(encoding)


def load_string_from_range(cx: LiftLowerContext, ptr: int, tagged_code_units: int) -> StringValue:
    """The string at ``ptr`` with its encoding hint (CanonicalABI.md §"Loading")."""
    enc = cx.opts.string_encoding
    s = make_string_decoder(enc, cx.opts.addrtype)(cx.mv, ptr, tagged_code_units)
    return StringValue(s, enc, tagged_code_units)


# --- §"Storing" ----------------------------------------------------------------


def _check_block(cx: LiftLowerContext, ptr: int, n: int, align: int) -> None:
    if ptr & (align - 1) or ptr + n > len(cx.mv):
        range_trap("string", ptr, n, align, len(cx.mv), from_realloc=True)


def _write(cx: LiftLowerContext, ptr: int, data: bytes) -> None:
    cx.mv[ptr : ptr + len(data)] = data


def store_string_into_range(cx: LiftLowerContext, v: StringValue) -> tuple[int, int]:
    """Store a lifted string in ``cx``'s encoding; returns ``(ptr, tagged_code_units)``.

    CanonicalABI.md §"Storing" (``store_string_into_range``): the case
    analysis over (source encoding, destination encoding), each with the
    spec's allocation and ``realloc`` sequence.
    """
    src, src_encoding, src_tagged = v
    # The source's tag bit depends on the *source* memory's address width;
    # lengths stay below 2**28, so either tag bit identifies UTF-16 (this
    # also covers a 64-bit source stored into a 32-bit destination).
    tag = _ANY_UTF16_TAG & src_tagged
    src_simple: str
    if src_encoding == "latin1+utf16":
        if tag:
            src_simple, src_units = "utf16", src_tagged ^ tag
        else:
            src_simple, src_units = "latin1", src_tagged
    else:
        src_simple, src_units = src_encoding, src_tagged

    match cx.opts.string_encoding:
        case "utf8":
            if src_simple == "utf8":
                return store_string_copy(
                    cx, src, src_units, dst_code_unit_size=1, dst_alignment=1, dst_encoding="utf-8"
                )
            if src_simple == "utf16":
                return store_string_to_utf8(cx, src, src_units, src_units * 3)
            return store_string_to_utf8(cx, src, src_units, src_units * 2)
        case "utf16":
            if src_simple == "utf8":
                return store_utf8_to_utf16(cx, src, src_units)
            return store_string_copy(
                cx, src, src_units, dst_code_unit_size=2, dst_alignment=2, dst_encoding="utf-16-le"
            )
        case "latin1+utf16":
            if src_encoding != "latin1+utf16":
                return store_string_to_latin1_or_utf16(cx, src, src_units)
            if src_simple == "latin1":
                return store_string_copy(
                    cx,
                    src,
                    src_units,
                    dst_code_unit_size=1,
                    dst_alignment=2,
                    dst_encoding="latin-1",
                )
            return store_probably_utf16_to_latin1_or_utf16(cx, src, src_units)
    raise AssertionError(cx.opts.string_encoding)


def store_string_copy(
    cx: LiftLowerContext,
    src: str,
    src_code_units: int,
    *,
    dst_code_unit_size: int,
    dst_alignment: int,
    dst_encoding: str,
) -> tuple[int, int]:
    """Same-size copy: one exact allocation (§"Storing", ``store_string_copy``)."""
    dst_byte_length = dst_code_unit_size * src_code_units
    assert dst_byte_length <= REALLOC_I32_MAX
    ptr = cx.allocate(dst_alignment, dst_byte_length)
    _check_block(cx, ptr, dst_byte_length, dst_alignment)
    encoded = src.encode(dst_encoding)
    assert len(encoded) == dst_byte_length
    _write(cx, ptr, encoded)
    return (ptr, src_code_units)


def store_string_to_utf8(
    cx: LiftLowerContext, src: str, src_code_units: int, worst_case_size: int
) -> tuple[int, int]:
    """Latin-1 or UTF-16 to UTF-8 (§"Storing", ``store_string_to_utf8``).

    Optimistically one byte per code unit; at the first non-ASCII code point,
    grow to the worst case, finish, then shrink to the exact size.
    """
    assert src_code_units <= REALLOC_I32_MAX
    ptr = cx.allocate(1, src_code_units)
    _check_block(cx, ptr, src_code_units, 1)
    encoded = src.encode("utf-8")
    m = _NON_ASCII.search(encoded)
    if m is None:
        _write(cx, ptr, encoded)
        return (ptr, src_code_units)
    i = m.start()
    _write(cx, ptr, encoded[:i])
    assert worst_case_size <= REALLOC_I32_MAX
    ptr = cx.reallocate(ptr, src_code_units, 1, worst_case_size)
    _check_block(cx, ptr, worst_case_size, 1)
    _write(cx, ptr + i, encoded[i:])
    if worst_case_size > len(encoded):
        ptr = cx.reallocate(ptr, worst_case_size, 1, len(encoded))
        _check_block(cx, ptr, len(encoded), 1)
    return (ptr, len(encoded))


def store_utf8_to_utf16(cx: LiftLowerContext, src: str, src_code_units: int) -> tuple[int, int]:
    """UTF-8 to UTF-16: worst case first, then shrink (§"Storing", ``store_utf8_to_utf16``)."""
    worst_case_size = 2 * src_code_units
    assert worst_case_size <= REALLOC_I32_MAX
    ptr = cx.allocate(2, worst_case_size)
    _check_block(cx, ptr, worst_case_size, 2)
    encoded = src.encode("utf-16-le")
    _write(cx, ptr, encoded)
    if len(encoded) < worst_case_size:
        ptr = cx.reallocate(ptr, worst_case_size, 2, len(encoded))
        _check_block(cx, ptr, len(encoded), 2)
    return (ptr, len(encoded) // 2)


def store_string_to_latin1_or_utf16(
    cx: LiftLowerContext, src: str, src_code_units: int
) -> tuple[int, int]:
    """UTF-8 or UTF-16 to ``latin1+utf16`` (§"Storing", ``store_string_to_latin1_or_utf16``).

    Speculates Latin-1; at the first code point above U+00FF grows to the
    UTF-16 worst case, inflates the Latin-1 prefix in place, finishes in
    UTF-16 and shrinks. An all-Latin-1 string shrinks to its byte length.
    """
    assert src_code_units <= REALLOC_I32_MAX
    ptr = cx.allocate(2, src_code_units)
    _check_block(cx, ptr, src_code_units, 2)
    m = _NON_LATIN1.search(src)
    if m is None:
        latin1 = src.encode("latin-1")
        _write(cx, ptr, latin1)
        dst_byte_length = len(latin1)
        if dst_byte_length < src_code_units:
            ptr = cx.reallocate(ptr, src_code_units, 2, dst_byte_length)
            _check_block(cx, ptr, dst_byte_length, 2)
        return (ptr, dst_byte_length)
    k = m.start()
    _write(cx, ptr, src[:k].encode("latin-1"))
    worst_case_size = 2 * src_code_units
    assert worst_case_size <= REALLOC_I32_MAX
    ptr = cx.reallocate(ptr, src_code_units, 2, worst_case_size)
    _check_block(cx, ptr, worst_case_size, 2)
    # Inflate the Latin-1 prefix that realloc carried over, then append the rest.
    prefix = bytes(cx.mv[ptr : ptr + k])
    _write(cx, ptr, prefix.decode("latin-1").encode("utf-16-le"))
    encoded = src.encode("utf-16-le")
    _write(cx, ptr + 2 * k, encoded[2 * k :])
    if worst_case_size > len(encoded):
        ptr = cx.reallocate(ptr, worst_case_size, 2, len(encoded))
        _check_block(cx, ptr, len(encoded), 2)
    return (ptr, (len(encoded) // 2) | utf16_tag(cx.opts.addrtype))


def store_probably_utf16_to_latin1_or_utf16(
    cx: LiftLowerContext, src: str, src_code_units: int
) -> tuple[int, int]:
    """Tagged UTF-16 to ``latin1+utf16``: UTF-16 first, deflate if all Latin-1.

    CanonicalABI.md §"Storing" (``store_probably_utf16_to_latin1_or_utf16``).
    """
    src_byte_length = 2 * src_code_units
    assert src_byte_length <= REALLOC_I32_MAX
    ptr = cx.allocate(2, src_byte_length)
    _check_block(cx, ptr, src_byte_length, 2)
    encoded = src.encode("utf-16-le")
    _write(cx, ptr, encoded)
    if _NON_LATIN1.search(src) is not None:
        return (ptr, (len(encoded) // 2) | utf16_tag(cx.opts.addrtype))
    latin1 = src.encode("latin-1")
    _write(cx, ptr, latin1)
    ptr = cx.reallocate(ptr, src_byte_length, 1, len(latin1))
    trap_if(
        ptr + len(latin1) > len(cx.mv),
        TrapCode.OUT_OF_BOUNDS,
        f"realloc returned {ptr}, {len(latin1)} bytes from it are out of bounds",
    )
    return (ptr, len(latin1))


# --- host strings ----------------------------------------------------------------


def make_string_encoder(
    encoding: StringEncoding, ptr_type: PtrType = "i32"
) -> Callable[[str], tuple[bytes, int, int]]:
    """An encoder ``s -> (bytes, alignment, tagged_code_units)`` for host strings.

    Surrogate code points become U+FFFD. Raises :class:`LowerValueError` when
    the encoded string is longer than a guest may load.
    """
    tag = utf16_tag(ptr_type)

    def too_long(b: bytes) -> None:
        if len(b) > MAX_STRING_BYTE_LENGTH:
            raise LowerValueError(f"string of {len(b)} encoded bytes is too long for a component")

    def enc_utf8(s: str) -> tuple[bytes, int, int]:
        b = s.encode("utf-8", USV_ERRORS)
        n = len(b)
        if n > MAX_STRING_BYTE_LENGTH:
            too_long(b)
        return (b, 1, n)

    def enc_utf16(s: str) -> tuple[bytes, int, int]:
        b = s.encode("utf-16-le", USV_ERRORS)
        too_long(b)
        return (b, 2, len(b) >> 1)

    def enc_compact(s: str) -> tuple[bytes, int, int]:
        try:
            b = s.encode("latin-1")
        except UnicodeEncodeError:
            b = s.encode("utf-16-le", USV_ERRORS)
            too_long(b)
            return (b, 2, (len(b) >> 1) | tag)
        too_long(b)
        return (b, 2, len(b))

    match encoding:
        case "utf8":
            return enc_utf8
        case "utf16":
            return enc_utf16
        case "latin1+utf16":
            return enc_compact
    raise AssertionError(encoding)


def store_host_string(
    cx: LiftLowerContext,
    s: str,
    encode: Callable[[str], tuple[bytes, int, int]] | None = None,
) -> tuple[int, int]:
    """Store a host ``str`` with one exact allocation; returns ``(ptr, tagged_code_units)``."""
    if encode is None:
        encode = make_string_encoder(cx.opts.string_encoding, cx.opts.addrtype)
    b, align, units = encode(s)
    n = len(b)
    ptr = cx.reallocate(0, 0, align, n)  # cx.allocate(align, n)
    mv = cx.mv
    if ptr & (align - 1) or ptr + n > len(mv):  # _check_block, inline
        range_trap("string", ptr, n, align, len(mv), from_realloc=True)
    mv[ptr : ptr + n] = b
    return (ptr, units)


def transcode_string(
    src_cx: LiftLowerContext, ptr: int, tagged_code_units: int, dst_cx: LiftLowerContext
) -> tuple[int, int]:
    """Copy a string between two guests' memories and encodings (a cross-component call).

    Lifts from ``src_cx`` (§"Loading") and stores into ``dst_cx`` with the
    spec's transcoding (§"Storing"); returns the destination
    ``(ptr, tagged_code_units)``.
    """
    return store_string_into_range(dst_cx, load_string_from_range(src_cx, ptr, tagged_code_units))
