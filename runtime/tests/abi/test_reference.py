"""Differential tests against the spec's reference ``definitions.py``.

The reference is not part of the repository: set ``POLYENGINE_CM_SPEC`` to
the path of ``design/mvp/canonical-abi/definitions.py`` of a component-model
checkout (a local default is tried). Without it these tests are skipped.

For generated types and values the bytes written to memory, the sequence of
``realloc`` calls and the flat core values must be exactly the reference's,
and the reference must lift our flat values back to the same value.
"""

from __future__ import annotations

import importlib.util
import math
import os
import struct
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from abi_helpers import make_cx, same
from abi_strategies import encodings, ptr_types, types, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyengine.abi.compile import Compiler, snake
from polyengine.abi.functions import ValuesCodec
from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.options import StringEncoding
from polyengine.types.layout import PtrType
from polyengine.types.model import (
    F32,
    F64,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    Char,
    Enum,
    Flags,
    List,
    Map,
    Option,
    Record,
    Result,
    String,
    Tuple,
    ValType,
    Variant,
)

_DEFAULT = Path("/work/spec/design/mvp/canonical-abi/definitions.py")


def _load_reference() -> ModuleType | None:
    path = Path(os.environ.get("POLYENGINE_CM_SPEC", _DEFAULT))
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("cm_reference_definitions", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    mod.DETERMINISTIC_PROFILE = True  # type: ignore[attr-defined]
    return mod


ref = _load_reference()
if ref is None:
    pytest.skip("POLYENGINE_CM_SPEC does not name definitions.py", allow_module_level=True)
R: Any = ref

MEM_SIZE = 1 << 18
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_SIMPLE = {
    Bool: "BoolType",
    U8: "U8Type",
    S8: "S8Type",
    U16: "U16Type",
    S16: "S16Type",
    U32: "U32Type",
    S32: "S32Type",
    U64: "U64Type",
    S64: "S64Type",
    F32: "F32Type",
    F64: "F64Type",
    Char: "CharType",
    String: "StringType",
}


def ref_type(t: ValType) -> Any:
    """Our type as the reference's type object."""
    name = _SIMPLE.get(type(t))
    if name is not None:
        return getattr(R, name)()
    match t:
        case List(et, n):
            return R.ListType(ref_type(et), n)
        case Record(fields):
            return R.RecordType([R.FieldType(f.label, ref_type(f.t)) for f in fields])
        case Tuple(ts):
            return R.TupleType([ref_type(u) for u in ts])
        case Variant(cases):
            return R.VariantType(
                [R.CaseType(c.label, None if c.t is None else ref_type(c.t)) for c in cases]
            )
        case Enum(labels):
            return R.EnumType(list(labels))
        case Option(u):
            return R.OptionType(ref_type(u))
        case Result(ok, err):
            return R.ResultType(
                None if ok is None else ref_type(ok), None if err is None else ref_type(err)
            )
        case Flags(labels):
            return R.FlagsType(list(labels))
        case Map(k, v):
            return R.MapType(ref_type(k), ref_type(v))
    raise AssertionError(t)


def ref_string(s: str, enc: StringEncoding, pt: PtrType) -> tuple[str, str, int]:
    """A host string as the reference's (str, encoding, code units) in the same encoding."""
    if enc == "utf8":
        return (s, enc, len(s.encode("utf-8")))
    units = len(s.encode("utf-16-le")) // 2
    if enc == "utf16":
        return (s, enc, units)
    try:
        return (s, enc, len(s.encode("latin-1")))
    except UnicodeEncodeError:
        return (s, enc, units | (1 << (63 if pt == "i64" else 31)))


def ref_value(t: ValType, v: Any, enc: StringEncoding, pt: PtrType, boxed: bool = False) -> Any:
    """Our Python value (python-mapping.md §2) as the reference's value."""
    match t:
        case String():
            return ref_string(v, enc, pt)
        case List(U8(), _):
            return list(v)
        case List(et, _):
            return [ref_value(et, x, enc, pt) for x in v]
        case Record(fields):
            return {f.label: ref_value(f.t, v[snake(f.label)], enc, pt) for f in fields}
        case Tuple(ts):
            return {
                str(i): ref_value(u, x, enc, pt) for i, (u, x) in enumerate(zip(ts, v, strict=True))
            }
        case Variant(cases):
            (c,) = [c for c in cases if c.label == v["kind"]]
            return {c.label: None if c.t is None else ref_value(c.t, v["value"], enc, pt)}
        case Enum():
            return {v: None}
        case Option(u):
            inner = isinstance(u, Option)
            if boxed:
                if v["kind"] == "none":
                    return {"none": None}
                return {"some": ref_value(u, v["value"], enc, pt, inner)}
            return {"none": None} if v is None else {"some": ref_value(u, v, enc, pt, inner)}
        case Result(ok, err):
            label, pt_ = ("ok", ok) if v["kind"] == "ok" else ("error", err)
            return {label: None if pt_ is None else ref_value(pt_, v["value"], enc, pt)}
        case Flags(labels):
            return {lb: v[snake(lb)] for lb in labels}
        case Map(k, val):
            return [{"0": ref_value(k, a, enc, pt), "1": ref_value(val, b, enc, pt)} for a, b in v]
    return v


class _RefCx(R.LiftLowerContext):  # type: ignore[misc]
    """The reference's context with ``realloc`` as a direct call into a bump allocator."""

    def __init__(self, enc: StringEncoding, pt: PtrType, mem: BytearrayMemory) -> None:
        opts = R.LiftLowerOptions(enc, R.MemInst(mem.buf, pt), None)
        super().__init__(opts, R.ComponentInstance(R.Store()))
        self.mem = mem

    def reallocate(self, old: int, old_len: int, align: int, new_len: int) -> int:
        ptr = self.mem.realloc(old, old_len, align, new_len)
        assert len(self.mem.buf) == MEM_SIZE, "the reference memory cannot grow"
        return ptr


def _bits(xs: list[Any]) -> list[Any]:
    """Core values compared by value and sign, NaNs by bit pattern (padding may be 0 or 0.0)."""
    out: list[Any] = []
    for x in xs:
        if isinstance(x, float) and math.isnan(x):
            out.append(struct.pack("<d", x))
        else:
            out.append((x, math.copysign(1.0, x)))
    return out


@SETTINGS
@given(st.data(), types, encodings, ptr_types)
def test_same_bytes_reallocs_and_flat_values_as_the_reference(
    data: st.DataObject, t: ValType, enc: StringEncoding, pt: PtrType
) -> None:
    v = data.draw(values(t))
    rt, rv = ref_type(t), ref_value(t, v, enc, pt)
    codec = Compiler(enc, pt).codec(t)
    assert codec.size == R.elem_size(rt, pt)
    assert codec.align == R.alignment(rt, pt)
    assert list(codec.flat) == R.flatten_type(rt, R.LiftLowerOptions(enc, R.MemInst(b"", pt)))

    cx, mem = make_cx(enc, ptr_type=pt, size=MEM_SIZE)
    ref_mem = BytearrayMemory(MEM_SIZE)
    rcx = _RefCx(enc, pt, ref_mem)
    codec.store(cx, v, 256)
    R.store(rcx, rv, rt, 256)
    assert mem.calls == ref_mem.calls
    assert mem.buf == ref_mem.buf

    flat: list[Any] = []
    codec.lower_flat(cx, v, flat)
    ref_flat = R.lower_flat(rcx, rv, rt)
    assert _bits(flat) == _bits(ref_flat)
    assert mem.calls == ref_mem.calls
    assert mem.buf == ref_mem.buf
    assert same(R.lift_flat(rcx, R.CoreValueIter(flat), rt), rv)
    assert same(R.load(rcx, 256, rt), rv)


@SETTINGS
@given(st.data(), types, st.sampled_from(["utf8", "utf16", "latin1+utf16"]), encodings)
def test_guest_to_guest_transcoding_matches_the_reference(
    data: st.DataObject, t: ValType, src: StringEncoding, dst: StringEncoding
) -> None:
    v = data.draw(values(t))
    src_cx, _ = make_cx(src, size=MEM_SIZE)
    Compiler(src).codec(t).store(src_cx, v, 256)
    lifted = Compiler(src, guest_strings=True).codec(t).load(src_cx, 256)
    ours, mem = make_cx(dst, size=MEM_SIZE)
    Compiler(dst).codec(t).store(ours, lifted, 256)

    ref_src = _RefCx(src, "i32", BytearrayMemory(MEM_SIZE))
    ref_src.mem.buf[:] = src_cx.mv
    ref_lifted = R.load(ref_src, 256, ref_type(t))
    ref_mem = BytearrayMemory(MEM_SIZE)
    R.store(_RefCx(dst, "i32", ref_mem), ref_lifted, ref_type(t), 256)
    assert mem.calls == ref_mem.calls
    assert mem.buf == ref_mem.buf


@SETTINGS
@given(st.data(), st.lists(types, max_size=20), encodings, st.sampled_from([1, 4, 16]))
def test_value_lists_spill_like_the_reference(
    data: st.DataObject, ts: list[ValType], enc: StringEncoding, max_flat: int
) -> None:
    vs = [data.draw(values(t)) for t in ts]
    rts = [ref_type(t) for t in ts]
    rvs = [ref_value(t, v, enc, "i32") for t, v in zip(ts, vs, strict=True)]
    codec = ValuesCodec(Compiler(enc), ts, [f"p{i}" for i in range(len(ts))])
    cx, mem = make_cx(enc, size=MEM_SIZE)
    ref_mem = BytearrayMemory(MEM_SIZE)
    rcx = _RefCx(enc, "i32", ref_mem)
    flat = codec.lower_flat_values(cx, max_flat, vs)
    ref_flat = R.lower_flat_values(rcx, max_flat, rvs, rts)
    assert _bits(flat) == _bits(ref_flat)
    assert mem.calls == ref_mem.calls
    assert mem.buf == ref_mem.buf
    assert same(R.lift_flat_values(rcx, max_flat, R.CoreValueIter(flat), rts), rvs)
    # Into a caller-provided out-pointer.
    out = codec.lower_flat_values(cx, max_flat, vs, 512)
    ref_out = R.lower_flat_values(rcx, max_flat, rvs, rts, R.CoreValueIter([512]))
    assert _bits(out) == _bits(ref_out)
    assert mem.calls == ref_mem.calls
    assert mem.buf == ref_mem.buf
