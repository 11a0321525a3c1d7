"""WIT → Python names (python-mapping.md §1)."""

from __future__ import annotations

import pytest

from polyengine.embed._names import (
    FuncName,
    check_collisions,
    field_key,
    parse_func_name,
    pascal,
    snake,
)
from polyengine.errors import NameCollisionError


def test_snake_and_keywords() -> None:
    assert snake("get-resolution") == "get_resolution"
    assert snake("from") == "from_"
    assert snake("class") == "class_"
    assert snake("async") == "async_"
    assert field_key("from") == "from"


@pytest.mark.parametrize("soft", ["match", "case", "type"])
def test_soft_keywords_stay(soft: str) -> None:
    """Only hard keywords are mangled, so a name is the same on 3.11, 3.12 and 3.13."""
    assert snake(soft) == soft


def test_pascal() -> None:
    assert pascal("tcp-socket") == "TcpSocket"
    assert pascal("counter") == "Counter"


def test_annotated_names() -> None:
    assert parse_func_name("[method]counter.get-value") == FuncName(
        "method", "counter", "get-value"
    )
    assert parse_func_name("[static]counter.make") == FuncName("static", "counter", "make")
    assert parse_func_name("[constructor]counter") == FuncName("constructor", "counter", "counter")
    assert parse_func_name("run") == FuncName("func", None, "run")


def test_collision_refused() -> None:
    assert check_collisions(["a-b", "c"]) == {"a-b": "a_b", "c": "c"}
    with pytest.raises(NameCollisionError, match="'a-b' and 'a_b'"):
        check_collisions(["a-b", "a_b"])
