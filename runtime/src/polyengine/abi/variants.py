"""Compiled canonical ABI of the variant family: variant, enum, option, result.

CanonicalABI.md §"Loading" (``load_variant``), §"Storing" (``store_variant``),
§"Flat Lifting" (``lift_flat_variant`` with its coercing iterator) and
§"Flat Lowering" (``lower_flat_variant``). All four types share the layout
of their despecialization; they differ only in the Python value shape
(python-mapping.md §2), captured by a ``make``/``split`` pair:

* ``variant``: ``{"kind": label}`` or ``{"kind": label, "value": v}``;
* ``result`` as a value: the same with kinds ``"ok"``/``"err"``;
* ``enum``: the label ``str``;
* ``option``: ``None`` or the payload, or, when directly inside another
  option, boxed as ``{"kind": "none"}``/``{"kind": "some", "value": v}``.

A payload of option type may be left out of a lowered ``{"kind": ...}``
dict (it means ``None``), as for record fields.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from polyengine.abi.codec import LIFT_COERCE, LOWER_COERCE, M32, Codec, CoreVal
from polyengine.abi.errors import LowerError, LowerTypeError, LowerValueError, describe
from polyengine.abi.options import LiftLowerContext
from polyengine.abi.trap import TrapCode, trap
from polyengine.types.despecialize import despecialize
from polyengine.types.layout import (
    align_to,
    discriminant_type,
    elem_size,
    flatten_variant,
    max_case_alignment,
)
from polyengine.types.model import Enum, Option, Result, ValType, Variant

if TYPE_CHECKING:
    from polyengine.abi.compile import Compiler

__all__ = ["compile_variant"]

Make = Callable[[int, Any], Any]
Split = Callable[[Any], tuple[int, Any]]


def _dict_shape(kinds: Sequence[str], payload: Sequence[ValType | None]) -> tuple[Make, Split]:
    """``{"kind": k}`` / ``{"kind": k, "value": v}`` (variant, result, boxed option)."""
    index = {k: i for i, k in enumerate(kinds)}
    has_payload = [p is not None for p in payload]
    optional = [isinstance(p, Option) for p in payload]

    def make(i: int, v: Any) -> Any:
        if has_payload[i]:
            return {"kind": kinds[i], "value": v}
        return {"kind": kinds[i]}

    def split(v: Any) -> tuple[int, Any]:
        if type(v) is not dict and not isinstance(v, Mapping):
            raise LowerTypeError(f"expected a dict with a 'kind' key, got {describe(v)}")
        try:
            kind = v["kind"]
        except KeyError:
            raise LowerTypeError("missing the 'kind' key") from None
        try:
            i = index[kind]
        except (KeyError, TypeError):
            raise LowerValueError(f"unknown case {kind!r}; expected one of {list(kinds)}") from None
        if len(v) > 1 + has_payload[i]:
            # python-mapping.md §2: a key that is neither 'kind' nor the case's 'value'
            # (a payloadless case tolerates only ``"value": None``)
            allowed = ("kind", "value") if has_payload[i] else ("kind",)
            extra = next((k for k in v if k not in allowed), None)
            if extra is None:
                pass
            elif extra != "value":
                raise LowerTypeError(
                    f"unknown key {extra!r}: case {kind!r} takes only 'kind' and 'value'"
                )
            elif v["value"] is not None or len(v) > 2:
                raise LowerTypeError(f"unknown key 'value': case {kind!r} has no payload")
        if not has_payload[i]:
            return i, None
        if optional[i]:
            return i, v.get("value")
        try:
            return i, v["value"]
        except KeyError:
            raise LowerTypeError(f"case {kind!r} needs a 'value'") from None

    return make, split


def _enum_shape(labels: Sequence[str]) -> tuple[Make, Split]:
    index = {k: i for i, k in enumerate(labels)}

    def make(i: int, v: Any) -> Any:
        return labels[i]

    def split(v: Any) -> tuple[int, Any]:
        if type(v) is not str and not isinstance(v, str):
            raise LowerTypeError(f"expected an enum case str, got {describe(v)}")
        try:
            return index[v], None
        except KeyError:
            raise LowerValueError(f"unknown case {v!r}; expected one of {list(labels)}") from None

    return make, split


def _option_shape() -> tuple[Make, Split]:
    def make(i: int, v: Any) -> Any:
        return v if i else None

    def split(v: Any) -> tuple[int, Any]:
        return (0, None) if v is None else (1, v)

    return make, split


def compile_variant(comp: Compiler, t: ValType, boxed: bool) -> Codec:
    """The codec of a variant-family type ``t`` (see the module docstring)."""
    d = despecialize(t)
    assert isinstance(d, Variant)
    cases = d.cases
    segment = ".value"
    match t:
        case Enum(labels):
            make, split = _enum_shape(labels)
        case Option() if not boxed:
            make, split = _option_shape()
            segment = ""
        case Option(u):
            make, split = _dict_shape(["none", "some"], [None, u])
        case Result(ok, err):
            make, split = _dict_shape(["ok", "err"], [ok, err])
        case _:
            make, split = _dict_shape([c.label for c in cases], [c.t for c in cases])

    inner_boxed = isinstance(t, Option)
    codecs = [None if c.t is None else comp.codec(c.t, boxed=inner_boxed) for c in cases]
    pt = comp.ptr_type
    n = len(cases)
    disc_size = elem_size(discriminant_type(cases), pt)
    disc = struct.Struct("<" + {1: "B", 2: "H", 4: "I"}[disc_size])
    d_unpack, d_pack = disc.unpack_from, disc.pack_into
    payload_off = align_to(disc_size, max_case_alignment(cases, pt))
    joined = flatten_variant(cases, pt)[1:]
    zeros = [0.0 if ft[0] == "f" else 0 for ft in joined]

    loads = [None if c is None else c.load for c in codecs]
    stores = [None if c is None else c.store for c in codecs]
    lifts: list[Callable[[LiftLowerContext, Sequence[CoreVal], int], Any] | None] = []
    lowers: list[Callable[[LiftLowerContext, Any, list[CoreVal]], None] | None] = []
    for c in codecs:
        if c is None:
            lifts.append(None)
            lowers.append(None)
            continue
        pairs = list(zip(joined, c.flat, strict=False))
        if all(have == want for have, want in pairs):
            lifts.append(_shifted_lift(c))
            lowers.append(_padded_lower(c, zeros))
        else:
            lift_conv = [LIFT_COERCE.get((h, w)) for h, w in pairs]
            lower_conv = [LOWER_COERCE.get((w, h)) for h, w in pairs]
            lifts.append(_coerced_lift(c, lift_conv))
            lowers.append(_coerced_lower(c, lower_conv, zeros))

    def load(cx: LiftLowerContext, ptr: int) -> Any:
        i = d_unpack(cx.mv, ptr)[0]
        if i >= n:
            _invalid_case(i, n)
        ld = loads[i]
        return make(i, None if ld is None else ld(cx, ptr + payload_off))

    def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
        i, payload = split(v)
        d_pack(cx.mv, ptr, i)
        st = stores[i]
        if st is not None:
            try:
                st(cx, payload, ptr + payload_off)
            except LowerError as e:
                if segment:
                    e.prefix(segment)
                raise

    def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> Any:
        k = int(vals[i]) & M32
        if k >= n:
            _invalid_case(k, n)
        lf = lifts[k]
        return make(k, None if lf is None else lf(cx, vals, i + 1))

    if not segment:  # an option as ``None`` or its payload: ``make`` inline
        some_load, some_lift = loads[1], lifts[1]
        assert some_load is not None and some_lift is not None

        def load_option(cx: LiftLowerContext, ptr: int) -> Any:
            i = d_unpack(cx.mv, ptr)[0]
            if i == 0:
                return None
            if i >= n:
                _invalid_case(i, n)
            return some_load(cx, ptr + payload_off)

        def lift_flat_option(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> Any:
            k = int(vals[i]) & M32
            if k == 0:
                return None
            if k >= n:
                _invalid_case(k, n)
            return some_lift(cx, vals, i + 1)

        load, lift_flat = load_option, lift_flat_option

    def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
        k, payload = split(v)
        out.append(k)
        lw = lowers[k]
        if lw is None:
            out.extend(zeros)
            return
        try:
            lw(cx, payload, out)
        except LowerError as e:
            if segment:
                e.prefix(segment)
            raise

    return comp._make(t, load, store, lift_flat, lower_flat)


def _invalid_case(i: int, n: int) -> NoReturn:
    trap(TrapCode.INVALID_DISCRIMINANT, f"invalid variant discriminant: case {i} of {n} cases")


def _shifted_lift(c: Codec) -> Callable[[LiftLowerContext, Sequence[CoreVal], int], Any]:
    return c.lift_flat


def _padded_lower(
    c: Codec, zeros: list[CoreVal]
) -> Callable[[LiftLowerContext, Any, list[CoreVal]], None]:
    lower, pad = c.lower_flat, zeros[len(c.flat) :]

    def lower_padded(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
        lower(cx, v, out)
        out.extend(pad)

    return lower_padded


def _coerced_lift(
    c: Codec, conv: list[Callable[[Any], CoreVal] | None]
) -> Callable[[LiftLowerContext, Sequence[CoreVal], int], Any]:
    lift, m = c.lift_flat, len(conv)

    def lift_coerced(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> Any:
        window = [x if f is None else f(x) for f, x in zip(conv, vals[i : i + m], strict=True)]
        return lift(cx, window, 0)

    return lift_coerced


def _coerced_lower(
    c: Codec, conv: list[Callable[[Any], CoreVal] | None], zeros: list[CoreVal]
) -> Callable[[LiftLowerContext, Any, list[CoreVal]], None]:
    lower, pad = c.lower_flat, zeros[len(conv) :]

    def lower_coerced(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
        tmp: list[CoreVal] = []
        lower(cx, v, tmp)
        out.extend([x if f is None else f(x) for f, x in zip(conv, tmp, strict=True)])
        out.extend(pad)

    return lower_coerced
