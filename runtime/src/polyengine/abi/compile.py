# ruff: noqa: PLR0124 - `x != x` is the fast NaN test on the hot path
"""The value-level canonical ABI, compiled once per type.

CanonicalABI.md §"Loading", §"Storing", §"Flat Lifting" and §"Flat Lowering"
define ``load``, ``store``, ``lift_flat`` and ``lower_flat`` as one ``match``
over the value type per call. Here a :class:`Compiler` walks a type once (at
instantiation) and returns a :class:`Codec`: four closures specialized to
that type, with offsets, sizes, case tables and struct formats resolved, so
a call does no type dispatch.

Values on the Python side are the shapes of python-mapping.md §2. The
closures' signatures:

* ``load(cx, ptr) -> value`` and ``store(cx, value, ptr)``;
* ``lift_flat(cx, vals, i) -> value``: lift from the core values
  ``vals[i : i + len(codec.flat)]``;
* ``lower_flat(cx, value, out)``: append ``len(codec.flat)`` core values to
  ``out``.

Core values are Python ``int`` (``i32``/``i64``) and ``float``
(``f32``/``f64``). Lowering produces integers as *unsigned* (as the spec's
``lower_flat_signed``); lifting accepts signed or unsigned (it masks).

Lists, variants and handles are compiled in :mod:`~polyengine.abi.lists`,
:mod:`~polyengine.abi.variants` and :mod:`~polyengine.abi.handles`; records
and tuples of plain scalars take the fused paths of :mod:`~polyengine.abi.fused`.

Bad host values raise the path-carrying errors of
:mod:`polyengine.abi.errors`; guest faults raise
:class:`~polyengine.abi.trap.Trap`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from polyengine.abi.bulk import (
    NAN,
    NUM_KINDS,
    NumKind,
    f32_round,
)
from polyengine.abi.codegen import display, make_function, offset
from polyengine.abi.errors import (
    LowerError,
    LowerOverflowError,
    LowerTypeError,
    LowerValueError,
    describe,
)
from polyengine.abi.fused import fused_loads, fused_store
from polyengine.abi.options import LiftLowerContext, StringEncoding
from polyengine.abi.resources import (
    HostResources,
    ResourceType,
)
from polyengine.abi.strings import (
    StringValue,
    make_string_decoder,
    make_string_encoder,
    store_host_string,
    store_string_into_range,
)
from polyengine.abi.trap import Trap, TrapCode
from polyengine.types.layout import (
    PtrType,
    align_to,
    alignment,
    contains,
    elem_size,
    flatten_type,
)
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
    Borrow,
    Char,
    Enum,
    ErrorContext,
    Flags,
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

__all__ = [
    "MAX_LIST_BYTE_LENGTH",
    "AsyncValueHooks",
    "Codec",
    "Compiler",
    "CoreVal",
    "lift_flat",
    "load",
    "lower_flat",
    "snake",
    "store",
]

from polyengine.abi.codec import (  # noqa: F401 - re-exported names of the codec leaf
    F32_STRUCT,
    F64_STRUCT,
    LIFT_COERCE,
    LOWER_COERCE,
    M32,
    M64,
    MAX_LIST_BYTE_LENGTH,
    U32_STRUCT,
    U64_STRUCT,
    AsyncValueHooks,
    Codec,
    CoreVal,
    LiftFlat,
    Load,
    LoadMany,
    LowerFlat,
    Store,
    decode_i32_as_float,
    decode_i64_as_float,
    encode_float_as_i32,
    encode_float_as_i64,
    need_mapping,
    need_sequence,
    snake,
    unsupported,
    with_segment,
)

#: the codecs of plain value types, shared by every compiler (see :meth:`Compiler.codec`)
_SHARED: dict[tuple[ValType, bool, str, str, bool], Codec] = {}
_SHARED_LIMIT = 20_000
#: whether a type is plain (holds no handle, stream, future or error-context), by type
_PLAIN: dict[ValType, bool] = {}


def _plain(t: ValType) -> bool:
    found = _PLAIN.get(t)
    if found is None:
        found = not contains(t, lambda u: isinstance(u, _STATEFUL))
        if len(_PLAIN) >= _SHARED_LIMIT:
            _PLAIN.clear()
        _PLAIN[t] = found
    return found


_STATEFUL = (Own, Borrow, Stream, Future, ErrorContext)
_ASYNC_VALUES = (Stream, Future, ErrorContext)
#: whether a type holds no stream, future or error-context (handles allowed), by type
_NO_ASYNC: dict[ValType, bool] = {}


def _no_async_values(t: ValType) -> bool:
    found = _NO_ASYNC.get(t)
    if found is None:
        found = not contains(t, lambda u: isinstance(u, _ASYNC_VALUES))
        if len(_NO_ASYNC) >= _SHARED_LIMIT:
            _NO_ASYNC.clear()
        _NO_ASYNC[t] = found
    return found


class Compiler:
    """Compiles value types into :class:`Codec` objects for one set of options.

    ``string_encoding`` and ``ptr_type`` come from the ``canonopt`` of the
    lift or lower; ``resource_type`` maps an ``own``/``borrow`` type's ``rt``
    index to the runtime :class:`ResourceType` (called at compile time);
    ``host_resources`` converts between reps and host objects (absent: handle
    values are the reps themselves, as between guests). With
    ``late_resources`` a handle codec instead reads the resource type and
    the host table at call time from the context's component instance
    (``cx.inst.rtypes[rt]``, ``cx.inst.host_table``; ``host_resources`` then
    only says whether handles convert to host objects), so it holds nothing
    of one instance and is shared like a plain value's. ``async_values`` are
    the concurrency layer's hooks; with ``late_async_values`` a stream,
    future or error-context codec instead reads them at call time from the
    context's component instance (``cx.inst.host_async_values``, which the
    runtime sets), so it too is shared by every instance of a component.
    With ``guest_strings`` strings lift as
    :class:`~polyengine.abi.strings.StringValue` (for a cross-component call,
    so the store side can follow the spec's transcoding); lowering accepts a
    ``str`` or a ``StringValue`` either way.
    """

    def __init__(
        self,
        string_encoding: StringEncoding = "utf8",
        ptr_type: PtrType = "i32",
        *,
        resource_type: Callable[[int], ResourceType] | None = None,
        host_resources: HostResources | None = None,
        async_values: AsyncValueHooks | None = None,
        guest_strings: bool = False,
        late_resources: bool = False,
        late_async_values: bool = False,
    ) -> None:
        self.string_encoding = string_encoding
        self.late_resources = late_resources
        self.late_async_values = late_async_values
        self.ptr_type = ptr_type
        self.resource_type = resource_type
        self.host_resources = host_resources
        self.async_values = async_values
        self.guest_strings = guest_strings
        self.ptr_mask = M32 if ptr_type == "i32" else M64
        self.ptr_pair = struct.Struct("<II" if ptr_type == "i32" else "<QQ")
        self._cache: dict[tuple[ValType, bool], Codec] = {}
        #: whether functions compiled with this compiler may use the compiled value
        #: codecs (:mod:`polyengine.abi.kernels`); set for a store on the compiled path
        self.kernels = False

    def codec(self, t: ValType, *, boxed: bool = False) -> Codec:
        """The codec of ``t``; ``boxed`` marks an option directly inside an option.

        A type that holds no handle and no stream, future or error-context
        (a plain value) compiles the same for every compiler with the same
        string encoding, pointer type and string form, so its codec is shared
        by all of them (every instance of a component compiles it once); so
        is a type holding handles but no stream, future or error-context,
        under ``late_resources``.
        """
        key = (t, boxed and isinstance(t, Option))
        c = self._cache.get(key)
        if c is None:
            shared = self.shared_key(t, key[1])
            if shared is not None:
                c = _SHARED.get(shared)
                if c is None:
                    c = self._build(t, key[1])
                    if len(_SHARED) >= _SHARED_LIMIT:
                        _SHARED.clear()
                    _SHARED[shared] = c
            else:
                c = self._build(t, key[1])
            self._cache[key] = c
        return c

    def shared_key(self, t: ValType, boxed: bool = False) -> tuple[Any, ...] | None:
        """The key of ``t``'s codec among every compiler's, ``None`` if it is this one's own.

        Also the test for whether anything compiled from ``t`` alone (a
        function's values, say) holds nothing of this compiler's instance.
        """
        base = (t, boxed, self.string_encoding, self.ptr_type, self.guest_strings)
        if _plain(t):
            return base
        if self.late_resources and _no_async_values(t):
            return (*base, self.host_resources is not None)
        if self.late_resources and self.late_async_values:
            # by the type object's identity too: the stream and future ends a codec
            # makes carry its element types, which the compiled stream copies compare
            # by identity with their plan's own (the key holds ``t``: its id stays)
            return (*base, self.host_resources is not None, "late-async-values", id(t))
        return None

    def by_identity(self, t: ValType) -> bool:
        """Whether ``t``'s shared codec is shared only by the very same type object
        (its late stream, future or error-context values; see :meth:`shared_key`)."""
        return self.late_resources and self.late_async_values and not _no_async_values(t)

    def options_key(self) -> tuple[Any, ...]:
        """What a shared codec of this compiler depends on besides its type."""
        return (
            self.string_encoding,
            self.ptr_type,
            self.guest_strings,
            self.late_resources,
            self.host_resources is not None,
            self.kernels,
            self.late_async_values,
        )

    def _make(
        self,
        t: ValType,
        load: Load,
        store: Store,
        lift_flat: LiftFlat,
        lower_flat: LowerFlat,
        *,
        load_many: LoadMany | None = None,
    ) -> Codec:
        pt = self.ptr_type
        return Codec(
            t,
            elem_size(t, pt),
            alignment(t, pt),
            tuple(flatten_type(t, pt)),
            load,
            store,
            lift_flat,
            lower_flat,
            load_many,
        )

    def _build(self, t: ValType, boxed: bool) -> Codec:
        match t:
            case Bool():
                return self._bool(t)
            case U8() | S8() | U16() | S16() | U32() | S32() | U64() | S64():
                return self._int(t, NUM_KINDS[type(t).__name__.lower()])
            case F32():
                return self._f32(t)
            case F64():
                return self._f64(t)
            case Char():
                return self._char(t)
            case String():
                return self._string(t)
            case List(et, None):
                from polyengine.abi.lists import compile_list

                return compile_list(self, t, self.codec(et))
            case List(et, length):
                from polyengine.abi.lists import compile_fixed_list

                assert length is not None
                return compile_fixed_list(self, t, self.codec(et), length)
            case Map(k, v):
                from polyengine.abi.lists import compile_map

                return compile_map(self, t, self.codec(List(Tuple((k, v)))))
            case Record(fields):
                return self._record(t, [(snake(f.label), f.t) for f in fields])
            case Tuple(ts):
                return self._tuple(t, ts)
            case Variant() | Enum() | Option() | Result():
                from polyengine.abi.variants import compile_variant

                return compile_variant(self, t, boxed)
            case Flags(labels):
                return self._flags(t, labels)
            case Own(rt) | Borrow(rt):
                from polyengine.abi.handles import compile_handle

                return compile_handle(self, t, rt)
            case Stream() | Future() | ErrorContext():
                from polyengine.abi.handles import compile_async_value

                return compile_async_value(self, t)
        raise AssertionError(f"cannot compile {t!r}")

    # --- scalars -------------------------------------------------------------

    def _bool(self, t: ValType) -> Codec:
        def check(v: Any) -> int:
            if v is True:
                return 1
            if v is False:
                return 0
            raise LowerTypeError(f"expected bool, got {describe(v)}")

        def load(cx: LiftLowerContext, ptr: int) -> bool:
            return cx.mv[ptr] != 0

        def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
            cx.mv[ptr] = check(v)

        def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> bool:
            return vals[i] != 0

        def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
            out.append(check(v))

        return self._make(t, load, store, lift_flat, lower_flat)

    def _int(self, t: ValType, kind: NumKind) -> Codec:
        s = struct.Struct("<" + kind.code)
        unpack_from, pack_into = s.unpack_from, s.pack_into
        lo, hi, name = kind.lo, kind.hi, kind.name
        bits = kind.size * 8
        tmask = (1 << bits) - 1
        core_mask = M32 if bits <= 32 else M64
        signed = lo < 0
        sign = 1 << (bits - 1)

        def check(v: Any) -> int:
            if type(v) is not int and (isinstance(v, bool) or not isinstance(v, int)):
                raise LowerTypeError(f"expected int for {name}, got {describe(v)}")
            r = int(v)
            if not lo <= r <= hi:
                raise LowerOverflowError(f"{r} is out of range for {name} ({lo}..{hi})")
            return r

        def load(cx: LiftLowerContext, ptr: int) -> int:
            r: int = unpack_from(cx.mv, ptr)[0]
            return r

        def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
            if type(v) is not int or not lo <= v <= hi:
                v = check(v)
            pack_into(cx.mv, ptr, v)

        if signed:

            def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> int:
                return ((int(vals[i]) & tmask) ^ sign) - sign

            def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
                if type(v) is not int or not lo <= v <= hi:
                    v = check(v)
                out.append(v & core_mask)

        else:

            def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> int:
                return int(vals[i]) & tmask

            def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
                if type(v) is not int or not lo <= v <= hi:
                    v = check(v)
                out.append(v)

        return self._make(t, load, store, lift_flat, lower_flat)

    @staticmethod
    def _float_check(name: str) -> Callable[[Any], float]:
        def check(v: Any) -> float:
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise LowerTypeError(f"expected float for {name}, got {describe(v)}")
            try:
                return float(v)
            except OverflowError:
                raise LowerOverflowError(f"{v} does not fit {name}") from None

        return check

    def _f32(self, t: ValType) -> Codec:
        check = self._float_check("f32")
        unpack_from, pack_into = F32_STRUCT.unpack_from, F32_STRUCT.pack_into

        def load(cx: LiftLowerContext, ptr: int) -> float:
            x: float = unpack_from(cx.mv, ptr)[0]
            return NAN if x != x else x

        def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
            if type(v) is not float:
                v = check(v)
            pack_into(cx.mv, ptr, NAN if v != v else f32_round(v))

        def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> float:
            x = vals[i]
            return NAN if x != x else float(x)

        def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
            if type(v) is not float:
                v = check(v)
            out.append(NAN if v != v else f32_round(v))

        return self._make(t, load, store, lift_flat, lower_flat)

    def _f64(self, t: ValType) -> Codec:
        check = self._float_check("f64")
        unpack_from, pack_into = F64_STRUCT.unpack_from, F64_STRUCT.pack_into

        def load(cx: LiftLowerContext, ptr: int) -> float:
            x: float = unpack_from(cx.mv, ptr)[0]
            return NAN if x != x else x

        def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
            if type(v) is not float:
                v = check(v)
            pack_into(cx.mv, ptr, NAN if v != v else v)

        def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> float:
            x = vals[i]
            return NAN if x != x else float(x)

        def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
            if type(v) is not float:
                v = check(v)
            out.append(NAN if v != v else v)

        return self._make(t, load, store, lift_flat, lower_flat)

    def _char(self, t: ValType) -> Codec:
        unpack_from, pack_into = U32_STRUCT.unpack_from, U32_STRUCT.pack_into

        def to_char(i: int) -> str:
            if i >= 0x110000 or 0xD800 <= i <= 0xDFFF:
                raise Trap(
                    f"invalid `char` bit pattern: {i:#x} is not a Unicode scalar value",
                    TrapCode.INVALID_CHAR,
                )
            return chr(i)

        def check(v: Any) -> int:
            if not isinstance(v, str) or len(v) != 1:
                raise LowerTypeError(f"expected a one-character str for char, got {describe(v)}")
            o = ord(v)
            if 0xD800 <= o <= 0xDFFF:
                raise LowerValueError(f"surrogate {o:#x} is not a valid char")
            return o

        def load(cx: LiftLowerContext, ptr: int) -> str:
            return to_char(unpack_from(cx.mv, ptr)[0])

        def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
            pack_into(cx.mv, ptr, check(v))

        def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> str:
            return to_char(int(vals[i]) & M32)

        def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
            out.append(check(v))

        return self._make(t, load, store, lift_flat, lower_flat)

    # --- strings ---------------------------------------------------------------

    def _string(self, t: ValType) -> Codec:
        enc = self.string_encoding
        decode = make_string_decoder(enc, self.ptr_type)
        encode = make_string_encoder(enc, self.ptr_type)
        pair = self.ptr_pair
        pm = self.ptr_mask
        guest = self.guest_strings

        def lift_str(cx: LiftLowerContext, ptr: int, units: int) -> Any:
            s = decode(cx.mv, ptr, units)  # bounds-checked: at most the memory's size
            left = cx.budget - len(s)
            cx.budget = left
            if left < 0:
                cx.charge(0, 0)
            return StringValue(s, enc, units) if guest else s

        def lower_str(cx: LiftLowerContext, v: Any) -> tuple[int, int]:
            if type(v) is str:
                return store_host_string(cx, v, encode)
            if isinstance(v, StringValue):
                return store_string_into_range(cx, v)
            if isinstance(v, str):
                return store_host_string(cx, str(v), encode)
            raise LowerTypeError(f"expected str, got {describe(v)}")

        def load(cx: LiftLowerContext, ptr: int) -> Any:
            p, n = pair.unpack_from(cx.mv, ptr)
            return lift_str(cx, p, n)

        def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
            p, n = lower_str(cx, v)
            pair.pack_into(cx.mv, ptr, p, n)

        def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> Any:
            return lift_str(cx, int(vals[i]) & pm, int(vals[i + 1]) & pm)

        def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
            p, n = lower_str(cx, v)
            out.append(p)
            out.append(n)

        return self._make(t, load, store, lift_flat, lower_flat)

    # --- records and tuples ------------------------------------------------------

    def _layout(self, ts: Sequence[ValType]) -> tuple[list[Codec], list[int], list[int]]:
        codecs = [self.codec(u) for u in ts]
        offsets: list[int] = []
        flat_offsets: list[int] = []
        s = 0
        f = 0
        for c in codecs:
            s = align_to(s, c.align)
            offsets.append(s)
            s += c.size
            flat_offsets.append(f)
            f += len(c.flat)
        return codecs, offsets, flat_offsets

    @staticmethod
    def _gen_loads(
        keys: Sequence[str] | None,
        codecs: Sequence[Codec],
        offs: Sequence[int],
        foffs: Sequence[int],
    ) -> tuple[Load, LiftFlat]:
        """Generated ``load``/``lift_flat`` building the record dict (or tuple) in one display."""
        env: dict[str, Any] = {}
        loads: list[str] = []
        lifts: list[str] = []
        for k, c in enumerate(codecs):
            env[f"ld{k}"], env[f"lf{k}"] = c.load, c.lift_flat
            loads.append(f"ld{k}(cx, {offset('ptr', offs[k])})")
            lifts.append(f"lf{k}(cx, vals, {offset('i', foffs[k])})")
        load = make_function("load", "cx, ptr", [f"return {display(keys, loads)}"], env)
        lift = make_function("lift_flat", "cx, vals, i", [f"return {display(keys, lifts)}"], env)
        return load, lift

    def _record(self, t: Record, fields: list[tuple[str, ValType]]) -> Codec:
        codecs, offs, foffs = self._layout([ft for _, ft in fields])
        keys = [k for k, _ in fields]
        opt = [isinstance(ft, Option) for _, ft in fields]
        stores = tuple(zip(keys, offs, [c.store for c in codecs], opt, strict=True))
        lowers = tuple(zip(keys, [c.lower_flat for c in codecs], opt, strict=True))

        def field(v: Mapping[str, Any], k: str, optional: bool) -> Any:
            if optional:
                return v.get(k)
            try:
                return v[k]
            except KeyError:
                raise LowerTypeError(f"record is missing field {k!r}") from None

        load, lift_flat = self._gen_loads(keys, codecs, offs, foffs)
        fused = fused_loads([ft for _, ft in fields], offs, elem_size(t, self.ptr_type), keys)
        nkeys, keyset, any_optional = len(keys), frozenset(keys), any(opt)

        def no_extra(v: Mapping[str, Any]) -> None:
            """Refuse keys that are no field (python-mapping.md §2): a misspelt field."""
            if len(v) > nkeys or (any_optional and not keyset.issuperset(v)):
                extra = next(k for k in v if k not in keyset)
                raise LowerTypeError(
                    f"unknown field {extra!r} for a record with fields {', '.join(keys)}"
                )

        def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
            v = need_mapping(v, "record")
            no_extra(v)
            for k, o, st, optional in stores:
                x = field(v, k, optional)
                try:
                    st(cx, x, ptr + o)
                except LowerError as e:
                    e.prefix("." + k)
                    raise

        def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
            v = need_mapping(v, "record")
            no_extra(v)
            for k, lw, optional in lowers:
                x = field(v, k, optional)
                try:
                    lw(cx, x, out)
                except LowerError as e:
                    e.prefix("." + k)
                    raise

        size = elem_size(t, self.ptr_type)
        fstore = fused_store([ft for _, ft in fields], offs, size, keys, store)
        if fstore is not None:
            fast = fstore

            def checked_store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
                if isinstance(v, Mapping):
                    no_extra(v)
                fast(cx, v, ptr)

            store = checked_store
        if fused is not None:
            return self._make(t, fused[0], store, lift_flat, lower_flat, load_many=fused[1])
        return self._make(t, load, store, lift_flat, lower_flat)

    def _tuple(self, t: Tuple, ts: Sequence[ValType]) -> Codec:
        codecs, offs, foffs = self._layout(ts)
        n = len(ts)
        stores = tuple(zip(offs, [c.store for c in codecs], strict=True))
        lowers = tuple(c.lower_flat for c in codecs)
        load, lift_flat = self._gen_loads(None, codecs, offs, foffs)
        fused = fused_loads(ts, offs, elem_size(t, self.ptr_type), None)

        def items(v: Any) -> Sequence[Any]:
            seq = need_sequence(v, f"tuple of {n}")
            if len(seq) != n:
                raise LowerValueError(f"expected a tuple of {n} elements, got {len(seq)}")
            return seq

        def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
            for k, (x, (o, st)) in enumerate(zip(items(v), stores, strict=True)):
                try:
                    st(cx, x, ptr + o)
                except LowerError as e:
                    e.prefix(f"[{k}]")
                    raise

        def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
            for k, (x, lw) in enumerate(zip(items(v), lowers, strict=True)):
                try:
                    lw(cx, x, out)
                except LowerError as e:
                    e.prefix(f"[{k}]")
                    raise

        store = fused_store(ts, offs, elem_size(t, self.ptr_type), None, store) or store
        if fused is not None:
            return self._make(t, fused[0], store, lift_flat, lower_flat, load_many=fused[1])
        return self._make(t, load, store, lift_flat, lower_flat)

    # --- flags -------------------------------------------------------------------

    def _flags(self, t: Flags, labels: Sequence[str]) -> Codec:
        names = [snake(label) for label in labels]
        pairs = tuple((nm, 1 << k) for k, nm in enumerate(names))
        bits = dict(pairs)
        s = struct.Struct("<" + {1: "B", 2: "H", 4: "I"}[elem_size(t, self.ptr_type)])
        unpack_from, pack_into = s.unpack_from, s.pack_into
        all_bits = (1 << len(names)) - 1

        def unpack(i: int) -> dict[str, bool]:
            return {nm: i & bit != 0 for nm, bit in pairs}

        def pack(v: Any) -> int:
            v = need_mapping(v, "flags")
            i = 0
            for k, b in v.items():
                bit = bits.get(k)
                if bit is None:
                    raise LowerValueError(f"unknown flag {k!r}; expected one of {names}")
                if b is True:
                    i |= bit
                elif b is not False:
                    err = LowerTypeError(f"expected bool, got {describe(b)}")
                    raise with_segment(err, "." + k)
            return i

        def load(cx: LiftLowerContext, ptr: int) -> dict[str, bool]:
            return unpack(unpack_from(cx.mv, ptr)[0])

        def store(cx: LiftLowerContext, v: Any, ptr: int) -> None:
            pack_into(cx.mv, ptr, pack(v))

        def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], i: int) -> dict[str, bool]:
            return unpack(int(vals[i]) & all_bits)

        def lower_flat(cx: LiftLowerContext, v: Any, out: list[CoreVal]) -> None:
            out.append(pack(v))

        return self._make(t, load, store, lift_flat, lower_flat)


# --- uncompiled entry points, named as in the spec --------------------------------

_COMPILERS: dict[tuple[str, str], Compiler] = {}


def _compiler_for(cx: LiftLowerContext) -> Compiler:
    key = (cx.opts.string_encoding, cx.opts.addrtype)
    comp = _COMPILERS.get(key)
    if comp is None:
        comp = _COMPILERS[key] = Compiler(cx.opts.string_encoding, cx.opts.addrtype)
    return comp


def load(cx: LiftLowerContext, ptr: int, t: ValType) -> Any:
    """``load`` of CanonicalABI.md §"Loading", compiling ``t`` on first use.

    For tools and tests; runtime paths keep the :class:`Codec` of a
    :class:`Compiler` configured with resources and hooks.
    """
    return _compiler_for(cx).codec(t).load(cx, ptr)


def store(cx: LiftLowerContext, v: Any, t: ValType, ptr: int) -> None:
    """``store`` of CanonicalABI.md §"Storing" (see :func:`load`)."""
    _compiler_for(cx).codec(t).store(cx, v, ptr)


def lift_flat(cx: LiftLowerContext, vals: Sequence[CoreVal], t: ValType) -> Any:
    """``lift_flat`` of CanonicalABI.md §"Flat Lifting" from ``vals[0:]`` (see :func:`load`)."""
    return _compiler_for(cx).codec(t).lift_flat(cx, vals, 0)


def lower_flat(cx: LiftLowerContext, v: Any, t: ValType) -> list[CoreVal]:
    """``lower_flat`` of CanonicalABI.md §"Flat Lowering" (see :func:`load`)."""
    out: list[CoreVal] = []
    _compiler_for(cx).codec(t).lower_flat(cx, v, out)
    return out
