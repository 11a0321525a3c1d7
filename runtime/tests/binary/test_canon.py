"""Every canon built-in and canon option, read from text compiled by wasm-tools."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from polyengine.binary import ast, read_component
from polyengine.errors import TranslationError

W = Callable[[str], bytes]
P = ast.PrimValType

PRELUDE = """
  (core module $m
    (func (export "f"))
    (func (export "g") (param i32 i32))
    (func (export "cb") (param i32 i32 i32) (result i32) unreachable)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) unreachable)
    (memory (export "mem") 1)
    (table (export "tbl") 1 funcref)
  )
  (core instance $i (instantiate $m))
  (alias core export $i "f" (core func $f))
  (alias core export $i "g" (core func $g))
  (alias core export $i "cb" (core func $cb))
  (alias core export $i "realloc" (core func $realloc))
  (alias core export $i "mem" (core memory $mem))
  (alias core export $i "tbl" (core table $tbl))
  (core type $ft (func (param i32)))
  (type $empty (func))
  (type $takes-string (func (param "s" string)))
  (type $async (func async))
  (type $r (resource (rep i32)))
  (type $st (stream u8))
  (type $fu (future))
  (import "imp" (func $imp (type $takes-string)))
"""
# core funcs: f=0 g=1 cb=2 realloc=3; memory 0; table 0; core type 0;
# types: empty=0 takes-string=1 async=2 r=3 st=4 fu=5; func imp=0

BUILTINS = """
  (func (type $empty) (canon lift (core func $f)))
  (func (type $takes-string)
    (canon lift (core func $g) string-encoding=utf8 (memory $mem) (realloc $realloc)))
  (func (type $async) (canon lift (core func $f) async (callback $cb)))
  (func (type $empty) (canon lift (core func $f) (post-return $f)))
  (core func (canon lower (func $imp) string-encoding=utf16 (memory $mem)))
  (core func (canon lower (func $imp) string-encoding=latin1+utf16 (memory $mem) async))
  (core func (canon resource.new $r))
  (core func (canon resource.drop $r))
  (core func (canon resource.rep $r))
  (core func (canon backpressure.inc))
  (core func (canon backpressure.dec))
  (core func (canon task.return))
  (core func (canon task.return (result u32) (memory $mem) string-encoding=utf8))
  (core func (canon task.cancel))
  (core func (canon context.get i32 0))
  (core func (canon context.set i32 1))
  (core func (canon subtask.cancel))
  (core func (canon subtask.cancel async))
  (core func (canon subtask.drop))
  (core func (canon stream.new $st))
  (core func (canon stream.read $st (memory $mem) async))
  (core func (canon stream.write $st (memory $mem)))
  (core func (canon stream.cancel-read $st))
  (core func (canon stream.cancel-write $st async))
  (core func (canon stream.drop-readable $st))
  (core func (canon stream.drop-writable $st))
  (core func (canon future.new $fu))
  (core func (canon future.read $fu (memory $mem) (realloc $realloc)))
  (core func (canon future.write $fu async))
  (core func (canon future.cancel-read $fu async))
  (core func (canon future.cancel-write $fu))
  (core func (canon future.drop-readable $fu))
  (core func (canon future.drop-writable $fu))
  (core func (canon error-context.new (memory $mem) string-encoding=utf16))
  (core func (canon error-context.debug-message (memory $mem) (realloc $realloc)))
  (core func (canon error-context.drop))
  (core func (canon waitable-set.new))
  (core func (canon waitable-set.wait (memory $mem)))
  (core func (canon waitable-set.poll (memory $mem)))
  (core func (canon waitable-set.drop))
  (core func (canon waitable.join))
  (core func (canon thread.index))
  (core func (canon thread.new-indirect $ft (core table $tbl)))
  (core func (canon thread.resume-later))
  (core func (canon thread.suspend))
  (core func (canon thread.yield))
  (core func (canon thread.suspend-then-resume))
  (core func (canon thread.yield-then-resume))
  (core func (canon thread.suspend-then-promote))
  (core func (canon thread.yield-then-promote))
"""

MEM = ast.MemoryOpt(0)
REALLOC = ast.ReallocOpt(3)
EXPECTED: list[ast.Canon] = [
    ast.CanonLift(0, (), 0),
    ast.CanonLift(1, (ast.StringEncodingOpt(ast.StringEncoding.UTF8), MEM, REALLOC), 1),
    ast.CanonLift(0, (ast.AsyncOpt(), ast.CallbackOpt(2)), 2),
    ast.CanonLift(0, (ast.PostReturnOpt(0),), 0),
    ast.CanonLower(0, (ast.StringEncodingOpt(ast.StringEncoding.UTF16), MEM)),
    ast.CanonLower(
        0, (ast.StringEncodingOpt(ast.StringEncoding.LATIN1_UTF16), MEM, ast.AsyncOpt())
    ),
    ast.CanonResourceNew(3),
    ast.CanonResourceDrop(3),
    ast.CanonResourceRep(3),
    ast.CanonBackpressureInc(),
    ast.CanonBackpressureDec(),
    ast.CanonTaskReturn(None, ()),
    ast.CanonTaskReturn(P.U32, (MEM, ast.StringEncodingOpt(ast.StringEncoding.UTF8))),
    ast.CanonTaskCancel(),
    ast.CanonContextGet(ast.CoreNumType.I32, 0),
    ast.CanonContextSet(ast.CoreNumType.I32, 1),
    ast.CanonSubtaskCancel(False),
    ast.CanonSubtaskCancel(True),
    ast.CanonSubtaskDrop(),
    ast.CanonStreamNew(4),
    ast.CanonStreamRead(4, (MEM, ast.AsyncOpt())),
    ast.CanonStreamWrite(4, (MEM,)),
    ast.CanonStreamCancelRead(4, False),
    ast.CanonStreamCancelWrite(4, True),
    ast.CanonStreamDropReadable(4),
    ast.CanonStreamDropWritable(4),
    ast.CanonFutureNew(5),
    ast.CanonFutureRead(5, (MEM, REALLOC)),
    ast.CanonFutureWrite(5, (ast.AsyncOpt(),)),
    ast.CanonFutureCancelRead(5, True),
    ast.CanonFutureCancelWrite(5, False),
    ast.CanonFutureDropReadable(5),
    ast.CanonFutureDropWritable(5),
    ast.CanonErrorContextNew((MEM, ast.StringEncodingOpt(ast.StringEncoding.UTF16))),
    ast.CanonErrorContextDebugMessage((MEM, REALLOC)),
    ast.CanonErrorContextDrop(),
    ast.CanonWaitableSetNew(),
    ast.CanonWaitableSetWait(False, 0),
    ast.CanonWaitableSetPoll(False, 0),
    ast.CanonWaitableSetDrop(),
    ast.CanonWaitableJoin(),
    ast.CanonThreadIndex(),
    ast.CanonThreadNewIndirect(0, 0),
    ast.CanonThreadResumeLater(),
    ast.CanonThreadSuspend(False),
    ast.CanonThreadYield(False),
    ast.CanonThreadSuspendThenResume(False),
    ast.CanonThreadYieldThenResume(False),
    ast.CanonThreadSuspendThenPromote(False),
    ast.CanonThreadYieldThenPromote(False),
]


def test_every_builtin_from_text(wat2wasm: W) -> None:
    data = wat2wasm(f"(component {PRELUDE} {BUILTINS})")
    c = read_component(data)
    canons = [
        d
        for d in c.definitions
        if type(d).__name__.startswith("Canon") and not isinstance(d, ast.CoreTypeDef)
    ]
    assert canons == EXPECTED
    # offsets point at each item's opcode byte
    for node in canons:
        assert node.offset > 0
    assert data[canons[0].offset : canons[0].offset + 2] == b"\x00\x00"
    assert data[canons[-1].offset] == 0x2D
    builtins = {type(x).builtin for x in canons}
    assert "thread.yield-then-promote" in builtins and "lift" in builtins


def _canon_component(items: bytes, count: int) -> bytes:
    body = bytes([count]) + items
    return b"\x00asm\x0d\x00\x01\x00\x08" + bytes([len(body)]) + body


def test_shared_everything_thread_builtins() -> None:
    # 🧵② built-ins, hand-encoded per Binary.md (with the sh? immediate)
    data = _canon_component(b"\x40\x01\x07" + b"\x41\x00\x02\x03" + b"\x42\x01", 3)
    assert read_component(data).definitions == (
        ast.CanonThreadSpawnRef(True, 7),
        ast.CanonThreadSpawnIndirect(False, 2, 3),
        ast.CanonThreadAvailableParallelism(True),
    )


def test_cancellable_immediates() -> None:
    # cancel? immediates (Binary.md), hand-encoded: the text syntax no longer spells them
    data = _canon_component(b"\x20\x01\x00" + b"\x21\x01\x02" + b"\x0c\x01" + b"\x2b\x01", 4)
    assert read_component(data).definitions == (
        ast.CanonWaitableSetWait(True, 0),
        ast.CanonWaitableSetPoll(True, 2),
        ast.CanonThreadYield(True),
        ast.CanonThreadYieldThenResume(True),
    )


def test_duplicate_options_are_kept_for_validation() -> None:
    data = _canon_component(b"\x01\x00\x00\x03\x00\x00\x01", 1)
    (lower,) = read_component(data).definitions
    assert lower == ast.CanonLower(
        0,
        (
            ast.StringEncodingOpt(ast.StringEncoding.UTF8),
            ast.StringEncodingOpt(ast.StringEncoding.UTF8),
            ast.StringEncodingOpt(ast.StringEncoding.UTF16),
        ),
    )


@pytest.mark.parametrize(
    ("items", "offset", "fragment"),
    [
        (b"\x07", 11, "(0x7) for canon definition"),
        (b"\x2e", 11, "(0x2e) for canon definition"),
        (b"\x43", 11, "(0x43) for canon definition"),
        (b"\x00\x01\x00\x00\x00", 12, "canon lift"),
        (b"\x01\x01\x00\x00", 12, "canon lower"),
        (b"\x01\x00\x00\x01\x0a", 15, "(0xa) for canon option"),
        (b"\x0c\x02", 12, "invalid boolean value"),
        (b"\x20\x02\x00", 12, "invalid boolean value"),
        (b"\x09\x02\x00", 12, "function result list"),
        (b"\x09\x01\x01", 13, "number of results"),
        (b"\x0a\x55\x00", 12, "core value type"),
    ],
)
def test_malformed_canon(items: bytes, offset: int, fragment: str) -> None:
    with pytest.raises(TranslationError) as ei:
        read_component(_canon_component(items, 1))
    assert ei.value.offset == offset
    assert ei.value.section == "canon"
    assert fragment in str(ei.value)
