"""The import/export signature of a core module (core spec §"Modules", binary format).

The component reader keeps core modules as byte ranges; the validator needs
their imports and exports with types (to type-check ``core instantiate``
arguments, ``alias core export`` and ``canon lift``). This reads only the
type, import, function, table, memory, global, tag and export sections and
skips the rest by size. The module has already been validated by the engine.
Bytes and LEB128 integers are read with the component reader's bounded
:class:`~polyengine.binary.Cursor`, each section's reads held inside the section.
"""

from __future__ import annotations

from typing import NoReturn

from polyengine.binary import Cursor
from polyengine.types.subtype import (
    CoreExternT,
    CoreFuncT,
    CoreGlobalT,
    CoreMemoryT,
    CoreModuleT,
    CoreTableT,
    CoreTagT,
)

_NUM = {0x7F: "i32", 0x7E: "i64", 0x7D: "f32", 0x7C: "f64", 0x7B: "v128"}
_HEAP = {
    0x70: "func",
    0x6F: "extern",
    0x6E: "any",
    0x6D: "eq",
    0x6C: "i31",
    0x6B: "struct",
    0x6A: "array",
    0x69: "exn",
    0x68: "cont",
    0x71: "none",
    0x72: "noextern",
    0x73: "nofunc",
    0x74: "noexn",
    0x75: "nocont",
}


def _fail(r: Cursor, msg: str) -> NoReturn:
    r.fail(f"malformed core module: {msg}")


def _heaptype(r: Cursor) -> str:
    v = r.s33("a heap type")
    if v >= 0:
        return f"${v}"
    return _HEAP.get(v & 0x7F, f"heap{v}")


def _valtype(r: Cursor) -> str:
    b = r.u8("a value type")
    if b in _NUM:
        return _NUM[b]
    if b in (0x63, 0x64):
        ht = _heaptype(r)
        return f"(ref {'null ' if b == 0x63 else ''}{ht})"
    if b == 0x65:  # shared abstract heap type shorthand
        return f"(ref null shared {_HEAP.get(r.u8('a heap type'), '?')})"
    if b in _HEAP:
        return {0x70: "funcref", 0x6F: "externref"}.get(b, f"(ref null {_HEAP[b]})")
    _fail(r, f"unknown value type {b:#x}")


def _limits(r: Cursor) -> tuple[int, int | None, bool, bool, int | None]:
    flags = r.u8("limits")
    is64 = bool(flags & 0x04)
    minimum = r.u64("a minimum")
    maximum = r.u64("a maximum") if flags & 0x01 else None
    page = r.u32("a page size") if flags & 0x08 else None
    return minimum, maximum, bool(flags & 0x02), is64, page


def _comptype(r: Cursor) -> CoreFuncT | None:
    form = r.u8("a composite type")
    if form == 0x60:
        params = tuple(_valtype(r) for _ in range(r.count("parameters")))
        results = tuple(_valtype(r) for _ in range(r.count("results")))
        return CoreFuncT(params, results)
    if form == 0x5F:
        for _ in range(r.count("fields")):
            _fieldtype(r)
        return None
    if form == 0x5E:
        _fieldtype(r)
        return None
    if form == 0x5D:
        r.s33()
        return None
    if form == 0x65:  # shared
        return _comptype(r)
    _fail(r, f"unknown composite type {form:#x}")


def _fieldtype(r: Cursor) -> None:
    if r.peek("a storage type") in (0x78, 0x77):
        r.pos += 1
    else:
        _valtype(r)
    r.u8("a mutability")


def _subtype(r: Cursor, types: list[CoreFuncT | None]) -> None:
    if r.peek("a subtype") in (0x50, 0x4F):
        r.pos += 1
        for _ in range(r.count("supertypes")):
            r.u32("a type index")
    types.append(_comptype(r))


def read_module_signature(data: bytes | memoryview, start: int = 0, end: int = -1) -> CoreModuleT:
    """The imports and exports of the core module ``data[start:end]``, with their types.

    ``end`` of ``-1`` means the end of ``data``; error offsets are offsets into
    ``data``. Reading a module in place (``start``/``end`` into the
    component's bytes) spares copying it.
    """
    r = Cursor(data, start, len(data) if end < 0 else end)
    r.section = "core module"
    if r.remaining < 8 or bytes(data[start : start + 8]) != b"\0asm\x01\0\0\0":
        _fail(r, "bad preamble")
    r.pos = start + 8
    limit = r.end
    types: list[CoreFuncT | None] = []
    imports: list[tuple[str, str, CoreExternT]] = []
    funcs: list[CoreExternT | int] = []  # an int: the type index of a defined function
    tables: list[CoreExternT] = []
    memories: list[CoreExternT] = []
    globals_: list[CoreExternT] = []
    tags: list[CoreExternT] = []
    exports: list[tuple[str, CoreExternT]] = []

    def functype(idx: int) -> CoreFuncT:
        t = types[idx] if idx < len(types) else None
        if t is None:
            return CoreFuncT((f"${idx}",), ())
        return t

    def tabletype() -> CoreTableT:
        elem = _valtype(r)
        mn, mx, shared, is64, _ = _limits(r)
        return CoreTableT(elem, mn, mx, is64, shared)

    def globaltype() -> CoreGlobalT:
        vt = _valtype(r)
        m = r.u8("a global mutability")
        return CoreGlobalT(vt, bool(m & 1), bool(m & 2))

    while r.pos < limit:
        sid = r.u8("a section id")
        size_at = r.pos
        size = r.u32("a section size")
        body = r.skip(size, "a section", size_at)
        end = r.pos
        r.pos, r.end = body, end  # every read below stays inside the section
        if sid == 1:
            for _ in range(r.count("types")):
                if r.peek("a recursive type") == 0x4E:
                    r.pos += 1
                    for _ in range(r.count("subtypes")):
                        _subtype(r, types)
                else:
                    _subtype(r, types)
        elif sid == 2:
            for _ in range(r.count("imports")):
                module, name = r.name("an import module"), r.name("an import name")
                kind = r.u8("an import kind")
                t: CoreExternT
                if kind == 0x00:
                    t = functype(r.u32("a type index"))
                    funcs.append(t)
                elif kind == 0x01:
                    t = tabletype()
                    tables.append(t)
                elif kind == 0x02:
                    mn, mx, shared, is64, page = _limits(r)
                    t = CoreMemoryT(mn, mx, shared, is64, page)
                    memories.append(t)
                elif kind == 0x03:
                    t = globaltype()
                    globals_.append(t)
                elif kind == 0x04:
                    r.u8("a tag attribute")
                    t = CoreTagT(functype(r.u32("a type index")))
                    tags.append(t)
                else:
                    _fail(r, f"unsupported import kind {kind:#x}")
                imports.append((module, name, t))
        elif sid == 3:
            # defined functions keep their type index; only exported ones are resolved
            n = r.count("functions")
            run = bytes(data[r.pos : r.pos + n])
            if not run or max(run) < 0x80:
                funcs.extend(run)  # every index fits one LEB128 byte
                r.pos += n
            else:
                funcs.extend(r.u32("a type index") for _ in range(n))
        elif sid == 4:
            for _ in range(r.count("tables")):
                if r.peek("a table") == 0x40:
                    r.skip(2, "a table with an initializer")
                    tables.append(tabletype())
                    _skip_const_expr(r)
                else:
                    tables.append(tabletype())
        elif sid == 5:
            for _ in range(r.count("memories")):
                mn, mx, shared, is64, page = _limits(r)
                memories.append(CoreMemoryT(mn, mx, shared, is64, page))
        elif sid == 6:
            for _ in range(r.count("globals")):
                globals_.append(globaltype())
                _skip_const_expr(r)
        elif sid == 13:
            for _ in range(r.count("tags")):
                r.u8("a tag attribute")
                tags.append(CoreTagT(functype(r.u32("a type index"))))
        elif sid == 7:
            spaces = (funcs, tables, memories, globals_, tags)
            for _ in range(r.count("exports")):
                name = r.name("an export name")
                kind = r.u8("an export kind")
                idx = r.u32("an export index")
                if kind > 4 or idx >= len(spaces[kind]):
                    _fail(r, f"export `{name}` refers to an unknown item")
                item = spaces[kind][idx]
                exports.append((name, functype(item) if isinstance(item, int) else item))
        r.pos, r.end = end, limit
    return CoreModuleT(tuple(imports), tuple(exports))


def _skip_const_expr(r: Cursor) -> None:
    """Skip a constant expression (an initializer) by decoding it up to its ``end``."""
    while True:
        op = r.u8("a constant instruction")
        if op == 0x0B:
            return
        if op == 0x41:
            r.s33("an i32 constant")
        elif op == 0x42:
            r.s64("an i64 constant")
        elif op == 0x43:
            r.skip(4, "an f32 constant")
        elif op == 0x44:
            r.skip(8, "an f64 constant")
        elif op in (0x23, 0xD2):
            r.u32("an index")
        elif op == 0xD0:
            _heaptype(r)
        elif op in (0x6A, 0x6B, 0x6C, 0x7C, 0x7D, 0x7E):
            pass
        elif op == 0xFD:
            if r.u32("a vector instruction") == 12:
                r.skip(16, "a v128 constant")
        elif op == 0xFB:
            sub = r.u32("a gc instruction")
            if sub in (0, 1, 6, 7):  # struct.new(_default), array.new(_default)
                r.u32("a type index")
            elif sub == 8:  # array.new_fixed
                r.u32("a type index")
                r.u32("a length")
            elif sub not in (28, 29, 30):  # ref.i31, extern/any convert
                _fail(r, f"unsupported constant instruction 0xfb {sub}")
        else:
            _fail(r, f"unsupported constant instruction {op:#x}")
