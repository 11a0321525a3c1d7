"""Waitable sets (CanonicalABI.md §Waitable State, §``canon waitable-set.*``,
§``canon waitable.join``) and synchronous copies that block."""

from __future__ import annotations

import struct

import pytest

from polyengine.abi.compile import Compiler
from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.options import CanonicalOptions
from polyengine.abi.trap import Trap
from polyengine.concurrency import (
    BLOCKED,
    CopyResult,
    EventCode,
    InstanceState,
    ReadableStreamEnd,
    SharedStreamImpl,
    Store,
    WritableStreamEnd,
    run_to_completion,
    start_host_call,
)
from polyengine.concurrency.builtins import (
    canon_waitable_join,
    canon_waitable_set_drop,
    canon_waitable_set_new,
    canon_waitable_set_poll,
    canon_waitable_set_wait,
)
from polyengine.concurrency.copy_builtins import CopyOptions, canon_stream_read, canon_stream_write
from polyengine.concurrency.fakes import bare_thread, now, stackful
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.concurrency.thread import Suspends, Thread
from polyengine.concurrency.waitable import WaitableSet
from polyengine.types import model as m

U8S = m.Stream(m.U8())


def opts(mem: BytearrayMemory, *, is_async: bool) -> CopyOptions:
    return CopyOptions(CanonicalOptions(memory=mem, is_async=is_async), Compiler().codec(m.U8()))


class World:
    """Two instances joined by ``n`` streams; ends already in their tables."""

    def __init__(self, n: int = 2, seed: int | None = None) -> None:
        self.store = Store(SchedulePolicy(seed))
        self.r = InstanceState(self.store, name="reader")
        self.w = InstanceState(self.store, name="writer")
        self.rmem, self.wmem = BytearrayMemory(1024), BytearrayMemory(1024)
        self.rt, self.wt = bare_thread(self.r), bare_thread(self.w)
        self.ri: list[int] = []
        self.wi: list[int] = []
        for _ in range(n):
            shared = SharedStreamImpl(U8S.t)
            self.ri.append(self.r.handles.add(ReadableStreamEnd(shared)))
            self.wi.append(self.w.handles.add(WritableStreamEnd(shared)))

    def new_set(self) -> int:
        ws = canon_waitable_set_new(self.rt)[0]
        assert isinstance(ws, int)
        return ws

    def poll(self, ws: int) -> tuple[int, int, int]:
        code = canon_waitable_set_poll(self.rt, False, self.rmem, ws, 0)[0]
        p1, p2 = struct.unpack_from("<II", self.rmem.buf, 0)
        assert isinstance(code, int)
        return code, p1, p2


def test_poll_empty_set_is_none() -> None:
    w = World()
    assert w.poll(w.new_set()) == (EventCode.NONE, 0, 0)


def test_poll_returns_events_in_join_order_and_consumes_them() -> None:
    w = World()
    ws = w.new_set()
    for i in w.ri:
        canon_waitable_join(w.rt, i, ws)
    o = opts(w.rmem, is_async=True)
    for i in w.ri:
        assert now(canon_stream_read(w.rt, U8S, o, i, 100, 1)) == [BLOCKED]
    # the writer writes to the second stream first
    wo = opts(w.wmem, is_async=True)
    for i in reversed(w.wi):
        assert now(canon_stream_write(w.wt, U8S, wo, i, 0, 1)) == [int(CopyResult.COMPLETED) | 16]
    first, second = w.poll(ws), w.poll(ws)
    assert (first[1], second[1]) == (w.ri[0], w.ri[1])
    assert first[0] == EventCode.STREAM_READ and first[2] == 16
    assert w.poll(ws) == (EventCode.NONE, 0, 0)


def test_join_moves_between_sets_and_zero_removes() -> None:
    w = World(1)
    a, b = w.new_set(), w.new_set()
    canon_waitable_join(w.rt, w.ri[0], a)
    canon_waitable_join(w.rt, w.ri[0], b)
    wa = w.r.handles.get(a)
    wb = w.r.handles.get(b)
    assert isinstance(wa, WaitableSet) and isinstance(wb, WaitableSet)
    assert wa.elems == [] and len(wb.elems) == 1
    canon_waitable_join(w.rt, w.ri[0], 0)
    assert wb.elems == []
    canon_waitable_set_drop(w.rt, a)
    canon_waitable_set_drop(w.rt, b)


def test_drop_set_with_members_traps() -> None:
    w = World(1)
    ws = w.new_set()
    canon_waitable_join(w.rt, w.ri[0], ws)
    with pytest.raises(Trap, match="cannot drop waitable set with members"):
        canon_waitable_set_drop(w.rt, ws)


def test_join_non_waitable_and_non_set_trap() -> None:
    w = World(1)
    ws = w.new_set()
    with pytest.raises(Trap, match="not a waitable"):
        canon_waitable_join(w.rt, ws, ws)
    with pytest.raises(Trap, match="not a waitable set"):
        canon_waitable_join(w.rt, w.ri[0], w.ri[0])


def test_event_pointer_is_checked() -> None:
    w = World(1)
    ws = w.new_set()
    with pytest.raises(Trap, match="misaligned"):
        canon_waitable_set_poll(w.rt, False, w.rmem, ws, 2)
    with pytest.raises(Trap, match="out of bounds"):
        canon_waitable_set_poll(w.rt, False, w.rmem, ws, 1024 - 4)


def test_sync_copy_on_joined_end_traps() -> None:
    w = World(1)
    ws = w.new_set()
    canon_waitable_join(w.rt, w.ri[0], ws)
    with pytest.raises(
        Trap, match="waitable cannot be used synchronously while added to a waitable set"
    ):
        now(canon_stream_read(w.rt, U8S, opts(w.rmem, is_async=False), w.ri[0], 0, 1))


def test_wait_blocks_until_an_event_arrives() -> None:
    w = World(1)
    log: list[object] = []

    def reader(thread: Thread) -> Suspends[None]:
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        canon_waitable_join(thread, w.ri[0], ws)
        o = opts(w.rmem, is_async=True)
        assert (yield from canon_stream_read(thread, U8S, o, w.ri[0], 100, 4)) == [BLOCKED]
        log.append("reader waits")
        code = (yield from canon_waitable_set_wait(thread, False, w.rmem, ws, 0))[0]
        log.append(("event", code, *struct.unpack_from("<II", w.rmem.buf, 0)))
        wset = thread.inst.handles.get(ws)
        assert isinstance(wset, WaitableSet) and wset.num_waiting == 0

    def writer(thread: Thread) -> Suspends[None]:
        log.append("writer writes")
        w.wmem.write(0, b"ab")
        r = yield from canon_stream_write(thread, U8S, opts(w.wmem, is_async=True), w.wi[0], 0, 2)
        log.append(("wrote", r[0]))

    rc = start_host_call(stackful(w.r, reader), [])
    assert not rc.settled
    wc = start_host_call(stackful(w.w, writer), [])
    assert wc.resolved
    while w.store.tick():
        pass
    assert rc.resolved
    assert log == [
        "reader waits",
        "writer writes",
        ("wrote", 2 << 4),
        ("event", EventCode.STREAM_READ, w.ri[0], 2 << 4),
    ]
    assert w.rmem.read(100, 2) == b"ab"


def test_sync_read_blocks_until_the_writer_writes() -> None:
    w = World(1)
    got: list[object] = []

    def reader(thread: Thread) -> Suspends[None]:
        r = yield from canon_stream_read(thread, U8S, opts(w.rmem, is_async=False), w.ri[0], 8, 3)
        got.append(r[0])

    def writer(thread: Thread) -> Suspends[None]:
        w.wmem.write(0, b"xyz")
        r = yield from canon_stream_write(thread, U8S, opts(w.wmem, is_async=False), w.wi[0], 0, 3)
        got.append(r[0])

    rc = start_host_call(stackful(w.r, reader), [])
    assert not rc.settled and got == []
    run_to_completion(stackful(w.w, writer), [])
    while w.store.tick():
        pass
    assert rc.resolved
    assert got == [3 << 4, 3 << 4]
    assert w.rmem.read(8, 3) == b"xyz"


def test_drop_set_while_waited_on_traps() -> None:
    w = World(1)
    holder: dict[str, int] = {}

    def waiter(thread: Thread) -> Suspends[None]:
        ws = canon_waitable_set_new(thread)[0]
        assert isinstance(ws, int)
        holder["ws"] = ws
        yield from canon_waitable_set_wait(thread, True, w.rmem, ws, 0)

    start_host_call(stackful(w.r, waiter), [])
    with pytest.raises(Trap, match="cannot drop waitable set with waiters"):
        canon_waitable_set_drop(w.rt, holder["ws"])
