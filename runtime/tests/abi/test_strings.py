"""Strings: loading, storing, host strings, and every transcoding path."""

from __future__ import annotations

import struct

import pytest
from abi_helpers import make_cx

from polyengine.abi.compile import Compiler
from polyengine.abi.errors import LowerValueError
from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.options import CanonicalOptions, LiftLowerContext, StringEncoding
from polyengine.abi.resources import ComponentInstance
from polyengine.abi.strings import (
    MAX_STRING_BYTE_LENGTH,
    StringValue,
    load_string_from_range,
    make_string_decoder,
    make_string_encoder,
    store_host_string,
    store_string_into_range,
    transcode_string,
    utf16_tag,
)
from polyengine.abi.trap import Trap, TrapCode
from polyengine.types.layout import PtrType
from polyengine.types.model import String

TAG = 1 << 31
ENCODINGS: list[StringEncoding] = ["utf8", "utf16", "latin1+utf16"]
SAMPLES = [
    "",
    "ascii only",
    "caf\u00e9 \u00ff",
    "\u4e2d\u6587",
    "mixed \u00e9 \u4e2d",
    "\U0001f600!",
]


def _calls(mem: BytearrayMemory) -> list[tuple[int, int, int]]:
    """The realloc calls as (old_size, align, new_size), checking each reuses the last block."""
    out = []
    prev = 0
    for old_ptr, old_size, align, new_size, result in mem.calls:
        assert old_ptr == (prev if old_size or old_ptr else 0)
        out.append((old_size, align, new_size))
        prev = result
    return out


def _source(encoding: StringEncoding, raw: bytes, tagged: int) -> LiftLowerContext:
    cx, mem = make_cx(encoding)
    mem.write(64, raw)
    return cx


def _src_utf8(s: str) -> tuple[LiftLowerContext, int]:
    b = s.encode("utf-8")
    return _source("utf8", b, len(b)), len(b)


def _src_utf16(s: str) -> tuple[LiftLowerContext, int]:
    b = s.encode("utf-16-le")
    return _source("utf16", b, len(b) // 2), len(b) // 2


def _src_latin1(s: str) -> tuple[LiftLowerContext, int]:
    b = s.encode("latin-1")
    return _source("latin1+utf16", b, len(b)), len(b)


def _src_tagged(s: str) -> tuple[LiftLowerContext, int]:
    b = s.encode("utf-16-le")
    return _source("latin1+utf16", b, (len(b) // 2) | TAG), (len(b) // 2) | TAG


def _decode_dst(dst: LiftLowerContext, ptr: int, tagged: int) -> str:
    return make_string_decoder(dst.opts.string_encoding)(dst.mv, ptr, tagged)


@pytest.mark.parametrize(
    ("src", "dst", "s", "expected_calls", "expected_tagged"),
    [
        # utf8 -> utf8: exact copy.
        (_src_utf8, "utf8", "h\u00e9", [(0, 1, 3)], 3),
        # utf8 -> utf16: worst case 2 bytes per source byte, then shrink.
        (_src_utf8, "utf16", "abc", [(0, 2, 6)], 3),
        (_src_utf8, "utf16", "h\u00e9", [(0, 2, 6), (6, 2, 4)], 2),
        # utf8 -> latin1+utf16: speculate Latin-1 in n bytes.
        (_src_utf8, "latin1+utf16", "abc", [(0, 2, 3)], 3),
        (_src_utf8, "latin1+utf16", "h\u00e9", [(0, 2, 3), (3, 2, 2)], 2),
        (_src_utf8, "latin1+utf16", "h\u4e2d", [(0, 2, 4), (4, 2, 8), (8, 2, 4)], 2 | TAG),
        (
            _src_utf8,
            "latin1+utf16",
            "\u00e9\u00e9\U0001f600",
            [(0, 2, 8), (8, 2, 16), (16, 2, 8)],
            4 | TAG,
        ),
        # utf16 -> utf8: one byte per unit, then worst case 3 per unit and shrink.
        (_src_utf16, "utf8", "abc", [(0, 1, 3)], 3),
        (_src_utf16, "utf8", "a\u00e9", [(0, 1, 2), (2, 1, 6), (6, 1, 3)], 3),
        (_src_utf16, "utf8", "\u4e2d", [(0, 1, 1), (1, 1, 3)], 3),
        # utf16 -> utf16: exact copy.
        (_src_utf16, "utf16", "a\U0001f600", [(0, 2, 6)], 3),
        # utf16 -> latin1+utf16.
        (_src_utf16, "latin1+utf16", "a\u00e9", [(0, 2, 2)], 2),
        (_src_utf16, "latin1+utf16", "a\u4e2d", [(0, 2, 2), (2, 2, 4)], 2 | TAG),
        # latin1 -> utf8: grow to 2 bytes per byte and shrink.
        (_src_latin1, "utf8", "abc", [(0, 1, 3)], 3),
        (_src_latin1, "utf8", "ab\u00e9", [(0, 1, 3), (3, 1, 6), (6, 1, 4)], 4),
        (_src_latin1, "utf8", "\u00e9\u00e9", [(0, 1, 2), (2, 1, 4)], 4),
        # latin1 -> utf16: inflate, exact.
        (_src_latin1, "utf16", "a\u00ff", [(0, 2, 4)], 2),
        # latin1 -> latin1+utf16: exact copy.
        (_src_latin1, "latin1+utf16", "a\u00ff", [(0, 2, 2)], 2),
        # tagged utf16 -> utf8.
        (_src_tagged, "utf8", "a\u4e2d", [(0, 1, 2), (2, 1, 6), (6, 1, 4)], 4),
        # tagged utf16 -> utf16: copy.
        (_src_tagged, "utf16", "a\u4e2d", [(0, 2, 4)], 2),
        # tagged utf16 -> latin1+utf16: stays UTF-16, or deflates to Latin-1.
        (_src_tagged, "latin1+utf16", "a\u4e2d", [(0, 2, 4)], 2 | TAG),
        (_src_tagged, "latin1+utf16", "a\u00e9", [(0, 2, 4), (4, 1, 2)], 2),
    ],
)
def test_transcoding_paths(
    src: object,
    dst: StringEncoding,
    s: str,
    expected_calls: list[tuple[int, int, int]],
    expected_tagged: int,
) -> None:
    src_cx, tagged = src(s)  # type: ignore[operator]
    dst_cx, dst_mem = make_cx(dst)
    ptr, dst_tagged = transcode_string(src_cx, 64, tagged, dst_cx)
    assert _calls(dst_mem) == expected_calls
    assert dst_tagged == expected_tagged
    assert _decode_dst(dst_cx, ptr, dst_tagged) == s


@pytest.mark.parametrize("src_enc", ENCODINGS)
@pytest.mark.parametrize("dst_enc", ENCODINGS)
@pytest.mark.parametrize("s", SAMPLES)
def test_transcoding_matrix(src_enc: StringEncoding, dst_enc: StringEncoding, s: str) -> None:
    src_cx, _ = make_cx(src_enc)
    ptr, tagged = store_host_string(src_cx, s)
    v = load_string_from_range(src_cx, ptr, tagged)
    assert v == StringValue(s, src_enc, tagged)
    dst_cx, _ = make_cx(dst_enc)
    dptr, dtagged = store_string_into_range(dst_cx, v)
    assert _decode_dst(dst_cx, dptr, dtagged) == s


def test_guest_strings_codec_carries_the_hint_across() -> None:
    src_cx, _ = make_cx("utf16")
    dst_cx, dst_mem = make_cx("utf8")
    lift = Compiler("utf16", guest_strings=True).codec(String())
    lower = Compiler("utf8").codec(String())
    flat: list[int | float] = []
    Compiler("utf16").codec(String()).lower_flat(src_cx, "a\u00e9", flat)
    v = lift.lift_flat(src_cx, flat, 0)
    assert v == StringValue("a\u00e9", "utf16", 2)
    out: list[int | float] = []
    lower.lower_flat(dst_cx, v, out)
    assert _calls(dst_mem) == [(0, 1, 2), (2, 1, 6), (6, 1, 3)]
    assert lower.lift_flat(dst_cx, out, 0) == "a\u00e9"


@pytest.mark.parametrize(
    ("enc", "s", "data", "tagged"),
    [
        ("utf8", "h\u00e9", "h\u00e9".encode(), 3),
        ("utf16", "h\u00e9", "h\u00e9".encode("utf-16-le"), 2),
        ("latin1+utf16", "h\u00e9", b"h\xe9", 2),
        ("latin1+utf16", "h\u4e2d", "h\u4e2d".encode("utf-16-le"), 2 | TAG),
    ],
)
def test_host_strings_allocate_once_exactly(
    enc: StringEncoding, s: str, data: bytes, tagged: int
) -> None:
    cx, mem = make_cx(enc)
    ptr, got = store_host_string(cx, s)
    assert got == tagged
    assert mem.read(ptr, len(data)) == data
    assert _calls(mem) == [(0, 1 if enc == "utf8" else 2, len(data))]


@pytest.mark.parametrize("enc", ENCODINGS)
def test_host_strings_replace_surrogates(enc: StringEncoding) -> None:
    cx, _ = make_cx(enc)
    c = Compiler(enc).codec(String())
    out: list[int | float] = []
    c.lower_flat(cx, "a\ud800b\udfff", out)
    assert c.lift_flat(cx, out, 0) == "a\ufffdb\ufffd"


def test_host_string_too_long(monkeypatch: pytest.MonkeyPatch) -> None:
    from polyengine.abi import strings

    monkeypatch.setattr(strings, "MAX_STRING_BYTE_LENGTH", 4)
    enc = make_string_encoder("utf8")
    with pytest.raises(LowerValueError, match="too long"):
        enc("hello")
    assert enc("hell")[0] == b"hell"


def _trap_code(enc: StringEncoding, raw: bytes, ptr: int, tagged: int, size: int = 4096) -> str:
    mem = BytearrayMemory(size)
    mem.write(min(ptr, size - len(raw)), raw)
    cx = LiftLowerContext(CanonicalOptions(enc, mem, mem.realloc), ComponentInstance())
    with pytest.raises(Trap) as e:
        load_string_from_range(cx, ptr, tagged)
    return e.value.code


def test_load_traps() -> None:
    assert _trap_code("utf8", b"\xff", 64, 1) == TrapCode.INVALID_UTF8
    assert _trap_code("utf8", b"\xed\xa0\x80", 64, 3) == TrapCode.INVALID_UTF8  # encoded surrogate
    assert _trap_code("utf8", b"\xc3", 64, 1) == TrapCode.INVALID_UTF8  # truncated
    assert _trap_code("utf16", b"\x00\xd8", 64, 1) == TrapCode.INVALID_UTF16
    assert _trap_code("utf16", b"\x00\xdc\x41\x00", 64, 2) == TrapCode.INVALID_UTF16
    assert _trap_code("latin1+utf16", b"\x00\xd8", 64, 1 | TAG) == TrapCode.INVALID_UTF16
    assert _trap_code("utf16", b"ab", 65, 1) == TrapCode.MISALIGNED
    assert _trap_code("latin1+utf16", b"ab", 65, 1) == TrapCode.MISALIGNED
    assert _trap_code("utf8", b"abc", 4094, 3) == TrapCode.OUT_OF_BOUNDS
    assert _trap_code("utf16", b"", 4094, 2) == TrapCode.OUT_OF_BOUNDS
    assert _trap_code("utf8", b"", 0, MAX_STRING_BYTE_LENGTH + 1) == TrapCode.STRING_TOO_LONG
    assert _trap_code("utf16", b"", 0, 1 << 27) == TrapCode.STRING_TOO_LONG
    assert _trap_code("latin1+utf16", b"", 0, TAG | (1 << 27)) == TrapCode.STRING_TOO_LONG
    assert _trap_code("latin1+utf16", b"", 0, 1 << 28) == TrapCode.STRING_TOO_LONG


def test_latin1_never_fails_to_decode() -> None:
    cx, mem = make_cx("latin1+utf16")
    mem.write(64, bytes(range(256)))
    assert load_string_from_range(cx, 64, 256).s == bytes(range(256)).decode("latin-1")


def test_utf16_tag_widths() -> None:
    assert utf16_tag("i32") == 1 << 31
    assert utf16_tag("i64") == 1 << 63


class _BadRealloc:
    def __init__(self, mem: BytearrayMemory, result: int) -> None:
        self.mem = mem
        self.result = result

    def __call__(self, old: int, old_size: int, align: int, new_size: int) -> int:
        return self.result


@pytest.mark.parametrize(
    ("enc", "result", "code"),
    [
        ("utf16", 65, TrapCode.MISALIGNED),
        ("latin1+utf16", 1025, TrapCode.MISALIGNED),
        ("utf8", 65534, TrapCode.OUT_OF_BOUNDS),
        ("utf16", 0xFFFFFFF0, TrapCode.OUT_OF_BOUNDS),
    ],
)
def test_store_traps_on_bad_realloc(enc: StringEncoding, result: int, code: str) -> None:
    mem = BytearrayMemory()
    cx = LiftLowerContext(CanonicalOptions(enc, mem, _BadRealloc(mem, result)), ComponentInstance())
    with pytest.raises(Trap) as e:
        store_host_string(cx, "hello")
    assert e.value.code == code
    with pytest.raises(Trap):
        store_string_into_range(cx, StringValue("hello", "utf8", 5))


def test_realloc_clears_may_leave() -> None:
    mem = BytearrayMemory()
    inst = ComponentInstance()
    seen: list[bool] = []

    def realloc(old: int, old_size: int, align: int, new_size: int) -> int:
        seen.append(inst.may_leave)
        return mem.realloc(old, old_size, align, new_size)

    cx = LiftLowerContext(CanonicalOptions("utf8", mem, realloc), inst)
    store_host_string(cx, "x")
    assert seen == [False]
    assert inst.may_leave


def test_missing_realloc_traps() -> None:
    mem = BytearrayMemory()
    cx = LiftLowerContext(CanonicalOptions("utf8", mem, None), ComponentInstance())
    with pytest.raises(Trap) as e:
        store_host_string(cx, "x")
    assert e.value.code == TrapCode.MISSING_REALLOC


def test_string_flat_pointer_pair_memory64() -> None:
    cx, mem = make_cx("latin1+utf16", ptr_type="i64")
    c = Compiler("latin1+utf16", "i64").codec(String())
    c.store(cx, "\u4e2d", 16)
    _, tagged = struct.unpack("<QQ", mem.read(16, 16))
    assert tagged == 1 | (1 << 63)
    assert c.load(cx, 16) == "\u4e2d"


@pytest.mark.parametrize(("src_pt", "dst_pt"), [("i64", "i32"), ("i32", "i64"), ("i64", "i64")])
@pytest.mark.parametrize("s", ["h\u4e2d", "h\u00e9"])
def test_transcoding_between_address_widths(src_pt: PtrType, dst_pt: PtrType, s: str) -> None:
    src_cx, _ = make_cx("latin1+utf16", ptr_type=src_pt)
    dst_cx, _ = make_cx("latin1+utf16", ptr_type=dst_pt)
    raw = s.encode("utf-16-le")
    src_cx.mv[64 : 64 + len(raw)] = raw
    tagged = (len(raw) // 2) | utf16_tag(src_pt)
    ptr, dst_tagged = transcode_string(src_cx, 64, tagged, dst_cx)
    assert bool(dst_tagged & utf16_tag(dst_pt)) == (s == "h\u4e2d")
    decode = make_string_decoder("latin1+utf16", dst_pt)
    assert decode(dst_cx.mv, ptr, dst_tagged) == s
