"""Streams and futures at the host boundary (python-mapping.md §6)."""

from __future__ import annotations

import asyncio
import copy
import gc
import pickle
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

import polyengine
from polyengine_protocol import (
    FUTURE,
    STREAM,
    STREAM_WRITER,
    PeerTrappedError,
    from_cloneable,
    has_brand,
    is_error_context,
    is_future,
    is_realm_local,
    is_stream,
    is_stream_writer,
    to_cloneable,
)

from . import async_components as ac
from .test_async import aio

Wat = Callable[[str], bytes]


def checksum(data: bytes) -> int:
    return len(data) * 1000 + sum(data)


@aio
async def test_stream_u8_guest_to_host(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        stream = await inst.exports.produce(5)
        assert is_stream(stream) and has_brand(stream, STREAM)
        chunks = [chunk async for chunk in stream]
        assert all(isinstance(c, bytes) for c in chunks)
        assert b"".join(chunks) == b"hello"
        stream = await inst.exports.produce(11)
        assert await stream.read(3) == b"hel"
        assert await stream.read(100) == b"lo world"
        assert await stream.read(100) == b""


@aio
async def test_stream_u8_host_to_guest_from_each_source(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        assert await inst.exports.consume(b"abc") == checksum(b"abc")
        assert await inst.exports.consume([1, 2, 3]) == checksum(b"\x01\x02\x03")

        def gen() -> Iterator[bytes]:
            yield b"xy"
            yield b"z"

        assert await inst.exports.consume(gen()) == checksum(b"xyz")

        async def agen() -> AsyncIterator[bytes]:
            for i in range(3):
                await asyncio.sleep(0)
                yield bytes([65 + i]) * 150

        expected = b"A" * 150 + b"B" * 150 + b"C" * 150
        assert await inst.exports.consume(agen()) == checksum(expected)
        assert await inst.exports.consume(b"") == 0


@aio
async def test_create_stream_feeds_a_guest(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        stream, writer = polyengine.create_stream()
        assert is_stream(stream) and is_stream_writer(writer)
        assert has_brand(writer, STREAM_WRITER)
        call = asyncio.ensure_future(inst.exports.consume(stream))

        async def feed() -> None:
            async with writer:
                assert await writer.write_all(b"hello ") == 6
                assert await writer.write_all(b"world") == 5

        await feed()
        assert await call == checksum(b"hello world")


@aio
async def test_guest_stream_passes_back_into_a_guest(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        stream = await inst.exports.produce(11)
        assert await inst.exports.consume(stream) == checksum(b"hello world")
        with pytest.raises(TypeError, match="passed to a guest"):
            await stream.read(1)


@aio
async def test_future_string_both_ways(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        fut = await inst.exports.make_fut()
        assert is_future(fut) and has_brand(fut, FUTURE)
        assert await fut == "hello"
        assert await fut == "hello"  # awaiting again gives the value again

        async def later() -> str:
            await asyncio.sleep(0.001)
            return "from the host"

        assert await inst.exports.read_fut(later()) == "from the host"
        loop_future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        loop_future.set_result("settled")
        assert await inst.exports.read_fut(loop_future) == "settled"


@aio
async def test_handles_are_realm_local(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        stream = await inst.exports.produce(1)
        fut = await inst.exports.make_fut()
        for handle in (stream, fut):
            assert is_realm_local(handle)
            assert copy.copy(handle) is handle
            with pytest.raises(TypeError, match="realm-local"):
                pickle.dumps(handle)
        async with stream:
            pass
        fut.drop()
        fut.cancel()  # total: never raises


@aio
async def test_wrong_source_is_a_clear_error(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        with pytest.raises(TypeError, match="parameter `s`: expected a stream source"):
            await inst.exports.consume(12)
        with pytest.raises(TypeError, match="parameter `f`: expected a future source"):
            await inst.exports.read_fut("not awaitable")
        # embedder misuse does not poison the instance
        assert await inst.exports.consume(b"a") == checksum(b"a")


@aio
async def test_error_context_both_ways(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.ERRORS))
    with inst:
        err = await inst.exports.make_err()
        assert is_error_context(err) and err.message == "it broke"
        assert await inst.exports.err_message(err) == "it broke"
        carrier = from_cloneable(to_cloneable(err))
        assert await inst.exports.err_message(carrier) == "it broke"


@aio
async def test_import_returning_a_future_returns_its_source(wat: Wat) -> None:
    async def produce(text: str) -> str:
        await asyncio.sleep(0.001)
        return text

    async def afetch() -> Any:
        await asyncio.sleep(0)
        return produce("async import")  # the coroutine's result is the source

    imports = {"fetch": lambda: produce("sync import"), "afetch": afetch}
    inst = await polyengine.instantiate(wat(ac.FUTURE_IMPORT), imports)
    with inst:
        assert await inst.exports.fetch_read() == "sync import"
        assert await inst.exports.afetch_read() == "async import"


@aio
async def test_a_trapped_writer_is_a_peer_trap_not_an_end(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        stream = await inst.exports.produce_then_trap()
        assert await stream.read(10) == b"hel"
        with pytest.raises(PeerTrappedError) as info:
            await stream.read(10)
        assert "unreachable" in str(info.value.__cause__)
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        go: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        fut = await inst.exports.make_fut_then_trap(go)
        waiting = asyncio.ensure_future(_await(fut))
        await asyncio.sleep(0)
        go.set_result("now trap")
        with pytest.raises(PeerTrappedError):
            await asyncio.wait_for(waiting, 5)


async def _await(fut: Any) -> Any:
    return await fut


@aio
async def test_a_forgotten_handle_releases_its_end(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        store = inst._runtime.tasks.store  # type: ignore[union-attr]
        before = store.host_pending
        stream = await inst.exports.produce(1)
        assert store.host_pending == before + 1
        del stream
        gc.collect()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert store.host_pending == before


@aio
async def test_direct_sessions(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        stream = await inst.exports.produce(11)
        seen: list[bytes] = []

        def take_five(src: Any) -> str:
            seen.append(bytes(src.remaining()))
            src.mark_read(5)
            return "done"

        assert await stream.read_direct(take_five) == 5
        assert seen == [b"hello world"]
        assert await stream.read(100) == b" world"

        stream = await inst.exports.produce(11)
        got = bytearray()

        def take_all(src: Any) -> str:
            view = src.remaining()
            got.extend(view)
            src.mark_read(len(view))
            return "more"

        assert await stream.read_direct(take_all) == 11
        assert bytes(got) == b"hello world"
        with pytest.raises(TypeError, match="only valid while"):
            seen_src: list[Any] = []
            stream2 = await inst.exports.produce(3)
            await stream2.read_direct(lambda src: seen_src.append(src) or "done")
            seen_src[0].remaining()

        reader, writer = polyengine.create_stream()
        call = asyncio.ensure_future(inst.exports.consume(reader))

        def produce(dest: Any) -> str:
            dest.remaining()[:3] = b"abc"
            dest.mark_written(3)
            return "done"

        async with writer:
            assert await writer.write_direct(produce) == 3
        assert await call == checksum(b"abc")


@aio
async def test_stream_of_strings_both_ways(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.WORDS))
    with inst:
        words = await inst.exports.words()
        chunks = [chunk async for chunk in words]
        assert all(isinstance(c, list) for c in chunks)
        assert [w for c in chunks for w in c] == ["hi", "there"]
        assert await inst.exports.count_words(["a", "bcd", "éé"]) == 3000 + 1 + 3 + 4

        async def gen() -> AsyncIterator[str]:
            for w in ("one", "two"):
                await asyncio.sleep(0)
                yield w

        assert await inst.exports.count_words(gen()) == 2000 + 6


@aio
async def test_a_stream_of_another_store_is_refused(wat: Wat) -> None:
    """A guest stream lifted from one instance cannot be lowered into another's store
    (embedder-api §"Streams and futures": cross-store reuse is an asserted error, not a
    silent pump); its contents pass by value, through an async generator."""
    data = wat(ac.STREAMS)
    first = await polyengine.instantiate(data)
    second = await polyengine.instantiate(data)
    with first, second:
        stream = await first.exports.produce(5)
        with pytest.raises(TypeError, match=r"parameter `s`.*another store") as info:
            await second.exports.consume(stream)
        assert "async for" in str(info.value)
        # refused before anything was taken: the handle still reads in its own store
        assert b"".join([c async for c in stream]) == b"hello"
        stream = await first.exports.produce(5)
        assert await second.exports.consume(c async for c in stream) == checksum(b"hello")


@aio
async def test_a_future_of_another_store_is_refused(wat: Wat) -> None:
    data = wat(ac.STREAMS)
    first = await polyengine.instantiate(data)
    second = await polyengine.instantiate(data)
    with first, second:
        fut = await first.exports.make_fut()
        with pytest.raises(TypeError, match=r"parameter `f`.*another store") as info:
            await second.exports.read_fut(fut)
        assert "asyncio.ensure_future(f)" in str(info.value)
        # the remedy the message names: the value passes through a task awaiting the handle
        assert await second.exports.read_fut(asyncio.ensure_future(fut)) == "hello"
