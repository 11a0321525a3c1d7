"""Streams and futures: the amendment rules of embedder-api.md §"Streams and
futures" in Python form (python-mapping.md §6). Each test is named after the
amendment it pins."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import (
    DroppedError,
    PeerTrappedError,
    StreamProducerError,
    Trap,
)

from . import async_components as ac
from . import stream_components as sc
from .test_async import aio

Wat = Callable[[str], bytes]

COMPLETED, DROPPED = 0, 1


def checksum(data: bytes) -> int:
    return len(data) * 1000 + sum(data)


async def settle(turns: int = 5) -> None:
    for _ in range(turns):
        await asyncio.sleep(0)


async def until(pred: Callable[[], bool]) -> None:
    while not pred():
        await asyncio.sleep(0)


def loop_errors() -> list[dict[str, Any]]:
    """Collect what the running loop would report as unhandled (A16)."""
    seen: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: seen.append(ctx))
    return seen


# -- A5: round trips are idempotent ----------------------------------------------------


@aio
async def test_a5_host_guest_host_pass_through_returns_the_same_handle(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        stream, writer = polyengine.create_stream()
        back = await inst.exports.echo(stream)
        assert back is stream
        again = await inst.exports.echo(await inst.exports.echo(back))  # any number of hops
        assert again is stream
        reading = asyncio.ensure_future(stream.read(100))
        assert await writer.write(b"abc") == 3
        assert await reading == b"abc"
        writer.close()
        assert await stream.read(100) == b""


@aio
async def test_a5_writer_keeps_feeding_its_stream_across_hops(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        stream, writer = polyengine.create_stream()
        # a write parked before the stream is lowered moves along with it
        parked = asyncio.ensure_future(writer.write(b"ab"))
        await settle()
        back = await inst.exports.echo(stream)
        assert back is stream and not parked.done()
        assert await stream.read(10) == b"ab" and await parked == 2
        call = asyncio.ensure_future(inst.exports.consume(stream))
        assert await writer.write_all(b"cd") == 2
        writer.close()
        assert await call == checksum(b"cd")


@aio
async def test_a5_host_to_host_rendezvous_for_every_element_type(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        words, writer = polyengine.create_stream()
        assert await inst.exports.echo_words(words) is words
        pending = asyncio.ensure_future(writer.write(["x", "yz"]))
        assert await words.read(10) == ["x", "yz"]
        assert await pending == 2

        async def later() -> str:
            await asyncio.sleep(0)
            return "value"

        fut = await inst.exports.echo_fut(later())
        assert await fut == "value"


@aio
async def test_a5_bytes_are_borrowed_until_settled_and_copied_once(wat: Wat) -> None:
    stream, writer = polyengine.create_stream()
    data = b"x" * 1000
    pending = asyncio.ensure_future(writer.write(data))
    await settle()
    chunk = await stream.read(5000)
    assert chunk is data  # a whole bytes chunk passes through unsliced
    assert await pending == 1000
    buf = bytearray(b"hello")
    pending = asyncio.ensure_future(writer.write(buf))
    await settle()
    chunk = await stream.read(3)
    assert await pending == 3
    buf[0:3] = b"HEL"  # settled: the reader's copy is its own
    assert chunk == b"hel" and isinstance(chunk, bytes)


@aio
async def test_a5_guest_stream_makes_a_second_hop(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        stream = await inst.exports.produce(11)
        assert await inst.exports.consume(stream) == checksum(b"hello world")


# -- A7: peer traps are loud; one operation per end --------------------------------------


@aio
async def test_a7_peer_trap_rejects_parked_read(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        stream = await inst.exports.produce_then_trap()
        assert await stream.read(10) == b"hel"
        with pytest.raises(PeerTrappedError) as info:
            await stream.read(10)
        assert "unreachable" in str(info.value.cause)
        with pytest.raises(PeerTrappedError):  # later operations too, never an end
            await stream.read(10)


@aio
async def test_a7_peer_trap_rejects_parked_write_with_progress(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        stream, writer = polyengine.create_stream()
        call = asyncio.ensure_future(inst.exports.read_then_trap(stream))
        with pytest.raises(PeerTrappedError) as info:
            await asyncio.wait_for(writer.write_all(b"hello"), 5)
        assert info.value.progress == 3
        assert info.value.cause is not None
        with pytest.raises(Trap):
            await call
        with pytest.raises(PeerTrappedError):
            await writer.write(b"more")


@aio
async def test_a7_peer_trap_rejects_parked_future(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        go: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        fut = await inst.exports.make_fut_then_trap(go)
        waiting = asyncio.ensure_future(_await(fut))
        await settle()
        go.set_result("now trap")
        with pytest.raises(PeerTrappedError) as info:
            await asyncio.wait_for(waiting, 5)
        assert info.value.cause is not None
        assert not isinstance(info.value, DroppedError)


async def _await(fut: Any) -> Any:
    return await fut


@aio
async def test_a7_one_operation_per_end_and_direction(wat: Wat) -> None:
    stream, writer = polyengine.create_stream()
    first = asyncio.ensure_future(stream.read(10))
    await settle()
    with pytest.raises(TypeError, match="already in flight"):
        await stream.read(10)
    with pytest.raises(TypeError, match="already in flight"):
        await stream.read_direct(lambda src: "done")
    w1 = asyncio.ensure_future(writer.write(b"ab"))  # reading while writing is legal
    assert await first == b"ab" and await w1 == 2
    w2 = asyncio.ensure_future(writer.write(b"cd"))
    await settle()
    with pytest.raises(TypeError, match="already in flight"):
        await writer.write(b"ef")
    assert await stream.read(10) == b"cd" and await w2 == 2

    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        go: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        fut = await inst.exports.make_fut_then_trap(go)
        waiting = asyncio.ensure_future(_await(fut))
        await settle()
        with pytest.raises(TypeError, match="already in flight"):
            await fut
        fut.drop()
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)


# -- A8: abandonment and cancel_read --------------------------------------------------------


@aio
async def test_a8_abandoned_future_traps_the_parked_guest_reader(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        source: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        call = asyncio.ensure_future(inst.exports.read_fut(source))
        await settle(10)
        source.cancel()  # the host drops its never-written future
        with pytest.raises(Trap, match="without writing a value"):
            await asyncio.wait_for(call, 5)


@aio
async def test_a8_abandoned_future_traps_a_later_guest_read(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        source: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        source.cancel()
        with pytest.raises(Trap, match="without writing a value"):
            await asyncio.wait_for(inst.exports.read_fut(source), 5)


@aio
async def test_a8_cancel_read_settles_as_end_of_stream(wat: Wat) -> None:
    stream, _writer = polyengine.create_stream()
    reading = asyncio.ensure_future(stream.read(10))
    await settle()
    stream.cancel_read()
    assert await reading == b""
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        held = await inst.exports.hold()
        reading = asyncio.ensure_future(held.read(10))
        await settle()
        held.cancel_read()
        assert await reading == b""  # indistinguishable from the end, by design
        held.drop()


# -- A12: an import returning future<T> returns its source -------------------------------


@aio
async def test_a12_future_import_completes_at_once_and_settles_later(wat: Wat) -> None:
    gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    returned: list[bool] = []

    def fetch() -> asyncio.Future[str]:
        returned.append(True)
        return gate  # the future's source, not the call's completion

    async def afetch() -> Any:
        return gate

    inst = await polyengine.instantiate(wat(ac.FUTURE_IMPORT), {"fetch": fetch, "afetch": afetch})
    with inst:
        call = asyncio.ensure_future(inst.exports.fetch_read())
        await settle(10)
        assert returned == [True] and not call.done()  # parked on the future, not the import
        asyncio.get_running_loop().call_later(0.001, gate.set_result, "later")
        assert await asyncio.wait_for(call, 5) == "later"


# -- A13: producers are cancellable; un-taken resources are destroyed -------------------------


@aio
async def test_a13_parked_async_generator_is_cancelled_when_the_stream_dies(wat: Wat) -> None:
    log: list[str] = []

    async def source() -> AsyncIterator[bytes]:
        try:
            yield b"abc"
            await asyncio.Event().wait()  # an accept-shaped source: parked for good
            yield b"never"
        finally:
            log.append("closed")

    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        code = await inst.exports.read_once(source(), 10)
        assert code == (3 << 4) | COMPLETED
        await asyncio.wait_for(until(lambda: bool(log)), 5)
        assert log == ["closed"]


@aio
async def test_a13_parked_source_with_cancel_hook_is_cancelled(wat: Wat) -> None:
    class Listener:
        def __init__(self) -> None:
            self.cancelled = False
            self.wake: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
            self.sent = False

        def __aiter__(self) -> Listener:
            return self

        async def __anext__(self) -> bytes:
            if not self.sent:
                self.sent = True
                return b"x"
            return await self.wake

        def cancel(self) -> None:
            self.cancelled = True
            self.wake.set_result(b"straggler")

    listener = Listener()
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        assert await inst.exports.read_once(listener, 10) == (1 << 4) | COMPLETED
        await asyncio.wait_for(until(lambda: listener.cancelled), 5)


@aio
async def test_a13_untaken_resource_elements_are_destroyed(wat: Wat) -> None:
    closed: list[str] = []

    class Conn:
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            closed.append(self.name)

    conns = {"test:demo/conns": {"Conn": Conn}}
    inst = await polyengine.instantiate(wat(sc.RESOURCE_STREAM), conns)
    with inst:
        code = await inst.exports.take_one([Conn("a"), Conn("b"), Conn("c")])
        assert code == (1 << 4) | COMPLETED
        await settle(10)
        assert sorted(closed) == ["a", "b", "c"]


# -- A15: retention and the transfer refusal ---------------------------------------------------


@aio
async def test_a15_reading_a_passed_handle_is_refused_naming_the_transfer(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        stream = await inst.exports.produce(3)
        await inst.exports.consume(stream)
        with pytest.raises(TypeError, match=r"passed to a guest .*transferred"):
            await stream.read(1)
        passing = await polyengine.instantiate(wat(ac.STREAMS))
        with passing:
            fut = await passing.exports.make_fut()
            # the guest takes the future (and then traps, poisoning only this instance)
            with contextlib.suppress(Trap):
                await passing.exports.make_fut_then_trap(fut)
            with pytest.raises(TypeError, match=r"passed to a guest .*transferred"):
                await fut
        host_stream, writer = polyengine.create_stream()
        call = asyncio.ensure_future(inst.exports.consume(host_stream))
        await settle()
        with pytest.raises(TypeError, match="passed to a guest"):
            await host_stream.read(1)
        await writer.write_all(b"ok")  # the writer stays legal after the pass
        writer.close()
        assert await call == checksum(b"ok")


@aio
async def test_a15_deadlock_verdicts_follow_host_retention(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        store = inst._runtime.tasks.store  # type: ignore[union-attr]
        base = store.host_pending
        held = await inst.exports.hold()
        assert store.host_pending == base + 1  # the host retains an end: it may still act
        # handing the only end back to a guest ends the retention: the stall is a deadlock
        with pytest.raises(Trap, match="deadlock"):
            await asyncio.wait_for(inst.exports.consume(held), 5)
        assert store.host_pending == base


# -- A16: disposal is total and silent -------------------------------------------------------


@aio
async def test_a16_drop_and_cancel_are_total_and_silent(wat: Wat) -> None:
    errors = loop_errors()
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        go: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        fut = await inst.exports.make_fut_then_trap(go)
        assert fut.drop() is None and fut.cancel() is None
        fut.drop()
        go.set_result("trap now")
        await settle(10)
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        other = await inst.exports.make_fut()
        del other  # abandoned untouched
        gc.collect()
        await settle(10)
    assert errors == []


@aio
async def test_a16_a_failure_reaches_only_those_who_await(wat: Wat) -> None:
    errors = loop_errors()
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:

        async def failing() -> str:
            await asyncio.sleep(0)
            raise RuntimeError("producer broke")

        silent = await inst.exports.echo_fut(failing())
        silent.cancel()
        loud = await inst.exports.echo_fut(failing())
        with pytest.raises(StreamProducerError, match="producer broke") as info:
            await loud
        assert isinstance(info.value.cause, RuntimeError)
        gc.collect()
        await settle(10)
    assert errors == []


# -- errors ---------------------------------------------------------------------------------------


@aio
async def test_dropped_error_for_a_future_whose_writer_dropped(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        source: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        fut = await inst.exports.echo_fut(source)
        source.cancel()
        with pytest.raises(DroppedError):
            await asyncio.wait_for(_await(fut), 5)


@aio
async def test_stream_producer_error_fails_the_consuming_call(wat: Wat) -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield b"ab"
        raise RuntimeError("disk on fire")

    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        with pytest.raises(Trap) as info:
            await asyncio.wait_for(inst.exports.consume(broken()), 5)
        cause = info.value.__cause__
        while cause is not None and not isinstance(cause, StreamProducerError):
            cause = cause.__cause__
        assert isinstance(cause, StreamProducerError)
        assert str(cause) == (
            "producer for parameter `s` of consume raised RuntimeError: disk on fire"
        )
