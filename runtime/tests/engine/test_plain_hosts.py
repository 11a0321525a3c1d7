"""Instance-pre linking with plain host functions made from signatures (``PlainHosts``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pytest

from polyengine.engine import (
    CoreModule,
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
from polyengine.engine._callpath import pure_stores

Wat = Callable[..., CoreModule]

TWO_HOSTS = """(module
  (import "h" "plain" (func $p (param i32) (result i32)))
  (import "h" "bound" (func $b (param i64) (result i64)))
  (func (export "call-plain") (param i32) (result i32) local.get 0 call $p)
  (func (export "call-bound") (param i64) (result i64) local.get 0 call $b)
)"""

SIGS: list[tuple[tuple[str, ...], tuple[str, ...]] | None] = [(("i32",), ("i32",)), None]


@pytest.fixture(params=["compiled", "pure"])
def call_path(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.param == "pure":
        with pure_stores():
            yield
    else:
        yield


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
