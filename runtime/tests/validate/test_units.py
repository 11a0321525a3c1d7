"""Unit tests of the validation helpers: names, subtyping, flattening and sizes."""

from __future__ import annotations

from typing import Literal

import pytest

from polyengine.types.layout import (
    FLAT_CAP,
    elem_size,
    flatten_functype,
    flatten_type,
    size_and_alignment,
)
from polyengine.types.model import (
    U8,
    U32,
    U64,
    Bool,
    Case,
    Enum,
    Field,
    FuncType,
    List,
    Option,
    Own,
    Record,
    Result,
    String,
    Tuple,
    ValType,
    Variant,
)
from polyengine.types.subtype import (
    CoreFuncT,
    CoreMemoryT,
    CoreTableT,
    InstanceT,
    Mismatch,
    ResourceT,
    TypeT,
    check_core_extern,
    check_extern,
    check_functype,
    check_valtype,
    substitute,
)
from polyengine.validate.names import NameError_, NameSet, parse_extern_name


@pytest.mark.parametrize(
    ("text", "kind", "fields"),
    [
        ("a-b-c", "plain", {"label": "a-b-c"}),
        ("A1-2-3", "plain", {"label": "A1-2-3"}),
        ("[constructor]r", "constructor", {"resource": "r"}),
        ("[method]file.read-at", "method", {"resource": "file", "label": "read-at"}),
        ("[static]file.open", "static", {"resource": "file", "label": "open"}),
        (
            "wasi:http/types@0.2.0-rc.1",
            "interface",
            {"namespace": "wasi", "package": "http", "interface": "types", "version": "0.2.0-rc.1"},
        ),
        ("my:pkg/iface@1", "interface", {"version": "1"}),
        ("my:pkg/iface", "interface", {"version": None}),
    ],
)
def test_parse_extern_name(text: str, kind: str, fields: dict[str, object]) -> None:
    name = parse_extern_name(text)
    assert name.kind == kind
    for k, v in fields.items():
        assert getattr(name, k) == v


@pytest.mark.parametrize(
    "text",
    ["", "1-a", "a--b", "aBc", "[method]r", "[foo]a", "wasi:http", "a:b/c/d", "A:b/c", "a:b/c@x"],
)
def test_invalid_extern_names(text: str) -> None:
    with pytest.raises(NameError_):
        parse_extern_name(text)


def test_strong_uniqueness() -> None:
    names = NameSet("import")
    for ok in [
        "foo",
        "foo-bar",
        "[constructor]foo",
        "[method]foo.bar",
        "[static]foo.baz",
        "foo:bar/baz",
    ]:
        names.add(parse_extern_name(ok))
    for clash in ["FOO", "foo-BAR", "[static]foo.bar", "[method]foo.foo", "foo:bar/BAZ"]:
        with pytest.raises(NameError_, match="conflicts"):
            names.add(parse_extern_name(clash))


def test_valtype_subtyping_messages() -> None:
    check_valtype(Record((Field("a", U32()),)), Record((Field("a", U32()),)))
    with pytest.raises(Mismatch, match="expected field name `b`, found `a`"):
        check_valtype(Record((Field("a", U32()),)), Record((Field("b", U32()),)))
    with pytest.raises(Mismatch, match="expected primitive `u32` found primitive `string`"):
        check_valtype(String(), U32())
    with pytest.raises(Mismatch, match="expected case `x` to have a type"):
        check_valtype(Variant((Case("x", None),)), Variant((Case("x", U8()),)))
    with pytest.raises(Mismatch, match="mismatch in enum"):
        check_valtype(Enum(("a",)), Enum(("b",)))
    with pytest.raises(Mismatch, match="ok type"):
        check_valtype(Result(None, None), Result(U8(), None))
    with pytest.raises(Mismatch, match="resource types are not the same"):
        check_valtype(Own(1), Own(2))


def test_functype_subtyping() -> None:
    f = FuncType((("x", U32()),), None)
    check_functype(f, f)
    with pytest.raises(Mismatch, match="expected parameter named `y`"):
        check_functype(f, FuncType((("y", U32()),), None))
    with pytest.raises(Mismatch, match="expected a result"):
        check_functype(f, FuncType((("x", U32()),), U8()))


def test_resource_binding_and_substitution() -> None:
    expected = InstanceT((("r", TypeT(ResourceT(10))), ("f", FuncType((), Own(10)))), (10,))
    actual = InstanceT((("r", TypeT(ResourceT(3))), ("f", FuncType((), Own(3)))))
    bind: dict[int, int] = {}
    check_extern(actual, expected, bind, {10})
    assert bind == {10: 3}
    wrong = InstanceT((("r", TypeT(ResourceT(3))), ("f", FuncType((), Own(4)))))
    with pytest.raises(Mismatch, match="resource types are not the same"):
        check_extern(wrong, expected, {}, {10})
    assert substitute(expected, {10: 7}) == InstanceT(
        (("r", TypeT(ResourceT(7))), ("f", FuncType((), Own(7)))), (7,)
    )


def test_core_extern_matching() -> None:
    check_core_extern(CoreMemoryT(2, None), CoreMemoryT(1, None))
    with pytest.raises(Mismatch, match="memory limits"):
        check_core_extern(CoreMemoryT(1, None), CoreMemoryT(1, 1))
    with pytest.raises(Mismatch, match="element type"):
        check_core_extern(CoreTableT("externref", 1, None), CoreTableT("funcref", 1, None))
    with pytest.raises(Mismatch, match="expected func, found memory"):
        check_core_extern(CoreMemoryT(1, None), CoreFuncT((), ()))


def _sig(
    ft: FuncType, context: Literal["lift", "lower"], *, is_async: bool, callback: bool
) -> CoreFuncT:
    core = flatten_functype(ft, context, is_async=is_async, callback=callback)
    return CoreFuncT(core.params, core.results)


def test_flattening() -> None:
    assert flatten_type(Option(U64())) == ["i32", "i64"]
    assert flatten_type(Variant((Case("a", U32()), Case("b", Bool())))) == ["i32", "i32"]
    assert flatten_type(List(U8(), 3)) == ["i32"] * 3
    many = FuncType(tuple((f"p{i}", U32()) for i in range(17)), Tuple((U32(), U32())))
    assert _sig(many, "lift", is_async=False, callback=False) == CoreFuncT(("i32",), ("i32",))
    assert _sig(many, "lower", is_async=False, callback=False) == CoreFuncT(("i32", "i32"), ())
    small = FuncType((("s", String()),), U32())
    assert _sig(small, "lower", is_async=True, callback=False) == CoreFuncT(
        ("i32", "i32", "i32"), ("i32",)
    )
    assert _sig(small, "lift", is_async=True, callback=True) == CoreFuncT(("i32", "i32"), ("i32",))


def test_flattening_is_cut_after_the_cap() -> None:
    # a fixed-length list of 2**31 elements is not spelled out; past the cap only "too long" matters
    huge = List(U8(), 1 << 31)
    assert flatten_type(huge) == ["i32"] * (FLAT_CAP + 1)
    nested = Record(tuple(Field(f"f{i}", List(U64(), 40)) for i in range(3)))
    assert len(flatten_type(nested)) == FLAT_CAP + 1
    ft = FuncType((("a", huge),), None)
    assert _sig(ft, "lift", is_async=False, callback=False) == CoreFuncT(("i32",), ())


def test_elem_size() -> None:
    assert elem_size(Record((Field("a", U8()), Field("b", U32())))) == 8
    assert elem_size(String(), "i32") == 8
    assert elem_size(String(), "i64") == 16
    assert elem_size(List(U64(), 4)) == 32
    assert elem_size(Option(U8())) == 2


def test_size_of_shared_subtrees_is_linear() -> None:
    # 60 levels of a record holding its child twice spell 2**60 leaves; the
    # identity memo visits each of the 60 objects once
    t: ValType = U32()
    for _ in range(60):
        t = Record((Field("a", t), Field("b", t)))
    memo: dict[int, tuple[int, int]] = {}
    assert size_and_alignment(t, "i64", memo) == (4 << 60, 4)
    assert len(memo) == 61
