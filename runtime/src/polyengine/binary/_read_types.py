"""Readers for sorts, core types, component types, extern names/types and aliases.

Binary.md §"Instance Definitions" (sorts), §"Alias Definitions", §"Type
Definitions" and §"Import and Export Definitions"; the embedded core rules
follow the core spec's Binary Format §Types (with the GC, threads,
memory64, custom-page-sizes, exception-handling and stack-switching
extensions).
"""

from __future__ import annotations

from . import ast
from ._cursor import Cursor

# -- sorts ---------------------------------------------------------------------

_CORE_SORTS = {s.byte: s for s in ast.Sort if s.is_core}
_SORTS = {s.byte: s for s in ast.Sort if not s.is_core}
_CORE_SORT_SET = frozenset(_CORE_SORTS.values())
_OUTER_ALIAS_SORTS = frozenset(
    {ast.Sort.CORE_TYPE, ast.Sort.CORE_MODULE, ast.Sort.TYPE, ast.Sort.COMPONENT}
)


def read_core_sort(c: Cursor) -> ast.Sort:
    """``core:sort``."""
    pos = c.pos
    b = c.u8("a core sort")
    s = _CORE_SORTS.get(b)
    if s is None:
        c.invalid_byte(b, "core sort", pos)
    return s


def read_sort(c: Cursor) -> ast.Sort:
    """``sort``: ``0x00 core:sort`` or one of the component sorts."""
    pos = c.pos
    b = c.u8("a sort")
    if b == 0x00:
        return read_core_sort(c)
    s = _SORTS.get(b)
    if s is None:
        c.invalid_byte(b, "sort", pos)
    return s


# -- core types ----------------------------------------------------------------

_NUM_TYPES = {t.value: t for t in ast.CoreNumType}
_ABS_HEAP = {t.value: t for t in ast.CoreAbsHeapType}
_PACKED = {t.value: t for t in ast.CorePackedType}


def _read_abs_heap(c: Cursor, what: str) -> tuple[ast.CoreAbsHeapType, bool]:
    pos = c.pos
    b = c.u8(what)
    shared = False
    if b == 0x65:
        shared = True
        pos = c.pos
        b = c.u8(what)
    t = _ABS_HEAP.get(b)
    if t is None:
        c.invalid_byte(b, what, pos)
    return t, shared


def read_heap_type(c: Cursor) -> tuple[ast.CoreAbsHeapType | int, bool]:
    """``heaptype``: an abstract heap type (maybe ``shared``) or an ``s33`` type index."""
    b = c.peek("a heap type")
    if b == 0x65 or b in _ABS_HEAP:
        return _read_abs_heap(c, "heap type")
    pos = c.pos
    idx = c.s33("a heap type")
    if idx < 0:
        c.fail("invalid heap type", pos)
    return idx, False


def _read_ref_after(c: Cursor, b: int, pos: int, what: str) -> ast.CoreRefType:
    """A reference type whose first byte ``b`` (at ``pos``) was already read."""
    if b in (0x63, 0x64):
        heap, shared = read_heap_type(c)
        return ast.CoreRefType(b == 0x63, heap, shared)
    if b == 0x65:
        t, _ = _read_abs_heap(c, what)
        return ast.CoreRefType(True, t, True)
    t2 = _ABS_HEAP.get(b)
    if t2 is None:
        c.invalid_byte(b, what, pos)
    return ast.CoreRefType(True, t2)


def read_core_valtype(c: Cursor) -> ast.CoreValType:
    """A core ``valtype``: number, vector or reference type."""
    pos = c.pos
    b = c.u8("a core value type")
    t = _NUM_TYPES.get(b)
    if t is not None:
        return t
    return _read_ref_after(c, b, pos, "core value type")


def read_core_reftype(c: Cursor) -> ast.CoreRefType:
    """A core ``reftype``."""
    pos = c.pos
    b = c.u8("a reference type")
    return _read_ref_after(c, b, pos, "reference type")


def _read_field_type(c: Cursor) -> ast.CoreFieldType:
    pos = c.pos
    b = c.u8("a storage type")
    storage: ast.CoreStorageType
    p = _PACKED.get(b)
    if p is not None:
        storage = p
    else:
        n = _NUM_TYPES.get(b)
        storage = n if n is not None else _read_ref_after(c, b, pos, "storage type")
    return ast.CoreFieldType(storage, c.flag("field mutability"))


def _read_comp_type(c: Cursor, b: int, pos: int) -> ast.CoreCompType:
    shared = False
    if b == 0x65:
        shared = True
        pos = c.pos
        b = c.u8("a composite type")
    if b == 0x60:
        n = c.count("function parameters")
        params = tuple(read_core_valtype(c) for _ in range(n))
        n = c.count("function results")
        results = tuple(read_core_valtype(c) for _ in range(n))
        return ast.CoreFuncType(params, results, shared)
    if b == 0x5F:
        n = c.count("struct fields", 2)
        return ast.CoreStructType(tuple(_read_field_type(c) for _ in range(n)), shared)
    if b == 0x5E:
        return ast.CoreArrayType(_read_field_type(c), shared)
    if b == 0x5D:
        ipos = c.pos
        idx = c.s33("a continuation type index")
        if idx < 0:
            c.fail("invalid continuation type", ipos)
        return ast.CoreContType(idx, shared)
    c.invalid_byte(b, "core type", pos)


def _read_sub_type(c: Cursor, prefixed: bool = False) -> ast.CoreSubType:
    pos = c.pos
    b = c.u8("a core type")
    if b in (0x50, 0x4F):
        n = c.count("supertypes")
        supers = tuple(c.u32("a supertype index") for _ in range(n))
        cpos = c.pos
        comp = _read_comp_type(c, c.u8("a composite type"), cpos)
        return ast.CoreSubType(b == 0x4F, supers, comp, prefixed)
    return ast.CoreSubType(True, (), _read_comp_type(c, b, pos))


def _read_rec_or_sub(c: Cursor) -> ast.CoreRecType | ast.CoreSubType:
    if c.peek("a core type") == 0x4E:
        c.pos += 1
        n = c.count("recursion group types")
        return ast.CoreRecType(tuple(_read_sub_type(c) for _ in range(n)))
    return _read_sub_type(c)


def read_limits(c: Cursor, memory: bool) -> ast.Limits:
    """Memory limits (flags: max, shared, 64-bit, page size) or table limits
    (flags: max, shared, 64-bit)."""
    pos = c.pos
    flags = c.u8("limits flags")
    if flags & (~0x0F if memory else ~0x07):
        c.fail(f"invalid {'memory' if memory else 'table'} limits flags 0x{flags:x}", pos)
    is64 = bool(flags & 0x04)
    read = c.u64 if is64 else c.u32
    minimum = read("a minimum")
    maximum = read("a maximum") if flags & 0x01 else None
    page = None
    if flags & 0x08:
        ppos = c.pos
        page = c.u32("a page size")
        if page >= 64:
            c.fail("invalid custom page size", ppos)
    return ast.Limits(minimum, maximum, bool(flags & 0x02), is64, page)


def read_core_extern_type(c: Cursor) -> ast.CoreExternType:
    """A core import/export descriptor (``core:externtype``)."""
    pos = c.pos
    b = c.u8("a core extern kind")
    if b == 0x00:
        return ast.CoreFuncExternType(c.u32("a type index"))
    if b == 0x01:
        elem = read_core_reftype(c)
        return ast.CoreTableType(elem, read_limits(c, memory=False))
    if b == 0x02:
        return ast.CoreMemoryType(read_limits(c, memory=True))
    if b == 0x03:
        vt = read_core_valtype(c)
        fpos = c.pos
        flags = c.u8("global flags")
        if flags > 0x03:
            c.fail(f"malformed global flags 0x{flags:x}", fpos)
        return ast.CoreGlobalType(vt, bool(flags & 1), bool(flags & 2))
    if b == 0x04:
        apos = c.pos
        if c.u8("a tag attribute") != 0:
            c.fail("invalid tag attribute", apos)
        return ast.CoreTagType(c.u32("a type index"))
    c.invalid_byte(b, "core extern kind", pos)


def _read_module_decl(c: Cursor) -> ast.CoreModuleDecl:
    pos = c.pos
    b = c.u8("a module type declaration")
    if b == 0x00:
        module = c.name("an import module name")
        name = c.name("an import name")
        return ast.CoreImport(module, name, read_core_extern_type(c), offset=pos)
    if b == 0x01:
        # Inside a module type the 0x50 ambiguity does not arise: core rules apply.
        return ast.CoreTypeDef(_read_rec_or_sub(c), offset=pos)
    if b == 0x02:
        kpos = c.pos
        kind = c.u8("an outer alias kind")
        if kind != 0x10:
            c.invalid_byte(kind, "core outer alias kind", kpos)
        tpos = c.pos
        target = c.u8("an outer alias target")
        if target != 0x01:
            c.invalid_byte(target, "core outer alias target", tpos)
        return ast.CoreOuterAlias(c.u32("an outer count"), c.u32("a type index"), offset=pos)
    if b == 0x03:
        name = c.name("an export name")
        return ast.CoreExportDecl(name, read_core_extern_type(c), offset=pos)
    c.invalid_byte(b, "module type declaration", pos)


def read_core_type_def(c: Cursor) -> ast.CoreTypeDef:
    """``core:type`` at component level, where ``0x50`` starts a module type and
    a non-final ``sub`` is spelled ``0x00 0x50``."""
    pos = c.pos
    b = c.peek("a core type")
    if b == 0x00:
        c.pos += 1
        if c.peek("a core type") != 0x50:
            c.invalid_byte(c.buf[c.pos], "non-final sub type", c.pos)
        return ast.CoreTypeDef(_read_sub_type(c, prefixed=True), offset=pos)
    if b == 0x50:
        c.pos += 1
        n = c.count("module type declarations")
        decls = tuple(_read_module_decl(c) for _ in range(n))
        return ast.CoreTypeDef(ast.CoreModuleType(decls), offset=pos)
    return ast.CoreTypeDef(_read_rec_or_sub(c), offset=pos)


# -- component value and defined types -----------------------------------------

_PRIMS = {t.value: t for t in ast.PrimValType}


def read_valtype(c: Cursor) -> ast.ValType:
    """``valtype``: a primitive byte, else a type index in (negative-SLEB) ``s33`` form."""
    pos = c.pos
    if pos < c.end:
        p = _PRIMS.get(c.buf[pos])
        if p is not None:
            c.pos = pos + 1
            return p
    # A negative s33 is no valid index; it is kept (as its u32 bit pattern) so
    # that validation reports it as out of bounds.
    return c.s33("a value type") & 0xFFFFFFFF


def _read_opt_valtype(c: Cursor) -> ast.ValType | None:
    pos = c.pos
    b = c.u8("an optional value type")
    if b == 0x00:
        return None
    if b == 0x01:
        return read_valtype(c)
    c.invalid_byte(b, "optional value type", pos)


def _read_labels(c: Cursor, what: str) -> tuple[str, ...]:
    n = c.count(what)
    return tuple(c.name("a label") for _ in range(n))


def _read_label_valtypes(c: Cursor, what: str) -> tuple[ast.LabelValType, ...]:
    n = c.count(what, 2)
    out = []
    for _ in range(n):
        label = c.name("a label")
        out.append(ast.LabelValType(label, read_valtype(c)))
    return tuple(out)


def _read_case(c: Cursor) -> ast.CaseType:
    label = c.name("a case label")
    t = _read_opt_valtype(c)
    pos = c.pos
    z = c.u8("a case terminator")
    if z != 0x00:
        c.invalid_byte(z, "variant case (zero byte required)", pos)
    return ast.CaseType(label, t)


def _read_result_list(c: Cursor) -> ast.ValType | None:
    pos = c.pos
    b = c.u8("a result list")
    if b == 0x00:
        return read_valtype(c)
    if b == 0x01:
        zpos = c.pos
        z = c.u8("a result list")
        if z != 0x00:
            c.invalid_byte(z, "number of results", zpos)
        return None
    c.invalid_byte(b, "function result list", pos)


read_result_list = _read_result_list


def _read_defvaltype(c: Cursor, b: int, pos: int) -> ast.DefType:
    if b == 0x72:
        return ast.RecordType(_read_label_valtypes(c, "record fields"))
    if b == 0x71:
        n = c.count("variant cases", 3)
        return ast.VariantType(tuple(_read_case(c) for _ in range(n)))
    if b == 0x70:
        return ast.ListType(read_valtype(c))
    if b == 0x67:
        t = read_valtype(c)
        return ast.ListType(t, c.u32("a list length"))
    if b == 0x6F:
        n = c.count("tuple types")
        return ast.TupleType(tuple(read_valtype(c) for _ in range(n)))
    if b == 0x6E:
        return ast.FlagsType(_read_labels(c, "flags labels"))
    if b == 0x6D:
        return ast.EnumType(_read_labels(c, "enum labels"))
    if b == 0x6B:
        return ast.OptionType(read_valtype(c))
    if b == 0x6A:
        ok = _read_opt_valtype(c)
        return ast.ResultType(ok, _read_opt_valtype(c))
    if b == 0x69:
        return ast.OwnType(c.u32("a type index"))
    if b == 0x68:
        return ast.BorrowType(c.u32("a type index"))
    if b == 0x66:
        return ast.StreamType(_read_opt_valtype(c))
    if b == 0x65:
        return ast.FutureType(_read_opt_valtype(c))
    if b == 0x63:
        k = read_valtype(c)
        return ast.MapType(k, read_valtype(c))
    c.invalid_byte(b, "component defined type", pos)


def read_deftype(c: Cursor) -> ast.DefType:
    """``deftype``: value, function, component, instance or resource type."""
    pos = c.pos
    b = c.u8("a type definition")
    p = _PRIMS.get(b)
    if p is not None:
        return p
    if b in (0x40, 0x43):
        params = _read_label_valtypes(c, "function parameters")
        return ast.FuncType(params, _read_result_list(c), b == 0x43)
    if b == 0x3F:
        rep = read_core_valtype(c)
        dpos = c.pos
        d = c.u8("a resource destructor")
        if d == 0x00:
            return ast.ResourceType(rep, None)
        if d == 0x01:
            return ast.ResourceType(rep, c.u32("a destructor index"))
        c.invalid_byte(d, "resource destructor", dpos)
    if b in (0x41, 0x42):
        c.enter()
        n = c.count("type declarations")
        if b == 0x41:
            cdecls = tuple(_read_decl(c, component=True) for _ in range(n))
            result: ast.DefType = ast.ComponentType(cdecls)
        else:
            idecls = tuple(_read_instance_decl(c) for _ in range(n))
            result = ast.InstanceType(idecls)
        c.leave()
        return result
    return _read_defvaltype(c, b, pos)


def read_type_def(c: Cursor) -> ast.TypeDef:
    """``type`` (an item of the type section)."""
    pos = c.pos
    return ast.TypeDef(read_deftype(c), offset=pos)


def _read_instance_decl(c: Cursor) -> ast.InstanceDecl:
    d = _read_decl(c, component=False)
    assert not isinstance(d, ast.ImportDecl)
    return d


def _read_decl(c: Cursor, component: bool) -> ast.ComponentDecl:
    pos = c.pos
    b = c.u8("a type declaration")
    if b == 0x00:
        return read_core_type_def(c)
    if b == 0x01:
        return read_type_def(c)
    if b == 0x02:
        return read_alias(c)
    if b == 0x03 and component:
        name = read_extern_name(c)
        return ast.ImportDecl(name, read_extern_type(c), offset=pos)
    if b == 0x04:
        name = read_extern_name(c)
        return ast.ExportDecl(name, read_extern_type(c), offset=pos)
    c.invalid_byte(b, f"{'component' if component else 'instance'} type declaration", pos)


# -- extern names and types ----------------------------------------------------


def read_extern_name(c: Cursor) -> ast.ExternName:
    """``nameattributes``."""
    pos = c.pos
    form = c.u8("an extern name")
    if form > 0x02:
        c.invalid_byte(form, "extern name", pos)
    name = c.name("an extern name")
    if form != 0x02:
        return ast.ExternName(name, form, offset=pos)
    n = c.count("name attributes", 2)
    attrs: list[ast.NameAttribute] = []
    for _ in range(n):
        apos = c.pos
        a = c.u8("a name attribute")
        if a == 0x00:
            attrs.append(ast.ImplementsAttribute(c.name("an interface name")))
        elif a == 0x01:
            attrs.append(ast.VersionSuffixAttribute(c.name("a version suffix")))
        elif a == 0x02:
            attrs.append(ast.ExternalIdAttribute(c.name("an external id")))
        else:
            c.invalid_byte(a, "name attribute", apos)
    return ast.ExternName(name, form, tuple(attrs), offset=pos)


def read_extern_type(c: Cursor) -> ast.ExternType:
    """``externtype``."""
    pos = c.pos
    b = c.u8("an extern type")
    if b == 0x00:
        kpos = c.pos
        k = c.u8("an extern type")
        if k != 0x11:
            c.invalid_byte(k, "extern type (core module expected)", kpos)
        return ast.CoreModuleExternType(c.u32("a core type index"))
    if b == 0x01:
        return ast.FuncExternType(c.u32("a type index"))
    if b == 0x02:
        bpos = c.pos
        v = c.u8("a value bound")
        if v == 0x00:
            return ast.ValueExternType(ast.ValueEqBound(c.u32("a value index")))
        if v == 0x01:
            return ast.ValueExternType(read_valtype(c))
        c.invalid_byte(v, "value bound", bpos)
    if b == 0x03:
        bpos = c.pos
        v = c.u8("a type bound")
        if v == 0x00:
            return ast.TypeExternType(ast.EqBound(c.u32("a type index")))
        if v == 0x01:
            return ast.TypeExternType(ast.SubResourceBound())
        c.invalid_byte(v, "type bound", bpos)
    if b == 0x04:
        return ast.ComponentExternType(c.u32("a type index"))
    if b == 0x05:
        return ast.InstanceExternType(c.u32("a type index"))
    c.invalid_byte(b, "extern type", pos)


# -- aliases -------------------------------------------------------------------


def read_alias(c: Cursor) -> ast.Alias:
    """``alias``: export, core export or outer."""
    pos = c.pos
    buf = c.buf
    # Fast path for the common ``core <sort> 0x01`` / ``<sort> 0x00`` forms.
    if pos + 2 < c.end:
        b0 = buf[pos]
        if b0 == 0x00 and buf[pos + 2] == 0x01:
            sort = _CORE_SORTS.get(buf[pos + 1])
            if sort is not None:
                c.pos = pos + 3
                instance = c.u32("a core instance index")
                return ast.AliasCoreExport(sort, instance, c.name("an export name"), offset=pos)
        elif b0 != 0x00 and buf[pos + 1] == 0x00:
            sort = _SORTS.get(b0)
            if sort is not None:
                c.pos = pos + 2
                instance = c.u32("an instance index")
                return ast.AliasExport(sort, instance, c.name("an export name"), offset=pos)
    sort = read_sort(c)
    tpos = c.pos
    t = c.u8("an alias target")
    if t == 0x00:
        instance = c.u32("an instance index")
        return ast.AliasExport(sort, instance, c.name("an export name"), offset=pos)
    if t == 0x01:
        if sort not in _CORE_SORT_SET:
            c.fail(f"core export alias of non-core sort {sort.text}", pos)
        instance = c.u32("a core instance index")
        return ast.AliasCoreExport(sort, instance, c.name("an export name"), offset=pos)
    if t == 0x02:
        if sort not in _OUTER_ALIAS_SORTS:
            c.fail(f"invalid sort {sort.text} for an outer alias", pos)
        count = c.u32("an outer count")
        return ast.AliasOuter(sort, count, c.u32("an index"), offset=pos)
    c.invalid_byte(t, "alias target", tpos)
