"""Streams, futures and error contexts as values (CanonicalABI.md §Loading/§Storing
``lift_stream``/``lower_stream``/``lift_future``/``lift_error_context``), and the
error-context built-ins."""

from __future__ import annotations

import pytest

from polyengine.abi.compile import Compiler
from polyengine.abi.errors import LowerTypeError
from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.options import CanonicalOptions, LiftLowerContext
from polyengine.abi.trap import Trap
from polyengine.concurrency import (
    BLOCKED,
    ErrorContext,
    InstanceState,
    ReadableFutureEnd,
    ReadableStreamEnd,
    SharedStreamImpl,
    Store,
    TaskModelHooks,
    WritableStreamEnd,
)
from polyengine.concurrency.builtins import (
    canon_error_context_debug_message,
    canon_error_context_drop,
    canon_error_context_new,
    canon_waitable_join,
    canon_waitable_set_new,
)
from polyengine.concurrency.copy_builtins import CopyOptions, canon_stream_new, canon_stream_read
from polyengine.concurrency.fakes import bare_thread, now
from polyengine.types import model as m

U8S = m.Stream(m.U8())


def setup() -> tuple[Store, InstanceState, InstanceState, Compiler]:
    store = Store()
    return (
        store,
        InstanceState(store, name="a"),
        InstanceState(store, name="b"),
        Compiler(async_values=TaskModelHooks()),
    )


def test_stream_handle_moves_between_instances() -> None:
    _store, a, b, comp = setup()
    ta = bare_thread(a)
    v = canon_stream_new(ta, U8S)[0]
    assert isinstance(v, int)
    ri, wi = v & 0xFFFF_FFFF, v >> 32
    codec = comp.codec(U8S)
    cx_a = LiftLowerContext(CanonicalOptions(), a.ci)
    shared = codec.lift_flat(cx_a, [ri], 0)
    assert isinstance(shared, SharedStreamImpl)
    with pytest.raises(Trap):
        a.handles.get(ri)  # the readable end left a's table
    cx_b = LiftLowerContext(CanonicalOptions(), b.ci)
    out: list[int | float] = []
    codec.lower_flat(cx_b, shared, out)
    [bi] = out
    assert isinstance(bi, int)
    end = b.handles.get(bi)
    assert isinstance(end, ReadableStreamEnd) and end.shared is shared
    w = a.handles.get(wi)
    assert isinstance(w, WritableStreamEnd) and w.shared is shared


def test_lifting_a_busy_or_joined_end_traps() -> None:
    _store, a, _b, comp = setup()
    ta = bare_thread(a)
    mem = BytearrayMemory(256)
    opts = CopyOptions(CanonicalOptions(memory=mem, is_async=True), Compiler().codec(m.U8()))
    codec = comp.codec(U8S)
    cx = LiftLowerContext(CanonicalOptions(), a.ci)

    v = canon_stream_new(ta, U8S)[0]
    assert isinstance(v, int)
    ri = v & 0xFFFF_FFFF
    assert now(canon_stream_read(ta, U8S, opts, ri, 0, 4)) == [BLOCKED]
    with pytest.raises(Trap, match="cannot remove busy stream"):
        codec.lift_flat(cx, [ri], 0)

    v2 = canon_stream_new(ta, U8S)[0]
    assert isinstance(v2, int)
    ri2 = v2 & 0xFFFF_FFFF
    ws = canon_waitable_set_new(ta)[0]
    assert isinstance(ws, int)
    canon_waitable_join(ta, ri2, ws)
    with pytest.raises(Trap, match="cannot lift stream while it's in a waitable set"):
        codec.lift_flat(cx, [ri2], 0)


def test_lifting_the_writable_end_or_wrong_type_traps() -> None:
    _store, a, _b, comp = setup()
    ta = bare_thread(a)
    v = canon_stream_new(ta, U8S)[0]
    assert isinstance(v, int)
    cx = LiftLowerContext(CanonicalOptions(), a.ci)
    with pytest.raises(Trap, match="not a readable stream end"):
        comp.codec(U8S).lift_flat(cx, [v >> 32], 0)
    v2 = canon_stream_new(ta, U8S)[0]
    assert isinstance(v2, int)
    with pytest.raises(Trap, match="another type"):
        comp.codec(m.Stream(m.U32())).lift_flat(cx, [v2 & 0xFFFF_FFFF], 0)
    # lifting removes the handle before checking it (the spec's order)
    with pytest.raises(Trap):
        a.handles.get(v2 & 0xFFFF_FFFF)
    v3 = canon_stream_new(ta, U8S)[0]
    assert isinstance(v3, int)
    with pytest.raises(Trap, match="not a readable future end"):
        comp.codec(m.Future(m.U8())).lift_flat(cx, [v3 & 0xFFFF_FFFF], 0)


def test_lowering_a_non_stream_is_a_type_error() -> None:
    _store, a, _b, comp = setup()
    cx = LiftLowerContext(CanonicalOptions(), a.ci)
    with pytest.raises(LowerTypeError, match="expected a stream"):
        comp.codec(U8S).lower_flat(cx, b"bytes", [])


def test_future_values_lower_to_readable_ends() -> None:
    _store, a, _b, comp = setup()
    from polyengine.concurrency import SharedFutureImpl

    shared = SharedFutureImpl(m.U8())
    cx = LiftLowerContext(CanonicalOptions(), a.ci)
    out: list[int | float] = []
    comp.codec(m.Future(m.U8())).lower_flat(cx, shared, out)
    assert isinstance(out[0], int)
    e = a.handles.get(out[0])
    assert isinstance(e, ReadableFutureEnd) and e.shared is shared


def test_error_context_lifecycle() -> None:
    _store, a, b, comp = setup()
    ta = bare_thread(a)
    mem = BytearrayMemory(256)
    mem.write(16, b"oops")
    loaded: list[tuple[int, int]] = []

    def load(ptr: int, units: int) -> str:
        loaded.append((ptr, units))
        return mem.read(ptr, units).decode()

    i = canon_error_context_new(ta, load, 16, 4)[0]
    assert isinstance(i, int)
    assert loaded == [(16, 4)]
    stored: list[tuple[str, int]] = []
    canon_error_context_debug_message(ta, lambda s, p: stored.append((s, p)), i, 64)
    assert stored == [("oops", 64)]

    # passing it to another instance copies the reference, not the handle
    codec = comp.codec(m.ErrorContext())
    v = codec.lift_flat(LiftLowerContext(CanonicalOptions(), a.ci), [i], 0)
    assert isinstance(v, ErrorContext) and v.debug_message == "oops"
    out: list[int | float] = []
    codec.lower_flat(LiftLowerContext(CanonicalOptions(), b.ci), v, out)
    assert b.handles.get(int(out[0])) is v

    canon_error_context_drop(ta, i)
    with pytest.raises(Trap):
        canon_error_context_drop(ta, i)
    with pytest.raises(Trap, match="not an error-context"):
        canon_error_context_debug_message(ta, lambda s, p: None, canon_waitable_set_new(ta)[0], 0)  # type: ignore[arg-type]


def test_lifting_a_done_end_traps_with_the_reason() -> None:
    _store, a, b, comp = setup()
    ta, tb = bare_thread(a), bare_thread(b)
    mem = BytearrayMemory(64)
    opts = CopyOptions(CanonicalOptions(memory=mem, is_async=True), Compiler().codec(m.U8()))
    shared = SharedStreamImpl(m.U8())
    ri = a.handles.add(ReadableStreamEnd(shared))
    wi = b.handles.add(WritableStreamEnd(shared))
    from polyengine.concurrency.copy_builtins import canon_stream_drop_writable

    canon_stream_drop_writable(tb, U8S, wi)
    assert now(canon_stream_read(ta, U8S, opts, ri, 0, 1)) == [1]  # DROPPED, nothing copied
    cx = LiftLowerContext(CanonicalOptions(), a.ci)
    with pytest.raises(
        Trap, match="cannot lift stream after being notified that the writable end dropped"
    ):
        comp.codec(U8S).lift_flat(cx, [ri], 0)
