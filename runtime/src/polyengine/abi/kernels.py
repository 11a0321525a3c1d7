"""Value programs for the compiled lift and lower (architecture.md §5).

CanonicalABI.md §"Loading" and §"Flat Lowering" for the fixed-shape types:
records, tuples, variants, enums, options, results and flags over ``bool``,
integers, UTF-8 strings and ``list<u8>``. :func:`program` compiles such a
type once into plain data (nested tuples, an opcode first) that the
extension's interpreter (``engine/_accel_values.c``) runs; every other type
(floats, ``char``, other lists, handles, streams, futures, other string
encodings, 64-bit memories) has no program and keeps the Python codecs.

:func:`lower_kernel` and :func:`lift_kernel` wrap a :class:`ValuesCodec`'s
Python codec in the compiled one, chosen once per function type. The Python
codec stays the reference: the compiled one hands it every value it does not
accept exactly, before anything happened, so errors and traps are the Python
codec's own.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from functools import partial
from sys import intern
from typing import TYPE_CHECKING, Any

from polyengine import engine
from polyengine.abi.codec import snake
from polyengine.abi.options import CanonicalOptions, LiftLowerContext
from polyengine.abi.trap import range_trap
from polyengine.types.despecialize import despecialize
from polyengine.types.layout import (
    MAX_FLAT_PARAMS,
    MAX_FLAT_RESULTS,
    align_to,
    alignment,
    discriminant_type,
    elem_size,
    flatten_type,
    flatten_variant,
    max_case_alignment,
)
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
    Enum,
    Flags,
    List,
    Option,
    Record,
    Result,
    String,
    Tuple,
    ValType,
    Variant,
)

if TYPE_CHECKING:
    from polyengine.abi.compile import Compiler
    from polyengine.abi.functions import LiftedFunc, ValuesCodec
    from polyengine.abi.resources import ComponentInstance

__all__ = ["export_plan", "lift_kernel", "lower_kernel", "program"]

OP_BOOL, OP_INT, OP_STR, OP_BYTES, OP_RECORD, OP_TUPLE = 0, 1, 2, 3, 4, 5
OP_OPTION, OP_VARIANT, OP_ENUM, OP_FLAGS = 6, 7, 8, 9

#: (size in bytes, signed) of each integer type
_INTS: dict[type, tuple[int, int]] = {
    U8: (1, 0),
    U16: (2, 0),
    U32: (4, 0),
    U64: (8, 0),
    S8: (1, 1),
    S16: (2, 1),
    S32: (4, 1),
    S64: (8, 1),
}

Program = tuple[Any, ...]


def program(t: ValType, *, boxed: bool = False) -> Program | None:
    """The value program of ``t`` for a utf8, 32-bit-memory compiler, or ``None``.

    ``boxed`` marks an option directly inside an option (its value is the
    ``{"kind": ...}`` dict, as :mod:`~polyengine.abi.variants` maps it).
    """
    if isinstance(t, Bool):
        return (OP_BOOL,)
    ints = _INTS.get(type(t))
    if ints is not None:
        return (OP_INT, *ints)
    if isinstance(t, String):
        return (OP_STR,)
    if isinstance(t, List):
        if t.l is None and isinstance(t.t, U8):
            return (OP_BYTES,)
        return None
    if isinstance(t, Record):
        return _fields([intern(snake(f.label)) for f in t.fields], [f.t for f in t.fields])
    if isinstance(t, Tuple):
        return _fields(None, list(t.ts))
    if isinstance(t, Flags):
        names = tuple(intern(snake(label)) for label in t.labels)
        size = elem_size(t, "i32")
        if size not in {1, 2, 4}:
            return None
        return (OP_FLAGS, names, {n: 1 << k for k, n in enumerate(names)}, size)
    if isinstance(t, Variant | Enum | Option | Result):
        return _variant(t, boxed)
    return None


def _fields(keys: Sequence[str] | None, ts: Sequence[ValType]) -> Program | None:
    children: list[Program] = []
    offsets: list[int] = []
    size = 0
    for u in ts:
        p = program(u)
        if p is None:
            return None
        size = align_to(size, alignment(u, "i32"))
        offsets.append(size)
        size += elem_size(u, "i32")
        children.append(p)
    if keys is None:
        return (OP_TUPLE, tuple(children), tuple(offsets))
    optional = tuple(isinstance(u, Option) for u in ts)
    return (OP_RECORD, tuple(keys), tuple(children), tuple(offsets), optional)


def _variant(t: ValType, boxed: bool) -> Program | None:
    d = despecialize(t)
    assert isinstance(d, Variant)
    cases = d.cases
    joined = flatten_variant(cases, "i32")[1:]
    if any(ft in {"f32", "f64"} for ft in joined):
        return None
    disc_size = elem_size(discriminant_type(cases), "i32")
    payload_off = align_to(disc_size, max_case_alignment(cases, "i32"))
    inner_boxed = isinstance(t, Option)
    children: list[Program | None] = []
    pads: list[int] = []
    for c in cases:
        if c.t is None:
            children.append(None)
            pads.append(len(joined))
            continue
        p = program(c.t, boxed=inner_boxed)
        if p is None:
            return None
        children.append(p)
        pads.append(len(joined) - len(flatten_type(c.t, "i32")))
    if isinstance(t, Enum):
        labels = tuple(intern(label) for label in t.labels)
        return (OP_ENUM, labels, {k: i for i, k in enumerate(labels)}, disc_size)
    if isinstance(t, Option) and not boxed:
        return (OP_OPTION, children[1], payload_off, disc_size, pads[1], pads[0])
    if isinstance(t, Option):
        kinds: tuple[str, ...] = ("none", "some")
    elif isinstance(t, Result):
        kinds = ("ok", "err")
    else:
        kinds = tuple(intern(c.label) for c in cases)
    return (
        OP_VARIANT,
        kinds,
        tuple(children),
        {k: i for i, k in enumerate(kinds)},
        payload_off,
        disc_size,
        tuple(pads),
    )


def _plain_scalar(p: Program) -> bool:
    return p[0] in {OP_BOOL, OP_INT}


def _compiles(comp: Compiler) -> bool:
    return (
        comp.kernels
        and comp.string_encoding == "utf8"
        and comp.ptr_type == "i32"
        and not comp.guest_strings
    )


def block_trap(cx: LiftLowerContext, what: str, ptr: int, nbytes: int, align: int) -> None:
    """The trap for a block ``realloc`` returned out of bounds (as the Python codecs raise it)."""
    range_trap(what, ptr, nbytes, align, len(cx.mv), from_realloc=True)


def lower_kernel(
    comp: Compiler,
    values: ValuesCodec,
    fallback: Callable[[LiftLowerContext, Sequence[Any]], list[Any]],
) -> Callable[[LiftLowerContext, Sequence[Any]], list[Any]] | None:
    """The compiled lower of ``values`` passed flat over ``fallback``, or ``None``.

    ``None`` unless the compiled path is active, every value has a program
    and at least one is more than a plain scalar (the generated Python
    lowers those inline already).
    """
    kinds = engine.value_kernels()
    if kinds is None or not _compiles(comp):
        return None
    progs = [program(c.t) for c in values.codecs]
    if any(p is None for p in progs) or all(p is not None and _plain_scalar(p) for p in progs):
        return None
    lower: Callable[[LiftLowerContext, Sequence[Any]], list[Any]] = kinds[0](
        tuple(progs), fallback, block_trap
    )
    return lower


def lift_kernel(
    comp: Compiler,
    values: ValuesCodec,
    fallback: Callable[[LiftLowerContext, Sequence[Any]], Any],
) -> Callable[[LiftLowerContext, Sequence[Any]], Any] | None:
    """The compiled lift of one result returned through memory over ``fallback``, or ``None``."""
    kinds = engine.value_kernels()
    if kinds is None or not _compiles(comp) or len(values.codecs) != 1:
        return None
    prog = program(values.codecs[0].t)
    if prog is None:
        return None
    lift: Callable[[LiftLowerContext, Sequence[Any]], Any] = kinds[1](
        prog, fallback, values.tuple_size, values.tuple_align
    )
    return lift


def export_plan(
    comp: Compiler,
    lifted: LiftedFunc,
    opts: CanonicalOptions,
    inst: ComponentInstance,
    realloc: Callable[[int, int, int, int], int] | None = None,
) -> tuple[Any, ...] | None:
    """The plan of a compiled export call over values (``engine.export_kernel``), or ``None``.

    For a synchronous export whose parameters pass flat and all have
    programs, with no result, a ``bool`` or integer result, or one returned
    through memory that has a program
    (§"`canon lift`": ``lower_flat_values``, the core call,
    ``lift_flat_values``). The plan holds what the C call needs: the
    programs, the result's layout, the options and instance, how to make a
    :class:`LiftLowerContext` when Python code needs one (a trap, a step the
    Python codecs take), and the Python lift of the result. ``realloc`` is the
    call of ``opts.realloc``'s core function specialised
    (``engine.CoreFunc.specialize``), if the caller has it. An engine memory
    comes as its store state, its address and the address of the state's
    ``cell`` (the store context while the store is open and direct, read
    before each access); the instance's ``__dict__`` comes along when
    ``may_leave`` plainly lives in it (:func:`_plain_dict`), for the flag's
    writes around ``realloc``.
    """
    if engine.value_kernels() is None or not _compiles(comp) or lifted.is_async:
        return None
    params, results = lifted.params, lifted.results
    if params.flat_count > MAX_FLAT_PARAMS:
        return None
    progs = [program(c.t) for c in params.codecs]
    if any(p is None for p in progs):
        return None
    lift: tuple[Any, ...] | None = None
    if len(results.codecs) > 1:
        return None
    if results.codecs:
        prog = program(results.codecs[0].t)
        if prog is None:
            return None
        if results.flat_count > MAX_FLAT_RESULTS:
            lift = (prog, results.tuple_size, results.tuple_align)
        elif _plain_scalar(prog):
            lift = (prog,)  # the one core result itself
        else:
            return None
    make_cx = partial(LiftLowerContext, opts, inst)
    python_lift = lifted._lift_results_spilled
    memory: tuple[Any, ...] | None = engine.memory_parts(opts.memory)
    if memory is not None:
        memory = (*memory, ctypes.addressof(memory[0].cell))
    ci_dict = _plain_dict(inst, "may_leave")
    return (
        tuple(progs), lift, opts, inst, make_cx, block_trap, python_lift, realloc, memory, ci_dict
    )  # fmt: skip


def _plain_dict(obj: object, name: str) -> dict[str, Any] | None:
    """``obj.__dict__`` when reading and writing ``obj.<name>`` are that dict's item.

    No class of ``obj`` defines ``name`` or customises attribute access, and
    the dict holds ``name`` already; otherwise ``None``.
    """
    cls = type(obj)
    plain = (
        cls.__getattribute__ is object.__getattribute__
        and cls.__setattr__ is object.__setattr__
        and all(name not in vars(k) for k in cls.__mro__)
    )
    found = getattr(obj, "__dict__", None) if plain else None
    return found if type(found) is dict and name in found else None
