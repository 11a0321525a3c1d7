"""stream, future and error-context values travel as i32 handles through hooks."""

from __future__ import annotations

from typing import Any

import pytest
from abi_helpers import make_cx

from polyengine.abi.compile import Compiler
from polyengine.abi.options import LiftLowerContext
from polyengine.types.model import U8, ErrorContext, Field, Future, List, Option, Record, Stream


class _Hooks:
    """Records what crossed: lifting returns a tagged tuple, lowering hands out indices."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []
        self.next = 100

    def _index(self, what: str, v: object) -> int:
        self.log.append((what, v))
        self.next += 1
        return self.next

    def lift_stream(self, cx: LiftLowerContext, i: int, t: Stream) -> object:
        return ("stream", i, t)

    def lower_stream(self, cx: LiftLowerContext, v: object, t: Stream) -> int:
        return self._index("stream", (v, t))

    def lift_future(self, cx: LiftLowerContext, i: int, t: Future) -> object:
        return ("future", i, t)

    def lower_future(self, cx: LiftLowerContext, v: object, t: Future) -> int:
        return self._index("future", (v, t))

    def lift_error_context(self, cx: LiftLowerContext, i: int) -> object:
        return ("error-context", i)

    def lower_error_context(self, cx: LiftLowerContext, v: object) -> int:
        return self._index("error-context", v)


def test_hooks_see_the_types_and_indices() -> None:
    hooks = _Hooks()
    comp = Compiler(async_values=hooks)
    t = Record(
        (
            Field("s", Stream(U8())),
            Field("f", Option(Future(None))),
            Field("e", List(ErrorContext())),
        )
    )
    c = comp.codec(t)
    assert c.flat == ("i32", "i32", "i32", "i32", "i32")
    cx, _ = make_cx()
    c.store(cx, {"s": "S", "f": "F", "e": ["E"]}, 64)
    assert hooks.log == [
        ("stream", ("S", Stream(U8()))),
        ("future", ("F", Future(None))),
        ("error-context", "E"),
    ]
    v = c.load(cx, 64)
    assert v == {
        "s": ("stream", 101, Stream(U8())),
        "f": ("future", 102, Future(None)),
        "e": [("error-context", 103)],
    }
    out: list[int | float] = []
    c.lower_flat(cx, {"s": "S", "f": None, "e": []}, out)
    assert out[0] == 104 and out[1:3] == [0, 0]
    assert c.lift_flat(cx, [7, 1, 8, 0, 0], 0) == {
        "s": ("stream", 7, Stream(U8())),
        "f": ("future", 8, Future(None)),
        "e": [],
    }


def test_without_hooks_async_values_are_not_supported() -> None:
    c = Compiler().codec(Stream(U8()))
    cx, _ = make_cx()
    with pytest.raises(NotImplementedError, match="stream values need the concurrency layer"):
        c.lift_flat(cx, [1], 0)
    with pytest.raises(NotImplementedError, match="error-context values"):
        Compiler().codec(ErrorContext()).store(cx, object(), 64)
