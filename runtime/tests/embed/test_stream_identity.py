"""Host handles over guest streams and futures survive round trips (embedder-api
A5): a handle the host passed into a guest and gets back is the same object,
for futures as for streams, over any number of hops."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

import polyengine

from . import stream_components as sc
from .test_async import aio

Wat = Callable[[str], bytes]


@aio
async def test_a5_future_round_trip_returns_the_original_object(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        fut = await inst.exports.make_fut()
        back = await inst.exports.echo_fut(fut)
        assert back is fut
        again = await inst.exports.echo_fut(await inst.exports.echo_fut(back))
        assert again is fut
        assert await fut == "hello"


@aio
async def test_a5_guest_stream_round_trip_returns_the_original_object(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        stream = await inst.exports.make_stream(5)
        back = await inst.exports.echo(stream)
        assert back is stream
        assert await inst.exports.echo(await inst.exports.echo(back)) is stream
        assert await stream.read(100) == b"hello"


@aio
async def test_a5_a_stream_of_another_type_is_refused_before_it_is_taken(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.ROUND_TRIP))
    with inst:
        stream = await inst.exports.make_stream(5)
        with pytest.raises(TypeError):
            await inst.exports.echo_words(stream)  # stream<u8> where stream<string> goes
        assert await asyncio.wait_for(stream.read(100), 5) == b"hello"
