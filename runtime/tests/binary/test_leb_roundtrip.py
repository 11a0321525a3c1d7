"""LEB128 decoding against an independent encoder, over random values and paddings."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from polyengine.binary._cursor import Cursor


def encode_unsigned(value: int, length: int) -> bytes:
    out = bytearray()
    for i in range(length):
        b = value & 0x7F
        value >>= 7
        out.append(b | (0x80 if i < length - 1 else 0))
    assert value == 0
    return bytes(out)


def encode_signed(value: int, length: int) -> bytes:
    out = bytearray()
    for i in range(length):
        b = value & 0x7F
        value >>= 7
        out.append(b | (0x80 if i < length - 1 else 0))
    assert value in (0, -1)
    return bytes(out)


def min_len(bits_needed: int) -> int:
    return max(1, -(-bits_needed // 7))


@settings(derandomize=True, max_examples=100)
@given(st.integers(0, 2**32 - 1), st.integers(0, 4))
def test_u32_roundtrip(value: int, extra: int) -> None:
    n = min_len(value.bit_length())
    length = min(5, n + extra)
    raw = encode_unsigned(value, length) + b"\xaa"
    c = Cursor(raw, 0, len(raw))
    assert c.u32() == value
    assert c.pos == length


@settings(derandomize=True, max_examples=100)
@given(st.integers(0, 2**64 - 1), st.integers(0, 9))
def test_u64_roundtrip(value: int, extra: int) -> None:
    length = min(10, min_len(value.bit_length()) + extra)
    raw = encode_unsigned(value, length)
    assert Cursor(raw, 0, len(raw)).u64() == value


@settings(derandomize=True, max_examples=100)
@given(st.integers(-(2**32), 2**32 - 1), st.integers(0, 4))
def test_s33_roundtrip(value: int, extra: int) -> None:
    need = (value if value >= 0 else ~value).bit_length() + 1
    length = min(5, min_len(need) + extra)
    raw = encode_signed(value, length)
    assert Cursor(raw, 0, len(raw)).s33() == value


@settings(derandomize=True, max_examples=100)
@given(st.integers(-(2**63), 2**63 - 1), st.integers(0, 9))
def test_s64_roundtrip(value: int, extra: int) -> None:
    need = (value if value >= 0 else ~value).bit_length() + 1
    length = min(10, min_len(need) + extra)
    raw = encode_signed(value, length)
    assert Cursor(raw, 0, len(raw)).s64() == value
