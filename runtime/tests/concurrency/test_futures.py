"""Future rules (CanonicalABI.md §Future State, §``canon future.*``)."""

from __future__ import annotations

import inspect

import pytest

from polyengine.abi.compile import Compiler
from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.options import CanonicalOptions
from polyengine.abi.trap import Trap
from polyengine.concurrency import (
    BLOCKED,
    CopyResult,
    CopyState,
    EventCode,
    InstanceState,
    ReadableFutureEnd,
    SharedFutureImpl,
    Store,
    WritableFutureEnd,
)
from polyengine.concurrency.copy_builtins import (
    CopyOptions,
    canon_future_cancel_read,
    canon_future_cancel_write,
    canon_future_drop_readable,
    canon_future_drop_writable,
    canon_future_new,
    canon_future_read,
    canon_future_write,
    future_copy_builtin,
)
from polyengine.concurrency.fakes import bare_thread, now
from polyengine.types import model as m

FT = m.Future(m.U32())


class Side:
    def __init__(self, store: Store, name: str) -> None:
        self.inst = InstanceState(store, name=name)
        self.mem = BytearrayMemory(1024)
        self.thread = bare_thread(self.inst)
        self.opts = CopyOptions(
            CanonicalOptions(memory=self.mem, is_async=True), Compiler().codec(m.U32())
        )

    def read(self, i: int, ptr: int) -> int:
        return int(now(canon_future_read(self.thread, FT, self.opts, i, ptr))[0])

    def write(self, i: int, ptr: int) -> int:
        return int(now(canon_future_write(self.thread, FT, self.opts, i, ptr))[0])

    def end(self, i: int) -> ReadableFutureEnd | WritableFutureEnd:
        e = self.inst.handles.get(i)
        assert isinstance(e, ReadableFutureEnd | WritableFutureEnd)
        return e


def pair() -> tuple[Side, int, Side, int]:
    store = Store()
    reader, writer = Side(store, "reader"), Side(store, "writer")
    shared = SharedFutureImpl(FT.t)
    ri = reader.inst.handles.add(ReadableFutureEnd(shared))
    wi = writer.inst.handles.add(WritableFutureEnd(shared))
    return reader, ri, writer, wi


def test_write_then_read_delivers_the_value_and_finishes_both_ends() -> None:
    reader, ri, writer, wi = pair()
    writer.mem.write(8, (42).to_bytes(4, "little"))
    assert writer.write(wi, 8) == BLOCKED
    assert reader.read(ri, 16) == CopyResult.COMPLETED
    assert int.from_bytes(reader.mem.read(16, 4), "little") == 42
    assert reader.end(ri).state is CopyState.DONE
    assert writer.end(wi).get_pending_event() == (EventCode.FUTURE_WRITE, wi, 0)
    assert writer.end(wi).state is CopyState.DONE
    canon_future_drop_writable(writer.thread, FT, wi)
    canon_future_drop_readable(reader.thread, FT, ri)


def test_read_then_write() -> None:
    reader, ri, writer, wi = pair()
    assert reader.read(ri, 16) == BLOCKED
    writer.mem.write(8, (7).to_bytes(4, "little"))
    assert writer.write(wi, 8) == CopyResult.COMPLETED
    assert reader.end(ri).get_pending_event() == (EventCode.FUTURE_READ, ri, 0)
    assert int.from_bytes(reader.mem.read(16, 4), "little") == 7


def test_writer_must_write_before_dropping() -> None:
    _reader, _ri, writer, wi = pair()
    with pytest.raises(Trap, match="cannot drop future write end without first writing a value"):
        canon_future_drop_writable(writer.thread, FT, wi)


def test_write_after_reader_dropped_is_dropped_and_then_droppable() -> None:
    reader, ri, writer, wi = pair()
    canon_future_drop_readable(reader.thread, FT, ri)
    assert writer.write(wi, 8) == CopyResult.DROPPED
    assert writer.end(wi).state is CopyState.DONE
    canon_future_drop_writable(writer.thread, FT, wi)


def test_pending_write_sees_reader_drop() -> None:
    reader, ri, writer, wi = pair()
    assert writer.write(wi, 8) == BLOCKED
    canon_future_drop_readable(reader.thread, FT, ri)
    assert writer.end(wi).get_pending_event() == (EventCode.FUTURE_WRITE, wi, CopyResult.DROPPED)


def test_cancelled_read_can_be_retried() -> None:
    reader, ri, writer, wi = pair()
    assert reader.read(ri, 16) == BLOCKED
    assert now(canon_future_cancel_read(reader.thread, FT, True, ri)) == [CopyResult.CANCELLED]
    assert reader.end(ri).state is CopyState.IDLE
    writer.mem.write(8, (9).to_bytes(4, "little"))
    assert writer.write(wi, 8) == BLOCKED
    assert reader.read(ri, 16) == CopyResult.COMPLETED


def test_cancelled_write_leaves_writer_obliged_to_write() -> None:
    _reader, _ri, writer, wi = pair()
    assert writer.write(wi, 8) == BLOCKED
    assert now(canon_future_cancel_write(writer.thread, FT, True, wi)) == [CopyResult.CANCELLED]
    with pytest.raises(Trap, match="cannot drop future write end without first writing a value"):
        canon_future_drop_writable(writer.thread, FT, wi)


def test_no_second_read_after_value_delivered() -> None:
    reader, ri, writer, wi = pair()
    assert writer.write(wi, 8) == BLOCKED
    assert reader.read(ri, 16) == CopyResult.COMPLETED
    with pytest.raises(Trap, match="cannot read from future after previous read succeeded"):
        reader.read(ri, 16)


def test_future_new_packs_both_indices() -> None:
    store = Store()
    side = Side(store, "solo")
    v = canon_future_new(side.thread, FT)[0]
    assert isinstance(v, int)
    ri, wi = v & 0xFFFF_FFFF, v >> 32
    assert isinstance(side.inst.handles.get(ri), ReadableFutureEnd)
    assert isinstance(side.inst.handles.get(wi), WritableFutureEnd)


def test_the_bound_future_copy_returns_its_results_without_a_generator() -> None:
    """``future_copy_builtin`` (what the engine calls): a copy that completes at once,
    or an ``async`` one that cannot, returns its flat results directly; only a
    synchronous copy that has to wait is a generator (CanonicalABI.md §"future.write")."""
    reader, ri, writer, wi = pair()
    write = future_copy_builtin(False, FT, writer.opts)
    read = future_copy_builtin(True, FT, reader.opts)
    writer.mem.write(8, (7).to_bytes(4, "little"))
    assert write(writer.thread, [wi, 8]) == [BLOCKED]  # async: nobody reads yet
    assert read(reader.thread, [ri, 16]) == [CopyResult.COMPLETED]
    assert int.from_bytes(reader.mem.read(16, 4), "little") == 7
    assert writer.end(wi).get_pending_event() == (EventCode.FUTURE_WRITE, wi, 0)

    store = Store()
    sync_reader = Side(store, "sync reader")
    sync_reader.opts = CopyOptions(CanonicalOptions(memory=sync_reader.mem), reader.opts.codec)
    shared = SharedFutureImpl(FT.t)
    si = sync_reader.inst.handles.add(ReadableFutureEnd(shared))
    waits = future_copy_builtin(True, FT, sync_reader.opts)(sync_reader.thread, [si, 16])
    assert inspect.isgenerator(waits)  # a synchronous read with nothing written waits
    waits.close()
