"""Reader for canonical definitions and canon options (Binary.md §"Canonical Definitions")."""

from __future__ import annotations

from collections.abc import Callable

from . import ast
from ._cursor import Cursor
from ._read_types import read_core_valtype, read_result_list

_ENCODINGS = {e.value: e for e in ast.StringEncoding}


def read_canon_opts(c: Cursor) -> tuple[ast.CanonOpt, ...]:
    """``opts``: a ``vec(canonopt)``, kept in order with duplicates."""
    n = c.count("canon options")
    out: list[ast.CanonOpt] = []
    for _ in range(n):
        pos = c.pos
        b = c.u8("a canon option")
        if b <= 0x02:
            out.append(ast.StringEncodingOpt(_ENCODINGS[b]))
        elif b == 0x03:
            out.append(ast.MemoryOpt(c.u32("a memory index")))
        elif b == 0x04:
            out.append(ast.ReallocOpt(c.u32("a function index")))
        elif b == 0x05:
            out.append(ast.PostReturnOpt(c.u32("a function index")))
        elif b == 0x06:
            out.append(ast.AsyncOpt())
        elif b == 0x07:
            out.append(ast.CallbackOpt(c.u32("a function index")))
        else:
            c.invalid_byte(b, "canon option", pos)
    return tuple(out)


def _sort_byte(c: Cursor, what: str) -> None:
    pos = c.pos
    b = c.u8(what)
    if b != 0x00:
        c.invalid_byte(b, what, pos)


def _lift(c: Cursor, pos: int) -> ast.Canon:
    _sort_byte(c, "canon lift (core func sort)")
    f = c.u32("a core function index")
    opts = read_canon_opts(c)
    return ast.CanonLift(f, opts, c.u32("a type index"), offset=pos)


def _lower(c: Cursor, pos: int) -> ast.Canon:
    _sort_byte(c, "canon lower (func sort)")
    f = c.u32("a function index")
    return ast.CanonLower(f, read_canon_opts(c), offset=pos)


def _t(c: Cursor) -> int:
    return c.u32("a type index")


def _async(c: Cursor) -> bool:
    return c.flag("async?")


def _cancel(c: Cursor) -> bool:
    return c.flag("cancellable?")


def _shared(c: Cursor) -> bool:
    return c.flag("shared?")


def _task_return(c: Cursor, pos: int) -> ast.Canon:
    result = read_result_list(c)
    return ast.CanonTaskReturn(result, read_canon_opts(c), offset=pos)


def _context(c: Cursor, pos: int, get: bool) -> ast.Canon:
    t = read_core_valtype(c)
    i = c.u32("a context slot")
    return ast.CanonContextGet(t, i, offset=pos) if get else ast.CanonContextSet(t, i, offset=pos)


def _typed_opts(
    cls: type[
        ast.CanonStreamRead | ast.CanonStreamWrite | ast.CanonFutureRead | ast.CanonFutureWrite
    ],
) -> Callable[[Cursor, int], ast.Canon]:
    def read(c: Cursor, pos: int) -> ast.Canon:
        t = _t(c)
        return cls(t, read_canon_opts(c), offset=pos)

    return read


def _typed_async(
    cls: type[
        ast.CanonStreamCancelRead
        | ast.CanonStreamCancelWrite
        | ast.CanonFutureCancelRead
        | ast.CanonFutureCancelWrite
    ],
) -> Callable[[Cursor, int], ast.Canon]:
    def read(c: Cursor, pos: int) -> ast.Canon:
        t = _t(c)
        return cls(t, _async(c), offset=pos)

    return read


def _typed(
    cls: type[
        ast.CanonResourceNew
        | ast.CanonResourceDrop
        | ast.CanonResourceRep
        | ast.CanonStreamNew
        | ast.CanonStreamDropReadable
        | ast.CanonStreamDropWritable
        | ast.CanonFutureNew
        | ast.CanonFutureDropReadable
        | ast.CanonFutureDropWritable
    ],
) -> Callable[[Cursor, int], ast.Canon]:
    return lambda c, pos: cls(_t(c), offset=pos)


def _cancellable(
    cls: type[
        ast.CanonThreadSuspend
        | ast.CanonThreadYield
        | ast.CanonThreadSuspendThenResume
        | ast.CanonThreadYieldThenResume
        | ast.CanonThreadSuspendThenPromote
        | ast.CanonThreadYieldThenPromote
    ],
) -> Callable[[Cursor, int], ast.Canon]:
    return lambda c, pos: cls(_cancel(c), offset=pos)


def _bare(
    cls: type[
        ast.CanonBackpressureInc
        | ast.CanonBackpressureDec
        | ast.CanonTaskCancel
        | ast.CanonSubtaskDrop
        | ast.CanonErrorContextDrop
        | ast.CanonWaitableSetNew
        | ast.CanonWaitableSetDrop
        | ast.CanonWaitableJoin
        | ast.CanonThreadIndex
        | ast.CanonThreadResumeLater
    ],
) -> Callable[[Cursor, int], ast.Canon]:
    return lambda c, pos: cls(offset=pos)


def _wait_poll(
    cls: type[ast.CanonWaitableSetWait | ast.CanonWaitableSetPoll],
) -> Callable[[Cursor, int], ast.Canon]:
    def read(c: Cursor, pos: int) -> ast.Canon:
        cancellable = _cancel(c)
        return cls(cancellable, c.u32("a memory index"), offset=pos)

    return read


def _thread_new_indirect(c: Cursor, pos: int) -> ast.Canon:
    t = c.u32("a core type index")
    return ast.CanonThreadNewIndirect(t, c.u32("a table index"), offset=pos)


def _spawn_ref(c: Cursor, pos: int) -> ast.Canon:
    shared = _shared(c)
    return ast.CanonThreadSpawnRef(shared, c.u32("a core type index"), offset=pos)


def _spawn_indirect(c: Cursor, pos: int) -> ast.Canon:
    shared = _shared(c)
    t = c.u32("a core type index")
    return ast.CanonThreadSpawnIndirect(shared, t, c.u32("a table index"), offset=pos)


_CANON: dict[int, Callable[[Cursor, int], ast.Canon]] = {
    0x00: _lift,
    0x01: _lower,
    0x02: _typed(ast.CanonResourceNew),
    0x03: _typed(ast.CanonResourceDrop),
    0x04: _typed(ast.CanonResourceRep),
    0x24: _bare(ast.CanonBackpressureInc),
    0x25: _bare(ast.CanonBackpressureDec),
    0x09: _task_return,
    0x05: _bare(ast.CanonTaskCancel),
    0x0A: lambda c, pos: _context(c, pos, get=True),
    0x0B: lambda c, pos: _context(c, pos, get=False),
    0x06: lambda c, pos: ast.CanonSubtaskCancel(_async(c), offset=pos),
    0x0D: _bare(ast.CanonSubtaskDrop),
    0x0E: _typed(ast.CanonStreamNew),
    0x0F: _typed_opts(ast.CanonStreamRead),
    0x10: _typed_opts(ast.CanonStreamWrite),
    0x11: _typed_async(ast.CanonStreamCancelRead),
    0x12: _typed_async(ast.CanonStreamCancelWrite),
    0x13: _typed(ast.CanonStreamDropReadable),
    0x14: _typed(ast.CanonStreamDropWritable),
    0x15: _typed(ast.CanonFutureNew),
    0x16: _typed_opts(ast.CanonFutureRead),
    0x17: _typed_opts(ast.CanonFutureWrite),
    0x18: _typed_async(ast.CanonFutureCancelRead),
    0x19: _typed_async(ast.CanonFutureCancelWrite),
    0x1A: _typed(ast.CanonFutureDropReadable),
    0x1B: _typed(ast.CanonFutureDropWritable),
    0x1C: lambda c, pos: ast.CanonErrorContextNew(read_canon_opts(c), offset=pos),
    0x1D: lambda c, pos: ast.CanonErrorContextDebugMessage(read_canon_opts(c), offset=pos),
    0x1E: _bare(ast.CanonErrorContextDrop),
    0x1F: _bare(ast.CanonWaitableSetNew),
    0x20: _wait_poll(ast.CanonWaitableSetWait),
    0x21: _wait_poll(ast.CanonWaitableSetPoll),
    0x22: _bare(ast.CanonWaitableSetDrop),
    0x23: _bare(ast.CanonWaitableJoin),
    0x26: _bare(ast.CanonThreadIndex),
    0x27: _thread_new_indirect,
    0x28: _bare(ast.CanonThreadResumeLater),
    0x29: _cancellable(ast.CanonThreadSuspend),
    0x0C: _cancellable(ast.CanonThreadYield),
    0x2A: _cancellable(ast.CanonThreadSuspendThenResume),
    0x2B: _cancellable(ast.CanonThreadYieldThenResume),
    0x2C: _cancellable(ast.CanonThreadSuspendThenPromote),
    0x2D: _cancellable(ast.CanonThreadYieldThenPromote),
    0x40: _spawn_ref,
    0x41: _spawn_indirect,
    0x42: lambda c, pos: ast.CanonThreadAvailableParallelism(_shared(c), offset=pos),
}


def read_canon(c: Cursor) -> ast.Canon:
    """One ``canon`` item."""
    pos = c.pos
    b = c.u8("a canon definition")
    reader = _CANON.get(b)
    if reader is None:
        c.invalid_byte(b, "canon definition", pos)
    return reader(c, pos)
