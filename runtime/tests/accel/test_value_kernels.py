"""The compiled value codecs give what the Python codecs give (architecture.md §5).

``abi/kernels.py`` compiles fixed-shape types into programs that
``engine/_accel_values.c`` runs. For generated types and values, the
compiled lower of parameters and the compiled lift of a result returned
through memory are run next to the Python codecs they stand in for, each on
its own memory: the core values, the memory bytes, the ``realloc`` calls,
the lifted values, the lift budget left and any error or trap (class, code,
message) must be the same. Values of another type and random memory bytes
exercise the refusals.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from abi_helpers import make_cx
from abi_strategies import compound, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyengine import engine
from polyengine.abi.compile import Compiler
from polyengine.abi.functions import ValuesCodec
from polyengine.abi.kernels import lift_kernel, lower_kernel, program
from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.options import LiftLowerContext
from polyengine.abi.resources import ComponentInstance
from polyengine.types.model import (
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    Case,
    Field,
    List,
    Option,
    Record,
    String,
    Tuple,
    ValType,
    Variant,
)

pytestmark = pytest.mark.skipif(
    engine.value_kernels() is None, reason="the compiled call path is not active"
)

_leaves = st.sampled_from(
    [Bool(), U8(), S8(), U16(), S16(), U32(), S32(), U64(), S64(), String(), List(U8())]
)

#: the types the compiled codecs take (utf8 strings, 32-bit memory): lists only of u8
kernel_types: st.SearchStrategy[ValType] = st.recursive(
    _leaves, lambda children: compound(children, lists=False), max_leaves=6
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _compiler(kernels: bool) -> Compiler:
    comp = Compiler("utf8", "i32")
    comp.kernels = kernels
    return comp


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except Exception as e:
        return "error", (type(e).__name__, getattr(e, "code", None), str(e))


def _context(mem_size: int = 1 << 16) -> tuple[LiftLowerContext, BytearrayMemory]:
    return make_cx("utf8", size=mem_size)


def _lower_both(ts: list[ValType], vs: list[Any], *, compiled: bool = False) -> None:
    """``compiled``: the types must have a compiled lower (else scalar-only ones may not)."""
    names = [f"parameter `p{k}`" for k in range(len(ts))]
    py = ValuesCodec(_compiler(False), ts, names)
    comp = _compiler(True)
    kc = ValuesCodec(comp, ts, names)
    kernel = lower_kernel(comp, kc, kc._lower_direct)
    if kernel is None:
        assert not compiled
        assert all(program(t) is not None for t in ts)
        return
    cx1, mem1 = _context()
    cx2, mem2 = _context()
    got_py = _outcome(py._lower_direct, cx1, vs)
    got_k = _outcome(kernel, cx2, vs)
    assert got_k == got_py
    assert mem2.calls == mem1.calls
    assert bytes(mem2.buf) == bytes(mem1.buf)


@SETTINGS
@given(st.lists(kernel_types, min_size=1, max_size=3).flatmap(
    lambda ts: st.tuples(st.just(ts), st.tuples(*[values(t) for t in ts]))
))  # fmt: skip
def test_lower_matches_python(case: tuple[list[ValType], tuple[Any, ...]]) -> None:
    ts, vs = case
    _lower_both(ts, list(vs))


@SETTINGS
@given(kernel_types, kernel_types.flatmap(values))
def test_lower_refusals_match_python(t: ValType, other: Any) -> None:
    """A value of another type: the same error (or the same result, if it fits)."""
    _lower_both([String(), t], ["first", other])


def test_lower_odd_values_match_python() -> None:
    t = Record((Field("x", S32()), Field("label", Option(String())), Field("b", List(U8()))))
    odd: list[Any] = [
        {"x": 1, "label": None, "b": b""},
        {"x": 1, "b": b"ab"},  # an optional field left out
        {"x": 1, "label": "a\ud800b", "b": b""},  # a lone surrogate
        {"x": 2**31, "label": None, "b": b""},
        {"x": True, "label": None, "b": b""},
        {"x": 1, "label": None, "b": bytearray(b"ab")},
        {"x": 1, "label": None, "b": b"", "extra": 0},
        {"label": None, "b": b""},
        [1, None, b""],
        None,
    ]
    for v in odd:
        _lower_both([t], [v], compiled=True)
    _lower_both([t], [], compiled=True)  # a wrong count of values


def _lift_both(t: ValType, mem_bytes: bytes, ptr: int, budget: int | None = None) -> None:
    py = ValuesCodec(_compiler(False), [t], ["result"])
    comp = _compiler(True)
    kc = ValuesCodec(comp, [t], ["result"])

    def fallback(cx: LiftLowerContext, results: Any) -> Any:
        return kc.lift_flat_values(cx, 0, results)[0]

    kernel = lift_kernel(comp, kc, fallback)
    assert kernel is not None
    cx1, mem1 = _context(len(mem_bytes))
    cx2, mem2 = _context(len(mem_bytes))
    mem1.buf[:] = mem_bytes
    mem2.buf[:] = mem_bytes
    if budget is not None:
        cx1.budget = cx2.budget = budget
    got_py = _outcome(lambda: py.lift_flat_values(cx1, 0, [ptr])[0])
    got_k = _outcome(kernel, cx2, [ptr])
    assert got_k == got_py
    assert cx2.budget == cx1.budget


@SETTINGS
@given(kernel_types.flatmap(lambda t: st.tuples(st.just(t), values(t))))
def test_lift_matches_python(case: tuple[ValType, Any]) -> None:
    t, v = case
    cx, mem = _context()
    codec = _compiler(False).codec(t)
    ptr = cx.allocate(codec.align, codec.size)
    codec.store(cx, v, ptr)
    _lift_both(t, bytes(mem.buf), ptr)
    _lift_both(t, bytes(mem.buf), ptr, budget=len(str(v)) // 2)


@SETTINGS
@given(kernel_types, st.integers(0, 2**32 - 1), st.integers(0, 2**32))
def test_lift_of_random_bytes_matches_python(t: ValType, ptr: int, seed: int) -> None:
    """Random memory: bad pointers, discriminants, lengths and UTF-8 trap alike."""
    rnd = random.Random(seed)
    size = 4096
    data = bytearray(rnd.getrandbits(8) for _ in range(size))
    # small lengths and in-bounds pointers now and then, so some strings decode
    for k in range(0, size, 8):
        if rnd.random() < 0.5:
            data[k : k + 4] = rnd.randrange(size).to_bytes(4, "little")
            data[k + 4 : k + 8] = rnd.randrange(16).to_bytes(4, "little")
    p = ptr if rnd.random() < 0.2 else rnd.randrange(size) & ~7
    _lift_both(t, bytes(data), p)


def test_programs_only_for_fixed_shapes() -> None:
    from polyengine.types.model import F64, Char

    assert program(Record((Field("x", S32()), Field("s", String())))) is not None
    assert program(List(U8())) is not None
    assert program(F64()) is None
    assert program(Char()) is None
    assert program(List(U32())) is None
    assert program(Tuple((U8(), List(S8())))) is None
    assert program(Variant((Case("a", F64()), Case("b", None)))) is None


def _record_lowers() -> tuple[Any, Any]:
    """The Python codec's and the kernel's lower of ``{x: s32, label: option<string>}``."""
    t = Record((Field("x", S32()), Field("label", Option(String()))))
    names = ["parameter `p`"]
    py = ValuesCodec(_compiler(False), [t], names)
    comp = _compiler(True)
    kc = ValuesCodec(comp, [t], names)
    kernel = lower_kernel(comp, kc, kc._lower_direct)
    assert kernel is not None
    return py._lower_direct, kernel


def _allocating_both(realloc: Any) -> None:
    """The record lowered with ``realloc`` standing in for the guest's, on both codecs."""
    got = []
    for fn in _record_lowers():
        cx, mem = _context(64)
        cx.opts.realloc = None if realloc is None else realloc(mem)
        got.append((_outcome(fn, cx, [{"x": 1, "label": "abc"}]), cx.inst.may_leave))
    assert got[1] == got[0]


def test_lower_realloc_faults_match_python() -> None:
    def failing(mem: BytearrayMemory) -> Any:
        def realloc(*args: int) -> int:
            raise RuntimeError("realloc failed")

        return realloc

    _allocating_both(None)  # no realloc option: the same trap
    _allocating_both(failing)  # may_leave restored, the same error
    _allocating_both(lambda mem: lambda *a: 62)  # a block past the end of memory
    _allocating_both(lambda mem: lambda *a: -1 + 2**33)  # masked to 32 bits
    _allocating_both(lambda mem: lambda *a: -4)  # negative: masked to 32 bits
    _allocating_both(lambda mem: lambda *a: True)  # an int subclass: masked to 1
    _allocating_both(lambda mem: mem.realloc)


class _WatchedLeave(ComponentInstance):
    """``may_leave`` behind a property: every read and write is logged."""

    def __init__(self) -> None:
        self.log: list[Any] = []
        self._leave = True
        super().__init__()

    @property
    def may_leave(self) -> bool:
        self.log.append("get")
        return self._leave

    @may_leave.setter
    def may_leave(self, value: bool) -> None:
        self.log.append(value)
        self._leave = value


class _SetattrLeave(ComponentInstance):
    """``may_leave`` a plain attribute, but every attribute write goes through ``__setattr__``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "may_leave":
            self.__dict__.setdefault("log", []).append(value)
        object.__setattr__(self, name, value)


@pytest.mark.parametrize("kind", [_WatchedLeave, _SetattrLeave])
def test_lower_realloc_honours_instance_attribute_protocol(kind: type[ComponentInstance]) -> None:
    """An instance type with its own ``may_leave`` access sees the same reads and writes."""
    got = []
    for fn in _record_lowers():
        inst = kind()
        cx, mem = make_cx("utf8", size=64, inst=inst)
        cx.opts.realloc = mem.realloc
        out = _outcome(fn, cx, [{"x": 1, "label": "abc"}])
        got.append((out, inst.__dict__.get("log"), mem.calls, bytes(mem.buf)))
    assert False in got[0][1] and True in got[0][1], got[0][1]
    assert got[1] == got[0]


def test_compiled_codecs_do_not_keep_their_function_alive() -> None:
    """A LiftedFunc and its compiled codecs (which refer back to it) are collected.

    Built directly: ``LiftedFunc.compile`` keeps one shared function per type
    and options for the process, on purpose.
    """
    import gc
    import weakref

    from polyengine.abi.functions import LiftedFunc
    from polyengine.types.model import FuncType

    t = Record((Field("x", S32()), Field("label", Option(String()))))
    lifted = LiftedFunc(_compiler(True), FuncType((("p", t),), t), is_async=False, callback=False)
    assert type(lifted.lower_params).__name__ == "Lower"
    assert type(lifted.lift_results).__name__ == "LiftSpilled"
    ref = weakref.ref(lifted)
    del lifted
    gc.collect()
    assert ref() is None


def test_shared_functions_keep_the_pure_and_compiled_paths_apart() -> None:
    """``LiftedFunc.compile`` shares one function per type and options between
    compilers, but a compiler on the pure path never gets the compiled codecs
    of one on the compiled path (nor the other way round)."""
    from polyengine.abi.functions import LiftedFunc
    from polyengine.types.model import FuncType

    t = Record((Field("x", S32()), Field("label", Option(String()))))
    ft = FuncType((("p", t),), t)
    compiled = LiftedFunc.compile(_compiler(True), ft)
    pure = LiftedFunc.compile(_compiler(False), ft)
    assert LiftedFunc.compile(_compiler(True), ft) is compiled
    assert LiftedFunc.compile(_compiler(False), ft) is pure
    assert type(compiled.lower_params).__name__ == "Lower"
    assert type(pure.lower_params).__name__ != "Lower"
