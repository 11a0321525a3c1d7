"""The call path: the one part of the engine a compiled accelerator replaces.

architecture.md §5.  Everything above the engine calls core code and is
called by it through three things only, all built here:

* :func:`export_caller` — the specialised call of one core function for one
  flat signature: ``call(a0, a1, ...)`` takes each argument in the format
  the caller chose for its slot and returns the result in the format chosen
  for it (the fast path of a scalar export);
* :func:`flat_caller` — the general call of one core function:
  ``call(flat_args) -> tuple`` (every other export, adapters, realloc);
* :func:`host_trampoline` — the C callback shared by every host function of
  one core signature; it finds the function's body and store from the
  ``env`` wasmtime passes (:data:`~._store.HOST_ENTRIES`), so defining a host
  function in a store makes no callback of its own.

Slot formats are ``struct`` codes: ``I``/``i`` (an ``i32`` slot read or
written as unsigned or signed), ``Q``/``q`` (``i64``), ``f`` (``f32``),
``d`` (``f64``).  A value outside its format's range raises ``ValueError``
before anything runs (the caller may then take its general path); nothing
else a call raises is a ``ValueError``: a trap is a
:class:`~polyengine.engine.CoreTrap`, a host function's
``KeyboardInterrupt``/``SystemExit`` is itself.

Calls use wasmtime's unchecked entry point over a per-function buffer of
``wasmtime_val_raw_t`` slots, through a prototype without argument types
called with the function's prebuilt ctypes arguments (``CoreFunc._call_args``),
only while the store is open and not async-required (``state.direct``);
otherwise the call goes through ``CoreFunc.call_raw``, which takes the
store's other paths or raises ``StoreClosedError``.

When the compiled call path is active (``_accelerator.py``), the three are
built by ``_accel.c`` instead, from the same pieces and with the same
behaviour: the slots live on the C stack, the open-and-direct test reads the
store's ``cell``, and every case other than the fast one (a store that is
not direct, a flat argument ``struct`` would not take as it is, a host
result that is not plain) runs the Python code of this module.
"""

from __future__ import annotations

import ctypes
import struct
import sys
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

from . import _ffi as ffi
from ._accelerator import ACCEL
from ._errors import EngineError
from ._store import (
    COMPILED_STORES,
    ENV_TAG_BITS,
    HOST_ENTRIES,
    _StoreState,
    plain_entry,
    raise_call_failure,
)
from ._values import CoreValue, normalize, raw_struct

if TYPE_CHECKING:
    from ._core import CoreFunc
    from ._store import EngineStore

__all__ = [
    "SLOT_FORMATS",
    "blocking_driver",
    "compiled_path",
    "export_caller",
    "export_kernel",
    "flat_caller",
    "host_callback",
    "host_trampoline",
    "raw_caller",
]

HostFunction: TypeAlias = Callable[[Sequence[CoreValue]], Sequence[CoreValue]]

#: the slot formats each core value type accepts
SLOT_FORMATS: dict[str, str] = {"i32": "Ii", "i64": "Qq", "f32": "f", "f64": "d"}
_WIDTH = {"I": 32, "i": 32, "Q": 64, "q": 64}
_LITTLE = sys.byteorder == "little"


def check_formats(types: Sequence[str], formats: str, what: str) -> None:
    """``ValueError`` unless ``formats`` gives one accepted slot format per type."""
    if len(formats) != len(types) or any(
        f not in SLOT_FORMATS.get(t, "") for t, f in zip(types, formats, strict=False)
    ):
        raise ValueError(
            f"{what} formats {formats!r} do not fit the core types ({', '.join(types)})"
        )


def _to_format(fmt: str, value: CoreValue) -> CoreValue:
    """A result read as unsigned bits (``call_raw``'s reading) in the format ``fmt``."""
    bits = _WIDTH.get(fmt)
    if fmt in "iq" and bits is not None and int(value) >= 1 << (bits - 1):
        return int(value) - (1 << bits)
    return value


def _slow_caller(func: CoreFunc, formats: str, rformats: str) -> Callable[..., Any]:
    """The specialised call through ``call_raw`` (closed or async-required store)."""
    check = struct.Struct("<" + formats)
    nresults = len(rformats)

    def slow(*args: CoreValue) -> Any:
        try:
            check.pack(*args)
        except struct.error as exc:
            raise ValueError(f"an argument does not fit its slot: {exc}") from None
        out = func.call_raw(list(args))
        if nresults == 0:
            return None
        if nresults == 1:
            return _to_format(rformats, out[0])
        return tuple(_to_format(f, v) for f, v in zip(rformats, out, strict=True))

    return slow


def export_caller(func: CoreFunc, formats: str, rformats: str) -> Callable[..., Any]:
    """The specialised call of ``func``: ``call(*args)`` with ``formats`` in, ``rformats`` out.

    One result is returned as the value, none as ``None``, several as a
    tuple.  ``ValueError`` if the formats do not fit ``func``'s core type.
    """
    check_formats(func.params, formats, "parameter")
    check_formats(func.results, rformats, "result")
    slow = _slow_caller(func, formats, rformats)
    state = func._state
    if _ACCEL is not None and state.compiled and func._nslots < _ACCEL.MAX_SLOTS:
        # The pure path's memoryview slots (one or two arguments, at most one
        # result) raise TypeError for a value of the wrong type; its struct
        # raises ValueError (struct.error) for every argument it refuses.
        value_errors = not (_LITTLE and len(formats) <= 2 and len(rformats) <= 1)
        caller: Callable[..., Any] = _ACCEL.Caller(
            ctypes.addressof(state.cell),
            func._addr,
            func._nslots,
            formats,
            rformats,
            0,
            int(value_errors),
            slow,
            _failure(state),
            func,
        )
        return caller
    untyped = ffi.func_call_unchecked_untyped
    call_args = func._call_args
    trap = func._trap
    fail = func._call_failed
    raw: Any = memoryview(func._buf).cast("B")
    n, m = len(formats), len(rformats)
    if not _LITTLE or n > 2 or m > 1:
        pack = struct.Struct("<" + "".join(f + ("12x" if f in "Iif" else "8x") for f in formats))
        unpack = struct.Struct("<" + "".join(f + ("12x" if f in "Iif" else "8x") for f in rformats))
        pack_into, unpack_from = pack.pack_into, unpack.unpack_from
        buf = func._buf

        def call_n(*args: CoreValue) -> Any:
            if not state.direct:
                return slow(*args)
            try:
                pack_into(buf, 0, *args)
            except struct.error as exc:
                raise ValueError(f"an argument does not fit its slot: {exc}") from None
            err = untyped(*call_args)
            if err or trap.value:
                fail(err)
            if m == 1:
                return unpack_from(buf)[0]
            return unpack_from(buf) if m else None

        return call_n

    # One or two arguments and at most one result: typed views of the slots;
    # storing through a view checks the value's range (``ValueError``).
    def slot(fmt: str, k: int) -> tuple[memoryview[Any], int]:
        view = raw.cast(fmt)
        return view, k * (ffi.VAL_RAW_SIZE // view.itemsize)

    out = raw.cast(rformats) if m else raw
    if n == 0:

        def call0() -> Any:
            if not state.direct:
                return slow()
            err = untyped(*call_args)
            if err or trap.value:
                fail(err)
            return out[0] if m else None

        return call0
    va, ia = slot(formats[0], 0)
    if n == 1:
        if m:

            def call1(a: CoreValue) -> Any:
                if not state.direct:
                    return slow(a)
                va[ia] = a
                err = untyped(*call_args)
                if err or trap.value:
                    fail(err)
                return out[0]

            return call1

        def call1_none(a: CoreValue) -> Any:
            if not state.direct:
                return slow(a)
            va[ia] = a
            err = untyped(*call_args)
            if err or trap.value:
                fail(err)
            return None

        return call1_none
    vb, ib = slot(formats[1], 1)
    if m:

        def call2(a: CoreValue, b: CoreValue) -> Any:
            if not state.direct:
                return slow(a, b)
            va[ia] = a
            vb[ib] = b
            err = untyped(*call_args)
            if err or trap.value:
                fail(err)
            return out[0]

        return call2

    def call2_none(a: CoreValue, b: CoreValue) -> Any:
        if not state.direct:
            return slow(a, b)
        va[ia] = a
        vb[ib] = b
        err = untyped(*call_args)
        if err or trap.value:
            fail(err)
        return None

    return call2_none


def flat_caller(func: CoreFunc) -> Callable[[Sequence[CoreValue]], Sequence[CoreValue]]:
    """The general call of ``func``: flat arguments in, the tuple of flat results out.

    Arguments ``call_raw`` would convert (negative ints, ints for floats) or
    reject are handed to it; a function that is not callable from Python
    raises ``EngineError`` when called.
    """
    call_raw = func.call_raw
    ps, rs = func._params_struct, func._results_struct
    if ps is None or rs is None:
        return call_raw
    state = func._state
    accel: Callable[[Sequence[CoreValue]], Sequence[CoreValue]] | None = _compiled_caller(func, 1)
    if accel is not None:
        return accel
    untyped = ffi.func_call_unchecked_untyped
    call_args = func._call_args
    trap, fail, buf = func._trap, func._call_failed, func._buf
    pack_into, unpack_from = ps.pack_into, rs.unpack_from

    def call(flat: Sequence[CoreValue]) -> Sequence[CoreValue]:
        if not state.direct:
            return call_raw(flat)
        try:
            pack_into(buf, 0, *flat)
        except struct.error:
            return call_raw(flat)  # it converts what it can and says what it cannot
        err = untyped(*call_args)
        if err or trap.value:
            fail(err)
        return unpack_from(buf)

    return call


def raw_caller(func: CoreFunc) -> Callable[[Sequence[CoreValue]], list[CoreValue]] | None:
    """``call_raw``'s compiled fast case, or ``None`` on the pure path.

    The same call as :func:`flat_caller`'s with the results as a list; a
    store that is not direct and arguments ``struct`` would not take as they
    are go to ``CoreFunc._call_raw_py``.

    The function keeps this caller, so the caller refers back to it weakly
    (a strong reference would make a reference cycle that only the cyclic
    collector frees): it owns the store's cell and the ``wasmtime_func_t``
    it reads, and its slow case finds the function through a weak reference.
    """
    raw: Callable[[Sequence[CoreValue]], list[CoreValue]] | None = _compiled_caller(
        func, 2, owned=True
    )
    return raw


def _compiled_caller(func: CoreFunc, mode: int, *, owned: bool = False) -> Any:
    """The compiled ``Caller`` of ``func`` (results as a tuple for ``mode`` 1, as a list
    for 2), or ``None`` on the pure path or for a signature beyond its slots;
    ``owned``: ``func`` keeps the caller (see :func:`raw_caller`)."""
    state = func._state
    if _ACCEL is None or not state.compiled or func._nslots >= _ACCEL.MAX_SLOTS:
        return None
    slow: Callable[[Sequence[CoreValue]], list[CoreValue]] = func._call_raw_py
    keep: object = func
    if owned:
        slow = _weak_slow(weakref.ref(func))
        keep = (state, func._func)
    return _ACCEL.Caller(
        ctypes.addressof(state.cell),
        func._addr,
        func._nslots,
        "".join(_UNSIGNED[t] for t in func.params),
        "".join(_UNSIGNED[t] for t in func.results),
        mode,
        1,
        slow,
        _failure(state),
        keep,
    )


def _weak_slow(
    ref: weakref.ref[CoreFunc],
) -> Callable[[Sequence[CoreValue]], list[CoreValue]]:
    """``CoreFunc._call_raw_py`` of the function ``ref`` names, for its own caller."""

    def slow(args: Sequence[CoreValue]) -> list[CoreValue]:
        func = ref()
        if func is None:  # only the function holds its caller: not reached while it runs
            raise EngineError("the core function is gone")
        return func._call_raw_py(args)

    return slow


def export_kernel(
    callee: CoreFunc,
    core: Callable[..., Any],
    n: int,
    *,
    sequence: bool,
    rec: Any,
    ci: Any,
    name: str,
    check_enter: Callable[[Any, str], None],
    general: Callable[[Sequence[Any]], Any],
    failed: Callable[[BaseException], BaseException | None],
    arity: Callable[[tuple[Any, ...]], Any] | None = None,
    owner: int,
    values: tuple[Any, ...] | None = None,
) -> Callable[..., Any] | None:
    """The compiled host call of a scalar export, or ``None`` on the pure path.

    ``None`` too when ``callee``'s store takes the pure path (``pure_stores``).

    The statements ``instance/_lift.py`` generates for an export whose
    parameters and result are 32- or 64-bit integers, as one C call:
    ``call(a0, a1, ...)`` (or ``call(args)`` with ``sequence``) hands
    arguments that are not all exact ``int`` (or a tuple of another length)
    to ``general``; makes the entry test (the calling thread is ``owner``,
    ``rec.poisoned``, ``ci.may_enter``; ``check_enter(rec, name)`` when one
    refuses);
    clears ``ci.may_enter`` around ``core(a0, a1, ...)`` (a specialised
    call, :func:`export_caller`, in exact formats); hands the arguments to
    ``general`` when ``core`` raises ``ValueError`` (out of a slot's range,
    before anything ran); and on any other failure calls ``failed(exc)``,
    the poisoning step, raising what it returns (``from`` its cause) or else
    the failure itself. Positional calls with another count of arguments
    go to ``arity`` (which raises) when given, else to ``general``. The call
    over ``a0, a1, ...`` is returned as a builtin method of the compiled call
    (``Export.call``): the interpreter calls a builtin without its generic
    dispatch.

    With ``values`` (a plan of ``abi/kernels.py``: the export's value
    programs), the type test is the compiled lower's (values it does not take
    exactly go to ``general``), ``core(flat)`` is the callee's flat call, and
    the arguments are lowered and the result lifted in C
    (``_accel_values.c``).
    """
    if _ACCEL is None or not callee._state.compiled or n >= _ACCEL.MAX_SLOTS:
        return None
    kernel: Any = _ACCEL.Export(
        core,
        n,
        sequence,
        rec,
        ci,
        name,
        check_enter,
        general,
        failed,
        arity,
        _plain_dict(ci, "may_enter"),
        owner,
        values,
    )
    if sequence:
        whole: Callable[..., Any] = kernel
        return whole
    # over a0, a1, ...: the Export's builtin method, which the interpreter calls
    # through its specialised path for builtins (generated code calls it)
    call: Callable[..., Any] = kernel.call
    return call


def _plain_dict(obj: Any, name: str) -> dict[str, Any] | None:
    """``obj.__dict__`` when attribute ``name`` is plainly an entry of it, else ``None``.

    That is: the type overrides no attribute access and no class in its MRO
    defines ``name`` (so no descriptor stands in front of the instance
    dict), and the dict holds ``name`` already.
    """
    cls: Any = type(obj)
    if cls.__getattribute__ is not object.__getattribute__:
        return None
    if cls.__setattr__ is not object.__setattr__:
        return None
    if any(name in vars(k) for k in cls.__mro__):
        return None
    found = getattr(obj, "__dict__", None)
    return found if type(found) is dict and name in found else None


def blocking_driver(
    loop: Any,
    resolve: Callable[[], Callable[..., Any]],
    fallback: Callable[..., Any],
    get_running_loop: Callable[[], Any],
    set_running_loop: Callable[[Any], None],
) -> Callable[..., Any] | None:
    """The blocking facade's call of a synchronous-path export in C, or ``None`` (pure path).

    ``call(*args)`` behaves as ``fallback`` (``polyengine.sync``'s Python
    call) and hands it every case but one: with no keyword arguments, no
    running loop and ``loop`` open, it copies the current context, makes
    ``loop`` the running loop, runs ``resolve()``'s call (resolved once, on
    the first such call) in the copy, and resets the running loop. When that
    call is a compiled export call (:func:`export_kernel`), which runs no
    Python code of its own on its fast path, the copy and the running loop
    are deferred until Python code is about to run during the call (a host
    function's entry, a step handed to Python) and undone only if they were
    made: what any Python code can observe is the same, and a call that
    runs none skips them.
    """
    if _ACCEL is None:
        return None
    import asyncio

    # asyncio's own loops answer is_closed() with their _closed attribute
    plain = type(loop).is_closed is asyncio.BaseEventLoop.is_closed and isinstance(
        getattr(loop, "_closed", None), bool
    )
    drive: Callable[..., Any] = _ACCEL.Drive(
        loop, resolve, fallback, get_running_loop, set_running_loop, plain
    )
    return drive


#: the slot format of each core type's unsigned reading (``raw_struct``'s)
_UNSIGNED = {"i32": "I", "i64": "Q", "f32": "f", "f64": "d"}
#: the compiled call path (``_accelerator.py``), or ``None`` for the pure one
_ACCEL: Any = ACCEL


def _failure(state: _StoreState) -> Callable[[int, int], NoReturn]:
    """``fail(trap, err)``: raise for a compiled call that failed (``raise_call_failure``)."""

    def fail(trap: int, err: int) -> NoReturn:
        raise_call_failure(state, trap, err)

    return fail


_trampolines: dict[tuple[tuple[str, ...], tuple[str, ...], Any], Any] = {}
_compiled_tags: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
_compiled_callback: Any = None


def host_callback(
    params: tuple[str, ...], results: tuple[str, ...], state: _StoreState | None = None
) -> tuple[Any, int]:
    """``(callback, tag)`` for a host function of core type ``params -> results``.

    The compiled trampoline when it is active and takes the signature, with
    the signature's ``tag`` to carry in the function's ``env``
    (:func:`~._store.new_host_env`); else :func:`host_trampoline` and 0.
    """
    global _compiled_callback
    compiled = state is None or state.compiled
    if _ACCEL is not None and compiled and max(len(params), len(results)) < _ACCEL.MAX_SLOTS:
        key = (params, results)
        tag = _compiled_tags.get(key)
        if tag is None and len(_compiled_tags) < (1 << ENV_TAG_BITS) - 1:
            try:
                tag = _ACCEL.register_signature(
                    "".join(_UNSIGNED[t] for t in params), "".join(_UNSIGNED[t] for t in results)
                )
            except OverflowError:
                tag = None
            if tag is not None:
                _compiled_tags[key] = tag
        if tag is not None and tag < 1 << ENV_TAG_BITS:
            if _compiled_callback is None:
                _compiled_callback = ffi.UNCHECKED_CALLBACK(_ACCEL.trampoline_address())
            return _compiled_callback, tag
    if _ACCEL is not None and compiled:
        # the blocking facade's deferred step (blocking_driver) comes before the body
        return host_trampoline(params, results, _ACCEL.apply_deferred), 0
    return host_trampoline(params, results), 0


def host_trampoline(
    params: tuple[str, ...], results: tuple[str, ...], before: Callable[[], None] | None = None
) -> Any:
    """The C callback of every host function with core type ``params -> results``.

    wasmtime calls it with the function's ``env``; :data:`HOST_ENTRIES` maps
    that to the store's state and the Python body (``fn(args) -> results``).
    Every path returns an int: 0 for success, else an owned trap (a body's
    exception is kept by the store and re-raised by the caller's call).
    Built once per signature (and ``before``) and kept for the life of the
    process; ``before()``, when given, runs first, as part of the body.
    """
    key = (params, results, before)
    found = _trampolines.get(key)
    if found is not None:
        return found
    ps, rs = raw_struct(params), raw_struct(results)
    buf_type = ctypes.c_ubyte * (ffi.VAL_RAW_SIZE * max(len(params), len(results), 1))
    from_address = buf_type.from_address
    entries = HOST_ENTRIES
    new_trap = ffi.new_trap

    def trampoline(env: int | None, caller: int | None, addr: int | None, n: int) -> int:
        try:
            state, fn = entries[env or 0]
        except KeyError:
            found = plain_entry(env or 0)  # a plain host function's first call
            if found is None:
                return new_trap("a host function of a closed store was called")
            state, fn = found
        except BaseException:
            return new_trap("a host function of a closed store was called")
        state.host_depth += 1
        try:
            if before is not None:
                before()
            buf = from_address(addr or 0)
            out = fn(ps.unpack_from(buf))
            try:
                rs.pack_into(buf, 0, *out)
            except (struct.error, TypeError):
                rs.pack_into(buf, 0, *normalize(results, list(out), "host function result"))
            return 0
        except BaseException as exc:
            try:
                return state.record_host_error(exc)
            except BaseException:
                return new_trap("host function failed")
        finally:
            state.host_depth -= 1

    found = _trampolines[key] = ffi.UNCHECKED_CALLBACK(trampoline)
    return found


@contextmanager
def pure_stores() -> Iterator[None]:
    """Stores made inside the block take the pure call path for their whole life.

    For running both paths side by side in one process (the differential
    tests, the benchmarks); ``POLYENGINE_PURE=1`` is the switch for a process.
    """
    before = COMPILED_STORES[0]
    COMPILED_STORES[0] = False
    try:
        yield
    finally:
        COMPILED_STORES[0] = before


def compiled_path(store: EngineStore) -> bool:
    """Whether calls of ``store`` take the compiled call path."""
    return _ACCEL is not None and store._state.compiled


def compiled_store(state: _StoreState) -> bool:
    """Whether calls of ``state``'s store take the compiled path."""
    return _ACCEL is not None and state.compiled


def int_result_store(
    memory: object, size: int, signed: bool
) -> Callable[[Sequence[Any], int, object], bool] | None:
    """The compiled store of an integer result through an out-pointer, or ``None``.

    ``store(flat, at, value)`` writes the ``size``-byte integer ``value`` at the
    address ``flat[at]`` of the 32-bit engine memory ``memory`` and returns
    ``True``; it writes nothing and returns ``False`` unless ``value`` is an
    ``int`` in range and the address aligned and in bounds (the caller's codec
    then stores or raises). ``None`` on the pure path or for another memory.
    """
    from functools import partial

    from ._accelerator import memory_parts

    parts = memory_parts(memory)
    if _ACCEL is None or parts is None or not parts[0].compiled:
        return None
    guest: Any = memory  # an engine memory (``memory_parts`` knows its type)
    if guest.is_64():
        return None
    code = size | (16 if signed else 0)
    store: Callable[[Sequence[Any], int, object], bool] = partial(
        _ACCEL.store_int_result, parts, code
    )
    return store


def deferred_body(env: int, build: Callable[[], HostFunction]) -> HostFunction:
    """A body that builds the real one on the first call and puts it in its place."""

    def first(args: Sequence[CoreValue]) -> Sequence[CoreValue]:
        state, _ = HOST_ENTRIES[env]
        fn = build()
        HOST_ENTRIES[env] = (state, fn)
        return fn(args)

    return first
