"""The synchronous call path: exports, host functions, traps, instantiation."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pytest

from polyengine.engine import (
    CoreFunc,
    CoreModule,
    CoreTrap,
    CoreValue,
    EngineStore,
    StoreClosedError,
    define_async_host_func,
    define_host_func,
    instantiate,
)
from polyengine.errors import LinkError

Wat = Callable[..., CoreModule]

ARITH = """(module
  (memory 1)
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
  (func (export "add64") (param i64 i64) (result i64) local.get 0 local.get 1 i64.add)
  (func (export "fmul") (param f32 f64) (result f64)
    local.get 0 f64.promote_f32 local.get 1 f64.mul)
  (func (export "swap") (param i32 i64) (result i64 i32) local.get 1 local.get 0)
  (func (export "nothing"))
  (func (export "boom") unreachable)
  (func (export "div") (param i32 i32) (result i32) local.get 0 local.get 1 i32.div_u)
  (func $r (export "rec") call $r)
  (func (export "oob") (result i32) i32.const -1 i32.load)
)"""

HOSTED = """(module
  (import "h" "f" (func $f (param i32 i32) (result i32)))
  (func (export "callf") (param i32 i32) (result i32) local.get 0 local.get 1 call $f)
)"""


def test_call_raw_numbers(wat: Wat) -> None:
    with EngineStore() as store:
        inst = instantiate(store, wat(ARITH), [])
        add = inst.func("add")
        assert add.params == ("i32", "i32") and add.results == ("i32",)
        assert add.call_raw([1, 2]) == [3]
        # i32/i64 come back unsigned; negative inputs wrap.
        assert add.call_raw([-1, 0]) == [0xFFFF_FFFF]
        assert add.call_raw([0xFFFF_FFFF, 1]) == [0]
        assert inst.func("add64").call_raw([-1, 0]) == [2**64 - 1]
        assert inst.func("add64").call_raw([2**63, 2**63]) == [0]
        assert inst.func("fmul").call_raw([1.5, 2.0]) == [3.0]
        assert math.isnan(inst.func("fmul").call_raw([math.nan, 1.0])[0])
        assert inst.func("swap").call_raw([7, 2**40]) == [2**40, 7]
        assert inst.func("nothing").call_raw([]) == []


def test_call_raw_checks_arguments(wat: Wat) -> None:
    with EngineStore() as store:
        add = instantiate(store, wat(ARITH), []).func("add")
        with pytest.raises(TypeError, match="expected 2 values, got 1"):
            add.call_raw([1])
        with pytest.raises(TypeError, match="must be an int"):
            add.call_raw([1.5, 2])
        with pytest.raises(ValueError, match="does not fit i32"):
            add.call_raw([2**32, 0])
        with pytest.raises(ValueError, match="does not fit i32"):
            add.call_raw([-(2**31) - 1, 0])
        assert add.call_raw([5, 6]) == [11]


@pytest.mark.parametrize(
    ("export", "args", "code", "message"),
    [
        ("boom", [], "unreachable", "unreachable"),
        ("div", [1, 0], "integer_division_by_zero", "divide by zero"),
        ("rec", [], "stack_overflow", "call stack exhausted"),
        ("oob", [], "memory_out_of_bounds", "out of bounds"),
    ],
)
def test_traps_carry_code_and_message(
    wat: Wat, export: str, args: list[CoreValue], code: str, message: str
) -> None:
    with EngineStore() as store:
        inst = instantiate(store, wat(ARITH), [])
        with pytest.raises(CoreTrap) as info:
            inst.func(export).call_raw(args)
        assert info.value.code == code
        assert message in info.value.message
        assert info.value.host_exception is None
        assert "backtrace" in info.value.details
        # The store stays usable after a trap.
        assert inst.func("add").call_raw([1, 1]) == [2]


HostFn = Callable[[Sequence[CoreValue]], Sequence[CoreValue]]


def _hosted(store: EngineStore, wat: Wat, fn: HostFn) -> CoreFunc:
    host = define_host_func(store, ["i32", "i32"], ["i32"], fn)
    return instantiate(store, wat(HOSTED), [host]).func("callf")


def test_host_function_round_trip(wat: Wat) -> None:
    seen: list[Sequence[CoreValue]] = []

    def mul(args: Sequence[CoreValue]) -> list[CoreValue]:
        seen.append(args)
        a, b = args
        assert isinstance(a, int) and isinstance(b, int)
        return [a * b]

    with EngineStore() as store:
        callf = _hosted(store, wat, mul)
        assert callf.call_raw([6, 7]) == [42]
        assert callf.call_raw([-1, 1]) == [0xFFFF_FFFF]  # host sees unsigned, result wraps
        assert list(seen[1]) == [0xFFFF_FFFF, 1]
        # Results may be given signed; they wrap like the guest would.
        assert _hosted(store, wat, lambda a: [-2]).call_raw([0, 0]) == [0xFFFF_FFFE]


def test_host_exception_becomes_trap_carrying_it(wat: Wat) -> None:
    boom = ValueError("nope")

    def fail(args: Sequence[CoreValue]) -> list[CoreValue]:
        raise boom

    with EngineStore() as store:
        callf = _hosted(store, wat, fail)
        with pytest.raises(CoreTrap) as info:
            callf.call_raw([1, 2])
        assert info.value.host_exception is boom
        assert info.value.__cause__ is boom
        assert "ValueError: nope" in info.value.message
        assert store._state.host_errors == {}


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
def test_keyboard_interrupt_and_exit_are_reraised(wat: Wat, exc_type: type[BaseException]) -> None:
    def stop(args: Sequence[CoreValue]) -> list[CoreValue]:
        raise exc_type()

    with EngineStore() as store:
        callf = _hosted(store, wat, stop)
        with pytest.raises(exc_type):
            callf.call_raw([1, 2])
        assert _hosted(store, wat, lambda a: [9]).call_raw([0, 0]) == [9]


@pytest.mark.parametrize(
    ("result", "error"),
    [
        (None, TypeError),
        ("text", TypeError),
        ([1, 2], TypeError),
        ([1.5], TypeError),
        ([2**40], ValueError),
    ],
)
def test_wrong_host_results_trap(wat: Wat, result: object, error: type[Exception]) -> None:
    with EngineStore() as store:
        callf = _hosted(store, wat, lambda a: result)  # type: ignore[arg-type,return-value]
        with pytest.raises(CoreTrap) as info:
            callf.call_raw([1, 2])
        assert isinstance(info.value.host_exception, error)


def test_reentrant_calls_and_nested_traps(wat: Wat) -> None:
    text = """(module
      (import "h" "f" (func $f (param i32 i32) (result i32)))
      (func (export "callf") (param i32 i32) (result i32) local.get 0 local.get 1 call $f)
      (func (export "boom") unreachable)
    )"""
    with EngineStore() as store:
        holder: list[CoreFunc] = []
        boom: list[CoreFunc] = []

        def fact(args: Sequence[CoreValue]) -> list[CoreValue]:
            n, acc = args
            assert isinstance(n, int) and isinstance(acc, int)
            if n == 99:
                boom[0].call_raw([])
            if n <= 1:
                return [acc]
            return holder[0].call_raw([n - 1, acc * n])

        host = define_host_func(store, ["i32", "i32"], ["i32"], fact)
        inst = instantiate(store, wat(text), [host])
        holder.append(inst.func("callf"))
        boom.append(inst.func("boom"))
        # The same export re-entered 10 levels deep (shared argument buffer).
        assert holder[0].call_raw([10, 1]) == [3628800]
        # A trap in a nested call surfaces as the same CoreTrap at the top.
        with pytest.raises(CoreTrap) as info:
            holder[0].call_raw([99, 1])
        assert info.value.code == "unreachable"


def test_instantiation_checks_imports(wat: Wat) -> None:
    module = wat(HOSTED)
    with EngineStore() as store, EngineStore() as other:
        with pytest.raises(LinkError, match="1 imports, 0 were given"):
            instantiate(store, module, [])
        memory = instantiate(store, wat('(module (memory (export "m") 1))'), []).memory("m")
        with pytest.raises(LinkError, match="expected a func, got a memory"):
            instantiate(store, module, [memory])
        foreign = define_host_func(other, ["i32", "i32"], ["i32"], lambda a: [0])
        with pytest.raises(ValueError, match="another store"):
            instantiate(store, module, [foreign])
        wrong = define_host_func(store, ["i32"], ["i32"], lambda a: [0])
        with pytest.raises(LinkError, match="cannot instantiate core module test"):
            instantiate(store, module, [wrong])
        with pytest.raises(TypeError, match="expected a core extern"):
            instantiate(store, module, ["not an extern"])  # type: ignore[list-item]


def test_start_function_trap_and_exports(wat: Wat) -> None:
    with EngineStore() as store:
        with pytest.raises(CoreTrap, match="unreachable"):
            instantiate(store, wat("(module (func $s unreachable) (start $s))"), [])
        inst = instantiate(store, wat(ARITH), [])
        assert inst.get("missing") is None
        with pytest.raises(KeyError, match="no export 'missing'"):
            inst.export("missing")
        with pytest.raises(TypeError, match="is a CoreFunc, not a GuestMemory"):
            inst.memory("add")
        assert inst.func("add") is inst.func("add")


def test_unsupported_value_types(wat: Wat) -> None:
    with EngineStore() as store:
        with pytest.raises(ValueError, match="unsupported core value type 'v128'"):
            define_host_func(store, ["v128"], [], lambda a: [])
        inst = instantiate(store, wat('(module (func (export "r") (param externref)))'), [])
        with pytest.raises(Exception, match="only i32/i64/f32/f64"):
            inst.func("r").call_raw([0])


def test_closed_store_refuses_use(wat: Wat) -> None:
    store = EngineStore()
    inst = instantiate(store, wat(ARITH), [])
    add = inst.func("add")
    store.close()
    store.close()  # idempotent
    assert store.closed
    with pytest.raises(StoreClosedError):
        add.call_raw([1, 2])
    with pytest.raises(StoreClosedError):
        inst.func("add64")
    with pytest.raises(StoreClosedError):
        define_host_func(store, [], [], lambda a: [])


def test_runtime_objects_have_no_public_constructor() -> None:
    from polyengine.engine import CoreInstance, CoreModule, Engine, GuestMemory, ParkableCall

    for cls in (CoreFunc, CoreInstance, CoreModule, Engine, GuestMemory, ParkableCall):
        with pytest.raises(TypeError):
            cls()


def test_fuel_limits_a_runaway_guest(wat: Wat) -> None:
    from polyengine.engine import EngineConfig, compile_module, get_engine

    engine = get_engine(EngineConfig(consume_fuel=True))
    import wasmtime

    module = compile_module(
        wasmtime.wat2wasm('(module (func (export "spin") (loop (br 0))))'), engine=engine
    )
    with EngineStore(engine) as store:
        store.set_fuel(10_000)
        assert store.get_fuel() == 10_000
        with pytest.raises(CoreTrap) as info:
            instantiate(store, module, []).func("spin").call_raw([])
        assert info.value.code == "out-of-fuel"


def test_an_async_host_function_makes_the_store_async_required(wat: Wat) -> None:
    with EngineStore() as store:
        host = define_host_func(store, ["i32", "i32"], ["i32"], lambda a: [a[0] - a[1]])
        inst = instantiate(store, wat(HOSTED), [host])
        assert inst.func("callf").call_raw([10, 3]) == [7]
        assert not store.async_required
        parked = define_async_host_func(store, ["i32", "i32"], ["i32"], lambda a: [a[0] + a[1]])
        assert store.async_required
        assert instantiate(store, wat(HOSTED), [parked]).func("callf").call_raw([10, 3]) == [13]
        assert inst.func("callf").call_raw([10, 3]) == [7]  # now on a call future


def test_a_core_func_builds_its_call_machinery_on_first_use(wat: Wat) -> None:
    """A wrapper that is only handed to the linker never builds the buffers and
    ctypes arguments of a call; the first call (or a read of one) builds them."""
    with EngineStore() as store:
        inst = instantiate(store, wat(ARITH), [])
        add = inst.func("add")
        with pytest.raises(AttributeError):
            object.__getattribute__(add, "_call_args")  # not built yet
        assert add.call_raw([2, 3]) == [5]
        assert object.__getattribute__(add, "_call_args") is add._call_args
        swap = inst.func("swap")
        assert swap._nslots == 2 and len(swap._buf) >= 2 * 16  # built by the read
        assert swap.call_raw([1, 2]) == [2, 1]
        with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
            add.nonsense  # type: ignore[attr-defined]  # noqa: B018
        late = inst.func("nothing")
    with pytest.raises(StoreClosedError):
        late.call_raw([])  # the store closed before the first call: refused, not built


def test_later_instances_of_a_module_take_export_signatures_from_the_module(
    wat: Wat, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A numeric export's signature is asked of wasmtime once per module; one with
    a reference type is asked each time (a subtype could differ)."""
    from polyengine.engine import _core

    asked: list[int] = []
    real = _core.ffi.func_type

    def counted(ctx: int, addr: int) -> object:
        asked.append(addr)
        return real(ctx, addr)

    monkeypatch.setattr(_core.ffi, "func_type", counted)
    module = wat(
        """(module
      (func (export "add") (param i32 i64) (result i64) local.get 1)
      (func $r (export "ref") (result funcref) ref.func $r))""",
        "signatures",
    )
    with EngineStore() as store:
        first = instantiate(store, module, [])
        assert first.func("add").params == ("i32", "i64")
        assert module.export_signatures == {"add": (("i32", "i64"), ("i64",))}
        first.func("ref")
        assert len(asked) == 2 and "ref" not in module.export_signatures
        second = instantiate(store, module, [])
        add = second.func("add")
        assert (add.params, add.results) == (("i32", "i64"), ("i64",))
        assert add.call_raw([1, 2**40]) == [2**40]
        second.func("ref")
        assert len(asked) == 3  # only the reference-typed export was asked again
