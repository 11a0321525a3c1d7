"""Direct-access byte edges (embedder-api.md A21, python-mapping.md §6)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import PeerTrappedError

from . import async_components as ac
from . import stream_components as sc
from .test_a_streams import checksum, settle
from .test_async import aio

Wat = Callable[[str], bytes]


def code(count: int, status: int = 0) -> int:
    return (count << 4) | status


@aio
async def test_a21_views_are_scoped_to_the_callback(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        kept: list[Any] = []

        def consume(src: Any) -> str:
            kept.append(src)
            src.mark_read(len(src.remaining()))
            return "done"

        stream = await inst.exports.produce(5)
        assert await stream.read_direct(consume) == 5
        with pytest.raises(TypeError, match="only valid while its callback runs"):
            kept[0].remaining()
        with pytest.raises(TypeError, match="only valid while its callback runs"):
            kept[0].mark_read(0)


@aio
async def test_a21_marks_are_acknowledged_on_clean_return(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        stream, writer = polyengine.create_stream()
        call = asyncio.ensure_future(inst.exports.read_once(stream, 100))

        def produce(dest: Any) -> str:
            view = dest.remaining()
            assert len(view) == 100  # the guest's landing zone itself
            view[:5] = b"hello"
            dest.mark_written(2)
            dest.mark_written(3)  # cumulative
            return "done"

        assert await writer.write_direct(produce) == 5
        assert await call == code(5)
        assert await inst.exports.last_sum() == sum(b"hello")


@aio
async def test_a21_done_with_zero_marked_is_retraction(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        stream, writer = polyengine.create_stream()
        call = asyncio.ensure_future(inst.exports.read_once(stream, 100))
        calls: list[int] = []

        def empty(dest: Any) -> str:
            calls.append(len(dest.remaining()))
            return "done"

        assert await writer.write_direct(empty) == 0
        assert calls == [100]
        await settle(10)
        assert not call.done()  # the guest's read stays parked, no event delivered
        assert await writer.write(b"xy") == 2
        assert await call == code(2)


@aio
async def test_a21_more_with_zero_marked_is_a_type_error(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        stream, writer = polyengine.create_stream()
        call = asyncio.ensure_future(inst.exports.read_once(stream, 100))
        with pytest.raises(TypeError, match="'more' with nothing marked"):
            await writer.write_direct(lambda dest: "more")
        await settle(10)
        assert not call.done()
        assert await writer.write(b"z") == 1
        assert await call == code(1)


@aio
async def test_a21_a_raising_callback_discards_its_marks(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        stream, writer = polyengine.create_stream()
        call = asyncio.ensure_future(inst.exports.consume(stream))

        def broken(dest: Any) -> str:
            dest.remaining()[:3] = b"bad"
            dest.mark_written(3)
            raise RuntimeError("producer broke")

        with pytest.raises(RuntimeError, match="producer broke"):
            await writer.write_direct(broken)
        assert await writer.write_all(b"ok") == 2  # the stream stays alive
        writer.close()
        assert await call == checksum(b"ok")  # the marked bytes were never delivered


@aio
async def test_a21_zero_length_read_is_answered_by_a_parked_session(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        stream, writer = polyengine.create_stream()
        calls: list[int] = []

        def produce(dest: Any) -> str:
            calls.append(len(dest.remaining()))
            dest.remaining()[:2] = b"hi"
            dest.mark_written(2)
            return "done"

        call = asyncio.ensure_future(inst.exports.probe(stream))
        session = asyncio.ensure_future(writer.write_direct(produce))
        assert await session == 2
        writer.close()
        # the zero-length probe completed (code 0) without running the callback
        assert await call == 0 * 1_000_000 + checksum(b"hi")
        assert calls == [100]


@aio
async def test_a21_host_to_host_costs_one_copy() -> None:
    stream, writer = polyengine.create_stream()
    data = b"0123456789"
    seen: list[Any] = []

    def consume(src: Any) -> str:
        view = src.remaining()
        seen.append(view.obj)  # a scoped view of the offered chunk itself
        assert view.readonly
        src.mark_read(4)
        return "done"

    pending = asyncio.ensure_future(writer.write(data))
    await settle()
    assert await stream.read_direct(consume) == 4
    assert seen == [data] and seen[0] is data
    assert await pending == 4
    landing: list[Any] = []

    def produce(dest: Any) -> str:
        view = dest.remaining()
        landing.append(view.obj)
        view[:3] = b"abc"
        dest.mark_written(3)
        return "done"

    reading = asyncio.ensure_future(stream.read(50))
    await settle()
    assert await writer.write_direct(produce) == 3
    chunk = await reading
    assert chunk == b"abc" and chunk is landing[0]  # the scratch became the chunk


@aio
async def test_a21_two_direct_sessions_cannot_rendezvous() -> None:
    stream, writer = polyengine.create_stream()
    parked = asyncio.ensure_future(stream.read_direct(lambda src: "done"))
    await settle()
    with pytest.raises(TypeError, match="two direct sessions"):
        await writer.write_direct(lambda dest: "done")
    stream.cancel_read()
    assert await parked == 0


@aio
async def test_a21_peer_trap_rejects_a_session_with_its_progress(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        stream = await inst.exports.produce_then_trap()

        def take(src: Any) -> str:
            src.mark_read(len(src.remaining()))
            return "more"

        with pytest.raises(PeerTrappedError) as info:
            await asyncio.wait_for(stream.read_direct(take), 5)
        assert info.value.progress == 3


@aio
async def test_a21_reader_drop_resolves_a_session_with_its_total(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        stream, writer = polyengine.create_stream()
        call = asyncio.ensure_future(inst.exports.read_once(stream, 4))

        def fill(dest: Any) -> str:
            view = dest.remaining()
            view[:] = b"a" * len(view)
            dest.mark_written(len(view))
            return "more"

        # the guest reads once (4 bytes) and drops the stream: the session ends with 4
        assert await asyncio.wait_for(writer.write_direct(fill), 5) == 4
        assert await call == code(4)
