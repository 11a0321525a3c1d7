"""A failed host producer is reported naming where it was passed
(embedder-api.md §"Streams and futures": producer failures are site-named,
surfacing on the consuming call; python-mapping.md §6)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

import polyengine
from polyengine_protocol import StreamProducerError, Trap

from . import async_components as ac
from . import stream_components as sc
from .test_async import aio

Wat = Callable[[str], bytes]


def producer_error(exc: BaseException) -> StreamProducerError:
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, StreamProducerError):
        cause = cause.__cause__
    assert isinstance(cause, StreamProducerError), exc
    return cause


async def broken() -> AsyncIterator[bytes]:
    yield b"ab"
    raise ValueError("disk on fire")


def broken_sync() -> Iterator[bytes]:
    yield b"ab"
    raise ValueError("sync disk on fire")


@aio
async def test_a_stream_parameter_is_named_with_its_export(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        with pytest.raises(Trap) as info:
            await asyncio.wait_for(inst.exports.consume(broken()), 5)
        err = producer_error(info.value)
        assert str(err) == ("producer for parameter `s` of consume raised ValueError: disk on fire")
        assert isinstance(err.cause, ValueError) and str(err.cause) == "disk on fire"
        assert err.__cause__ is err.cause


@aio
async def test_a_stream_inside_a_tuple_is_named_by_its_path(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        with pytest.raises(Trap) as info:
            await asyncio.wait_for(inst.exports.consume_pair((7, broken_sync())), 5)
        assert str(producer_error(info.value)) == (
            "producer for parameter `pair`[1] of consume-pair raised ValueError: sync disk on fire"
        )


@aio
async def test_a_future_result_of_an_import_is_named_with_the_import(wat: Wat) -> None:
    async def failing() -> str:
        await asyncio.sleep(0)
        raise KeyError("missing")

    imports = {"fetch": failing, "afetch": failing}
    inst = await polyengine.instantiate(wat(ac.FUTURE_IMPORT), imports)
    with inst:
        with pytest.raises(Trap) as info:
            await asyncio.wait_for(inst.exports.fetch_read(), 5)
        err = producer_error(info.value)
        assert str(err) == "producer for result of fetch raised KeyError: 'missing'"
        assert isinstance(err.cause, KeyError)


@aio
async def test_a_future_parameter_is_named_for_a_host_reader_too(wat: Wat) -> None:
    async def failing() -> str:
        await asyncio.sleep(0)
        raise OSError("gone")

    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        fut = await inst.exports.echo_fut(failing())
        with pytest.raises(StreamProducerError) as info:
            await asyncio.wait_for(_await(fut), 5)
        assert str(info.value) == "producer for parameter `f` of echo-fut raised OSError: gone"


async def _await(fut: object) -> object:
    return await fut  # type: ignore[misc]


def test_the_site_of_a_producer_among_a_calls_values_is_its_index() -> None:
    from types import SimpleNamespace

    from polyengine.instance._hostvalues import lowering_site

    fut, other = object(), [object()]
    cx = SimpleNamespace(at=("result", (other, fut)), where="wasi:http/types#[static]response.new")
    assert lowering_site(cx, fut) == "result[1] of wasi:http/types#[static]response.new"  # type: ignore[arg-type]
    cx.at = ("result", ([1, fut], 2))  # nested: found by the walk
    assert lowering_site(cx, fut) == "result[0][1] of wasi:http/types#[static]response.new"  # type: ignore[arg-type]
    cx.where = None
    assert lowering_site(cx, fut) == "result[0][1]"  # type: ignore[arg-type]
    cx.at = ("result", (fut,))
    assert lowering_site(cx, fut) == "result[0]"  # type: ignore[arg-type]
