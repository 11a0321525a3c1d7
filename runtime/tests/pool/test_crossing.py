"""Values and errors crossing to pool workers and back (python-mapping.md §8).

These tests share one blocking pool of two workers (``blocking_pool``):
arguments, results and every member of the error taxonomy cross as
``to_cloneable`` data, payloads and cause chains kept; realm-local values
are refused at the sender, naming the argument and the path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pool_hosts
import pytest
from pool_guests import ERROR_CONTEXT_GUEST

import polyengine
from polyengine.pool import Pool
from polyengine_protocol import (
    ComponentException,
    InvalidHandleError,
    is_component_exception,
    is_dropped_error,
    is_error_context,
    is_invalid_handle_error,
    is_peer_trapped_error,
    is_stream_producer_error,
    is_trap,
    is_wasi_exit,
)

ITEMS: list[dict[str, Any]] = [
    {
        "name": "first",
        "data": b"\x00\x01\xffbytes",
        "tags": ["a", "β", "🙂"],
        "size": 2**40,
        "shape": {"kind": "circle", "value": 1.5},
        "pair": (-7, "λ"),
        "mode": "slow",
        "bits": {"a": True, "b": False},
    },
    {
        "name": "",
        "data": b"",
        "tags": [],
        "size": None,
        "shape": {"kind": "none"},
        "pair": (0, "x"),
        "mode": "fast",
        "bits": {"a": False, "b": True},
    },
]


def test_world_and_interface_exports(blocking_pool: Any) -> None:
    assert blocking_pool.exports.add(2, 40) == 42
    math = blocking_pool.exports["test:pool/math@1.2.0"]
    assert math.mul(6, 7) == 42
    # Another version of the same track resolves as on an instance (§7).
    assert blocking_pool.exports["test:pool/math@1.0.0"].mul(3, 3) == 9
    assert "test:pool/math@1.9.0" in blocking_pool.exports
    assert "test:pool/math@2.0.0" not in blocking_pool.exports


def test_unknown_names_are_refused_in_the_caller(blocking_pool: Any) -> None:
    with pytest.raises(AttributeError, match=r"no export 'nope'.*'add'"):
        blocking_pool.exports.nope  # noqa: B018
    with pytest.raises(KeyError, match=r"no interface 'test:pool/math@2.0.0'.*math@1.2.0"):
        blocking_pool.exports["test:pool/math@2.0.0"]
    with pytest.raises(AttributeError, match=r"resource class.*realm-local.*worker process"):
        blocking_pool.exports.Thing  # noqa: B018


def test_values_cross_unchanged(blocking_pool: Any) -> None:
    assert blocking_pool.exports.echo(ITEMS) == ITEMS
    echoed = blocking_pool.exports.echo([ITEMS[0]])[0]
    assert isinstance(echoed["pair"], tuple)
    assert isinstance(echoed["data"], bytes)
    # Any buffer is a list<u8> argument, as in process (§2).
    same = dict(ITEMS[0], data=bytearray(b"\x00\x01\xffbytes"))
    assert blocking_pool.exports.echo([same]) == [ITEMS[0]]


def test_a_component_exception_keeps_its_payload(blocking_pool: Any) -> None:
    with pytest.raises(ComponentException) as caught:
        blocking_pool.exports.fail(ITEMS)
    assert is_component_exception(caught.value)
    assert caught.value.payload == ITEMS
    with pytest.raises(ComponentException) as caught:
        blocking_pool.exports.div(1, 0)
    assert caught.value.payload == "division by zero"
    assert any("raised in pool worker" in note for note in caught.value.__notes__)


def test_embedder_misuse_keeps_its_builtin_class(blocking_pool: Any) -> None:
    with pytest.raises(TypeError, match="argument"):
        blocking_pool.exports.add(1)
    with pytest.raises(OverflowError):
        blocking_pool.exports.add(-1, 2)


def _check_chain(error: BaseException, how: int) -> None:
    """What ``pool_hosts._raise(how)`` raised, seen through the trap it caused."""
    if how == 15:  # a WASI exit passes through unchanged
        assert is_wasi_exit(error)
        assert (error.ok, error.code) == (False, 3)  # type: ignore[attr-defined]
        return
    assert is_trap(error)
    cause = error.__cause__
    assert cause is not None
    if how == 10:
        assert is_dropped_error(cause)
        assert str(cause) == "the writer dropped the future"
    elif how == 11:
        assert is_invalid_handle_error(cause)
        assert isinstance(cause, ValueError)
    elif how == 12:
        assert is_peer_trapped_error(cause)
        assert cause.progress == 7  # type: ignore[attr-defined]
        inner = cause.cause  # type: ignore[attr-defined]
        assert is_trap(inner) and inner.code == "unreachable"
        assert str(inner) == "the peer's fault"
    elif how == 13:
        assert is_stream_producer_error(cause)
        assert isinstance(cause.__cause__, OSError)
        assert str(cause.__cause__) == "the disk is gone"
    elif how == 14:
        assert type(cause) is ValueError and str(cause) == "a bad value"
        assert type(cause.__cause__) is KeyError
    elif how == 16:
        assert error.code == "host-gave-up"  # type: ignore[attr-defined]
        assert str(error).endswith("the host gave up")
        assert is_trap(cause) and str(cause) == "the host gave up"
        inner = cause.__cause__
        assert is_component_exception(inner)
        assert inner.payload == {"kind": "busy", "value": 3}  # type: ignore[attr-defined]


@pytest.mark.parametrize("how", sorted(pool_hosts.RAISED), ids=pool_hosts.RAISED.get)
def test_every_taxonomy_member_crosses_with_its_cause_chain(
    blocking_pool: Any, how: int
) -> None:
    with pytest.raises(Exception) as caught:
        blocking_pool.exports.poke(how)
    _check_chain(caught.value, how)


def test_the_same_chain_in_process_and_through_the_pool(
    blocking_pool: Any, guest: bytes
) -> None:
    """Side by side: what a pool call raises matches what the instance raises in process."""

    async def in_process(how: int) -> BaseException:
        instance = await polyengine.instantiate(guest, pool_hosts.imports(0))
        try:
            await instance.exports.poke(how)
        except Exception as exc:
            return exc
        finally:
            instance.close()
        raise AssertionError("poke did not raise")

    for how in (12, 14, 16):
        local = asyncio.run(in_process(how))
        with pytest.raises(Exception) as caught:
            blocking_pool.exports.poke(how)
        remote: BaseException | None = caught.value
        chain: BaseException | None = local
        while chain is not None:
            assert remote is not None
            assert str(remote) == str(chain)
            assert getattr(remote, "code", None) == getattr(chain, "code", None)
            chain, remote = chain.__cause__, remote.__cause__
        assert remote is None


def test_realm_local_arguments_are_refused_naming_the_path(blocking_pool: Any) -> None:
    stream, writer = polyengine.create_stream()
    try:
        with pytest.raises(InvalidHandleError) as caught:
            blocking_pool.exports.echo([ITEMS[0], dict(ITEMS[1], data=stream)])
        message = str(caught.value)
        assert "echo: argument 0 at [1].data is a stream" in message
        # The realm-local pill's own refusal, verbatim.
        assert "cannot pickle Stream: it is realm-local" in message
        with pytest.raises(InvalidHandleError, match=r"argument 1 is a stream writer"):
            blocking_pool.exports.add(1, writer)
    finally:
        stream.drop()
        writer.close()


def test_a_resource_wrapper_argument_is_refused(blocking_pool: Any, guest: bytes) -> None:
    async def make() -> tuple[Any, Any]:
        instance = await polyengine.instantiate(guest, pool_hosts.imports(0))
        return instance, await instance.exports.make_thing(5)

    instance, thing = asyncio.run(make())
    try:
        with pytest.raises(InvalidHandleError, match=r"argument 0 at \[0\]\.name is a resource"):
            blocking_pool.exports.echo([dict(ITEMS[0], name=thing)])
    finally:
        thing.drop()
        instance.close()


def test_other_objects_are_refused_naming_the_argument(blocking_pool: Any) -> None:
    with pytest.raises(TypeError, match=r"add: argument 1: .*object of type set at the top"):
        blocking_pool.exports.add(1, {2})


def test_a_result_holding_a_resource_stays_in_the_worker(blocking_pool: Any) -> None:
    with pytest.raises(InvalidHandleError) as caught:
        blocking_pool.exports.make_thing(5)
    assert "make_thing: the result holds a resource" in str(caught.value)
    assert "stays in the worker process" in str(caught.value)
    # The worker goes on.
    assert blocking_pool.exports.add(1, 1) == 2


def test_an_error_context_crosses_as_its_message(wat: Callable[[str], bytes]) -> None:
    async def main() -> None:
        component = wat(ERROR_CONTEXT_GUEST)
        async with asyncio.timeout(60), Pool(component, workers=1) as pool:
            context = await pool.exports.oops("the disk is on fire")
            assert is_error_context(context)
            assert context.debug_message() == "the disk is on fire"

    asyncio.run(main())


def test_the_async_pool_gives_the_same_answers(guest: bytes) -> None:
    async def main() -> None:
        async with asyncio.timeout(60), Pool(guest, pool_hosts.imports, workers=1) as pool:
            assert await pool.exports.echo(ITEMS) == ITEMS
            with pytest.raises(ComponentException) as caught:
                await pool.exports.fail(ITEMS[:1])
            assert caught.value.payload == ITEMS[:1]
            with pytest.raises(Exception) as trapped:
                await pool.exports.poke(12)
            _check_chain(trapped.value, 12)

    asyncio.run(main())
