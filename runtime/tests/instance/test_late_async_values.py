"""Host-side stream and future codecs are shared by every instance of a component
and reach each instance's own task-model hooks at call time."""

from __future__ import annotations

from typing import Any

from polyengine.abi.compile import Compiler
from polyengine.abi.functions import LoweredFunc
from polyengine.abi.options import CanonicalOptions, LiftLowerContext
from polyengine.abi.resources import ComponentInstance
from polyengine.types.model import U8, U32, FuncType, Future, Option, Stream


class Hooks:
    """Stands for one instance's host values: records what reaches it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[tuple[str, int]] = []

    def lift_stream(self, cx: LiftLowerContext, i: int, t: Stream) -> object:
        self.seen.append(("stream", i))
        return (self.name, i)

    def lower_stream(self, cx: LiftLowerContext, v: object, t: Stream) -> int:
        return 7

    def lift_future(self, cx: LiftLowerContext, i: int, t: Future) -> object:
        self.seen.append(("future", i))
        return (self.name, i)

    def lower_future(self, cx: LiftLowerContext, v: object, t: Future) -> int:
        return 9

    def lift_error_context(self, cx: LiftLowerContext, i: int) -> object:
        return None

    def lower_error_context(self, cx: LiftLowerContext, v: object) -> int:
        return 0


def _host_compiler(hooks: Any) -> Compiler:
    return Compiler(async_values=hooks, late_resources=True, late_async_values=True)


def test_late_codecs_are_shared_and_dispatch_per_instance() -> None:
    a_hooks, b_hooks = Hooks("a"), Hooks("b")
    a, b = _host_compiler(a_hooks), _host_compiler(b_hooks)
    t = Option(Stream(U8()))
    assert a.codec(t) is b.codec(t)
    ft = FuncType((("s", t), ("f", Future(U32()))), None)
    assert LoweredFunc.compile(a, ft) is LoweredFunc.compile(b, ft)
    # an equal type of another component: its own (the stream ends a codec makes carry
    # its element type object, which the compiled stream copies compare by identity)
    other = FuncType((("s", Option(Stream(U8()))), ("f", Future(U32()))), None)
    assert other == ft
    assert LoweredFunc.compile(a, other) is not LoweredFunc.compile(a, ft)
    assert _host_compiler(Hooks("c")).codec(other.params[0][1]) is not a.codec(t)

    lowered = LoweredFunc.compile(a, ft)
    for hooks in (a_hooks, b_hooks):
        inst = ComponentInstance(None, hooks.name)
        inst.host_async_values = hooks
        cx = LiftLowerContext(CanonicalOptions(), inst)
        assert lowered.lift_params(cx, [1, 5, 6]) == [(hooks.name, 5), (hooks.name, 6)]
    assert a_hooks.seen == [("stream", 5), ("future", 6)]
    assert b_hooks.seen == [("stream", 5), ("future", 6)]


def test_codecs_holding_their_hooks_are_their_compilers_own() -> None:
    a, b = Compiler(async_values=Hooks("a")), Compiler(async_values=Hooks("b"))
    t = Stream(U8())
    assert a.codec(t) is not b.codec(t)
    late = Compiler(async_values=Hooks("c"), late_resources=True, late_async_values=True)
    assert late.codec(t) is not a.codec(t)
