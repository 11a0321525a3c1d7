"""Stream copy state machine (CanonicalABI.md §Stream State, §``canon stream.*``)."""

from __future__ import annotations

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
    ReadableStreamEnd,
    SharedStreamImpl,
    Store,
    WritableStreamEnd,
)
from polyengine.concurrency.buffers import GuestBuffer
from polyengine.concurrency.copy_builtins import (
    CopyOptions,
    canon_stream_cancel_read,
    canon_stream_cancel_write,
    canon_stream_drop_readable,
    canon_stream_drop_writable,
    canon_stream_new,
    canon_stream_read,
    canon_stream_write,
)
from polyengine.concurrency.fakes import bare_thread, now
from polyengine.concurrency.thread import Thread
from polyengine.types import model as m

U8S = m.Stream(m.U8())


def packed(result: CopyResult, progress: int) -> int:
    return int(result) | (progress << 4)


class Side:
    """One instance holding one end of a stream, with its own memory and thread."""

    def __init__(self, store: Store, name: str, t: m.Stream = U8S, *, is_async: bool = True):
        self.inst = InstanceState(store, name=name)
        self.mem = BytearrayMemory(4096)
        self.thread: Thread = bare_thread(self.inst)
        codec = Compiler().codec(t.t) if t.t is not None else None
        self.opts = CopyOptions(CanonicalOptions(memory=self.mem, is_async=is_async), codec)
        self.t = t

    def read(self, i: int, ptr: int, n: int) -> int:
        return int(now(canon_stream_read(self.thread, self.t, self.opts, i, ptr, n))[0])

    def write(self, i: int, ptr: int, n: int) -> int:
        return int(now(canon_stream_write(self.thread, self.t, self.opts, i, ptr, n))[0])


def pair(t: m.Stream = U8S) -> tuple[Side, int, Side, int, SharedStreamImpl]:
    """A reader side and a writer side connected by one stream."""
    store = Store()
    reader = Side(store, "reader", t)
    writer = Side(store, "writer", t)
    shared = SharedStreamImpl(t.t)
    ri = reader.inst.handles.add(ReadableStreamEnd(shared))
    wi = writer.inst.handles.add(WritableStreamEnd(shared))
    return reader, ri, writer, wi, shared


def end(side: Side, i: int) -> ReadableStreamEnd | WritableStreamEnd:
    e = side.inst.handles.get(i)
    assert isinstance(e, ReadableStreamEnd | WritableStreamEnd)
    return e


def test_write_first_then_partial_read_completes_both_sides() -> None:
    reader, ri, writer, wi, _ = pair()
    writer.mem.write(100, b"hello")
    assert writer.write(wi, 100, 5) == BLOCKED
    assert end(writer, wi).state is CopyState.COPYING
    # the reader takes 3 of the 5 elements at once
    assert reader.read(ri, 200, 3) == packed(CopyResult.COMPLETED, 3)
    assert reader.mem.read(200, 3) == b"hel"
    assert end(reader, ri).state is CopyState.IDLE
    # the writer learns of the partial copy through its pending event
    w = end(writer, wi)
    assert w.get_pending_event() == (EventCode.STREAM_WRITE, wi, packed(CopyResult.COMPLETED, 3))
    assert w.state is CopyState.IDLE


def test_read_first_then_write_fills_reader() -> None:
    reader, ri, writer, wi, _ = pair()
    assert reader.read(ri, 200, 4) == BLOCKED
    writer.mem.write(100, b"abcdef")
    assert writer.write(wi, 100, 6) == packed(CopyResult.COMPLETED, 4)
    r = end(reader, ri)
    assert r.get_pending_event() == (EventCode.STREAM_READ, ri, packed(CopyResult.COMPLETED, 4))
    assert reader.mem.read(200, 4) == b"abcd"


def test_u32_elements_copy_in_bulk_and_keep_values() -> None:
    t = m.Stream(m.U32())
    reader, ri, writer, wi, _ = pair(t)
    writer.mem.write(64, (1).to_bytes(4, "little") + (0xDEADBEEF).to_bytes(4, "little"))
    assert reader.read(ri, 128, 8) == BLOCKED
    assert writer.write(wi, 64, 2) == packed(CopyResult.COMPLETED, 2)
    assert reader.mem.read(128, 8) == writer.mem.read(64, 8)


def test_string_elements_go_through_the_codec() -> None:
    t = m.Stream(m.String())
    reader, ri, writer, wi, _ = pair(t)
    # writer memory: two (ptr, len) string pairs
    writer.mem.write(300, b"hiyou")
    writer.mem.write(64, (300).to_bytes(4, "little") + (2).to_bytes(4, "little"))
    writer.mem.write(72, (302).to_bytes(4, "little") + (3).to_bytes(4, "little"))
    reader.opts.opts.realloc = reader.mem.realloc
    reader.mem.next = 1024
    assert reader.read(ri, 128, 2) == BLOCKED
    assert writer.write(wi, 64, 2) == packed(CopyResult.COMPLETED, 2)
    raw = reader.mem.read(128, 16)
    p0, l0, p1, l1 = (int.from_bytes(raw[k : k + 4], "little") for k in range(0, 16, 4))
    assert (reader.mem.read(p0, l0), reader.mem.read(p1, l1)) == (b"hi", b"you")


def test_zero_length_read_completes_against_pending_write_without_taking_it() -> None:
    reader, ri, writer, wi, _ = pair()
    writer.mem.write(100, b"xy")
    assert writer.write(wi, 100, 2) == BLOCKED
    assert reader.read(ri, 0, 0) == packed(CopyResult.COMPLETED, 0)
    # the write is still pending and untouched
    assert not end(writer, wi).has_pending_event()
    assert reader.read(ri, 200, 2) == packed(CopyResult.COMPLETED, 2)


def test_zero_length_write_waits_for_reader_readiness() -> None:
    reader, ri, writer, wi, _ = pair()
    assert writer.write(wi, 0, 0) == BLOCKED
    # a real read arrives: the zero-length write completes and the read pends
    assert reader.read(ri, 200, 4) == BLOCKED
    assert end(writer, wi).get_pending_event() == (
        EventCode.STREAM_WRITE,
        wi,
        packed(CopyResult.COMPLETED, 0),
    )
    assert not end(reader, ri).has_pending_event()


def test_two_zero_length_ops_meet() -> None:
    reader, ri, writer, wi, _ = pair()
    assert reader.read(ri, 0, 0) == BLOCKED
    assert writer.write(wi, 0, 0) == packed(CopyResult.COMPLETED, 0)
    assert end(reader, ri).state is CopyState.COPYING


def test_cancel_read_before_any_copy_reports_cancelled() -> None:
    reader, ri, _writer, _wi, _ = pair()
    assert reader.read(ri, 200, 4) == BLOCKED
    out = now(canon_stream_cancel_read(reader.thread, U8S, True, ri))
    assert out == [packed(CopyResult.CANCELLED, 0)]
    assert end(reader, ri).state is CopyState.IDLE


def test_cancel_write_after_partial_copy_reports_the_completed_progress() -> None:
    reader, ri, writer, wi, _ = pair()
    writer.mem.write(100, b"abcdef")
    assert writer.write(wi, 100, 6) == BLOCKED
    assert reader.read(ri, 200, 2) == packed(CopyResult.COMPLETED, 2)
    # the write already has its (partial) completion pending: cancel returns it
    out = now(canon_stream_cancel_write(writer.thread, U8S, True, wi))
    assert out == [packed(CopyResult.COMPLETED, 2)]
    assert end(writer, wi).state is CopyState.IDLE


def test_cancel_without_copy_traps() -> None:
    reader, ri, _writer, _wi, _ = pair()
    with pytest.raises(Trap, match="no copy in progress"):
        now(canon_stream_cancel_read(reader.thread, U8S, True, ri))


def test_drop_writer_while_reader_pending_reports_dropped_then_done() -> None:
    reader, ri, writer, wi, _ = pair()
    assert reader.read(ri, 200, 4) == BLOCKED
    canon_stream_drop_writable(writer.thread, U8S, wi)
    r = end(reader, ri)
    assert r.get_pending_event() == (EventCode.STREAM_READ, ri, packed(CopyResult.DROPPED, 0))
    assert r.state is CopyState.DONE
    with pytest.raises(
        Trap, match="cannot read from stream after being notified that the writable end dropped"
    ):
        reader.read(ri, 200, 4)
    canon_stream_drop_readable(reader.thread, U8S, ri)


def test_write_after_reader_dropped_reports_dropped_at_once() -> None:
    reader, ri, writer, wi, _ = pair()
    canon_stream_drop_readable(reader.thread, U8S, ri)
    assert writer.write(wi, 100, 1) == packed(CopyResult.DROPPED, 0)
    assert end(writer, wi).state is CopyState.DONE


def test_drop_busy_end_traps() -> None:
    reader, ri, _writer, _wi, _ = pair()
    assert reader.read(ri, 200, 4) == BLOCKED
    with pytest.raises(Trap, match="cannot drop busy stream"):
        canon_stream_drop_readable(reader.thread, U8S, ri)


def test_second_copy_while_copying_traps() -> None:
    reader, ri, _writer, _wi, _ = pair()
    assert reader.read(ri, 200, 4) == BLOCKED
    with pytest.raises(Trap, match="in progress"):
        reader.read(ri, 200, 4)


def test_wrong_end_and_wrong_type_trap() -> None:
    reader, ri, _writer, _wi, _ = pair()
    with pytest.raises(Trap, match="not a writable stream end"):
        reader.write(ri, 0, 1)
    with pytest.raises(Trap, match="another element type"):
        now(canon_stream_read(reader.thread, m.Stream(m.U32()), reader.opts, ri, 0, 1))
    with pytest.raises(Trap, match=r"unknown|not in use|out of range"):
        reader.read(99, 0, 1)


def test_equal_element_type_of_another_object_is_accepted() -> None:
    # the element types are compared by identity first, then structurally
    reader, ri, _writer, _wi, shared = pair()
    other = m.Stream(m.U8())
    assert other.t is not shared.t
    assert int(now(canon_stream_read(reader.thread, other, reader.opts, ri, 200, 4))[0]) == BLOCKED


def test_copy_options_take_async_from_the_canonical_options() -> None:
    assert CopyOptions(CanonicalOptions(is_async=True)).async_ is True
    assert CopyOptions(CanonicalOptions(is_async=False)).async_ is False
    assert CopyOptions().async_ is False


def test_out_of_bounds_and_misaligned_buffers_trap() -> None:
    t = m.Stream(m.U32())
    reader, ri, _writer, _wi, _ = pair(t)
    with pytest.raises(Trap, match="misaligned"):
        reader.read(ri, 2, 1)
    with pytest.raises(Trap, match="out of bounds"):
        reader.read(ri, 4096 - 4, 2)


def test_same_instance_copy_allowed_for_numbers_and_trapped_otherwise() -> None:
    store = Store()
    side = Side(store, "solo")
    packed_ends = canon_stream_new(side.thread, U8S)[0]
    assert isinstance(packed_ends, int)
    ri, wi = packed_ends & 0xFFFF_FFFF, packed_ends >> 32
    side.mem.write(100, b"q")
    assert side.write(wi, 100, 1) == BLOCKED
    assert side.read(ri, 200, 1) == packed(CopyResult.COMPLETED, 1)

    st = m.Stream(m.String())
    sside = Side(store, "strings", st)
    both = canon_stream_new(sside.thread, st)[0]
    assert isinstance(both, int)
    sri, swi = both & 0xFFFF_FFFF, both >> 32
    assert sside.write(swi, 64, 1) == BLOCKED
    with pytest.raises(Trap, match="same instance"):
        sside.read(sri, 128, 1)


def test_element_less_stream_counts_units() -> None:
    t = m.Stream(None)
    reader, ri, writer, wi, _ = pair(t)
    assert writer.write(wi, 0, 3) == BLOCKED
    assert reader.read(ri, 0, 2) == packed(CopyResult.COMPLETED, 2)


def test_an_offered_write_copies_from_the_memory_as_it_is_when_taken() -> None:
    """A write offered past its built-in call is read when a reader takes it: from the
    writer's memory as it is then (it may have grown meanwhile), not from the view
    its bounds check read (CanonicalABI.md §"stream.write": the copy happens at the
    rendezvous)."""
    reader, ri, writer, wi, _ = pair()
    writer.mem.write(100, b"hello")
    assert writer.write(wi, 100, 5) == BLOCKED
    writer.mem.grow_to(len(writer.mem) * 2)  # a new buffer: earlier views keep the old bytes
    writer.mem.write(100, b"HELLO")
    assert reader.read(ri, 200, 5) == packed(CopyResult.COMPLETED, 5)
    assert reader.mem.read(200, 5) == b"HELLO"


def test_an_offered_read_copies_into_the_memory_as_it_is_when_filled() -> None:
    """The same for a read offered past its built-in call: the writer fills the
    reader's memory as it is at the rendezvous."""
    reader, ri, writer, wi, _ = pair()
    assert reader.read(ri, 200, 5) == BLOCKED
    reader.mem.grow_to(len(reader.mem) * 2)
    writer.mem.write(100, b"abcde")
    assert writer.write(wi, 100, 5) == packed(CopyResult.COMPLETED, 5)
    assert reader.mem.read(200, 5) == b"abcde"  # in the grown memory, not a stale view


def test_a_copy_completed_at_once_reads_the_memory_of_its_own_call() -> None:
    """A write that meets an offered read completes within its call, through the
    view its bounds check read; both buffers end up not fresh."""
    reader, ri, writer, wi, shared = pair()
    assert reader.read(ri, 200, 3) == BLOCKED
    pending = shared.pending_buffer
    writer.mem.write(100, b"xyz")
    assert writer.write(wi, 100, 3) == packed(CopyResult.COMPLETED, 3)
    assert reader.mem.read(200, 3) == b"xyz"
    assert isinstance(pending, GuestBuffer) and not pending.fresh
