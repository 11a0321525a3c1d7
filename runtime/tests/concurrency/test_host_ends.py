"""Host-held stream and future ends against guest ends, on the asyncio driver."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from polyengine.abi.compile import Compiler
from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.options import CanonicalOptions
from polyengine.concurrency import (
    Driver,
    InstanceState,
    ReadableFutureEnd,
    ReadableStreamEnd,
    SharedFutureImpl,
    SharedStreamImpl,
    Store,
    WritableFutureEnd,
    WritableStreamEnd,
)
from polyengine.concurrency.copy_builtins import (
    CopyOptions,
    canon_future_read,
    canon_future_write,
    canon_stream_drop_writable,
    canon_stream_read,
    canon_stream_write,
)
from polyengine.concurrency.fakes import stackful
from polyengine.concurrency.host_ends import (
    HostFutureReader,
    HostFutureWriter,
    HostStreamReader,
    HostStreamWriter,
)
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.concurrency.thread import Suspends, Thread
from polyengine.types import model as m

U8S = m.Stream(m.U8())
U32F = m.Future(m.U32())


def sync_opts(mem: BytearrayMemory, t: m.ValType) -> CopyOptions:
    return CopyOptions(CanonicalOptions(memory=mem), Compiler().codec(t))


def test_guest_writes_host_reads() -> None:
    async def main() -> list[Any]:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        mem = BytearrayMemory(256)
        shared = SharedStreamImpl(U8S.t)
        wi = inst.handles.add(WritableStreamEnd(shared))
        reader = HostStreamReader(store, shared)
        progress: list[int] = []

        def body(thread: Thread) -> Suspends[None]:
            mem.write(0, b"hello world")
            done = 0
            while done < 11:
                opts = sync_opts(mem, m.U8())
                r = yield from canon_stream_write(thread, U8S, opts, wi, done, 11 - done)
                progress.append(int(r[0]) >> 4)
                done += int(r[0]) >> 4
            canon_stream_drop_writable(thread, U8S, wi)

        call = driver.call(stackful(inst, body), [])
        chunks: list[Any] = []
        while True:
            chunk = await reader.read(4)
            if chunk is None:
                break
            assert isinstance(chunk, bytes)
            chunks.append(chunk)
        await call
        reader.drop()
        assert store.host_pending == 0
        return [chunks, progress]

    chunks, progress = asyncio.run(main())
    assert b"".join(chunks) == b"hello world"
    assert all(0 < len(c) <= 4 for c in chunks)
    # until the writer's event is delivered its buffer stays open to more reads
    assert sum(progress) == 11 and all(p > 0 for p in progress)


def test_host_writes_guest_reads_until_end() -> None:
    async def main() -> bytes:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        mem = BytearrayMemory(256)
        shared = SharedStreamImpl(U8S.t)
        ri = inst.handles.add(ReadableStreamEnd(shared))
        writer = HostStreamWriter(store, shared)
        got = bytearray()

        def body(thread: Thread) -> Suspends[None]:
            while True:
                r = int(
                    (yield from canon_stream_read(thread, U8S, sync_opts(mem, m.U8()), ri, 64, 3))[
                        0
                    ]
                )
                got.extend(mem.read(64, r >> 4))
                if r & 0xF == 1:  # DROPPED
                    return

        call = driver.call(stackful(inst, body), [])
        assert await writer.write_all(b"streaming!")
        writer.drop()
        await call
        return bytes(got)

    assert asyncio.run(main()) == b"streaming!"


def test_guest_waiting_on_a_host_held_end_is_not_a_deadlock() -> None:
    async def main() -> list[int]:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        mem = BytearrayMemory(64)
        shared = SharedFutureImpl(U32F.t)
        ri = inst.handles.add(ReadableFutureEnd(shared))
        writer = HostFutureWriter(store, shared)
        out: list[int] = []

        def body(thread: Thread) -> Suspends[None]:
            yield from canon_future_read(thread, U32F, sync_opts(mem, m.U32()), ri, 8)
            out.append(int.from_bytes(mem.read(8, 4), "little"))

        call = driver.call(stackful(inst, body), [])
        await asyncio.sleep(0.02)  # the guest waits; the host still holds the writer
        assert not call.done()
        assert await writer.write(1234)
        await call
        return out

    assert asyncio.run(main()) == [1234]


def test_host_reads_a_guest_future_and_cancellation_of_a_host_read() -> None:
    async def main() -> int:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        mem = BytearrayMemory(64)
        shared = SharedFutureImpl(U32F.t)
        wi = inst.handles.add(WritableFutureEnd(shared))
        reader = HostFutureReader(store, shared)

        # a host read cancelled before the guest writes leaves the future readable
        t = asyncio.ensure_future(reader.read())
        await asyncio.sleep(0)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        assert shared.pending_buffer is None

        def body(thread: Thread) -> Suspends[None]:
            mem.write(0, (77).to_bytes(4, "little"))
            yield from canon_future_write(thread, U32F, sync_opts(mem, m.U32()), wi, 0)

        call = driver.call(stackful(inst, body), [])
        v = await reader.read()
        await call
        assert isinstance(v, int)
        return v

    assert asyncio.run(main()) == 77


def test_host_end_misuse_is_reported() -> None:
    async def main() -> None:
        store = Store(SchedulePolicy(None))
        shared = SharedStreamImpl(U8S.t)
        reader = HostStreamReader(store, shared)
        with pytest.raises(ValueError, match="at least 1"):
            await reader.read(0)
        reader.drop()
        reader.drop()
        with pytest.raises(ValueError, match="dropped"):
            await reader.read(1)
        assert store.host_pending == 0

    asyncio.run(main())


def test_host_to_host_bytes_and_lists() -> None:
    async def main() -> tuple[Any, Any]:
        store = Store(SchedulePolicy(None))
        shared = SharedStreamImpl(m.U8())
        reader, writer = HostStreamReader(store, shared), HostStreamWriter(store, shared)
        w = asyncio.ensure_future(writer.write(memoryview(b"abcdef")))
        first = await reader.read(4)
        n = await w
        ushared = SharedStreamImpl(m.U32())
        ureader, uwriter = HostStreamReader(store, ushared), HostStreamWriter(store, ushared)
        uw = asyncio.ensure_future(uwriter.write([1, 2, 3]))
        got = await ureader.read(8)
        await uw
        for e in (reader, writer, ureader, uwriter):
            e.drop()
        assert store.host_pending == 0
        return (first, n), got

    (first, n), got = asyncio.run(main())
    assert first == b"abcd" and n == 4
    assert got == [1, 2, 3]


def test_a_megabyte_moves_in_one_copy() -> None:
    async def main() -> tuple[int, bool]:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        size = 1 << 20
        mem = BytearrayMemory(size + 4096)
        payload = bytes(range(256)) * (size // 256)
        mem.write(0, payload)
        shared = SharedStreamImpl(U8S.t)
        wi = inst.handles.add(WritableStreamEnd(shared))
        reader = HostStreamReader(store, shared)
        ops: list[int] = []

        def body(thread: Thread) -> Suspends[None]:
            r = yield from canon_stream_write(thread, U8S, sync_opts(mem, m.U8()), wi, 0, size)
            ops.append(int(r[0]) >> 4)
            canon_stream_drop_writable(thread, U8S, wi)

        call = driver.call(stackful(inst, body), [])
        data = await reader.read(size)
        await call
        reader.drop()
        return len(ops), data == payload

    assert asyncio.run(main()) == (1, True)
