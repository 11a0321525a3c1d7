"""Layout: despecialization, alignment, element size and flattening."""

from __future__ import annotations

import pytest

from polyengine.types.despecialize import despecialize
from polyengine.types.layout import (
    CoreFuncType,
    alignment,
    contains_async_value,
    contains_borrow,
    discriminant_type,
    elem_size,
    flatten_functype,
    flatten_type,
    join,
)
from polyengine.types.model import (
    F32,
    F64,
    S8,
    S64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    Borrow,
    Case,
    Char,
    Enum,
    ErrorContext,
    Field,
    Flags,
    FuncType,
    Future,
    List,
    Map,
    Option,
    Own,
    Record,
    Result,
    Stream,
    String,
    Tuple,
    ValType,
    Variant,
)


def test_despecialize() -> None:
    assert despecialize(Tuple((U8(), String()))) == Record((Field("0", U8()), Field("1", String())))
    assert despecialize(Enum(("a", "b"))) == Variant((Case("a", None), Case("b", None)))
    assert despecialize(Option(U8())) == Variant((Case("none", None), Case("some", U8())))
    assert despecialize(Result(None, U8())) == Variant((Case("ok", None), Case("error", U8())))
    assert despecialize(Map(U8(), String())) == List(
        Record((Field("0", U8()), Field("1", String())))
    )
    assert despecialize(String()) == String()
    assert despecialize(Flags(("a",))) == Flags(("a",))


@pytest.mark.parametrize(
    ("t", "align", "size"),
    [
        (Bool(), 1, 1),
        (S8(), 1, 1),
        (U16(), 2, 2),
        (U32(), 4, 4),
        (S64(), 8, 8),
        (F32(), 4, 4),
        (F64(), 8, 8),
        (Char(), 4, 4),
        (String(), 4, 8),
        (ErrorContext(), 4, 4),
        (List(U64()), 4, 8),
        (List(U16(), 3), 2, 6),
        (List(U64(), 2), 8, 16),
        (Record((Field("a", U8()), Field("b", U32()), Field("c", U8()))), 4, 12),
        (Tuple((U8(), U16())), 2, 4),
        (Option(U8()), 1, 2),
        (Option(U64()), 8, 16),
        (Result(None, None), 1, 1),
        (Result(String(), U8()), 4, 12),
        (Enum(("a",)), 1, 1),
        (Enum(tuple(f"c{i}" for i in range(257))), 2, 2),
        (Variant((Case("a", U8()), Case("b", F64()))), 8, 16),
        (Flags(tuple(f"f{i}" for i in range(8))), 1, 1),
        (Flags(tuple(f"f{i}" for i in range(9))), 2, 2),
        (Flags(tuple(f"f{i}" for i in range(17))), 4, 4),
        (Flags(tuple(f"f{i}" for i in range(32))), 4, 4),
        (Own(0), 4, 4),
        (Borrow(0), 4, 4),
        (Stream(U8()), 4, 4),
        (Future(None), 4, 4),
        (Map(String(), U8()), 4, 8),
    ],
)
def test_alignment_and_size(t: ValType, align: int, size: int) -> None:
    assert alignment(t) == align
    assert elem_size(t) == size


def test_memory64_pointers() -> None:
    assert alignment(String(), "i64") == 8
    assert elem_size(String(), "i64") == 16
    assert elem_size(List(U8()), "i64") == 16
    assert flatten_type(String(), "i64") == ["i64", "i64"]
    assert flatten_type(Record((Field("a", U8()), Field("b", List(U8())))), "i64") == [
        "i32",
        "i64",
        "i64",
    ]


def test_discriminant_type() -> None:
    def cases(n: int) -> tuple[Case, ...]:
        return tuple(Case(str(i), None) for i in range(n))

    assert discriminant_type(cases(1)) == U8()
    assert discriminant_type(cases(256)) == U8()
    assert discriminant_type(cases(257)) == U16()
    assert discriminant_type(cases(65536)) == U16()
    assert discriminant_type(cases(65537)) == U32()


def test_join() -> None:
    assert join("i32", "i32") == "i32"
    assert join("i32", "f32") == "i32"
    assert join("f32", "i32") == "i32"
    assert join("f32", "f32") == "f32"
    assert join("f64", "f32") == "i64"
    assert join("i32", "i64") == "i64"
    assert join("f64", "i32") == "i64"


def test_flatten_type() -> None:
    assert flatten_type(Bool()) == ["i32"]
    assert flatten_type(U64()) == ["i64"]
    assert flatten_type(F32()) == ["f32"]
    assert flatten_type(String()) == ["i32", "i32"]
    assert flatten_type(List(F32(), 3)) == ["f32", "f32", "f32"]
    assert flatten_type(Flags(tuple(f"f{i}" for i in range(32)))) == ["i32"]
    assert flatten_type(Option(F32())) == ["i32", "f32"]
    assert flatten_type(Variant((Case("a", F32()), Case("b", U32())))) == ["i32", "i32"]
    assert flatten_type(Variant((Case("a", F64()), Case("b", F32())))) == ["i32", "i64"]
    assert flatten_type(
        Variant(
            (Case("a", Tuple((U8(), F32()))), Case("b", Tuple((F32(), U64()))), Case("c", None))
        )
    ) == ["i32", "i32", "i64"]
    assert flatten_type(Result(String(), None)) == ["i32", "i32", "i32"]
    assert flatten_type(Stream(None)) == ["i32"]


def test_flatten_functype_sync() -> None:
    ft = FuncType(tuple((f"p{i}", U32()) for i in range(16)), U32())
    assert flatten_functype(ft, "lift") == CoreFuncType(("i32",) * 16, ("i32",))
    ft = FuncType(tuple((f"p{i}", U32()) for i in range(17)), String())
    assert flatten_functype(ft, "lift") == CoreFuncType(("i32",), ("i32",))
    assert flatten_functype(ft, "lower") == CoreFuncType(("i32", "i32"), ())
    ft = FuncType((), None)
    assert flatten_functype(ft, "lower") == CoreFuncType((), ())
    ft = FuncType((("a", String()),), String())
    assert flatten_functype(ft, "lift", ptr_type="i64") == CoreFuncType(("i64", "i64"), ("i64",))


def test_flatten_functype_async() -> None:
    ft = FuncType(tuple((f"p{i}", U32()) for i in range(5)), U8(), is_async=True)
    assert flatten_functype(ft, "lower", is_async=True) == CoreFuncType(("i32", "i32"), ("i32",))
    ft4 = FuncType(tuple((f"p{i}", U32()) for i in range(4)), None, is_async=True)
    assert flatten_functype(ft4, "lower", is_async=True) == CoreFuncType(("i32",) * 4, ("i32",))
    assert flatten_functype(ft, "lift", is_async=True) == CoreFuncType(("i32",) * 5, ())
    assert flatten_functype(ft, "lift", is_async=True, callback=True) == CoreFuncType(
        ("i32",) * 5, ("i32",)
    )


def test_type_predicates() -> None:
    assert contains_borrow(Record((Field("a", List(Option(Borrow(1)))),)))
    assert not contains_borrow(Own(1))
    assert contains_async_value(Result(Stream(U8()), None))
    assert contains_async_value(FuncType((("x", Future(None)),), None))
    assert contains_borrow(FuncType((), Tuple((Borrow(0),))))
    assert not contains_async_value(Map(String(), U8()))
