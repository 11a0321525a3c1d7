"""A guest's ``stream<u8>`` copy against a ready host end, compiled and pure alike
(CanonicalABI.md §"stream.read", §"stream.write"; architecture.md §5).

On the compiled call path a guest's ``stream.write`` that meets a waiting
host read, and a guest's ``stream.read`` that meets a host offer, complete
in C (``_accel_streams.c``); everything else goes to the Python built-in.
Each scenario runs in an instance on the compiled path and in one made
under ``pure_stores()``: the host must see the same bytes, the guest the
same status words, and a bad pointer or length the same trap.  On the
compiled path the C copy must have completed some of the copies.
"""

from __future__ import annotations

import array
import asyncio
import struct
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import polyengine
from polyengine.engine import _callpath, call_path

from .components import MEM, component
from .test_async import aio

Wat = Callable[[str], bytes]

#: where the guest keeps its operations (ptr, len pairs), its status words, its bytes
OPS, CODES, DATA = 2048, 4096, 16
#: the size of the guest's memory (16 pages, ``wat_probes.LIBC``)
MEMORY = 16 << 16


def copies(ops: list[tuple[int, int]]) -> str:
    """A component whose ``write-ops`` writes and ``read-ops`` reads by ``ops``.

    ``write-ops()`` returns a stream and writes ``ops`` into it in turn,
    keeping each write's status word, stopping after one that is not
    COMPLETED; ``read-ops(s)`` reads ``s`` the same way and returns a hash
    of the bytes read; ``code(k)`` is the ``k``th status word.
    """
    table = b"".join(struct.pack("<II", p, n) for p, n in ops)
    data = "".join(f"\\{b:02x}" for b in table)
    return component(
        f"""
  (type $bs (stream u8))
  (core func $ret-u32 (canon task.return (result u32)))
  (core func $ret-bs (canon task.return (result $bs)))
  (core func $stream.new (canon stream.new $bs))
  (core func $stream.write (canon stream.write $bs {MEM}))
  (core func $stream.read (canon stream.read $bs {MEM}))
  (core func $stream.drop-w (canon stream.drop-writable $bs))
  (core func $stream.drop-r (canon stream.drop-readable $bs))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
    (import "" "ret-bs" (func $ret-bs (param i32)))
    (import "" "stream.new" (func $stream.new (result i64)))
    (import "" "stream.write" (func $stream.write (param i32 i32 i32) (result i32)))
    (import "" "stream.read" (func $stream.read (param i32 i32 i32) (result i32)))
    (import "" "stream.drop-w" (func $stream.drop-w (param i32)))
    (import "" "stream.drop-r" (func $stream.drop-r (param i32)))
    (data (i32.const {DATA}) "The quick brown fox jumps over the lazy dog, again and again.")
    (data (i32.const {OPS}) "{data}")
    (func $op (param $k i32) (param $field i32) (result i32)
      (i32.load (i32.add (i32.const {OPS})
        (i32.add (i32.shl (local.get $k) (i32.const 3)) (local.get $field)))))
    (func (export "write-ops")
      (local $rw i64) (local $w i32) (local $k i32) (local $code i32)
      (local.set $rw (call $stream.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (block $done
        (loop $next
          (br_if $done (i32.ge_u (local.get $k) (i32.const {len(ops)})))
          (local.set $code (call $stream.write (local.get $w)
            (call $op (local.get $k) (i32.const 0)) (call $op (local.get $k) (i32.const 4))))
          (i32.store (i32.add (i32.const {CODES}) (i32.shl (local.get $k) (i32.const 2)))
            (local.get $code))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br_if $done (i32.and (local.get $code) (i32.const 15)))
          (br $next)))
      (call $stream.drop-w (local.get $w)))
    (func (export "read-ops") (param $s i32)
      (local $k i32) (local $code i32) (local $n i32) (local $p i32) (local $j i32)
      (local $hash i32)
      (block $done
        (loop $next
          (br_if $done (i32.ge_u (local.get $k) (i32.const {len(ops)})))
          (local.set $p (call $op (local.get $k) (i32.const 0)))
          (local.set $code (call $stream.read (local.get $s)
            (local.get $p) (call $op (local.get $k) (i32.const 4))))
          (i32.store (i32.add (i32.const {CODES}) (i32.shl (local.get $k) (i32.const 2)))
            (local.get $code))
          (local.set $n (i32.shr_u (local.get $code) (i32.const 4)))
          (local.set $j (i32.const 0))
          (block $hashed
            (loop $bytes
              (br_if $hashed (i32.ge_u (local.get $j) (local.get $n)))
              (local.set $hash (i32.add (i32.mul (local.get $hash) (i32.const 31))
                (i32.load8_u (i32.add (local.get $p) (local.get $j)))))
              (local.set $j (i32.add (local.get $j) (i32.const 1)))
              (br $bytes)))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br_if $done (i32.and (local.get $code) (i32.const 15)))
          (br $next)))
      (call $stream.drop-r (local.get $s))
      (call $ret-u32 (local.get $hash)))
    (func (export "code") (param $k i32)
      (call $ret-u32
        (i32.load (i32.add (i32.const {CODES}) (i32.shl (local.get $k) (i32.const 2)))))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret-u32" (func $ret-u32)) (export "ret-bs" (func $ret-bs))
      (export "stream.new" (func $stream.new))
      (export "stream.write" (func $stream.write)) (export "stream.read" (func $stream.read))
      (export "stream.drop-w" (func $stream.drop-w))
      (export "stream.drop-r" (func $stream.drop-r))))))
  (func (export "write-ops") async (result $bs)
    (canon lift (core func $i "write-ops") async))
  (func (export "read-ops") async (param "s" $bs) (result u32)
    (canon lift (core func $i "read-ops") async))
  (func (export "code") async (param "k" u32) (result u32)
    (canon lift (core func $i "code") async))
"""
    )


def _hash(data: bytes) -> int:
    h = 0
    for b in data:
        h = (h * 31 + b) & 0xFFFFFFFF
    return h


async def _instance(wasm: bytes, pure: bool) -> Any:
    if pure:
        with _callpath.pure_stores():
            return await polyengine.instantiate(wasm, {})
    return await polyengine.instantiate(wasm, {})


async def _codes(inst: Any, n: int) -> list[int]:
    return [await inst.exports.code(k) for k in range(n)]


async def guest_writes(wasm: bytes, pure: bool, n_ops: int, read_size: int) -> tuple[Any, ...]:
    """The host reads ``write-ops``'s stream ``read_size`` bytes at a time."""
    inst = await _instance(wasm, pure)
    with inst:
        got = bytearray()
        try:
            stream = await inst.exports.write_ops()
            while data := await stream.read(read_size):
                got += data
        except Exception as exc:  # the trap the guest's write ends in
            return bytes(got), type(exc).__name__, str(exc)
        return bytes(got), await _codes(inst, n_ops)


async def guest_reads(
    wasm: bytes, pure: bool, n_ops: int, source: Callable[[], object]
) -> tuple[Any, ...]:
    """``read-ops`` reads the stream ``source()`` makes: the hash and status words, or the trap."""
    inst = await _instance(wasm, pure)
    with inst:
        try:
            hash_ = await inst.exports.read_ops(source())
        except Exception as exc:
            return type(exc).__name__, str(exc)
        return hash_, await _codes(inst, n_ops)


def fed(chunks: list[Any], failure: Exception | None = None) -> Callable[[], object]:
    """A host producer of ``chunks`` (an async generator), failing with ``failure`` after."""

    async def source() -> AsyncIterator[Any]:
        for chunk in chunks:
            yield chunk
        if failure is not None:
            raise failure

    return source


def compiled() -> bool:
    return call_path().startswith("compiled")  # "compiled (polyengine.engine._accel)"


def fast_copies() -> int:
    accel = _callpath._ACCEL
    return 0 if accel is None else int(accel.stream_fast_copies())


WRITES = [(DATA, 5), (DATA + 5, 0), (DATA + 5, 11), (DATA, 61), (DATA + 3, 1), (DATA, 40)]
READS = [(8192, 3), (8192, 0), (8200, 10), (9000, 64), (9100, 1), (9200, 200), (9400, 7)]


@pytest.mark.parametrize("read_size", [1, 4, 100])
@aio
async def test_guest_writes_reach_the_host_alike(wat: Wat, read_size: int) -> None:
    wasm = wat(copies(WRITES))
    before = fast_copies()
    fast = await guest_writes(wasm, False, len(WRITES), read_size)
    done = fast_copies() - before
    pure = await guest_writes(wasm, True, len(WRITES), read_size)
    assert fast == pure
    assert fast[0][:16] == b"The quick brown "
    assert len(fast[0]) == 5 + 11 + 61 + 1 + 40
    assert fast[1] == [5 << 4, 0, 11 << 4, 61 << 4, 1 << 4, 40 << 4]
    if compiled():
        assert done > 0


@pytest.mark.parametrize(
    "bad", [(MEMORY - 6, 100), (MEMORY, 1), (0xFFFFFFF0, 32), (DATA, 1 << 28)], ids=str
)
@aio
async def test_a_guest_write_out_of_bounds_traps_alike(wat: Wat, bad: tuple[int, int]) -> None:
    ops = [(DATA, 5), bad, (DATA, 5)]
    wasm = wat(copies(ops))
    fast = await guest_writes(wasm, False, len(ops), 4)
    pure = await guest_writes(wasm, True, len(ops), 4)
    assert fast == pure
    assert fast[0] == b"The q" and len(fast) == 3  # the bytes before, then the trap


CHUNKS = [b"hello", b" ", b"world, ", bytes(range(256)) * 3, b"!", b"tail bytes"]


@pytest.mark.parametrize("kind", [bytes, bytearray])
@aio
async def test_guest_reads_take_the_host_offer_alike(wat: Wat, kind: type) -> None:
    """Reads inside one chunk, up to its end and across chunks (``QueuedBytes``)."""
    wasm = wat(copies(READS))
    chunks = [kind(c) for c in CHUNKS]
    before = fast_copies()
    fast = await guest_reads(wasm, False, len(READS), fed(chunks))
    done = fast_copies() - before
    pure = await guest_reads(wasm, True, len(READS), fed(chunks))
    assert fast == pure
    payload = b"".join(CHUNKS)
    counts = [code >> 4 for code in fast[1]]
    assert all(code & 15 == 0 for code in fast[1][: len(READS)])
    assert fast[0] == _hash(payload[: sum(counts)])
    assert counts[1] == 0 and sum(counts) > 200
    if compiled():
        assert done > 0


@pytest.mark.parametrize("bad", [(MEMORY - 6, 100), (MEMORY, 1), (8192, 1 << 28)], ids=str)
@aio
async def test_a_guest_read_out_of_bounds_traps_alike(wat: Wat, bad: tuple[int, int]) -> None:
    ops = [(8192, 3), bad, (8192, 3)]
    wasm = wat(copies(ops))
    fast = await guest_reads(wasm, False, len(ops), fed(CHUNKS))
    pure = await guest_reads(wasm, True, len(ops), fed(CHUNKS))
    assert fast == pure
    assert len(fast) == 2 and isinstance(fast[0], str)  # a trap, named alike


@aio
async def test_a_failed_producer_traps_the_reader_alike(wat: Wat) -> None:
    """The bytes queued before the failure are not read past it (``HostFedStream``)."""
    ops = [(8192, 4)] * 8
    wasm = wat(copies(ops))
    chunks = [b"first chunk", b"second"]
    failure = RuntimeError("the producer failed")
    fast = await guest_reads(wasm, False, len(ops), fed(chunks, failure))
    pure = await guest_reads(wasm, True, len(ops), fed(chunks, failure))
    assert fast == pure
    assert len(fast) == 2 and fast[0] != "RuntimeError" and "the producer failed" in fast[1]


async def guest_reads_writer(
    wasm: bytes, pure: bool, n_ops: int, chunks: list[Any]
) -> tuple[Any, ...]:
    """``read-ops`` reads a ``create_stream`` stream a host task writes ``chunks`` to."""
    inst = await _instance(wasm, pure)
    stream, writer = polyengine.create_stream()

    async def produce() -> list[int]:
        taken = []
        try:
            for chunk in chunks:
                taken.append(await writer.write(chunk))
        finally:
            writer.close()
        return taken

    with inst:
        producing = asyncio.ensure_future(produce())
        try:
            hash_ = await inst.exports.read_ops(stream)
        except Exception as exc:
            producing.cancel()
            return type(exc).__name__, str(exc)
        taken = await asyncio.wait_for(producing, 10)
        return hash_, await _codes(inst, n_ops), taken


@pytest.mark.parametrize(
    "chunks",
    [
        [b"hello", bytearray(b" wide "), memoryview(b"world"), b"!"],
        [b"ab", memoryview(array.array("H", [1, 2, 3])), b"cd"],
    ],
    ids=["bytes-like", "wide-items"],
)
@aio
async def test_guest_reads_of_host_writes_alike(wat: Wat, chunks: list[Any]) -> None:
    """Each write is offered as it is (``HostReadableBuffer``); a view of wider items as
    its bytes, as ``write_all`` takes it."""
    ops = [(8192, 3)] * 8
    wasm = wat(copies(ops))
    fast = await guest_reads_writer(wasm, False, len(ops), chunks)
    pure = await guest_reads_writer(wasm, True, len(ops), chunks)
    assert fast == pure
    _, codes, taken = fast
    assert sum(code >> 4 for code in codes) == sum(taken) > 0  # each byte taken was read
    assert codes[codes.index(1) - 1] & 15 == 0  # reads completed, then the end (DROPPED)


def async_writes() -> str:
    """A component whose ``put`` writes with an ``async`` ``stream.write``.

    ``open()`` returns the readable end of a new stream (the guest keeps the
    writable end), ``put(p, n)`` returns the status word of one ``async``
    write of ``n`` bytes at ``p``, and ``close()`` drops the writable end.
    """
    return component(
        f"""
  (type $bs (stream u8))
  (core func $ret-u32 (canon task.return (result u32)))
  (core func $ret-bs (canon task.return (result $bs)))
  (core func $ret (canon task.return))
  (core func $stream.new (canon stream.new $bs))
  (core func $stream.write (canon stream.write $bs async {MEM}))
  (core func $stream.drop-w (canon stream.drop-writable $bs))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
    (import "" "ret-bs" (func $ret-bs (param i32)))
    (import "" "ret" (func $ret))
    (import "" "stream.new" (func $stream.new (result i64)))
    (import "" "stream.write" (func $stream.write (param i32 i32 i32) (result i32)))
    (import "" "stream.drop-w" (func $stream.drop-w (param i32)))
    (global $w (mut i32) (i32.const 0))
    (data (i32.const {DATA}) "The quick brown fox jumps over the lazy dog, again and again.")
    (func (export "open")
      (local $rw i64)
      (local.set $rw (call $stream.new))
      (global.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw))))
    (func (export "put") (param $p i32) (param $n i32)
      (call $ret-u32 (call $stream.write (global.get $w) (local.get $p) (local.get $n))))
    (func (export "close")
      (call $stream.drop-w (global.get $w))
      (call $ret)))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret-u32" (func $ret-u32)) (export "ret-bs" (func $ret-bs))
      (export "ret" (func $ret)) (export "stream.new" (func $stream.new))
      (export "stream.write" (func $stream.write))
      (export "stream.drop-w" (func $stream.drop-w))))))
  (func (export "open") async (result $bs) (canon lift (core func $i "open") async))
  (func (export "put") async (param "p" u32) (param "n" u32) (result u32)
    (canon lift (core func $i "put") async))
  (func (export "close") async (canon lift (core func $i "close") async))
"""
    )


async def async_puts(wasm: bytes, pure: bool) -> tuple[list[bytes], list[int], int]:
    """Each ``put`` meets a host read waiting on the stream: (what the reads returned,
    the status words, the copies the compiled path completed)."""
    inst = await _instance(wasm, pure)
    before = fast_copies()
    got: list[bytes] = []
    codes: list[int] = []
    with inst:
        stream = await inst.exports.open()
        for p, n in [(DATA, 5), (DATA + 5, 11), (DATA + 16, 1)]:
            reading = asyncio.ensure_future(stream.read(100))
            await asyncio.sleep(0)  # the read waits, offered on the stream
            codes.append(await inst.exports.put(p, n))
            got.append(bytes(await reading))
        await inst.exports.close()
        got.append(bytes(await stream.read(100)))  # the end
    return got, codes, fast_copies() - before


@aio
async def test_an_async_guest_write_to_a_waiting_host_read_completes_alike(wat: Wat) -> None:
    """An ``async`` ``stream.write`` that meets a waiting host read completes at once
    (CanonicalABI.md §"stream.write"), in C on the compiled path."""
    wasm = wat(async_writes())
    fast = await async_puts(wasm, False)
    pure = await async_puts(wasm, True)
    assert fast[:2] == pure[:2]
    assert fast[0] == [b"The q", b"uick brown ", b"f", b""]
    assert fast[1] == [5 << 4, 11 << 4, 1 << 4]  # COMPLETED with the count each time
    assert pure[2] == 0
    if compiled():
        assert fast[2] >= 2  # the first write arms the compiled copy
