"""Streams, futures and error-contexts at the host boundary (python-mapping.md §6).

Lifted handles (``Stream``/``Future`` basic operations), lowering-source
adaptation (bytes, lists, generators, async iterables, writers; coroutines,
asyncio futures, tasks), producers a host import returns, and
error-contexts both ways.
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import polyengine
from polyengine_protocol import (
    ComponentException,
    brands_of,
    from_cloneable,
    is_error_context,
    is_future,
    is_stream,
    to_cloneable,
)

from . import async_components as ac
from .probe_host import ErrorContexts, HandRolledErrorContext, Producers, Transcript, describe
from .scenario import attempt, attempt_sync, bound, method, run_scenario

Wat = Callable[[str], bytes]


async def maybe_await(value: object) -> object:
    """The value, awaited if the operation returned an awaitable."""
    if isinstance(value, Awaitable):
        return await value
    return value


async def _op(obj: object, name: str, *args: object) -> object:
    return await maybe_await(getattr(obj, name)(*args))


async def _collect(stream: Any) -> list[object]:
    return [chunk async for chunk in stream]


def _handle(t: Transcript, label: str, value: object) -> None:
    t.record(
        "handle",
        label=label,
        is_stream=is_stream(value),
        is_future=is_future(value),
        brands=sorted(brands_of(value)),
    )


def test_streams_guest_to_host(wat: Wat) -> None:
    component = wat(ac.STREAMS)

    async def body(t: Transcript) -> None:
        inst = await polyengine.instantiate(component)
        x = inst.exports
        s = await attempt(t, "produce(11)", x.produce(11))
        _handle(t, "produce(11)", s)
        await attempt(t, "async for: the chunks", _collect(s))
        s = await attempt(t, "produce(11)", x.produce(11))
        await attempt(t, "read(3)", method(s, "read", 3))
        await attempt(t, "read(100)", method(s, "read", 100))
        await attempt(t, "read(100) at the end", method(s, "read", 100))
        await attempt(t, "read(100) after the end", method(s, "read", 100))
        s = await attempt(t, "produce(11)", x.produce(11))
        await attempt(t, "read(3) in another task", asyncio.ensure_future(method(s, "read", 3)))
        await attempt(
            t, "read(100) in yet another task", asyncio.ensure_future(method(s, "read", 100))
        )
        s = await attempt(t, "produce_all(11)", x.produce_all(11))
        await attempt(t, "read(3) in another task", asyncio.ensure_future(method(s, "read", 3)))
        await attempt(
            t, "read(100) in yet another task", asyncio.ensure_future(method(s, "read", 100))
        )
        await attempt(t, "read(100) at the end", method(s, "read", 100))
        s = await attempt(t, "produce(11)", x.produce(11))
        first = asyncio.ensure_future(method(s, "read", 3))
        second = asyncio.ensure_future(method(s, "read", 3))
        await attempt(t, "two reads in flight at once: the first", first)
        await attempt(t, "two reads in flight at once: the second", second)
        s = await attempt(t, "produce(5)", x.produce(5))
        await attempt(t, "cancel_read()", _op(s, "cancel_read"))
        await attempt(t, "read(5) after cancel_read", method(s, "read", 5))
        s = await attempt(t, "produce(5)", x.produce(5))
        await attempt(t, "drop()", _op(s, "drop"))
        await attempt(t, "read(5) after drop", method(s, "read", 5))
        await attempt(t, "drop() again", _op(s, "drop"))
        s = await attempt(t, "produce(3)", x.produce(3))

        async def with_block() -> object:
            async with s:
                first = await s.read(1)
            return first

        await attempt(t, "async with: read(1) inside", with_block())
        await attempt(t, "read(1) after async with", method(s, "read", 1))
        s = await attempt(t, "produce(11)", x.produce(11))
        attempt_sync(t, "pickle.dumps(stream)", lambda: pickle.dumps(s))
        await attempt(t, "consume(the lifted stream): passed back into a guest", x.consume(s))
        await attempt(t, "read(1) after passing it to a guest", method(s, "read", 1))
        s = await attempt(t, "produce(11)", x.produce(11))
        got = bytearray()

        def take_five(src: Any) -> str:
            got.extend(src.remaining()[:5])
            src.mark_read(5)
            return "done"

        await attempt(t, "read_direct(consume 5)", method(s, "read_direct", take_five))
        t.record("read_direct saw", data=describe(bytes(got)))
        await attempt(t, "read(100) after read_direct", method(s, "read", 100))
        s = await attempt(t, "produce-then-trap", x.produce_then_trap())
        await attempt(t, "read(10) before the trap", method(s, "read", 10))
        await attempt(t, "read(10) after the writer trapped", method(s, "read", 10))

    run_scenario("streams_guest_to_host", body)


def _gen() -> Iterator[bytes]:
    yield b"gen-"
    yield b"erated"


async def _agen() -> AsyncIterator[bytes]:
    for part in (b"async-", b"gen"):
        await asyncio.sleep(0)
        yield part


def _failing_gen() -> Iterator[bytes]:
    yield b"ok-"
    raise ValueError("the producer failed")


def test_stream_sources_host_to_guest(wat: Wat) -> None:
    artifacts = polyengine.translate(wat(ac.STREAMS))

    async def body(t: Transcript) -> None:
        sources: list[tuple[str, Callable[[], object]]] = [
            ("bytes", lambda: b"from bytes"),
            ("bytearray", lambda: bytearray(b"from bytearray")),
            ("memoryview", lambda: memoryview(b"from memoryview")),
            ("list of ints", lambda: [104, 105]),
            ("tuple of ints", lambda: (104, 105)),
            ("empty bytes", lambda: b""),
            ("generator of bytes", _gen),
            ("async generator of bytes", _agen),
            ("generator that raises", _failing_gen),
            ("str", lambda: "text"),
            ("int", lambda: 12),
            ("None", lambda: None),
        ]
        for label, make in sources:
            inst = await polyengine.instantiate(artifacts)
            await attempt(t, f"consume({label})", inst.exports.consume(make()))
        inst = await polyengine.instantiate(artifacts)
        stream, writer = polyengine.create_stream()
        _handle(t, "create_stream() reader", stream)
        t.record("writer", brands=sorted(brands_of(writer)))
        call = asyncio.ensure_future(inst.exports.consume(stream))

        async def feed() -> object:
            async with writer:
                a = await writer.write_all(b"hello ")
                b = await writer.write(b"world")
            return (a, b)

        await attempt(t, "writer: write_all, write, close", feed())
        await attempt(t, "consume(create_stream reader)", call)
        await attempt(t, "write after close", method(writer, "write", b"late"))

        inst = await polyengine.instantiate(artifacts)
        stream, writer = polyengine.create_stream()
        call = asyncio.ensure_future(inst.exports.consume(stream))

        def produce(dest: Any) -> str:
            dest.remaining()[:3] = b"abc"
            dest.mark_written(3)
            return "done"

        async def feed_direct() -> object:
            async with writer:
                return await writer.write_direct(produce)

        await attempt(t, "writer: write_direct(3 bytes), close", feed_direct())
        await attempt(t, "consume(write_direct reader)", call)

    run_scenario("stream_sources", body)


def test_futures(wat: Wat) -> None:
    artifacts = polyengine.translate(wat(ac.STREAMS))

    async def later(text: str) -> str:
        await asyncio.sleep(0.001)
        return text

    async def failing() -> str:
        await asyncio.sleep(0)
        raise ComponentException("no value")

    async def body(t: Transcript) -> None:
        inst = await polyengine.instantiate(artifacts)
        x = inst.exports
        f = await attempt(t, "make-fut()", x.make_fut())
        _handle(t, "make-fut()", f)
        await attempt(t, "await future", maybe_await(f))
        await attempt(t, "await future again", maybe_await(f))
        attempt_sync(t, "pickle.dumps(future)", lambda: pickle.dumps(f))
        f = await attempt(t, "make-fut()", x.make_fut())
        attempt_sync(t, "drop()", bound(f, "drop"))
        await attempt(t, "await after drop", maybe_await(f))
        f = await attempt(t, "make-fut()", x.make_fut())
        attempt_sync(t, "cancel()", bound(f, "cancel"))
        attempt_sync(t, "cancel() again (total)", bound(f, "cancel"))
        await attempt(t, "await after cancel", maybe_await(f))
        await attempt(t, "read-fut(coroutine)", x.read_fut(later("from a coroutine")))
        done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        done.set_result("settled")
        await attempt(t, "read-fut(settled asyncio.Future)", x.read_fut(done))
        pending: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(0.002, pending.set_result, "settled later")
        await attempt(t, "read-fut(pending asyncio.Future)", x.read_fut(pending))
        task = asyncio.ensure_future(later("from a task"))
        await attempt(t, "read-fut(Task)", x.read_fut(task))
        await attempt(t, "read-fut(str)", x.read_fut("not awaitable"))
        unread: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        await attempt(t, "keep-fut(asyncio.Future): the guest never reads", x.keep_fut(unread))
        for _ in range(3):
            await asyncio.sleep(0)
        t.record("unread source", cancelled=unread.cancelled(), done=unread.done())
        inst = await polyengine.instantiate(artifacts)
        await attempt(
            t, "read-fut(coroutine raising ComponentException)", inst.exports.read_fut(failing())
        )

    run_scenario("futures", body)


def test_producers(wat: Wat) -> None:
    artifacts = polyengine.translate(wat(ac.PRODUCERS))
    key = "probe:conv/producers@0.1.0"

    async def body(t: Transcript) -> None:
        for kind in ("bytes", "bytearray", "list", "generator", "async-generator", "empty", "bad"):
            producers = Producers(t, kind)
            inst = await polyengine.instantiate(artifacts, {key: producers})
            await attempt(t, f"read-bytes-source: {kind}", inst.exports.read_bytes_source())
            if producers.closed:
                t.record("source closed", kinds=producers.closed)
        for kind in ("coroutine", "asyncio-future", "task", "bad"):
            inst = await polyengine.instantiate(artifacts, {key: Producers(t, kind)})
            await attempt(t, f"read-future-source: {kind}", inst.exports.read_future_source())

    run_scenario("producers", body)


def test_stream_of_strings(wat: Wat) -> None:
    artifacts = polyengine.translate(wat(ac.WORDS))

    async def words() -> AsyncIterator[str]:
        for w in ("one", "two"):
            await asyncio.sleep(0)
            yield w

    async def body(t: Transcript) -> None:
        inst = await polyengine.instantiate(artifacts)
        s = await attempt(t, "words()", inst.exports.words())
        await attempt(t, "async for: chunks are lists", _collect(s))
        for label, source in [
            ("list", ["a", "bcd", "\u00e9\u00e9"]),
            ("async generator", words()),
            ("list with a lone surrogate", ["x\ud800"]),
            ("str (an iterable of characters)", "abc"),
        ]:
            inst = await polyengine.instantiate(artifacts)
            await attempt(t, f"count-words({label})", inst.exports.count_words(source))

    run_scenario("stream_of_strings", body)


def test_error_contexts(wat: Wat) -> None:
    artifacts = polyengine.translate(wat(ac.ERRORS))
    key = "probe:conv/errors@0.1.0"

    async def body(t: Transcript) -> None:
        inst = await polyengine.instantiate(artifacts, {key: ErrorContexts(t)})
        x = inst.exports
        err = await attempt(t, "make-err()", x.make_err())
        t.record(
            "error-context", is_error_context=is_error_context(err), brands=sorted(brands_of(err))
        )
        await attempt(t, "err-message(the lifted context)", x.err_message(err))
        await attempt(t, "err-message(the same context again)", x.err_message(err))
        attempt_sync(t, "pickle.dumps(error-context)", lambda: pickle.dumps(err))
        cloned = attempt_sync(
            t, "from_cloneable(to_cloneable(err))", lambda: from_cloneable(to_cloneable(err))
        )
        await attempt(t, "err-message(the cloneable round trip)", x.err_message(cloned))
        await attempt(
            t, "err-message(a hand-rolled carrier)", x.err_message(HandRolledErrorContext("hand"))
        )
        await attempt(t, "err-message(a str)", x.err_message("plain"))
        await attempt(t, "err-message(an Exception)", x.err_message(ValueError("exc")))
        await attempt(t, "report-new(): the host receives a guest-made context", x.report_new())
        await attempt(t, "host-err-message(): the host returns a carrier", x.host_err_message())
        inst = await polyengine.instantiate(artifacts, {key: ErrorContexts(t, made="a str")})
        await attempt(
            t, "host-err-message(): the host returns a str", inst.exports.host_err_message()
        )

    run_scenario("error_contexts", body)
