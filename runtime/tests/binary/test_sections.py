"""Every component section, read from text compiled by wasm-tools, checked node by node."""

from __future__ import annotations

from collections.abc import Callable

from polyengine.binary import ast, read_component

W = Callable[[str], bytes]
P = ast.PrimValType


def defs(wat2wasm: W, text: str) -> tuple[ast.Definition, ...]:
    return read_component(wat2wasm(text)).definitions


def test_empty_component(wat2wasm: W) -> None:
    data = wat2wasm("(component)")
    c = read_component(data)
    assert c == ast.Component(0, 8, ())
    assert (c.version, c.layer) == (0x0D, 0x01)


def test_core_module_is_a_byte_range_of_the_input(wat2wasm: W) -> None:
    core = wat2wasm('(module (func (export "f")) (memory 1))')
    data = wat2wasm('(component (core module (func (export "f")) (memory 1)))')
    (m,) = read_component(data).definitions
    assert isinstance(m, ast.CoreModule)
    assert bytes(m.data(data)) == core
    assert data[m.offset : m.offset + m.length] == core
    # memoryview input: same ranges, nothing copied
    view = memoryview(data)
    (m2,) = read_component(view).definitions
    assert m2 == m
    assert m2.data(view).obj is data


def test_core_instances(wat2wasm: W) -> None:
    d = defs(
        wat2wasm,
        """(component
          (core module $a (func (export "f")))
          (core module $b (import "i" "f" (func)))
          (core instance $ia (instantiate $a))
          (core instance (instantiate $b (with "i" (instance $ia))))
          (core instance (export "g" (func $ia "f")))
        )""",
    )
    assert d[2] == ast.CoreInstantiate(0, ())
    assert d[3] == ast.CoreInstantiate(1, (ast.CoreInstantiateArg("i", 0),))
    assert d[4] == ast.AliasCoreExport(ast.Sort.CORE_FUNC, 0, "f")
    assert d[5] == ast.CoreInstanceExports((ast.CoreInlineExport("g", ast.Sort.CORE_FUNC, 0),))


def test_core_types_func_and_module(wat2wasm: W) -> None:
    d = defs(
        wat2wasm,
        """(component
          (core type (func (param i32 i64 f32 f64) (result v128 funcref externref)))
          (core type (module
            (type (func (param i32)))
            (import "m" "f" (func (type 0)))
            (import "m" "t" (table 1 2 funcref))
            (import "m" "mem" (memory 1 (pagesize 1)))
            (import "m" "mem64" (memory i64 3 4))
            (import "m" "shm" (memory 1 2 shared))
            (import "m" "g" (global (mut i32)))
            (import "m" "tag" (tag (type 0)))
            (export "e" (func (type 0)))
            (alias outer 1 0 (type))
          ))
        )""",
    )
    assert d[0] == ast.CoreTypeDef(
        ast.CoreSubType(
            True,
            (),
            ast.CoreFuncType(
                (
                    ast.CoreNumType.I32,
                    ast.CoreNumType.I64,
                    ast.CoreNumType.F32,
                    ast.CoreNumType.F64,
                ),
                (
                    ast.CoreNumType.V128,
                    ast.CoreRefType(True, ast.CoreAbsHeapType.FUNC),
                    ast.CoreRefType(True, ast.CoreAbsHeapType.EXTERN),
                ),
            ),
        )
    )
    mt = d[1]
    assert isinstance(mt, ast.CoreTypeDef)
    assert isinstance(mt.type, ast.CoreModuleType)
    decls = mt.type.declarations
    func_i32 = ast.CoreSubType(True, (), ast.CoreFuncType((ast.CoreNumType.I32,), ()))
    assert decls[0] == ast.CoreTypeDef(func_i32)
    assert decls[1] == ast.CoreImport("m", "f", ast.CoreFuncExternType(0))
    assert decls[2] == ast.CoreImport(
        "m",
        "t",
        ast.CoreTableType(ast.CoreRefType(True, ast.CoreAbsHeapType.FUNC), ast.Limits(1, 2)),
    )
    assert decls[3] == ast.CoreImport(
        "m", "mem", ast.CoreMemoryType(ast.Limits(1, None, page_size_log2=0))
    )
    assert decls[4] == ast.CoreImport("m", "mem64", ast.CoreMemoryType(ast.Limits(3, 4, is64=True)))
    assert decls[5] == ast.CoreImport("m", "shm", ast.CoreMemoryType(ast.Limits(1, 2, shared=True)))
    assert decls[6] == ast.CoreImport("m", "g", ast.CoreGlobalType(ast.CoreNumType.I32, True))
    assert decls[7] == ast.CoreImport("m", "tag", ast.CoreTagType(0))
    assert decls[8] == ast.CoreExportDecl("e", ast.CoreFuncExternType(0))
    assert decls[9] == ast.CoreOuterAlias(1, 0)


def test_core_gc_types(wat2wasm: W) -> None:
    d = defs(
        wat2wasm,
        """(component
          (core type (struct (field i8) (field (mut i16)) (field (ref null 0))))
          (core type (array (mut i32)))
          (core rec (type (sub (func))) (type (sub final 1 (func))))
          (core type (sub (struct)))
        )""",
    )
    assert d[0] == ast.CoreTypeDef(
        ast.CoreSubType(
            True,
            (),
            ast.CoreStructType(
                (
                    ast.CoreFieldType(ast.CorePackedType.I8, False),
                    ast.CoreFieldType(ast.CorePackedType.I16, True),
                    ast.CoreFieldType(ast.CoreRefType(True, 0), False),
                )
            ),
        )
    )
    assert d[1] == ast.CoreTypeDef(
        ast.CoreSubType(True, (), ast.CoreArrayType(ast.CoreFieldType(ast.CoreNumType.I32, True)))
    )
    rec = d[2]
    assert isinstance(rec, ast.CoreTypeDef) and isinstance(rec.type, ast.CoreRecType)
    assert rec.type.subtypes == (
        ast.CoreSubType(False, (), ast.CoreFuncType((), ())),
        ast.CoreSubType(True, (1,), ast.CoreFuncType((), ())),
    )
    # a non-final sub at component level is spelled 0x00 0x50
    assert d[3] == ast.CoreTypeDef(ast.CoreSubType(False, (), ast.CoreStructType(()), True))


def test_nested_components_have_their_own_ranges(wat2wasm: W) -> None:
    inner_text = "(component (type string))"
    data = wat2wasm(f"(component (type u8) (component {inner_text[len('(component ') :]} )")
    outer = read_component(data)
    assert outer.definitions[0] == ast.TypeDef(P.U8)
    inner = outer.definitions[1]
    assert isinstance(inner, ast.Component)
    assert inner.definitions == (ast.TypeDef(P.STRING),)
    assert bytes(inner.data(data)) == wat2wasm(inner_text)
    assert inner.offset + inner.length == len(data)


def test_component_instances_and_export_aliases(wat2wasm: W) -> None:
    d = defs(
        wat2wasm,
        """(component
          (import "f" (func $f))
          (component $c (import "x" (func)) (export "y" (func 0)))
          (instance $i (instantiate $c (with "x" (func $f))))
          (instance (export "g" (func $f)) (export "h" (instance $i)))
          (alias export $i "y" (func))
        )""",
    )
    assert d[0] == ast.TypeDef(ast.FuncType((), None))
    assert d[1] == ast.Import(ast.ExternName("f"), ast.FuncExternType(0))
    inst = [x for x in d if isinstance(x, ast.Instantiate)]
    assert inst == [ast.Instantiate(0, (ast.InstantiateArg("x", ast.Sort.FUNC, 0),))]
    exps = [x for x in d if isinstance(x, ast.InstanceExports)]
    assert exps == [
        ast.InstanceExports(
            (
                ast.InlineExport(ast.ExternName("g"), ast.Sort.FUNC, 0),
                ast.InlineExport(ast.ExternName("h"), ast.Sort.INSTANCE, 0),
            )
        )
    ]
    assert d[-1] == ast.AliasExport(ast.Sort.FUNC, 0, "y")


def test_outer_aliases(wat2wasm: W) -> None:
    d = defs(
        wat2wasm,
        """(component
          (core module $m)
          (core type $ct (func))
          (type $t string)
          (component $c0)
          (component
            (alias outer 1 $m (core module))
            (alias outer 1 $ct (core type))
            (alias outer 1 $t (type))
            (alias outer 1 $c0 (component))
          )
        )""",
    )
    inner = d[-1]
    assert isinstance(inner, ast.Component)
    assert inner.definitions == (
        ast.AliasOuter(ast.Sort.CORE_MODULE, 1, 0),
        ast.AliasOuter(ast.Sort.CORE_TYPE, 1, 0),
        ast.AliasOuter(ast.Sort.TYPE, 1, 0),
        ast.AliasOuter(ast.Sort.COMPONENT, 1, 0),
    )


def test_defined_value_types(wat2wasm: W) -> None:
    d = defs(
        wat2wasm,
        """(component
          (type $r (resource (rep i32)))
          (type (record (field "a" bool) (field "b" u8)))
          (type (variant (case "x" s8) (case "y")))
          (type (list u16))
          (type (list u8 3))
          (type (tuple s16 u32))
          (type (flags "f1" "f2"))
          (type (enum "e1" "e2"))
          (type (option s32))
          (type (result))
          (type (result u64))
          (type (result (error s64)))
          (type (result f32 (error f64)))
          (type (own $r))
          (type (borrow $r))
          (type (stream u8))
          (type (stream))
          (type (future string))
          (type (future))
          (type (map string u32))
          (type error-context)
          (type (list 2))
          (type char)
        )""",
    )
    types = [x.type for x in d if isinstance(x, ast.TypeDef)]
    assert types == [
        ast.ResourceType(ast.CoreNumType.I32, None),
        ast.RecordType((ast.LabelValType("a", P.BOOL), ast.LabelValType("b", P.U8))),
        ast.VariantType((ast.CaseType("x", P.S8), ast.CaseType("y", None))),
        ast.ListType(P.U16),
        ast.ListType(P.U8, 3),
        ast.TupleType((P.S16, P.U32)),
        ast.FlagsType(("f1", "f2")),
        ast.EnumType(("e1", "e2")),
        ast.OptionType(P.S32),
        ast.ResultType(None, None),
        ast.ResultType(P.U64, None),
        ast.ResultType(None, P.S64),
        ast.ResultType(P.F32, P.F64),
        ast.OwnType(0),
        ast.BorrowType(0),
        ast.StreamType(P.U8),
        ast.StreamType(None),
        ast.FutureType(P.STRING),
        ast.FutureType(None),
        ast.MapType(P.STRING, P.U32),
        P.ERROR_CONTEXT,
        ast.ListType(2),
        P.CHAR,
    ]


def test_large_type_index_in_valtype_position(wat2wasm: W) -> None:
    # indices >= 64 are encoded as multi-byte s33 in valtype position
    many = "\n".join("(type u8)" for _ in range(200))
    d = defs(wat2wasm, f"(component {many} (type (list 130)) (type (own 199)))")
    assert d[-2] == ast.TypeDef(ast.ListType(130))
    assert d[-1] == ast.TypeDef(ast.OwnType(199))


def test_resource_with_destructor(wat2wasm: W) -> None:
    d = defs(
        wat2wasm,
        """(component
          (core module $m (func (export "dtor") (param i32)))
          (core instance $i (instantiate $m))
          (type (resource (rep i32) (dtor (core func $i "dtor"))))
        )""",
    )
    assert d[-1] == ast.TypeDef(ast.ResourceType(ast.CoreNumType.I32, 0))


def test_func_types(wat2wasm: W) -> None:
    d = defs(
        wat2wasm,
        """(component
          (type (func))
          (type (func (param "p" bool) (result u32)))
          (type (func async (param "a" string)))
        )""",
    )
    assert [x.type for x in d if isinstance(x, ast.TypeDef)] == [
        ast.FuncType((), None),
        ast.FuncType((ast.LabelValType("p", P.BOOL),), P.U32),
        ast.FuncType((ast.LabelValType("a", P.STRING),), None, is_async=True),
    ]


def test_component_and_instance_types(wat2wasm: W) -> None:
    d = defs(
        wat2wasm,
        """(component
          (type string)
          (type (component
            (type string)
            (import "a" (type (eq 0)))
            (import "r" (type (sub resource)))
            (core type (module))
            (type (func))
            (export "b" (func (type 3)))
            (alias outer 1 0 (type))
            (type (instance
              (export "c" (type (sub resource)))
              (alias outer 2 0 (type))
            ))
          ))
        )""",
    )
    ct = d[1]
    assert isinstance(ct, ast.TypeDef) and isinstance(ct.type, ast.ComponentType)
    decls = ct.type.declarations
    assert decls[0] == ast.TypeDef(P.STRING)
    assert decls[1] == ast.ImportDecl(ast.ExternName("a"), ast.TypeExternType(ast.EqBound(0)))
    assert decls[2] == ast.ImportDecl(
        ast.ExternName("r"), ast.TypeExternType(ast.SubResourceBound())
    )
    assert decls[3] == ast.CoreTypeDef(ast.CoreModuleType(()))
    assert decls[4] == ast.TypeDef(ast.FuncType((), None))
    assert decls[5] == ast.ExportDecl(ast.ExternName("b"), ast.FuncExternType(3))
    assert decls[6] == ast.AliasOuter(ast.Sort.TYPE, 1, 0)
    it = decls[7]
    assert isinstance(it, ast.TypeDef)
    assert it.type == ast.InstanceType(
        (
            ast.ExportDecl(ast.ExternName("c"), ast.TypeExternType(ast.SubResourceBound())),
            ast.AliasOuter(ast.Sort.TYPE, 2, 0),
        )
    )


def test_imports_of_every_kind(wat2wasm: W) -> None:
    d = defs(
        wat2wasm,
        """(component
          (core type $mt (module))
          (type $ft (func))
          (type $it (instance))
          (type $cmp (component))
          (import "m" (core module (type $mt)))
          (import "f" (func (type $ft)))
          (import "t" (type (eq $ft)))
          (import "i" (instance (type $it)))
          (import "c" (component (type $cmp)))
          (import "wasi:http/types@0.2.0" (instance))
          (import "unlocked-dep=<a:b@{>=1.2.3}>" (func))
          (import "url=<https://example.com/x>" (func))
          (import "integrity=<sha256-AAAA>" (func))
        )""",
    )
    imps = [x for x in d if isinstance(x, ast.Import)]
    assert [(i.name.name, type(i.type).__name__) for i in imps] == [
        ("m", "CoreModuleExternType"),
        ("f", "FuncExternType"),
        ("t", "TypeExternType"),
        ("i", "InstanceExternType"),
        ("c", "ComponentExternType"),
        ("wasi:http/types@0.2.0", "InstanceExternType"),
        ("unlocked-dep=<a:b@{>=1.2.3}>", "FuncExternType"),
        ("url=<https://example.com/x>", "FuncExternType"),
        ("integrity=<sha256-AAAA>", "FuncExternType"),
    ]
    assert imps[0].type == ast.CoreModuleExternType(0)
    assert imps[2].type == ast.TypeExternType(ast.EqBound(0))
    # offsets point at the first byte of each import
    data = wat2wasm('(component (import "f" (func)))')
    (imp,) = read_component(data).definitions[1:]
    assert data[imp.offset : imp.offset + 3] == b"\x00\x01f"


def test_name_attributes() -> None:
    # import section with 0x02-form names (Binary.md nameattributes/attribute), hand-encoded
    body = (
        b"\x02" + b"\x02\x02i1\x02\x00\x0cmy:dep/iface\x01\x05-rc.1\x05\x00" + b"\x01\x01b\x01\x00"
    )
    data = (
        b"\x00asm\x0d\x00\x01\x00" + b"\x07\x03\x01\x42\x00" + b"\x0a" + bytes([len(body)]) + body
    )
    d = read_component(data).definitions
    i1, i2 = d[1], d[2]
    assert isinstance(i1, ast.Import) and isinstance(i2, ast.Import)
    assert i1.name == ast.ExternName(
        "i1",
        2,
        (ast.ImplementsAttribute("my:dep/iface"), ast.VersionSuffixAttribute("-rc.1")),
    )
    assert i1.name.implements == "my:dep/iface"
    assert i1.name.version_suffix == "-rc.1"
    assert i1.name.external_id is None
    assert i2.name == ast.ExternName("b", 1)


def test_exports_with_and_without_ascription(wat2wasm: W) -> None:
    d = defs(
        wat2wasm,
        """(component
          (type $ft (func))
          (import "f" (func $f (type $ft)))
          (export "a" (func $f))
          (export "b" (func $f) (func (type $ft)))
          (core module $m)
          (export "m" (core module $m))
        )""",
    )
    exps = [x for x in d if isinstance(x, ast.Export)]
    assert exps == [
        ast.Export(ast.ExternName("a"), ast.Sort.FUNC, 0, None),
        ast.Export(ast.ExternName("b"), ast.Sort.FUNC, 0, ast.FuncExternType(0)),
        ast.Export(ast.ExternName("m"), ast.Sort.CORE_MODULE, 0, None),
    ]


def test_value_extern_types() -> None:
    # Binary.md: externtype 0x02 takes a valuebound, 0x00 (eq i) or 0x01 valtype
    imports = b"\x02" + b"\x00\x01v\x02\x01\x73" + b"\x00\x01w\x02\x00\x00"
    data = b"\x00asm\x0d\x00\x01\x00\x0a" + bytes([len(imports)]) + imports
    v, w = read_component(data).definitions
    assert v == ast.Import(ast.ExternName("v"), ast.ValueExternType(P.STRING))
    assert w == ast.Import(ast.ExternName("w"), ast.ValueExternType(ast.ValueEqBound(0)))


def test_start_and_value_sections() -> None:
    # 🪙 sections, hand-encoded: value section with (value u32 7) and (value string "hi"),
    # start section calling func 3 with values 0 and 1, producing 1 result
    values = b"\x02" + b"\x79\x01\x07" + b"\x73\x03\x02hi"
    start = b"\x03\x02\x00\x01\x01"
    data = (
        b"\x00asm\x0d\x00\x01\x00"
        + b"\x0c"
        + bytes([len(values)])
        + values
        + b"\x09"
        + bytes([len(start)])
        + start
    )
    c = read_component(data)
    v1, v2, s = c.definitions
    assert v1 == ast.Value(P.U32, 13, 1)
    assert v2 == ast.Value(P.STRING, 16, 3)
    assert data[v2.value_offset : v2.value_offset + v2.value_length] == b"\x02hi"
    assert s == ast.Start(3, (0, 1), 1)
    assert [x.name for x in c.sections] == ["value", "start"]


def test_custom_sections_and_component_names(wat2wasm: W) -> None:
    data = wat2wasm(
        """(component $top
          (@custom "hello" "world")
          (core module $mod)
          (type $ty string)
          (import "f" (func $fn))
        )"""
    )
    c = read_component(data)
    names = [s.name for s in c.custom_sections]
    assert "hello" in names and "component-name" in names
    hello = c.custom_sections[names.index("hello")]
    assert bytes(hello.data(data)) == b"world"
    assert c.names is not None and c.names.complete
    assert c.names.component == "top"
    by_sort = {s.sort: {a.index: a.name for a in s.names} for s in c.names.sorts}
    assert by_sort[ast.Sort.CORE_MODULE] == {0: "mod"}
    assert by_sort[ast.Sort.TYPE] == {0: "ty"}
    assert by_sort[ast.Sort.FUNC] == {0: "fn"}


def test_names_can_be_left_undecoded(wat2wasm: W) -> None:
    data = wat2wasm("(component $top (type $ty string))")
    c = read_component(data, names=False)
    assert c.names is None
    assert [s.name for s in c.custom_sections] == ["component-name"]
    assert c.definitions == read_component(data).definitions


def test_garbage_component_name_section_is_not_an_error() -> None:
    payload = b"\x0ecomponent-name" + b"\x01\x05\xff\xfe"
    data = b"\x00asm\x0d\x00\x01\x00\x00" + bytes([len(payload)]) + payload
    c = read_component(data)
    assert c.names == ast.ComponentNames(None, (), complete=False)
    assert c.custom_sections[0].name == "component-name"


def test_section_infos_cover_the_definitions(wat2wasm: W) -> None:
    data = wat2wasm('(component (type u8) (type u16) (import "f" (func)) (type s8))')
    c = read_component(data)
    ids = [(s.id, s.first_definition, s.end_definition) for s in c.sections if s.id]
    assert ids[0][0] == 7
    assert ids[-1][2] == len(c.definitions)
    for s in c.sections:
        assert data[s.offset] == s.id
        assert s.content_offset + s.content_length <= len(data)


def test_large_core_modules_are_skipped_not_read() -> None:
    # a 16 MiB core module (one big custom section) costs nothing to read
    import time

    payload = b"\x04blob" + bytes(16 * 1024 * 1024)
    section = b"\x00" + _uleb(len(payload)) + payload
    module = b"\x00asm\x01\x00\x00\x00" + section
    data = b"\x00asm\x0d\x00\x01\x00\x01" + _uleb(len(module)) + module
    start = time.perf_counter()
    c = read_component(data)
    elapsed = time.perf_counter() - start
    assert c.definitions == (ast.CoreModule(len(data) - len(module), len(module)),)
    assert elapsed < 0.1


def _uleb(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_name_section_skips_unknown_subsections() -> None:
    payload = (
        b"\x0ecomponent-name"
        + b"\x07\x02\xaa\xbb"  # unknown subsection 7
        + b"\x00\x04\x03top"  # component name
        + b"\x01\x06\x00\x11\x01\x00\x01m"  # core module 0 is "m"
    )
    data = b"\x00asm\x0d\x00\x01\x00\x00" + bytes([len(payload)]) + payload
    names = read_component(data).names
    assert names == ast.ComponentNames(
        "top", (ast.SortNames(ast.Sort.CORE_MODULE, (ast.NameAssoc(0, "m"),)),)
    )
