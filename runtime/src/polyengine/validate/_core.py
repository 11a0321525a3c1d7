"""The import/export signature of a core module (core spec §"Modules", binary format).

The component reader keeps core modules as byte ranges; the validator needs
their imports and exports with types (to type-check ``core instantiate``
arguments, ``alias core export`` and ``canon lift``). This reads only the
type, import, function, table, memory, global, tag and export sections and
skips the rest by size. The module has already been validated by the engine.
"""

from __future__ import annotations

from collections.abc import Callable

from polyengine.errors import TranslationError
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


class _Reader:
    """A cursor over ``data[start:end]``; errors name ``base`` plus the relative position."""

    __slots__ = ("base", "data", "end", "pos", "start")

    def __init__(self, data: bytes | memoryview, base: int, start: int = 0, end: int = -1) -> None:
        self.data = data
        self.start = start
        self.pos = start
        self.end = len(data) if end < 0 else end
        self.base = base

    def fail(self, msg: str) -> TranslationError:
        return TranslationError(
            f"malformed core module: {msg}", self.base + self.pos - self.start, "core module"
        )

    def byte(self) -> int:
        pos = self.pos
        if pos >= self.end:
            raise self.fail("unexpected end")
        self.pos = pos + 1
        return self.data[pos]

    def u32(self) -> int:
        pos = self.pos
        if pos < self.end:
            b = self.data[pos]
            if b < 0x80:
                self.pos = pos + 1
                return b
        result = shift = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise self.fail("integer too long")

    def s33(self) -> int:
        result = shift = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                if b & 0x40:
                    result -= 1 << shift
                return result
            if shift > 63:
                raise self.fail("integer too long")

    def name(self) -> str:
        n = self.u32()
        pos = self.pos
        if n > self.end - pos:
            raise self.fail("unexpected end")
        self.pos = pos + n
        return bytes(self.data[pos : pos + n]).decode("utf-8", errors="replace")

    def heaptype(self) -> str:
        v = self.s33()
        if v >= 0:
            return f"${v}"
        return _HEAP.get(v & 0x7F, f"heap{v}")

    def valtype(self) -> str:
        b = self.byte()
        if b in _NUM:
            return _NUM[b]
        if b in (0x63, 0x64):
            ht = self.heaptype()
            return f"(ref {'null ' if b == 0x63 else ''}{ht})"
        if b == 0x65:  # shared abstract heap type shorthand
            return f"(ref null shared {_HEAP.get(self.byte(), '?')})"
        if b in _HEAP:
            return {0x70: "funcref", 0x6F: "externref"}.get(b, f"(ref null {_HEAP[b]})")
        raise self.fail(f"unknown value type {b:#x}")

    def limits(self) -> tuple[int, int | None, bool, bool, int | None]:
        flags = self.byte()
        is64 = bool(flags & 0x04)
        minimum = self.u32()
        maximum = self.u32() if flags & 0x01 else None
        page = self.u32() if flags & 0x08 else None
        return minimum, maximum, bool(flags & 0x02), is64, page


def _comptype(r: _Reader) -> CoreFuncT | None:
    form = r.byte()
    if form == 0x60:
        params = tuple(r.valtype() for _ in range(r.u32()))
        results = tuple(r.valtype() for _ in range(r.u32()))
        return CoreFuncT(params, results)
    if form == 0x5F:
        for _ in range(r.u32()):
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
    raise r.fail(f"unknown composite type {form:#x}")


def _fieldtype(r: _Reader) -> None:
    b = r.data[r.pos]
    if b in (0x78, 0x77):
        r.pos += 1
    else:
        r.valtype()
    r.byte()


def _subtype(r: _Reader, types: list[CoreFuncT | None]) -> None:
    b = r.data[r.pos]
    if b in (0x50, 0x4F):
        r.pos += 1
        for _ in range(r.u32()):
            r.u32()
    types.append(_comptype(r))


def read_module_signature(
    data: bytes | memoryview, base: int = 0, start: int = 0, end: int = -1
) -> CoreModuleT:
    """The imports and exports of the core module ``data[start:end]``, with their types.

    ``base`` is where the module starts in the component (for error offsets);
    ``end`` of ``-1`` means the end of ``data``. Reading a module in place
    (``start``/``end`` into the component's bytes) spares copying it.
    """
    r = _Reader(data, base, start, end)
    if bytes(data[start : start + 8]) != b"\0asm\x01\0\0\0" or r.end - start < 8:
        raise r.fail("bad preamble")
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
        elem = r.valtype()
        mn, mx, shared, is64, _ = r.limits()
        return CoreTableT(elem, mn, mx, is64, shared)

    def globaltype() -> CoreGlobalT:
        vt = r.valtype()
        m = r.byte()
        return CoreGlobalT(vt, bool(m & 1), bool(m & 2))

    while r.pos < limit:
        sid = r.byte()
        size = r.u32()
        end = r.pos + size
        if sid == 1:
            for _ in range(r.u32()):
                if r.data[r.pos] == 0x4E:
                    r.pos += 1
                    for _ in range(r.u32()):
                        _subtype(r, types)
                else:
                    _subtype(r, types)
        elif sid == 2:
            for _ in range(r.u32()):
                module, name = r.name(), r.name()
                kind = r.byte()
                t: CoreExternT
                if kind == 0x00:
                    t = functype(r.u32())
                    funcs.append(t)
                elif kind == 0x01:
                    t = tabletype()
                    tables.append(t)
                elif kind == 0x02:
                    mn, mx, shared, is64, page = r.limits()
                    t = CoreMemoryT(mn, mx, shared, is64, page)
                    memories.append(t)
                elif kind == 0x03:
                    t = globaltype()
                    globals_.append(t)
                elif kind == 0x04:
                    r.byte()
                    t = CoreTagT(functype(r.u32()))
                    tags.append(t)
                else:
                    raise r.fail(f"unsupported import kind {kind:#x}")
                imports.append((module, name, t))
        elif sid == 3:
            # defined functions keep their type index; only exported ones are resolved
            n = r.u32()
            run = bytes(r.data[r.pos : min(r.pos + n, limit)])
            if len(run) == n and (not run or max(run) < 0x80):
                funcs.extend(run)  # every index fits one LEB128 byte
                r.pos += n
            else:
                funcs.extend(r.u32() for _ in range(n))
        elif sid == 4:
            for _ in range(r.u32()):
                if r.data[r.pos] == 0x40:
                    r.pos += 2
                    tables.append(tabletype())
                    _skip_const_expr(r, end)
                else:
                    tables.append(tabletype())
        elif sid == 5:
            for _ in range(r.u32()):
                mn, mx, shared, is64, page = r.limits()
                memories.append(CoreMemoryT(mn, mx, shared, is64, page))
        elif sid == 6:
            globals_.extend(_read_globals(r, end, globaltype))
        elif sid == 13:
            for _ in range(r.u32()):
                r.byte()
                tags.append(CoreTagT(functype(r.u32())))
        elif sid == 7:
            spaces = (funcs, tables, memories, globals_, tags)
            for _ in range(r.u32()):
                name = r.name()
                kind = r.byte()
                idx = r.u32()
                if kind > 4 or idx >= len(spaces[kind]):
                    raise r.fail(f"export `{name}` refers to an unknown item")
                item = spaces[kind][idx]
                exports.append((name, functype(item) if isinstance(item, int) else item))
        r.pos = end
    return CoreModuleT(tuple(imports), tuple(exports))


def _read_globals(r: _Reader, end: int, globaltype: Callable[[], CoreGlobalT]) -> list[CoreExternT]:
    """Global types of the global section; init expressions are skipped by decoding them."""
    out: list[CoreExternT] = []
    for _ in range(r.u32()):
        out.append(globaltype())
        _skip_const_expr(r, end)
    return out


def _skip_const_expr(r: _Reader, end: int) -> None:
    while r.pos < end:
        op = r.byte()
        if op == 0x0B:
            return
        if op in (0x41, 0x42):
            r.s33() if op == 0x41 else _sleb64(r)
        elif op == 0x43:
            r.pos += 4
        elif op == 0x44:
            r.pos += 8
        elif op in (0x23, 0xD2):
            r.u32()
        elif op == 0xD0:
            r.heaptype()
        elif op in (0x6A, 0x6B, 0x6C, 0x7C, 0x7D, 0x7E):
            pass
        elif op == 0xFD:
            sub = r.u32()
            if sub == 12:
                r.pos += 16
        elif op == 0xFB:
            sub = r.u32()
            if sub in (0, 1, 6, 7):  # struct.new(_default), array.new(_default)
                r.u32()
            elif sub in (8,):  # array.new_fixed
                r.u32()
                r.u32()
            elif sub in (28, 29, 30):  # ref.i31, extern/any convert
                pass
            else:
                raise r.fail(f"unsupported constant instruction 0xfb {sub}")
        else:
            raise r.fail(f"unsupported constant instruction {op:#x}")
    raise r.fail("unterminated constant expression")


def _sleb64(r: _Reader) -> None:
    while r.byte() & 0x80:
        pass
