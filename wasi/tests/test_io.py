"""wasi:io: the parking kernel (pollables, poll) and the stream resources."""

from __future__ import annotations

import asyncio
import pickle
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from polyengine_protocol import ComponentException, Trap
from polyengine_wasi import InputStream, IoError, OutputStream, Pollable, poll, wasi
from polyengine_wasi._bytes import AsyncIterSource, BufferSink, BufferSource


def _flag() -> tuple[Pollable, asyncio.Event, list[bool]]:
    state = [False]
    event = asyncio.Event()

    async def wait() -> None:
        await event.wait()
        event.clear()

    return Pollable(lambda: state[0], wait), event, state


def test_providers_expose_the_resources() -> None:
    imports = wasi()
    assert imports["wasi:io/poll@0.2"].Pollable is Pollable
    assert imports["wasi:io/poll@0.2"].poll is poll
    assert imports["wasi:io/streams@0.2"].InputStream is InputStream
    assert imports["wasi:io/streams@0.2"].OutputStream is OutputStream
    assert imports["wasi:io/error@0.2"].Error is IoError


def test_block_and_poll_carry_the_suspending_mark() -> None:
    from polyengine_protocol import is_suspending

    assert is_suspending(Pollable.block)
    assert is_suspending(poll)
    assert is_suspending(InputStream.blocking_read)
    assert is_suspending(OutputStream.blocking_write_and_flush)
    assert not is_suspending(InputStream.read)


def test_poll_fast_path_returns_ready_indices() -> None:
    ready = Pollable(lambda: True, lambda: asyncio.sleep(0))
    never = Pollable(lambda: False, lambda: asyncio.sleep(3600))
    assert poll([never, ready, never, ready]) == [1, 3]


def test_poll_of_nothing_traps() -> None:
    with pytest.raises(Trap, match="empty"):
        poll([])


def test_poll_parks_until_an_external_pollable_is_ready() -> None:
    async def main() -> list[int]:
        pollable, event, state = _flag()
        never = Pollable(lambda: False, lambda: asyncio.sleep(3600))
        pending = poll([never, pollable])
        assert not isinstance(pending, list)

        def fire() -> None:
            state[0] = True
            event.set()

        asyncio.get_running_loop().call_later(0.01, fire)
        return await pending

    assert asyncio.run(main()) == [1]


def test_poll_survives_spurious_wakeups() -> None:
    async def main() -> list[int]:
        pollable, event, state = _flag()
        pending = poll([pollable])
        loop = asyncio.get_running_loop()
        loop.call_later(0.005, event.set)  # wake without readiness
        loop.call_later(0.02, lambda: (state.__setitem__(0, True), event.set()))
        return await pending

    start = time.monotonic()
    assert asyncio.run(main()) == [0]
    assert time.monotonic() - start >= 0.015


def test_poll_with_timers_picks_the_earliest() -> None:
    clock = wasi()["wasi:clocks/monotonic-clock@0.2"]

    async def main() -> list[int]:
        slow = clock.subscribe_duration(5_000_000_000)
        fast = clock.subscribe_duration(10_000_000)
        return await poll([slow, fast])

    assert asyncio.run(main()) == [1]


def test_pollable_is_realm_local() -> None:
    with pytest.raises(TypeError, match="realm-local"):
        pickle.dumps(Pollable(lambda: True, lambda: asyncio.sleep(0)))


def test_pollable_refuses_non_callables() -> None:
    with pytest.raises(TypeError, match="callables"):
        Pollable(True, None)  # type: ignore[arg-type]


def test_input_stream_read_skip_and_end(settle: Any) -> None:
    stream = InputStream(BufferSource(b"0123456789"))
    assert stream.read(3) == b"012"
    assert stream.skip(2) == 2
    assert settle(stream.blocking_skip(1)) == 1
    assert stream.read(0) == b""
    assert settle(stream.blocking_read(100)) == b"6789"
    assert stream.subscribe().ready()
    with pytest.raises(ComponentException) as end:
        stream.read(1)
    assert end.value.payload == {"kind": "closed"}
    with pytest.raises(ComponentException):
        stream.skip(1)


def test_input_stream_over_an_async_producer_parks() -> None:
    async def producer() -> AsyncIterator[bytes]:
        await asyncio.sleep(0.01)
        yield b"late"

    async def main() -> tuple[bytes, bool]:
        stream = InputStream(AsyncIterSource(producer()))
        assert stream.read(10) == b""
        pollable = stream.subscribe()
        assert not pollable.ready()
        await pollable.block()  # type: ignore[misc]
        assert pollable.ready()
        data = stream.read(10)
        tail = stream.blocking_read(10)
        with pytest.raises(ComponentException):
            await tail  # type: ignore[misc]
        return data, pollable.ready()

    assert asyncio.run(main()) == (b"late", True)


def test_input_stream_reports_a_failing_producer() -> None:
    async def producer() -> AsyncIterator[bytes]:
        yield b"ok"
        raise OSError(5, "Input/output error")

    async def main() -> None:
        stream = InputStream(AsyncIterSource(producer()))
        assert await stream.blocking_read(10) == b"ok"  # type: ignore[misc]
        with pytest.raises(ComponentException) as failed:
            await stream.blocking_read(10)  # type: ignore[misc]
        payload = failed.value.payload
        assert payload["kind"] == "last-operation-failed"
        assert isinstance(payload["value"], IoError)
        assert "Input/output error" in payload["value"].to_debug_string()
        with pytest.raises(ComponentException) as closed:
            stream.read(1)
        assert closed.value.payload == {"kind": "closed"}

    asyncio.run(main())


def test_output_stream_write_protocol() -> None:
    out = bytearray()
    stream = OutputStream(BufferSink(out))
    budget = stream.check_write()
    assert budget >= 4096
    stream.write(b"abc")
    stream.write_zeroes(2)
    stream.flush()
    assert stream.blocking_flush() is None
    assert bytes(out) == b"abc\0\0"
    assert stream.subscribe().ready()


def test_output_stream_write_beyond_check_write_traps() -> None:
    stream = OutputStream(BufferSink(bytearray()))
    with pytest.raises(Trap, match="check-write"):
        stream.write(b"x")  # no permit yet
    stream.check_write()
    stream.flush()  # a flush spends the permit
    with pytest.raises(Trap):
        stream.write(b"x")


def test_blocking_write_and_flush_limit_traps() -> None:
    stream = OutputStream(BufferSink(bytearray()))
    with pytest.raises(Trap, match="4096"):
        stream.blocking_write_and_flush(bytes(4097))
    assert stream.blocking_write_and_flush(bytes(4096)) is None
    assert stream.blocking_write_zeroes_and_flush(10) is None


def test_splice_moves_bytes() -> None:
    out = bytearray()
    src = InputStream(BufferSource(b"spliced data"))
    dst = OutputStream(BufferSink(out))
    assert dst.splice(src, 7) == 7
    assert dst.blocking_splice(src, 100) == 5
    assert bytes(out) == b"spliced data"
    with pytest.raises(ComponentException):
        dst.splice(src, 1)


def test_output_stream_reports_sink_failure_then_closed() -> None:
    class Failing(BufferSink):
        def write(self, data: bytes) -> None:
            raise OSError(28, "No space left on device")

    stream = OutputStream(Failing(bytearray()))
    stream.check_write()
    with pytest.raises(ComponentException) as failed:
        stream.write(b"x")
    assert failed.value.payload["kind"] == "last-operation-failed"
    assert "ENOSPC" in failed.value.payload["value"].to_debug_string()
    with pytest.raises(ComponentException) as closed:
        stream.check_write()
    assert closed.value.payload == {"kind": "closed"}


def test_closed_streams_refuse_use() -> None:
    stream = InputStream(BufferSource(b"x"))
    stream.close()
    stream.close()  # idempotent
    with pytest.raises(ComponentException):
        stream.read(1)
    out = OutputStream(BufferSink(bytearray()))
    out.close()
    with pytest.raises(ComponentException):
        out.check_write()


def test_pollable_carries_the_pollable_brand() -> None:
    from polyengine_protocol import is_pollable, is_realm_local

    clock = wasi()["wasi:clocks/monotonic-clock@0.2"]
    pollable = clock.subscribe_duration(0)
    assert is_pollable(pollable)
    assert is_realm_local(pollable)


def test_streams_adapt_plain_python_values(settle: Any) -> None:
    assert settle(InputStream(b"plain bytes").blocking_read(100)) == b"plain bytes"
    captured = bytearray()
    OutputStream(captured).blocking_write_and_flush(b"captured")
    assert bytes(captured) == b"captured"
    discard = OutputStream(None)
    assert discard.blocking_write_and_flush(b"gone") is None
    with pytest.raises(TypeError, match="cannot read bytes"):
        InputStream(12)


def test_host_resources_are_realm_local(tmp_path: Any) -> None:
    from polyengine_protocol import is_realm_local

    imports = wasi(preopens=[(tmp_path, "/")])
    descriptor, _ = imports["wasi:filesystem/preopens@0.2"].get_directories()[0]
    for resource in (InputStream(b""), OutputStream(None), descriptor):
        assert is_realm_local(resource)
        with pytest.raises(TypeError, match="realm-local"):
            pickle.dumps(resource)


def test_two_pollables_on_one_descriptor_both_wake() -> None:
    import socket

    from polyengine_wasi._kernel import fd_pollable

    a, b = socket.socketpair()
    with a, b:
        a.setblocking(False)

        def readable() -> bool:
            import select

            return bool(select.select([a], [], [], 0)[0])

        async def main() -> tuple[list[int], list[int]]:
            first = fd_pollable(a.fileno(), write=False, ready=readable)
            second = fd_pollable(a.fileno(), write=False, ready=readable)
            one = asyncio.ensure_future(poll([first]))  # type: ignore[arg-type]
            two = asyncio.ensure_future(poll([second]))  # type: ignore[arg-type]
            await asyncio.sleep(0.01)
            b.send(b"x")
            return await asyncio.wait_for(one, 2), await asyncio.wait_for(two, 2)

        assert asyncio.run(main()) == ([0], [0])


def test_blocking_write_parks_until_the_peer_drains() -> None:
    import socket

    from polyengine_wasi._bytes import SocketSink, SocketSource

    a, b = socket.socketpair()
    with a, b:
        a.setblocking(False)
        b.setblocking(False)
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        out = OutputStream(SocketSink(a, limit=4096))
        inp = InputStream(SocketSource(b))

        async def main() -> int:
            # fill the kernel buffers until the sink stops taking bytes
            parked = None
            for _ in range(10_000):
                result = out.blocking_write_and_flush(bytes(4096))
                if result is not None:
                    parked = result
                    break
            assert parked is not None, "the socket never filled up"
            assert not out.subscribe().ready()
            task = asyncio.ensure_future(parked)
            await asyncio.sleep(0.01)
            assert not task.done()
            received = 0
            while not task.done():
                chunk = await asyncio.wait_for(asyncio.ensure_future(
                    _read_some(inp)), 2)
                received += len(chunk)
            await task
            return received

        assert asyncio.run(main()) > 0


async def _read_some(stream: InputStream) -> bytes:
    result = stream.blocking_read(1 << 16)
    return result if isinstance(result, bytes) else await result


def test_blocking_splice_parks_for_input() -> None:
    async def producer() -> AsyncIterator[bytes]:
        await asyncio.sleep(0.01)
        yield b"eventually"

    out = bytearray()

    async def main() -> int:
        src = InputStream(AsyncIterSource(producer()))
        dst = OutputStream(BufferSink(out))
        pending = dst.blocking_splice(src, 100)
        assert not isinstance(pending, int)
        return await pending

    assert asyncio.run(main()) == 10
    assert bytes(out) == b"eventually"


def test_poll_mixes_a_stream_and_a_timer() -> None:
    clock = wasi()["wasi:clocks/monotonic-clock@0.2"]

    async def producer() -> AsyncIterator[bytes]:
        await asyncio.sleep(0.01)
        yield b"data"

    async def main() -> list[int]:
        stream = InputStream(AsyncIterSource(producer()))
        timer = clock.subscribe_duration(5_000_000_000)
        return await poll([timer, stream.subscribe()])  # type: ignore[misc]

    assert asyncio.run(main()) == [1]
