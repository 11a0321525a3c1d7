"""The inline scalar conversions (``scalar_lifting``, ``scalar_lowering``, ``scalar_guard``)
agree with the compiled codecs they stand in for."""

from __future__ import annotations

import itertools
import math
import struct
from typing import Any

import pytest

from polyengine.abi.bulk import NAN
from polyengine.abi.compile import Compiler
from polyengine.abi.errors import LowerError
from polyengine.abi.functions import scalar_guard, scalar_lifting, scalar_lowering
from polyengine.types.model import F32, F64, S8, S16, S32, S64, U8, U16, U32, U64, Bool, Char

SCALARS = [Bool(), U8(), S8(), U16(), S16(), U32(), S32(), U64(), S64(), F32(), F64()]
CORE = {F32: "<f", F64: "<d", U64: "<Q", S64: "<Q"}

VALUES: list[Any] = [
    0, 1, -1, 127, 128, -128, -129, 255, 256, 2**15, -(2**15), 2**16, 2**31, -(2**31),
    2**32 - 1, 2**32, 2**63, -(2**63), 2**64 - 1, 2**64, True, False, 0.5, -0.0, math.nan,
    math.inf, 3.4028234663852886e38, 3.5e38, 1e300, "x", None,
]  # fmt: skip


def _eval(src: str, **names: Any) -> Any:
    return eval(src, {"NAN": NAN}, names)  # our own generated source


def _packed(t: Any, v: Any) -> bytes:
    return struct.pack(CORE.get(type(t), "<I"), v)


@pytest.mark.parametrize("t", SCALARS, ids=lambda t: type(t).__name__)
def test_lowering_guard_and_value_match_the_codec(t: Any) -> None:
    codec = Compiler("utf8").codec(t)
    lowering = scalar_lowering(t, "v")
    assert lowering is not None
    guard, flat = lowering
    for v in VALUES:
        out: list[Any] = []
        try:
            codec.lower_flat(None, v, out)  # type: ignore[arg-type]
        except LowerError:
            assert not _eval(guard, v=v), v
            continue
        if _eval(guard, v=v):
            assert _packed(t, _eval(flat, v=v)) == _packed(t, out[0]), v


@pytest.mark.parametrize("t", SCALARS, ids=lambda t: type(t).__name__)
def test_lifting_matches_the_codec(t: Any) -> None:
    codec = Compiler("utf8").codec(t)
    floats = isinstance(t, F32 | F64)
    flats: list[Any] = (
        [0.0, -0.0, 1.5, math.inf, math.nan]
        if floats
        else [0, 1, 127, 128, 255, 2**15, 2**31, 2**32 - 1, 2**63, 2**64 - 1]
    )
    for exact in (False, True):
        src = scalar_lifting(t, "x", 0, exact=exact)
        assert src is not None
        for x in flats:
            if exact and not floats and x >= 2 ** (32 if codec.flat[0] == "i32" else 64):
                continue
            want, got = codec.lift_flat(None, [x], 0), _eval(src, x=x)  # type: ignore[arg-type]
            assert type(got) is type(want)
            assert got == want or (math.isnan(got) and math.isnan(want)), (x, exact)


def test_merged_guard_equals_the_separate_guards() -> None:
    ints = [U8(), U16(), U32(), U64(), S8()]
    for t1, t2, t3 in itertools.product(ints, ints, [U32(), F64()]):
        ts = [t1, t2, t3]
        merged = scalar_guard(ts, ["a", "b", "c"])
        assert merged is not None
        parts = [scalar_lowering(t, v) for t, v in zip(ts, "abc", strict=True)]
        for a, b in itertools.product(VALUES, VALUES):
            names = {"a": a, "b": b, "c": 7}
            each = all(_eval(p[0], **names) for p in parts if p is not None)
            assert bool(_eval(merged, **names)) == each, (ts, a, b)


def test_other_types_have_no_inline_source() -> None:
    assert scalar_lowering(Char(), "v") is None
    assert scalar_lifting(Char(), "x", 0) is None
    assert scalar_guard([U32(), Char()], ["a", "b"]) is None
    assert scalar_guard([], []) == "True"
