"""The compiled call path and the pure one behave identically (architecture.md §5).

Each example runs in two stores of one process: one on the compiled path
(``_accel.c``), one made under ``pure_stores()`` (``_callpath.py``).  A
generated value type is lowered into guest memory through the guest's own
``realloc`` (called through ``CoreFunc.specialize``), its flat form is sent
through a core export that echoes it (``CoreFunc.flat_call``) and through a
host function of the same signature (the shared trampoline); both stores
must see the same ``realloc`` calls, hold the same memory bytes, and give
the same flat results (bit for bit) and lifted values.  Without the
compiled path (``POLYENGINE_PURE=1`` or no extension) both stores are pure
and the comparison still runs.
"""

from __future__ import annotations

import struct
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import pytest
import wasmtime
from abi_helpers import same
from abi_strategies import encodings, types, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyengine import engine
from polyengine.abi.compile import Compiler
from polyengine.abi.options import CanonicalOptions, LiftLowerContext, StringEncoding
from polyengine.abi.resources import ComponentInstance
from polyengine.engine._callpath import compiled_store, pure_stores
from polyengine.types.model import ValType

ALLOCATOR = """
  (memory (export "mem") 1)
  (global $bump (mut i32) (i32.const 16))
  (func (export "realloc") (param $old i32) (param $old_size i32) (param $align i32)
      (param $new_size i32) (result i32)
    (local $r i32) (local $end i32)
    (if (i32.and (i32.ne (local.get $old) (i32.const 0))
                 (i32.le_u (local.get $new_size) (local.get $old_size)))
      (then (return (local.get $old))))
    (local.set $r (i32.and (i32.add (global.get $bump) (i32.sub (local.get $align) (i32.const 1)))
                           (i32.sub (i32.const 0) (local.get $align))))
    (local.set $end (i32.add (local.get $r) (local.get $new_size)))
    (if (i32.gt_u (local.get $end) (i32.mul (memory.size) (i32.const 65536)))
      (then
        (if (i32.lt_s
              (memory.grow (i32.add (i32.div_u (i32.sub (local.get $end)
                                                         (i32.mul (memory.size) (i32.const 65536)))
                                               (i32.const 65536))
                                    (i32.const 1)))
              (i32.const 0))
          (then unreachable))))
    (global.set $bump (local.get $end))
    (if (i32.ne (local.get $old) (i32.const 0))
      (then (memory.copy (local.get $r) (local.get $old) (local.get $old_size))))
    (local.get $r))
"""

#: the flat signatures a core function can take here (the compiled path's slot limit)
MAX_FLAT = 60
_PACK = {"i32": "<I", "i64": "<Q", "f32": "<f", "f64": "<d"}

SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _module(flat: tuple[str, ...]) -> str:
    sig = f"(param {' '.join(flat)}) (result {' '.join(flat)})" if flat else ""
    gets = " ".join(f"local.get {k}" for k in range(len(flat)))
    return f"""(module
  (import "h" "echo" (func $h {sig}))
  {ALLOCATOR}
  (func (export "echo") {sig} {gets})
  (func (export "via-host") {sig} {gets} call $h))"""


def _bits(flat: tuple[str, ...], values: Any) -> bytes:
    """The flat values as the bytes of their slots (floats bit for bit)."""
    assert len(values) == len(flat)
    return b"".join(struct.pack(_PACK[t], v) for t, v in zip(flat, values, strict=True))


def _signed(flat: tuple[str, ...], values: Any) -> list[Any]:
    """The same values with every int in its signed reading (the normalising path)."""
    out: list[Any] = []
    for t, v in zip(flat, values, strict=True):
        if t in ("i32", "i64"):
            bits = 32 if t == "i32" else 64
            out.append(v - (1 << bits) if v >= 1 << (bits - 1) else v)
        else:
            out.append(v)
    return out


def _run(t: ValType, v: Any, enc: StringEncoding, pure: bool, signed: bool) -> dict[str, Any]:
    codec = Compiler(enc).codec(t)
    flat = tuple(codec.flat)
    guard: AbstractContextManager[None] = pure_stores() if pure else nullcontext()
    with guard:
        store = engine.EngineStore(suspend=False)
    try:
        state: Any = store._state
        assert compiled_store(state) == (not pure and engine.call_path().startswith("compiled"))

        def host(args: Any) -> Any:
            return _signed(flat, args) if signed else args

        h = engine.define_host_func(store, flat, flat, host)
        inst = engine.instantiate(
            store, engine.compile_module(wasmtime.wat2wasm(_module(flat)), "diff"), [h]
        )
        memory = inst.memory("mem")
        realloc_func = inst.func("realloc")
        realloc_call = realloc_func.specialize("IIII", "I")
        log: list[tuple[int, ...]] = []

        def realloc(old: int, old_size: int, align: int, new_size: int) -> int:
            # alternately the specialised call and call_raw (the compiled fast case of each)
            if len(log) % 2:
                r = realloc_call(old, old_size, align, new_size)
            else:
                r = realloc_func.call_raw([old, old_size, align, new_size])[0]
            log.append((old, old_size, align, new_size, r))
            return int(r)

        cx = LiftLowerContext(CanonicalOptions(enc, memory, realloc), ComponentInstance())
        ptr = cx.allocate(codec.align, codec.size)
        codec.store(cx, v, ptr)
        cx.refresh()
        loaded = codec.load(cx, ptr)
        lowered: list[Any] = []
        codec.lower_flat(cx, v, lowered)
        echoed = inst.func("echo").flat_call()(lowered)
        via_host = inst.func("via-host").flat_call()(list(echoed))
        cx.refresh()
        lifted = codec.lift_flat(cx, list(via_host), 0)
        return {
            "realloc": log,
            "memory": memory.read(0, memory.size()),
            "lowered": _bits(flat, lowered),
            "echoed": (type(echoed), _bits(flat, echoed)),
            "via_host": (type(via_host), _bits(flat, via_host)),
            "loaded": loaded,
            "lifted": lifted,
        }
    finally:
        store.close()


@SETTINGS
@given(st.data(), types, encodings, st.booleans())
def test_both_paths_give_the_same_bytes_calls_and_values(
    data: st.DataObject, t: ValType, enc: StringEncoding, signed: bool
) -> None:
    if len(Compiler(enc).codec(t).flat) > MAX_FLAT:
        return
    v: Any = data.draw(values(t))
    compiled = _run(t, v, enc, pure=False, signed=signed)
    pure = _run(t, v, enc, pure=True, signed=signed)
    for key in ("realloc", "memory", "lowered", "echoed", "via_host"):
        assert compiled[key] == pure[key], key
    assert same(compiled["loaded"], pure["loaded"])
    assert same(compiled["lifted"], pure["lifted"])
    assert same(compiled["lifted"], v) or not same(pure["lifted"], v)


# -- the same failures on both paths ----------------------------------------------------------

GUEST = """(module
  (import "h" "f" (func $f (param i32 i64 f32 f64) (result i32 i64 f32 f64)))
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
  (func (export "three") (param i32 i64 f32) (result i64)
    local.get 1 local.get 0 i64.extend_i32_u i64.add)
  (func (export "boom") (param i32) (result i32) unreachable)
  (func (export "f") (param i32 i64 f32 f64) (result i32 i64 f32 f64)
    local.get 0 local.get 1 local.get 2 local.get 3 call $f))"""


def _outcome(fn: Any, *args: Any) -> tuple[str, str]:
    try:
        return ("ok", repr(fn(*args)))
    except engine.CoreTrap as exc:
        host = exc.host_exception
        return ("CoreTrap", f"{exc.code} {type(host).__name__ if host else None}")
    except (Exception, KeyboardInterrupt) as exc:  # the wording may differ, not the type
        return (type(exc).__name__, "")


def _scenarios(pure: bool, body: Any) -> list[tuple[str, str]]:
    guard: AbstractContextManager[None] = pure_stores() if pure else nullcontext()
    with guard:
        store = engine.EngineStore(suspend=False)
    core = ["i32", "i64", "f32", "f64"]
    h = engine.define_host_func(store, core, core, body)
    inst = engine.instantiate(store, engine.compile_module(wasmtime.wat2wasm(GUEST), "g"), [h])
    add_u, add_s = inst.func("add").specialize("II", "I"), inst.func("add").specialize("ii", "i")
    three = inst.func("three").specialize("IQf", "q")
    boom = inst.func("boom").specialize("I", "I")
    f_flat = inst.func("f").flat_call()
    f_raw = inst.func("f").call_raw
    out = [
        _outcome(f_raw, [1, 2, 3.0, 4.0]),
        _outcome(f_raw, (-1, -2, 3, 4)),
        _outcome(f_raw, [1 << 32, 2, 3.0, 4.0]),
        _outcome(f_raw, [1.5, 2, 3.0, 4.0]),
        _outcome(f_raw, [1, 2, 3.0]),
        _outcome(f_raw, 7),
        _outcome(add_u, 1, 2),
        _outcome(add_s, -1, -2),
        _outcome(add_u, 0xFFFFFFFF, 1),
        _outcome(add_u, -1, 2),
        _outcome(add_u, 1 << 32, 2),
        _outcome(add_u, 1.0, 2),
        _outcome(add_u, "1", 2),
        _outcome(add_u, True, 2),
        _outcome(add_u, 1),
        _outcome(add_s, 1 << 31, 0),
        _outcome(three, 1, 2, 1.5),
        _outcome(three, 1, -2, 1.5),
        _outcome(three, 1, 2, "x"),
        _outcome(three, 1, 2, 1e300),
        _outcome(three, 1, 2),
        _outcome(three, 1, 2, 3.0, 4),
        _outcome(boom, 1),
        _outcome(f_flat, (1, 2, 3.0, 4.0)),
        _outcome(f_flat, (-1, -2, 3, 4)),
        _outcome(f_flat, (1 << 33, 2, 3.0, 4.0)),
        _outcome(f_flat, ("x", 2, 3.0, 4.0)),
        _outcome(f_flat, (1, 2, 3.0)),
    ]
    store.close()
    out.append(_outcome(f_raw, [1, 2, 3.0, 4.0]))
    out.append(_outcome(add_u, 1, 2))
    out.append(_outcome(f_flat, (1, 2, 3.0, 4.0)))
    return out


def _identity(args: Any) -> Any:
    return args


class _Boom(Exception):
    pass


def _raises(args: Any) -> Any:
    raise _Boom("no")


@pytest.mark.parametrize(
    "body",
    [
        _identity,
        list,
        lambda a: [-1, -1, a[2], a[3]],
        lambda a: (a[0], a[1], 1e300, a[3]),
        lambda a: [True, 2, 3, 4],
        lambda a: [1, 2, 3],
        lambda a: [1.5, 2, 3.0, 4.0],
        lambda a: [1 << 32, 2, 3.0, 4.0],
        lambda a: None,
        lambda a: "abcd",
        _raises,
        lambda a: (_ for _ in ()).throw(KeyboardInterrupt()),
    ],
)
def test_both_paths_fail_alike(body: Any) -> None:
    assert _scenarios(False, body) == _scenarios(True, body)
