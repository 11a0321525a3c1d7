"""Malformed input: every error is a TranslationError at the offset where it was found."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from polyengine.binary import ast, read_component
from polyengine.binary._cursor import Cursor
from polyengine.errors import TranslationError

W = Callable[[str], bytes]
PRE = b"\x00asm\x0d\x00\x01\x00"


def error(data: bytes) -> TranslationError:
    with pytest.raises(TranslationError) as ei:
        read_component(data)
    return ei.value


# -- LEB128 ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b"\x00", 0),
        (b"\x7f", 127),
        (b"\x80\x01", 128),
        (b"\xff\xff\xff\xff\x0f", 0xFFFFFFFF),
        (b"\x80\x80\x80\x80\x00", 0),  # padded to the maximum length is allowed
        (b"\x81\x80\x80\x00", 1),
    ],
)
def test_u32_accepts(raw: bytes, value: int) -> None:
    c = Cursor(raw, 0, len(raw))
    assert c.u32() == value
    assert c.pos == len(raw)


@pytest.mark.parametrize(
    ("raw", "offset", "fragment"),
    [
        (b"\xff\xff\xff\xff\x10", 4, "integer too large"),
        (b"\x81\x80\x80\x80\x70", 4, "integer too large"),
        (b"\x80\x80\x80\x80\x80\x00", 4, "too long"),
        (b"\x80\x80", 2, "end-of-file"),
        (b"", 0, "end-of-file"),
    ],
)
def test_u32_rejects(raw: bytes, offset: int, fragment: str) -> None:
    c = Cursor(raw, 0, len(raw))
    with pytest.raises(TranslationError) as ei:
        c.u32()
    assert ei.value.offset == offset
    assert fragment in str(ei.value)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b"\x7f", -1),
        (b"\x40", -64),
        (b"\x3f", 63),
        (b"\xc0\x00", 64),
        (b"\xff\xff\xff\xff\x0f", 0xFFFFFFFF),  # largest s33
        (b"\x80\x80\x80\x80\x70", -(2**32)),  # smallest s33
        (b"\xff\xff\xff\xff\x7f", -1),  # padded negative
    ],
)
def test_s33_accepts(raw: bytes, value: int) -> None:
    c = Cursor(raw, 0, len(raw))
    assert c.s33() == value


@pytest.mark.parametrize(
    "raw",
    [
        b"\xff\xff\xff\xff\x1f",  # 2**33 - 1: bit 5 not a sign copy
        b"\x80\x80\x80\x80\x50",  # sign bit set, bit 5 clear
        b"\x80\x80\x80\x80\x80\x00",  # six bytes
    ],
)
def test_s33_rejects(raw: bytes) -> None:
    c = Cursor(raw, 0, len(raw))
    with pytest.raises(TranslationError) as ei:
        c.s33()
    assert ei.value.offset == 4


def test_s64_and_u64_bounds() -> None:
    big = b"\xff" * 9 + b"\x01"
    assert Cursor(big, 0, 10).u64() == 2**64 - 1
    assert Cursor(b"\xff" * 9 + b"\x00", 0, 10).s64() == 2**63 - 1
    assert Cursor(b"\x80" * 9 + b"\x7f", 0, 10).s64() == -(2**63)
    for bad in (b"\xff" * 9 + b"\x02", b"\x80" * 10 + b"\x00"):
        with pytest.raises(TranslationError):
            Cursor(bad, 0, len(bad)).u64()
    for bad in (b"\xff" * 9 + b"\x01", b"\x80" * 9 + b"\x40"):
        with pytest.raises(TranslationError) as ei:
            Cursor(bad, 0, len(bad)).s64()
        assert ei.value.offset == 9


def test_section_size_with_bits_beyond_u32() -> None:
    e = error(PRE + b"\x07\x81\x80\x80\x80\x70\x00")
    assert e.offset == 13 and "integer too large" in str(e)
    assert e.section == "type"


# -- preamble ---------------------------------------------------------------------


def test_core_module_is_refused(wat2wasm: W) -> None:
    e = error(wat2wasm("(module)"))
    assert e.reason == "expected a component, found a core module"
    assert e.offset == 4


@pytest.mark.parametrize(
    ("data", "offset", "fragment"),
    [
        (b"", 0, "end-of-file"),
        (b"\x00as", 3, "end-of-file"),
        (b"\x00asm\x0d\x00\x01", 7, "end-of-file"),
        (b"asm\x00\x0d\x00\x01\x00", 0, "magic"),
        (b"\x00ASM\x0d\x00\x01\x00", 0, "magic"),
        (b"\x00asm\x0c\x00\x01\x00", 4, "unknown binary version"),
        (b"\x00asm\x0e\x00\x01\x00", 4, "unknown binary version"),
        (b"\x00asm\x00\x0d\x01\x00", 4, "unknown binary version"),
        (b"\x00asm\x0d\x00\x02\x00", 6, "unknown binary layer"),
        (b"\x00asm\x0d\x00\x01\x01", 6, "unknown binary layer"),
        (b"\x00asm\x0d\x00\x00\x00", 4, "unknown binary version"),
    ],
)
def test_bad_preambles(data: bytes, offset: int, fragment: str) -> None:
    e = error(data)
    assert e.offset == offset
    assert fragment in str(e)


# -- sections ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "offset", "fragment"),
    [
        (b"\x0d\x00", 8, "malformed section id 13"),
        (b"\x3c\x00", 8, "malformed section id 60"),
        (b"\xff", 8, "malformed section id 255"),
        (b"\x00", 9, "end-of-file"),
        (b"\x00\x80\x80", 11, "end-of-file"),
        (b"\x07\x03\x00", 9, "exceeds"),
        (b"\x07\x01\x01\x73", 10, "end-of-file"),
        (b"\x07\x03\x01\x73\x73", 12, "trailing bytes"),
        (b"\x07\x04\xbf\x84\x3d\x73", 10, "999999 items"),
        (b"\x07\x02\x02\x73", 10, "2 items"),
        (b"\x00\x03\x05ab", 10, "end-of-file"),
        (b"\x00\x03\x02\xff\xfe", 11, "malformed UTF-8"),
        (b"\x0a\x07\x01\x00\x02\xff\xfe\x01\x00", 13, "malformed UTF-8"),
        (b"\x0a\x08\x01\x00\x03a\xed\xa0\x80\x01\x00", 14, "malformed UTF-8"),  # surrogate
        (b"\x0a\x07\x01\x00\x02\xc0\x80\x01\x00", 13, "malformed UTF-8"),  # overlong
    ],
)
def test_bad_sections(tail: bytes, offset: int, fragment: str) -> None:
    e = error(PRE + tail)
    assert e.offset == offset, str(e)
    assert fragment in str(e)


@pytest.mark.parametrize(
    ("section", "offset", "fragment"),
    [
        (b"\x07\x02\x01\x62", 11, "(0x62) for component defined type"),
        (b"\x07\x02\x01\x3e", 11, "(0x3e) for component defined type"),
        (b"\x07\x07\x01\x71\x01\x01c\x00\x01", 16, "zero byte required"),
        (b"\x07\x05\x01\x40\x00\x02\x00", 13, "function result list"),
        (b"\x07\x05\x01\x41\x01\x05\x73", 13, "component type declaration"),
        (b"\x07\x09\x01\x42\x01\x03\x00\x01a\x03\x01", 13, "instance type declaration"),
        (b"\x07\x04\x01\x3f\x7f\x02", 13, "resource destructor"),
        (b"\x03\x07\x01\x50\x01\x04\x60\x00\x00", 13, "module type declaration"),
        (b"\x03\x08\x01\x50\x01\x02\x00\x01\x01\x00", 14, "core outer alias kind"),
        (b"\x03\x08\x01\x50\x01\x02\x10\x00\x01\x00", 15, "core outer alias target"),
        (b"\x03\x03\x01\x00\x60", 12, "non-final sub type"),
        (b"\x02\x04\x01\x02\x00\x00", 11, "core instance"),
        (b"\x02\x08\x01\x00\x01\x01\x01i\x00\x00", 16, "instance sort"),
        (b"\x05\x04\x01\x02\x00\x00", 11, "for instance"),
        (b"\x06\x05\x01\x03\x03\x00\x00", 12, "alias target"),
        (b"\x06\x05\x01\x06\x02\x00\x00", 11, "for sort"),
        (b"\x06\x06\x01\x00\x05\x02\x00\x00", 12, "core sort"),
        (b"\x06\x05\x01\x01\x02\x00\x00", 11, "outer alias"),
        (b"\x06\x05\x01\x05\x02\x00\x00", 11, "outer alias"),
        (b"\x06\x06\x01\x01\x01\x00\x01f", 11, "non-core sort"),
        (b"\x0a\x06\x01\x03\x01a\x01\x00", 11, "extern name"),
        (b"\x0a\x0a\x01\x02\x01a\x01\x03\x01x\x01\x00", 15, "name attribute"),
        (b"\x0a\x06\x01\x00\x01t\x03\x02", 15, "type bound"),
        (b"\x0a\x06\x01\x00\x01x\x06\x00", 14, "extern type"),
        (b"\x0a\x06\x01\x00\x01m\x00\x00", 15, "core module expected"),
        (b"\x0a\x06\x01\x00\x01v\x02\x02", 15, "value bound"),
        (b"\x0b\x07\x01\x00\x01e\x01\x00\x02", 16, "optional export type"),
        (b"\x0b\x07\x01\x00\x01e\x06\x00\x00", 14, "for sort"),
        (b"\x09\x03\x00\x05\x00", 11, "5 items"),
        (b"\x0c\x04\x01\x73\x05\x00", 12, "end-of-file"),
    ],
)
def test_malformed_items(section: bytes, offset: int, fragment: str) -> None:
    e = error(PRE + section)
    assert e.offset == offset, str(e)
    assert fragment in str(e)


def test_core_type_limits_and_flags() -> None:
    def module_type_import(desc: bytes) -> bytes:
        body = b"\x01\x50\x01\x00\x01m\x01n" + desc
        return PRE + b"\x03" + bytes([len(body)]) + body

    # memory with flags 0x10, table with flags 0x08, global with flags 0x04, tag attribute 1
    for desc, fragment in [
        (b"\x02\x10\x01", "memory limits flags"),
        (b"\x01\x70\x08\x01", "table limits flags"),
        (b"\x03\x7f\x04", "global flags"),
        (b"\x04\x01\x00", "tag attribute"),
        (b"\x02\x08\x01\x40", "custom page size"),
        (b"\x05\x00", "core extern kind"),
        (b"\x00", "end-of-file"),
        (b"\x03\x55\x00", "core value type"),
        (b"\x01\x64\x40\x00\x01", "heap type"),
    ]:
        e = error(module_type_import(desc))
        assert fragment in str(e), (desc, str(e))
        assert e.section == "core type"
    ok = read_component(module_type_import(b"\x01\x64\x05\x00\x01"))
    (td,) = ok.definitions
    assert isinstance(td, ast.CoreTypeDef) and isinstance(td.type, ast.CoreModuleType)
    assert td.type.declarations[0] == ast.CoreImport(
        "m", "n", ast.CoreTableType(ast.CoreRefType(False, 5), ast.Limits(1, None))
    )


def test_core_module_headers_are_checked() -> None:
    def with_module(module: bytes) -> bytes:
        return PRE + b"\x01" + bytes([len(module)]) + module

    core = b"\x00asm\x01\x00\x00\x00"
    assert read_component(with_module(core)).definitions == (ast.CoreModule(10, 8),)
    cases = [
        (core + b"\x01\x01\x00\x0b\x01\x00\x01\x01\x00", 24, "out of order"),
        (core + b"\x01\x01\x00\x01\x01\x00", 21, "out of order"),
        (core + b"\x0e\x00", 18, "malformed section id 14"),
        (core + b"\x01\x05\x00", 19, "end-of-file"),
        (core + b"\x00\x02\x01\xff", 21, "malformed UTF-8"),
        (b"\x00asm\x0d\x00\x01\x00", 14, "found a component"),
        (b"\x00asm\x02\x00\x00\x00", 14, "unknown core module version"),
        (b"\x00asn\x01\x00\x00\x00", 10, "magic"),
        (b"\x00asm\x01", 15, "end-of-file"),
    ]
    for module, offset, fragment in cases:
        e = error(with_module(module))
        assert e.offset == offset, (module, str(e))
        assert fragment in str(e)
        assert e.section == "core module"
    # custom sections may appear anywhere, tag (13) sits between memory (5) and global (6)
    ok = core + b"\x00\x02\x01x\x05\x01\x00\x0d\x01\x00\x00\x02\x01y\x06\x01\x00"
    assert read_component(with_module(ok)).definitions == (ast.CoreModule(10, len(ok)),)


def test_nested_component_preambles() -> None:
    e = error(PRE + b"\x04\x08\x00asm\x0c\x00\x01\x00")
    assert "unknown binary version" in str(e) and e.offset == 14
    e = error(PRE + b"\x04\x08\x00asm\x01\x00\x00\x00")
    assert "expected a version header for a component" in str(e) and e.offset == 14
    # nested component content is bounded by its section
    e = error(PRE + b"\x04\x0a\x00asm\x0d\x00\x01\x00\x07\x05\x01\x73")
    assert "exceeds" in str(e) and e.offset == 19


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    data = PRE
    for _ in range(200):
        data = PRE + b"\x04" + _leb(len(data)) + data
    e = error(data)
    assert "nesting" in str(e)
    # component types nested through instance types
    t = b"\x42\x00"
    for _ in range(300):
        t = b"\x41\x01\x01" + t  # componenttype with one 0x01 type declarator
    body = b"\x01" + t
    e = error(PRE + b"\x07" + _leb(len(body)) + body)
    assert "nesting" in str(e)


def _leb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


# -- truncation and corruption of a real sample --------------------------------------

SAMPLE = """
(component $sample
  (core module $m (func (export "f")) (memory (export "mem") 1))
  (core instance $i (instantiate $m))
  (type $r (resource (rep i32)))
  (type $t (func (param "x" string) (param "y" (list u8)) (result (option u32))))
  (type $inst (instance (export "g" (func (type 0)))))
  (import "a:b/c@1.0.0" (func $imp (type $t)))
  (import "d:e/f" (instance (type $inst)))
  (core func $lowered (canon lower (func $imp) (memory (core memory $i "mem"))))
  (type $s (stream u8))
  (core func (canon stream.read $s (memory (core memory $i "mem")) async))
  (component $inner (type string))
  (instance (instantiate $inner))
  (func $lifted (type $t) (canon lift (core func $i "f") (memory (core memory $i "mem"))))
  (export "run" (func $lifted))
)
"""


def test_every_prefix_is_rejected_at_a_sensible_offset(wat2wasm: W) -> None:
    data = wat2wasm(SAMPLE)
    full = read_component(data)
    boundaries = {8} | {s.content_offset + s.content_length for s in full.sections}
    for n in range(len(data)):
        prefix = data[:n]
        try:
            c = read_component(prefix)
        except TranslationError as e:
            assert e.offset is not None
            assert 0 <= e.offset <= n, (n, str(e))
            if n >= 8:
                # the failing section is the one containing the cut
                last_ok = max(b for b in boundaries if b <= n)
                assert e.offset >= last_ok, (n, str(e))
        else:
            assert n in boundaries, n
            assert c.definitions == full.definitions[: len(c.definitions)]


def test_byte_corruptions_raise_only_translation_errors(wat2wasm: W) -> None:
    data = wat2wasm(SAMPLE)
    for i in range(len(data)):
        for v in (0x00, 0x01, 0x7F, 0x80, 0xFF, data[i] ^ 0x40):
            corrupt = bytearray(data)
            corrupt[i] = v
            try:
                read_component(bytes(corrupt))
            except TranslationError as e:
                assert e.offset is not None and 0 <= e.offset <= len(data)


def test_input_kinds(wat2wasm: W) -> None:
    data = wat2wasm(SAMPLE)
    expected = read_component(data)
    assert read_component(bytearray(data)) == expected
    assert read_component(memoryview(data)) == expected
    words = memoryview(data[: len(data) // 4 * 4]).cast("I")
    with pytest.raises(TranslationError):
        read_component(words[:1])


def test_non_contiguous_views_and_wrong_argument_types(wat2wasm: W) -> None:
    data = wat2wasm("(component (type string))")
    spaced = bytearray(len(data) * 2)
    spaced[::2] = data
    view = memoryview(spaced)[::2]
    assert not view.c_contiguous
    assert read_component(view) == read_component(data)
    with pytest.raises(TypeError):
        read_component("not bytes")  # type: ignore[arg-type]
