"""Sans-IO reader of the component binary format (Binary.md).

:func:`read_component` turns the bytes of a component into a
:class:`polyengine.binary.ast.Component`. It checks the grammar only (what
Binary.md calls decoding); the rules Binary.md leaves to validation are
checked by :mod:`polyengine.validate`. Core modules are not decoded: their
preamble and section headers are checked (ids, sizes, order) and the module
is kept as a byte range of the input.

Every problem is a :class:`~polyengine.errors.TranslationError` with the
absolute byte offset where it was detected and the section being read; no
other exception escapes, whatever the input. Loops are bounded by the input:
every ``vec`` length is checked against the bytes that remain before any
item is read, and nesting depth is capped.
"""

from __future__ import annotations

from polyengine.errors import TranslationError

from . import ast
from ._cursor import Buffer, Cursor
from ._read_canon import read_canon
from ._read_types import (
    _CORE_SORTS,
    read_alias,
    read_core_sort,
    read_core_type_def,
    read_extern_name,
    read_extern_type,
    read_sort,
    read_type_def,
    read_valtype,
)

__all__ = ["COMPONENT_LAYER", "COMPONENT_VERSION", "SECTION_NAMES", "read_component"]

MAGIC = b"\x00asm"
COMPONENT_VERSION = 0x0D
"""The pre-standard component ``version`` field (Binary.md §"Component Definitions")."""
COMPONENT_LAYER = 0x01
CORE_VERSION = 0x01

SECTION_NAMES = (
    "custom",
    "core module",
    "core instance",
    "core type",
    "component",
    "instance",
    "alias",
    "type",
    "canon",
    "start",
    "import",
    "export",
    "value",
)
"""Component section names, indexed by section id."""

# Core module section ids in their required order (custom sections, id 0, may
# appear anywhere): type, import, function, table, memory, tag, global,
# export, start, element, datacount, code, data.
_CORE_SECTION_ORDER = {
    sid: rank for rank, sid in enumerate((1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11))
}


def read_component(data: bytes | bytearray | memoryview, *, names: bool = True) -> ast.Component:
    """Read a component binary into its AST (Binary.md §"Component Definitions").

    ``data`` is not copied: byte ranges in the AST (core modules, nested
    components, custom sections, values) are offsets into it. A core module
    is refused with "expected a component, found a core module".

    With ``names=False`` the ``component-name`` sections are kept as custom
    sections but not decoded (``Component.names`` is ``None``), which saves
    time on large components.

    Raises :class:`TranslationError` for any malformed input, and nothing
    else; only an argument that is not a bytes-like object at all (embedder
    misuse) is a ``TypeError``.
    """
    buf = _as_buffer(data)
    c = Cursor(buf, 0, len(buf))
    try:
        c.names = names
        return _read_component(c, top_level=True)
    except TranslationError:
        raise
    except RecursionError:
        raise TranslationError("component nesting too deep", c.pos, c.section) from None
    except Exception as e:  # defensive: never let anything else escape
        raise TranslationError(
            f"malformed component ({type(e).__name__}: {e})", c.pos, c.section
        ) from e


def _as_buffer(data: bytes | bytearray | memoryview) -> Buffer:
    """A byte-indexable view of ``data`` without copying (non-contiguous views
    are the one case that is copied)."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray):
        return memoryview(data)
    if isinstance(data, memoryview):
        if not data.c_contiguous:
            return data.tobytes()
        return data if data.format == "B" and data.ndim == 1 else data.cast("B")
    raise TypeError(
        f"read_component() needs bytes, bytearray or memoryview, not {type(data).__name__}"
    )


# -- preambles -------------------------------------------------------------------


def _read_preamble(c: Cursor, top_level: bool) -> tuple[int, int]:
    """Check ``magic version layer`` and return ``(version, layer)``."""
    start = c.pos
    if c.remaining < 8:
        have = bytes(c.buf[start : c.end])
        if MAGIC[: len(have)] != have[:4]:
            c.fail("magic header not detected: not a WebAssembly binary", start)
        c.eof("the component preamble", c.end)
    head = bytes(c.buf[start : start + 8])
    if head[:4] != MAGIC:
        c.fail("magic header not detected: not a WebAssembly binary", start)
    version = head[4] | head[5] << 8
    layer = head[6] | head[7] << 8
    if layer == 0x00:
        if version == CORE_VERSION:
            if top_level:
                c.fail("expected a component, found a core module", start + 4)
            c.fail("expected a version header for a component, found a core module", start + 4)
        c.fail(f"unknown binary version 0x{version:x} (core module layer)", start + 4)
    if layer != COMPONENT_LAYER:
        c.fail(f"unknown binary layer 0x{layer:x}", start + 6)
    if version != COMPONENT_VERSION:
        c.fail(
            f"unknown binary version 0x{version:x} for a component "
            f"(expected 0x{COMPONENT_VERSION:x})",
            start + 4,
        )
    c.pos = start + 8
    return version, layer


def _scan_core_module(c: Cursor) -> None:
    """Check a core module's preamble and section headers, skipping contents.

    Core spec Binary Format §Modules: known section ids, each at most once and
    in order, sizes within the module, custom-section names valid UTF-8.
    """
    start = c.pos
    if c.remaining < 8:
        c.eof("the core module preamble", c.end)
    head = bytes(c.buf[start : start + 8])
    if head[:4] != MAGIC:
        c.fail("magic header not detected in core module", start)
    if head[4:] != b"\x01\x00\x00\x00":
        if head[6:8] == b"\x01\x00":
            c.fail("expected a version header for a module, found a component", start + 4)
        c.fail(f"unknown core module version {head[4:].hex()}", start + 4)
    c.pos = start + 8
    last_rank = -1
    end = c.end
    while c.pos < end:
        pos = c.pos
        sid = c.u8("a core section id")
        size = c.u32("a core section size")
        content = c.pos
        if size > end - content:
            c.fail(
                f"unexpected end-of-file: core section {sid} of {size} bytes but only "
                f"{end - content} remain",
                pos + 1,
            )
        if sid == 0:
            saved_end = c.end
            c.end = content + size
            c.name("a custom section name")
            c.end = saved_end
        else:
            rank = _CORE_SECTION_ORDER.get(sid)
            if rank is None:
                c.fail(f"malformed section id {sid} in core module", pos)
            if rank <= last_rank:
                c.fail(f"core section {sid} out of order or repeated", pos)
            last_rank = rank
        c.pos = content + size


# -- components -------------------------------------------------------------------


def _read_component(c: Cursor, top_level: bool) -> ast.Component:
    """A component spanning ``c.pos`` .. ``c.end``."""
    start = c.pos
    outer_section = c.section
    c.section = None
    version, layer = _read_preamble(c, top_level)
    defs: list[ast.Definition] = []
    sections: list[ast.SectionInfo] = []
    customs: list[ast.CustomSection] = []
    names: ast.ComponentNames | None = None
    end = c.end
    while c.pos < end:
        sec_start = c.pos
        c.section = None
        sid = c.u8("a section id")
        if sid > 12:
            c.fail(f"malformed section id {sid}", sec_start)
        c.section = SECTION_NAMES[sid]
        size = c.u32("a section size")
        content = c.pos
        if size > end - content:
            c.fail(
                f"unexpected end-of-file: section size {size} exceeds the "
                f"{end - content} bytes that remain",
                sec_start + 1,
            )
        sec_end = content + size
        first = len(defs)
        c.end = sec_end
        if sid == 0:
            custom = _read_custom(c, sec_start)
            customs.append(custom)
            if custom.name == "component-name" and names is None and c.names:
                names = _read_names(c, custom)
        else:
            _SECTION_READERS[sid](c, defs)
            c.expect_end(f"the {SECTION_NAMES[sid]} section")
        c.end = end
        c.pos = sec_end
        sections.append(
            ast.SectionInfo(sid, SECTION_NAMES[sid], sec_start, content, size, first, len(defs))
        )
    c.section = outer_section
    return ast.Component(
        start,
        end - start,
        tuple(defs),
        tuple(sections),
        tuple(customs),
        names,
        version,
        layer,
    )


def _vec(c: Cursor, what: str) -> int:
    return c.count(what)


def _sec_core_module(c: Cursor, defs: list[ast.Definition]) -> None:
    start = c.pos
    _scan_core_module(c)
    defs.append(ast.CoreModule(start, c.end - start))


def _sec_core_instance(c: Cursor, defs: list[ast.Definition]) -> None:
    for _ in range(_vec(c, "core instances")):
        pos = c.pos
        b = c.u8("a core instance")
        if b == 0x00:
            module = c.u32("a module index")
            n = c.count("instantiation arguments", 3)
            args = []
            for _ in range(n):
                name = c.name("an argument name")
                kpos = c.pos
                kind = c.u8("an argument sort")
                if kind != 0x12:
                    c.invalid_byte(kind, "core instantiation argument (instance sort)", kpos)
                args.append(ast.CoreInstantiateArg(name, c.u32("an instance index")))
            defs.append(ast.CoreInstantiate(module, tuple(args), offset=pos))
        elif b == 0x01:
            n = c.count("inline exports", 3)
            exports = []
            name_of = c.name
            u32 = c.u32
            core_sorts = _CORE_SORTS
            buf = c.buf
            new_export = ast.CoreInlineExport
            for _ in range(n):
                name = name_of("an export name")
                spos = c.pos
                sort = core_sorts.get(buf[spos]) if spos < c.end else None
                if sort is None:
                    sort = read_core_sort(c)  # reports the error
                else:
                    c.pos = spos + 1
                exports.append(new_export(name, sort, u32("an index")))
            defs.append(ast.CoreInstanceExports(tuple(exports), offset=pos))
        else:
            c.invalid_byte(b, "core instance", pos)


def _sec_core_type(c: Cursor, defs: list[ast.Definition]) -> None:
    for _ in range(_vec(c, "core types")):
        defs.append(read_core_type_def(c))


def _sec_component(c: Cursor, defs: list[ast.Definition]) -> None:
    c.enter()
    defs.append(_read_component(c, top_level=False))
    c.leave()
    c.section = "component"


def _sec_instance(c: Cursor, defs: list[ast.Definition]) -> None:
    for _ in range(_vec(c, "instances")):
        pos = c.pos
        b = c.u8("an instance")
        if b == 0x00:
            component = c.u32("a component index")
            n = c.count("instantiation arguments", 3)
            args = []
            for _ in range(n):
                name = c.name("an argument name")
                sort = read_sort(c)
                args.append(ast.InstantiateArg(name, sort, c.u32("an index")))
            defs.append(ast.Instantiate(component, tuple(args), offset=pos))
        elif b == 0x01:
            n = c.count("inline exports", 4)
            exports = []
            for _ in range(n):
                ename = read_extern_name(c)
                sort = read_sort(c)
                exports.append(ast.InlineExport(ename, sort, c.u32("an index")))
            defs.append(ast.InstanceExports(tuple(exports), offset=pos))
        else:
            c.invalid_byte(b, "instance", pos)


def _sec_alias(c: Cursor, defs: list[ast.Definition]) -> None:
    for _ in range(_vec(c, "aliases")):
        defs.append(read_alias(c))


def _sec_type(c: Cursor, defs: list[ast.Definition]) -> None:
    for _ in range(_vec(c, "types")):
        defs.append(read_type_def(c))


def _sec_canon(c: Cursor, defs: list[ast.Definition]) -> None:
    for _ in range(_vec(c, "canon definitions")):
        defs.append(read_canon(c))


def _sec_start(c: Cursor, defs: list[ast.Definition]) -> None:
    pos = c.pos
    func = c.u32("a function index")
    n = c.count("start arguments")
    args = tuple(c.u32("a value index") for _ in range(n))
    defs.append(ast.Start(func, args, c.u32("a result count"), offset=pos))


def _sec_import(c: Cursor, defs: list[ast.Definition]) -> None:
    for _ in range(_vec(c, "imports")):
        pos = c.pos
        name = read_extern_name(c)
        defs.append(ast.Import(name, read_extern_type(c), offset=pos))


def _sec_export(c: Cursor, defs: list[ast.Definition]) -> None:
    for _ in range(_vec(c, "exports")):
        pos = c.pos
        name = read_extern_name(c)
        sort = read_sort(c)
        index = c.u32("an index")
        tpos = c.pos
        b = c.u8("an optional export type")
        etype: ast.ExternType | None
        if b == 0x00:
            etype = None
        elif b == 0x01:
            etype = read_extern_type(c)
        else:
            c.invalid_byte(b, "optional export type", tpos)
        defs.append(ast.Export(name, sort, index, etype, offset=pos))


def _sec_value(c: Cursor, defs: list[ast.Definition]) -> None:
    for _ in range(_vec(c, "values")):
        pos = c.pos
        t = read_valtype(c)
        lpos = c.pos
        n = c.u32("a value length")
        vpos = c.skip(n, "a value", lpos)
        defs.append(ast.Value(t, vpos, n, offset=pos))


_SECTION_READERS = {
    1: _sec_core_module,
    2: _sec_core_instance,
    3: _sec_core_type,
    4: _sec_component,
    5: _sec_instance,
    6: _sec_alias,
    7: _sec_type,
    8: _sec_canon,
    9: _sec_start,
    10: _sec_import,
    11: _sec_export,
    12: _sec_value,
}


# -- custom sections and the component-name section ---------------------------


def _read_custom(c: Cursor, sec_start: int) -> ast.CustomSection:
    name = c.name("a custom section name")
    return ast.CustomSection(name, c.pos, c.end - c.pos, offset=sec_start)


def _read_names(c: Cursor, custom: ast.CustomSection) -> ast.ComponentNames:
    """Best-effort decoding of the ``component-name`` section (Binary.md §"Name Section").

    A malformed name section never makes the component malformed: decoding
    stops at the first problem and keeps what was read.
    """
    sub = Cursor(c.buf, custom.data_offset, custom.data_offset + custom.data_length)
    sub.section = "custom"
    component: str | None = None
    sorts: list[ast.SortNames] = []
    try:
        end = sub.end
        while sub.pos < end:
            sid = sub.u8("a name subsection id")
            size = sub.u32("a name subsection size")
            body = sub.skip(size, "a name subsection")
            sub.pos, sub.end = body, body + size
            if sid == 0:
                component = sub.name("the component name")
            elif sid == 1:
                sort = read_sort(sub)
                n = sub.count("name map entries", 2)
                u32 = sub.u32
                name_of = sub.name
                new_assoc = ast.NameAssoc
                assocs = [new_assoc(u32("an index"), name_of("a name")) for _ in range(n)]
                sorts.append(ast.SortNames(sort, tuple(assocs)))
            # unknown subsections are skipped, like trailing bytes in known ones
            sub.pos, sub.end = body + size, end
    except TranslationError:
        return ast.ComponentNames(component, tuple(sorts), complete=False)
    return ast.ComponentNames(component, tuple(sorts))
