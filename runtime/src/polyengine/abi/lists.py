"""Compiled canonical ABI of lists (and maps, their specialization).

CanonicalABI.md §"Loading" (``load_list``, ``load_list_from_range``),
§"Storing" (``store_list``, ``store_list_into_range``), §"Flat Lifting"
(``lift_flat_list``) and §"Flat Lowering" (``lower_flat_list``). Lists of
``u8`` are ``bytes`` on the Python side and move with one slice copy;
lists of other numbers and of ``bool`` move through
:mod:`polyengine.abi.bulk`; other element types are stored per element.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from polyengine.abi.bulk import NUM_KINDS, load_numbers, numbers_to_bytes
from polyengine.abi.codec import MAX_LIST_BYTE_LENGTH, Codec, CoreVal, need_sequence, with_segment
from polyengine.abi.errors import LowerError, LowerTypeError, LowerValueError, describe
from polyengine.abi.options import LiftLowerContext
from polyengine.abi.trap import range_trap
from polyengine.types.model import U8, Bool, Char, List, Map, String

if TYPE_CHECKING:
    from polyengine.abi.compile import Compiler

__all__ = ["compile_fixed_list", "compile_list", "compile_map"]


def _elements(
    ec: Codec,
) -> tuple[
    Callable[[LiftLowerContext, int, int], Any],
    Callable[[LiftLowerContext, Any, int, int], None],
    Callable[[Any], Sequence[Any] | bytes],
]:
    """Per element type: read ``n`` elements at ``ptr``, write them, and normalize a value.

    ``normalize`` turns the host value into something with a length
    (bytes for ``u8``); ``write(cx, v, ptr, n)`` writes ``n`` normalized
    elements to an already checked block.
    """
    es = ec.size
    et = ec.t
    if isinstance(et, U8):
        u8 = NUM_KINDS["u8"]

        def read_u8(cx: LiftLowerContext, ptr: int, n: int) -> bytes:
            return bytes(cx.mv[ptr : ptr + n])

        def norm_u8(v: Any) -> bytes:
            if isinstance(v, bytes | bytearray):
                return v  # type: ignore[return-value]
            if isinstance(v, memoryview):
                return v.cast("B") if v.c_contiguous else v.tobytes()  # type: ignore[return-value]
            if isinstance(v, str):
                raise LowerTypeError(f"expected bytes for list<u8>, got {describe(v)}")
            try:
                return memoryview(v).cast("B")  # type: ignore[return-value]
            except TypeError:
                pass
            return bytes(numbers_to_bytes(u8, need_sequence(v, "list<u8>")))

        def write_u8(cx: LiftLowerContext, v: Any, ptr: int, n: int) -> None:
            cx.mv[ptr : ptr + n] = v

        return read_u8, write_u8, norm_u8
    kind = NUM_KINDS.get(type(et).__name__.lower()) if not isinstance(et, Bool) else None
    if kind is not None and not isinstance(et, Char | String):
        nk = kind

        def read_num(cx: LiftLowerContext, ptr: int, n: int) -> list[Any]:
            return load_numbers(nk, cx.mv, ptr, n)

        def write_num(cx: LiftLowerContext, v: Any, ptr: int, n: int) -> None:
            data = memoryview(numbers_to_bytes(nk, v)).cast("B")
            cx.mv[ptr : ptr + n * nk.size] = data

        def norm_num(v: Any) -> Sequence[Any]:
            if isinstance(v, bytes | bytearray | memoryview):
                # python-mapping.md §2: a bytes-like object is a list<u8> only
                raise LowerTypeError(
                    f"expected a sequence of numbers for list<{nk.name}>, got {describe(v)} "
                    "(a bytes-like object is a list<u8> only)"
                )
            return need_sequence(v, f"list<{nk.name}>")

        return read_num, write_num, norm_num
    if isinstance(et, Bool):

        def read_bool(cx: LiftLowerContext, ptr: int, n: int) -> list[bool]:
            return list(map(bool, cx.mv[ptr : ptr + n]))

        def write_bool(cx: LiftLowerContext, v: Any, ptr: int, n: int) -> None:
            if not set(map(type, v)) <= {bool}:
                for k, x in enumerate(v):
                    if type(x) is not bool:
                        err = LowerTypeError(f"expected bool, got {describe(x)}")
                        raise with_segment(err, f"[{k}]")
            cx.mv[ptr : ptr + n] = bytes(v)

        return read_bool, write_bool, lambda v: need_sequence(v, "list<bool>")
    eload, estore = ec.load, ec.store
    load_many = ec.load_many

    def read_any(cx: LiftLowerContext, ptr: int, n: int) -> list[Any]:
        return [eload(cx, p) for p in range(ptr, ptr + n * es, es)]

    def write_any(cx: LiftLowerContext, v: Any, ptr: int, n: int) -> None:
        for k, x in enumerate(v):
            try:
                estore(cx, x, ptr + k * es)
            except LowerError as e:
                e.prefix(f"[{k}]")
                raise

    if load_many is not None:
        return load_many, write_any, lambda v: need_sequence(v, "list")
    return read_any, write_any, lambda v: need_sequence(v, "list")


def compile_list(comp: Compiler, t: List, ec: Codec) -> Codec:
    """``list<t>`` (§"Loading" ``load_list``, §"Storing" ``store_list``, and flat forms)."""
    read, write, normalize = _elements(ec)
    es, ea = ec.size, ec.align
    pair, pm = comp.ptr_pair, comp.ptr_mask

    def load_range(cx: LiftLowerContext, ptr: int, n: int) -> Any:
        nbytes = n * es
        if nbytes > MAX_LIST_BYTE_LENGTH or ptr & (ea - 1) or ptr + nbytes > len(cx.mv):
            range_trap("list", ptr, nbytes, ea, len(cx.mv), limit=MAX_LIST_BYTE_LENGTH)
        left = cx.budget - nbytes - n
        cx.budget = left
        if left < 0:
            cx.charge(0, 0)
        return read(cx, ptr, n)

    def store_range(cx: LiftLowerContext, v: Any) -> tuple[int, int]:
        v = normalize(v)
        n = len(v) if es != 1 or not isinstance(v, memoryview) else v.nbytes
        nbytes = n * es
        if nbytes > MAX_LIST_BYTE_LENGTH:
            raise LowerValueError(f"list of {n} elements is too long for a component")
        ptr = cx.allocate(ea, nbytes)
        if ptr & (ea - 1) or ptr + nbytes > len(cx.mv):
            range_trap("list", ptr, nbytes, ea, len(cx.mv), from_realloc=True)
        write(cx, v, ptr, n)
        return ptr, n

    def load(cx: LiftLowerContext, ptr: int) -> Any:
        p, n = pair.unpack_from(cx.mv, ptr)
        return load_range(cx, p, n)

    def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
        p, n = store_range(cx, v)
        pair.pack_into(cx.mv, ptr, p, n)

    def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> Any:
        return load_range(cx, int(vals[i]) & pm, int(vals[i + 1]) & pm)

    def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
        p, n = store_range(cx, v)
        out.append(p)
        out.append(n)

    return comp._make(t, load, store, lift_flat, lower_flat)


def compile_fixed_list(comp: Compiler, t: List, ec: Codec, length: int) -> Codec:
    """``list<t, n>``: stored and flattened like a tuple of ``n`` elements."""
    read, write, normalize = _elements(ec)
    nf = len(ec.flat)
    elift, elower = ec.lift_flat, ec.lower_flat
    is_u8 = isinstance(ec.t, U8)

    def checked(v: Any) -> Any:
        v = normalize(v)
        n = len(v) if not isinstance(v, memoryview) else v.nbytes
        if n != length:
            raise LowerValueError(f"expected exactly {length} elements, got {n}")
        return v

    def load(cx: LiftLowerContext, ptr: int) -> Any:
        return read(cx, ptr, length)

    def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
        write(cx, checked(v), ptr, length)

    def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> Any:
        items = [elift(cx, vals, i + k * nf) for k in range(length)]
        return bytes(items) if is_u8 else items

    def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
        for k, x in enumerate(checked(v)):
            try:
                elower(cx, x, out)
            except LowerError as e:
                e.prefix(f"[{k}]")
                raise

    return comp._make(t, load, store, lift_flat, lower_flat)


def compile_map(comp: Compiler, t: Map, lc: Codec) -> Codec:
    """``map<k, v>`` is its despecialization ``list<tuple<k, v>>``; lower also takes a dict."""

    def pairs(v: Any) -> Any:
        return list(v.items()) if isinstance(v, Mapping) else v

    lstore, llower = lc.store, lc.lower_flat

    def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
        lstore(cx, pairs(v), ptr)

    def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
        llower(cx, pairs(v), out)

    return comp._make(t, lc.load, store, lc.lift_flat, lower_flat)
