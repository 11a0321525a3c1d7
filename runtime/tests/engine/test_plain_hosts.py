"""Instance-pre linking with plain host functions made from signatures (``PlainHosts``)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

import pytest

from polyengine.engine import (
    CoreModule,
    CoreTrap,
    CoreValue,
    DeferredHost,
    EngineStore,
    HostFunction,
    HostSource,
    InstancePre,
    PlainHosts,
    StoreClosedError,
    get_engine,
)
from polyengine.engine._accelerator import ACCEL
from polyengine.engine._store import HOST_ENTRIES, PLAIN_KEY_BIT, plain_entry

Wat = Callable[..., CoreModule]

TWO_HOSTS = """(module
  (import "h" "plain" (func $p (param i32) (result i32)))
  (import "h" "bound" (func $b (param i64) (result i64)))
  (func (export "call-plain") (param i32) (result i32) local.get 0 call $p)
  (func (export "call-bound") (param i64) (result i64) local.get 0 call $b)
)"""

SIGS: list[tuple[tuple[str, ...], tuple[str, ...]] | None] = [(("i32",), ("i32",)), None]


def _pre(wat: Wat) -> InstancePre:
    module = wat(TWO_HOSTS, "two-hosts")
    return InstancePre(get_engine(), [module], [(0, [HostSource(0), HostSource(1)])], 2)


def test_plain_host_is_built_on_first_call_without_a_binding(wat: Wat, call_path: None) -> None:
    asked: list[int] = []
    built: list[int] = []

    def host(index: int) -> DeferredHost:
        asked.append(index)
        return DeferredHost(("i64",), ("i64",), lambda: lambda args: [args[0] * 2])

    def build(index: int) -> HostFunction:
        built.append(index)

        def body(args: Sequence[CoreValue]) -> list[CoreValue]:
            return [int(args[0]) + 100]

        return body

    with EngineStore() as store:
        linking = _pre(wat).link(store, host, PlainHosts(SIGS, build))
        inst = linking.instantiate(0)
        assert asked == [1]  # only the index without a signature was asked for
        assert built == []  # nothing is built before the first call
        assert inst.func("call-plain").call_raw([1]) == [101]
        assert inst.func("call-plain").call_raw([2]) == [102]
        assert built == [0]  # built once, then called in place
        assert inst.func("call-bound").call_raw([21]) == [42]
        assert linking.host_func(0).call_raw([5]) == [105]


def test_plain_host_after_close_refuses(wat: Wat, call_path: None) -> None:
    store = EngineStore()
    linking = _pre(wat).link(
        store,
        lambda i: DeferredHost(("i64",), ("i64",), lambda: list),
        PlainHosts(SIGS, lambda i: list),
    )
    linking.instantiate(0)
    store.close()
    linking.release()
    with pytest.raises(StoreClosedError):
        linking.host_func(0)


def test_plain_hosts_of_the_wrong_length_are_refused(wat: Wat) -> None:
    with EngineStore() as store, pytest.raises(ValueError, match="plain host signatures for 1"):
        _pre(wat).link(store, lambda i: None, PlainHosts(SIGS[:1], lambda i: list))  # type: ignore[arg-type, return-value]


def test_a_plain_host_signature_with_a_bad_type_names_it(wat: Wat) -> None:
    bad: list[tuple[tuple[str, ...], tuple[str, ...]] | None] = [(("i33",), ("i32",)), None]
    with EngineStore() as store:
        linking = _pre(wat).link(store, lambda i: None, PlainHosts(bad, lambda i: list))  # type: ignore[arg-type, return-value]
        with pytest.raises(ValueError, match=r"host function 0 params.*i33"):
            linking.instantiate(0)


def test_a_plain_host_entry_is_made_on_first_call_and_goes_with_the_store(
    wat: Wat, call_path: None
) -> None:
    store = EngineStore()
    linking = _pre(wat).link(
        store,
        lambda i: DeferredHost(("i64",), ("i64",), lambda: list),
        PlainHosts(SIGS, lambda i: lambda args: [int(args[0]) + 1]),
    )
    inst = linking.instantiate(0)
    before = set(HOST_ENTRIES)
    assert inst.func("call-plain").call_raw([1]) == [2]
    made = set(HOST_ENTRIES) - before
    assert len(made) == 1  # the called function's entry, nothing for the others
    (env,) = made
    assert env & PLAIN_KEY_BIT
    call = inst.func("call-plain")
    store.close()
    assert not made & set(HOST_ENTRIES)
    assert plain_entry(env) is None  # its store's builder is gone too
    with pytest.raises(StoreClosedError):
        call.call_raw([1])


def test_a_plain_body_that_cannot_be_built_traps_with_its_error(wat: Wat, call_path: None) -> None:
    def build(index: int) -> HostFunction:
        raise LookupError(f"no body for {index}")

    with EngineStore() as store:
        linking = _pre(wat).link(
            store, lambda i: DeferredHost(("i64",), ("i64",), lambda: list), PlainHosts(SIGS, build)
        )
        inst = linking.instantiate(0)
        with pytest.raises(CoreTrap, match="LookupError: no body for 0") as caught:
            inst.func("call-plain").call_raw([1])
        assert isinstance(caught.value.__cause__, LookupError)


def test_taken_indices_are_bound_through_the_host_callback(wat: Wat) -> None:
    asked: list[int] = []

    def host(index: int) -> DeferredHost:
        asked.append(index)
        if index == 0:
            return DeferredHost(("i32",), ("i32",), lambda: lambda args: [7])
        return DeferredHost(("i64",), ("i64",), lambda: list)

    with EngineStore() as store:
        plain = PlainHosts(SIGS, lambda i: lambda args: [0], taken={0})
        inst = _pre(wat).link(store, host, plain).instantiate(0)
        assert sorted(asked) == [0, 1]
        assert inst.func("call-plain").call_raw([1]) == [7]


def test_plain_entry_ignores_other_envs() -> None:
    assert plain_entry(12345 << 16) is None


@pytest.mark.skipif(
    ACCEL is None or not hasattr(ACCEL, "new_host_funcs"), reason="compiled path not built"
)
def test_the_compiled_bulk_creation_refuses_bad_items_before_making_anything() -> None:
    assert ACCEL is not None
    make = ACCEL.new_host_funcs
    ready = bytearray(2)
    with pytest.raises(ValueError, match="null"):
        make(0, 1, (), PLAIN_KEY_BIT, ready, 1, 32, 8)
    with pytest.raises(ValueError, match="key base or extern layout"):
        make(1, 1, (), PLAIN_KEY_BIT | 5, ready, 1, 32, 8)
    with pytest.raises(ValueError, match="bad item"):
        make(1, 1, ((5, 1, 1, 0),), PLAIN_KEY_BIT, ready, 1, 32, 8)  # index past ready
    with pytest.raises(ValueError, match="bad item"):
        make(1, 1, ((0, 0, 1, 0),), PLAIN_KEY_BIT, ready, 1, 32, 8)  # no functype
    with pytest.raises(TypeError, match="4-tuple"):
        make(1, 1, ((0, 1),), PLAIN_KEY_BIT, ready, 1, 32, 8)
    assert ready == bytearray(2)


@pytest.mark.skipif(
    ACCEL is None or not hasattr(ACCEL, "copy_hosts"), reason="compiled path not built"
)
def test_the_compiled_host_copy_checks_every_entry_before_copying() -> None:
    assert ACCEL is not None
    src = (ctypes.c_ubyte * 8)(*range(8))
    dst = (ctypes.c_ubyte * 8)()
    a, b = ctypes.addressof(src), ctypes.addressof(dst)
    with pytest.raises(ValueError, match="null"):
        ACCEL.copy_hosts(((0, 0),), 0, b, 4)
    with pytest.raises(ValueError, match="bad host entry"):
        ACCEL.copy_hosts(((0, 0), (-4, 1)), a, b, 4)
    with pytest.raises(TypeError, match="2-tuple"):
        ACCEL.copy_hosts(((0, 0), (4,)), a, b, 4)
    assert bytes(dst) == bytes(8)  # nothing copied before the bad entry was found
    ACCEL.copy_hosts(((4, 0), (0, 1)), a, b, 4)
    assert bytes(dst) == bytes([4, 5, 6, 7, 0, 1, 2, 3])
