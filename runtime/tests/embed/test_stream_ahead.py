"""A host reader of ``stream<u8>`` takes ahead from a guest's writes
(CanonicalABI.md §"stream.write": a write completes with the count its
reader took; embedder-api.md §"Streams and futures").

A host read that has to wait is a reader that is always ready up to a
bound (``READ_AHEAD``): a guest writing into it is told it took everything
that fits and goes on without waiting for the host; the bytes the read
does not return wait for the next reads, in order. A read that finds a
write offered still takes only its own count of it (test_stream_writers).
Bytes read ahead are not lost when the stream is passed on into a guest
or read with ``read_direct``; a guest writing after the host dropped its
end sees the drop.

Symmetrically, a host producer's pump keeps up to ``WRITE_AHEAD`` bytes of
its chunks offered one behind another, so a guest reading on takes them at
once (CanonicalABI.md §"stream.read": a read completes with what the writer
offered) instead of waiting for the producer each time; a read may take
bytes of several chunks. The pump pulls no further ahead than that bound,
and the offered bytes reach the host again when a guest hands the stream
back unread (A5).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import polyengine
from polyengine.concurrency.host_ends import READ_AHEAD, WRITE_AHEAD
from polyengine_protocol import PeerTrappedError

from . import stream_components as sc
from .components import MEM, component
from .test_async import aio

Wat = Callable[[str], bytes]

# ``drip(n)`` returns a stream and writes the first ``n`` bytes of
# "hello world" into it, one write per byte, counting the writes that
# completed (``written``); it stops at the first write that does not
# complete with its byte, keeping that write's code (``last-code``), and
# drops its end. ``burst(n, k)`` writes ``k`` zero bytes ``n`` times the
# same way (keeping the last write's code). ``drain(s)`` reads ``s`` to the
# end and returns count * 1000 + the sum of its bytes.
DRIP = component(
    f"""
  (type $bs (stream u8))
  (core func $ret-u32 (canon task.return (result u32)))
  (core func $ret-bs (canon task.return (result $bs)))
  (core func $stream.new (canon stream.new $bs))
  (core func $stream.write (canon stream.write $bs {MEM}))
  (core func $stream.drop-w (canon stream.drop-writable $bs))
  (core func $stream.read (canon stream.read $bs {MEM}))
  (core func $stream.drop-r (canon stream.drop-readable $bs))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
    (import "" "ret-bs" (func $ret-bs (param i32)))
    (import "" "stream.new" (func $stream.new (result i64)))
    (import "" "stream.write" (func $stream.write (param i32 i32 i32) (result i32)))
    (import "" "stream.drop-w" (func $stream.drop-w (param i32)))
    (import "" "stream.read" (func $stream.read (param i32 i32 i32) (result i32)))
    (import "" "stream.drop-r" (func $stream.drop-r (param i32)))
    (data (i32.const 16) "hello world")
    (global $written (mut i32) (i32.const 0))
    (global $last (mut i32) (i32.const 0))
    (func $open (result i32)
      (local $rw i64)
      (local.set $rw (call $stream.new))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
    (func (export "drip") (param $n i32)
      (local $w i32) (local $k i32) (local $code i32)
      (local.set $w (call $open))
      (block $done
        (loop $more
          (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
          (local.set $code (call $stream.write
            (local.get $w) (i32.add (i32.const 16) (local.get $k)) (i32.const 1)))
          (global.set $last (local.get $code))
          (br_if $done (i32.ne (local.get $code) (i32.const 16)))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (global.set $written (local.get $k))
          (br $more)))
      (call $stream.drop-w (local.get $w)))
    (func (export "burst") (param $n i32) (param $k i32)
      (local $w i32)
      (local.set $w (call $open))
      (block $done
        (loop $more
          (br_if $done (i32.eqz (local.get $n)))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (global.set $last (call $stream.write (local.get $w) (i32.const 1024) (local.get $k)))
          (br_if $done (i32.ne (global.get $last) (i32.shl (local.get $k) (i32.const 4))))
          (global.set $written (i32.add (global.get $written) (i32.const 1)))
          (br $more)))
      (call $stream.drop-w (local.get $w)))
    (func (export "drain") (param $s i32)
      (local $ret i32) (local $n i32) (local $count i32) (local $sum i32) (local $k i32)
      (loop $more
        (local.set $ret (call $stream.read (local.get $s) (i32.const 8192) (i32.const 100)))
        (local.set $n (i32.shr_u (local.get $ret) (i32.const 4)))
        (local.set $count (i32.add (local.get $count) (local.get $n)))
        (local.set $k (i32.const 0))
        (block $summed
          (loop $bytes
            (br_if $summed (i32.ge_u (local.get $k) (local.get $n)))
            (local.set $sum (i32.add (local.get $sum)
              (i32.load8_u (i32.add (i32.const 8192) (local.get $k)))))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $bytes)))
        (br_if $more (i32.eqz (i32.and (local.get $ret) (i32.const 15)))))
      (call $stream.drop-r (local.get $s))
      (call $ret-u32 (i32.add (i32.mul (local.get $count) (i32.const 1000)) (local.get $sum))))
    (func (export "drip-trap") (param $n i32)
      (local $w i32) (local $k i32)
      (local.set $w (call $open))
      (block $done
        (loop $more
          (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
          (br_if $done (i32.ne (call $stream.write
            (local.get $w) (i32.add (i32.const 16) (local.get $k)) (i32.const 1)) (i32.const 16)))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (global.set $written (local.get $k))
          (br $more)))
      unreachable)
    (func (export "echo") (param $s i32) (call $ret-bs (local.get $s)))
    (func (export "written") (call $ret-u32 (global.get $written)))
    (func (export "last-code") (call $ret-u32 (global.get $last))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret-u32" (func $ret-u32)) (export "ret-bs" (func $ret-bs))
      (export "stream.new" (func $stream.new)) (export "stream.write" (func $stream.write))
      (export "stream.drop-w" (func $stream.drop-w))
      (export "stream.read" (func $stream.read)) (export "stream.drop-r" (func $stream.drop-r))))))
  (func (export "drip") async (param "n" u32) (result $bs)
    (canon lift (core func $i "drip") async))
  (func (export "burst") async (param "n" u32) (param "k" u32) (result $bs)
    (canon lift (core func $i "burst") async))
  (func (export "drain") async (param "s" $bs) (result u32)
    (canon lift (core func $i "drain") async))
  (func (export "drip-trap") async (param "n" u32) (result $bs)
    (canon lift (core func $i "drip-trap") async))
  (func (export "echo") async (param "s" $bs) (result $bs)
    (canon lift (core func $i "echo") async))
  (func (export "written") async (result u32)
    (canon lift (core func $i "written") async))
  (func (export "last-code") async (result u32)
    (canon lift (core func $i "last-code") async))
"""
)


@aio
async def test_a_waiting_read_lets_the_guest_write_ahead(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        stream = await inst.exports.drip(11)
        assert await stream.read(1) == b"h"  # took its count of the offered write
        assert await stream.read(1) == b"e"  # waited: the guest wrote the rest meanwhile
        assert await inst.exports.written() == 11
        assert await stream.read(4) == b"llo "
        assert await stream.read(100) == b"world"
        assert await stream.read(100) == b""


@aio
async def test_read_ahead_is_bounded(wat: Wat) -> None:
    k = 4096
    n = 2 * READ_AHEAD // k
    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        stream = await inst.exports.burst(n, k)
        assert await stream.read(k) == bytes(k)  # the first write, offered
        assert len(await stream.read(k)) == k  # waited: the guest wrote ahead until full
        # the offered write, then the writes that filled the read-ahead
        assert await inst.exports.written() == 1 + READ_AHEAD // k
        got = 2 * k
        while chunk := await stream.read(k):
            got += len(chunk)
        assert got == n * k
        assert await inst.exports.written() == n


@aio
async def test_a_large_read_takes_its_own_count(wat: Wat) -> None:
    k = 4096
    n = 4 * READ_AHEAD // k
    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        stream = await inst.exports.burst(n, k)
        sizes = []
        while chunk := await stream.read(2 * READ_AHEAD):
            sizes.append(len(chunk))
        assert sum(sizes) == n * k
        assert max(sizes) <= 2 * READ_AHEAD


@aio
async def test_bytes_read_ahead_go_first_when_the_stream_is_passed_on(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        stream = await inst.exports.drip(11)
        assert await stream.read(1) == b"h"
        assert await stream.read(1) == b"e"
        # "llo world" waits on the host side; the consumer gets it all
        assert await inst.exports.drain(stream) == 9 * 1000 + sum(b"llo world")


@aio
async def test_bytes_read_ahead_come_before_the_writers_trap(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(DRIP))
    stream = await inst.exports.drip_trap(11)
    assert await stream.read(1) == b"h"
    assert await stream.read(1) == b"e"  # waited: the guest wrote the rest ahead, then trapped
    # the guest was told these were taken: the host gets them before the trap (A7)
    assert await stream.read(100) == b"llo world"
    with pytest.raises(PeerTrappedError):
        await stream.read(100)


@aio
async def test_read_direct_takes_the_bytes_read_ahead_before_the_writers_trap(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(DRIP))
    stream = await inst.exports.drip_trap(11)
    assert await stream.read(1) == b"h"
    assert await stream.read(1) == b"e"
    taken = bytearray()

    def consume(source: Any) -> str:
        view = source.remaining()
        taken.extend(view)
        source.mark_read(len(view))
        return "more"

    with pytest.raises(PeerTrappedError) as info:
        await stream.read_direct(consume)
    assert bytes(taken) == b"llo world"
    assert info.value.progress == 9


@aio
async def test_a5_round_trip_of_a_stream_holding_bytes_read_ahead(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        stream = await inst.exports.drip(11)
        assert await stream.read(1) == b"h"
        assert await stream.read(1) == b"e"
        back = await inst.exports.echo(stream)
        assert back is stream


@aio
async def test_a5_round_trip_keeps_the_bytes_read_ahead_in_order(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        stream = await inst.exports.drip(11)
        assert await stream.read(1) == b"h"
        assert await stream.read(1) == b"e"
        back = await inst.exports.echo(stream)
        assert back is stream
        got = bytearray()
        while chunk := await back.read(4):
            got += chunk
        assert bytes(got) == b"llo world"


@aio
async def test_a_stream_holding_bytes_read_ahead_is_read_once_passed_on(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        stream = await inst.exports.drip(11)
        assert await stream.read(1) == b"h"
        assert await stream.read(1) == b"e"
        assert await inst.exports.drain(stream) == 9 * 1000 + sum(b"llo world")
        with pytest.raises(TypeError):
            await stream.read(1)  # passed: the host no longer reads it (A15)


@aio
async def test_read_direct_takes_the_bytes_read_ahead_first(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        stream = await inst.exports.drip(11)
        assert await stream.read(1) == b"h"
        assert await stream.read(1) == b"e"
        seen: list[bytes] = []

        def consume(src: Any) -> str:
            view = src.remaining()
            seen.append(bytes(view[:3]))
            src.mark_read(min(3, len(view)))
            return "more" if len(seen) < 2 else "done"

        assert await stream.read_direct(consume) == 6
        assert seen == [b"llo", b" wo"]
        assert await stream.read(100) == b"rld"


@aio
async def test_a_guest_writing_after_the_host_dropped_sees_the_drop(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(DRIP))
    with inst:
        stream = await inst.exports.burst(4 * READ_AHEAD // 4096, 4096)
        assert len(await stream.read(4096)) == 4096
        assert len(await stream.read(4096)) == 4096  # the guest wrote ahead, then waited
        stream.drop()
        # the write that waited when the read-ahead was full sees DROPPED, nothing taken
        code = await inst.exports.last_code()
        for _ in range(100):  # until the guest has run on (bounded)
            if code != 4096 << 4:
                break
            await asyncio.sleep(0)
            code = await inst.exports.last_code()
        assert code == 1
        assert await inst.exports.written() == 1 + READ_AHEAD // 4096


def chunks(items: list[bytes], pulled: list[int]) -> AsyncIterator[bytes]:
    async def gen() -> AsyncIterator[bytes]:
        for item in items:
            pulled.append(len(item))
            yield item

    return gen()


@aio
async def test_the_producer_runs_ahead_no_further_than_the_bound(wat: Wat) -> None:
    k = 4096
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        pulled: list[int] = []
        code = await inst.exports.read_once(chunks([bytes(k)] * 100, pulled), 1)
        assert code == 1 << 4
        # the chunks that filled the bound, and the one whose offer waited
        assert WRITE_AHEAD // k <= len(pulled) <= WRITE_AHEAD // k + 1


@aio
async def test_all_chunks_arrive_in_order(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        items = [bytes([i]) * (300 + 7 * i) for i in range(40)]
        whole = b"".join(items)
        got = await inst.exports.consume(chunks(items, []))
        assert got == len(whole) * 1000 + sum(whole)


@aio
async def test_chunks_offered_ahead_reach_the_host_when_handed_back(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(sc.PASS))
    with inst:
        items = [bytes([65 + i]) * 1000 for i in range(20)]
        stream = await inst.exports.echo(chunks(items, []))
        await asyncio.sleep(0)  # the pump offers ahead meanwhile
        got = b""
        async for chunk in stream:
            got += chunk
        assert got == b"".join(items)
