"""Components in the text format for the stream and future amendment tests."""

from __future__ import annotations

from .components import MEM, OPTS, component

# Pass-through and probing, all stackful:
# ``echo``/``echo-words``/``echo-fut`` return their argument unchanged (the
# A5 identity round trip); ``read-once(s, n)`` reads once with capacity ``n``,
# drops the stream and returns the read's code (count << 4 | status), the
# byte sum kept for ``last-sum``; ``read-then-trap(s)`` reads 3 bytes then
# traps; ``probe(s)`` reads zero bytes first and then the whole stream,
# returning code0 * 1000000 + count * 1000 + sum; ``hold()`` returns a stream
# whose writable end the instance keeps without ever writing; ``consume(s)``
# reads to the end and returns count * 1000 + sum; ``consume-pair((x, s))``
# does the same with the stream inside a tuple.
PASS = component(
    f"""
  (type $bs (stream u8))
  (type $ss (stream string))
  (type $fs (future string))
  (core func $ret-u32 (canon task.return (result u32)))
  (core func $ret-bs (canon task.return (result $bs)))
  (core func $ret-ss (canon task.return (result $ss)))
  (core func $ret-fs (canon task.return (result $fs)))
  (core func $stream.new (canon stream.new $bs))
  (core func $stream.read (canon stream.read $bs {MEM}))
  (core func $stream.drop-r (canon stream.drop-readable $bs))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
    (import "" "ret-bs" (func $ret-bs (param i32)))
    (import "" "ret-ss" (func $ret-ss (param i32)))
    (import "" "ret-fs" (func $ret-fs (param i32)))
    (import "" "stream.new" (func $stream.new (result i64)))
    (import "" "stream.read" (func $stream.read (param i32 i32 i32) (result i32)))
    (import "" "stream.drop-r" (func $stream.drop-r (param i32)))
    (global $sum (mut i32) (i32.const 0))
    (global $held (mut i32) (i32.const 0))
    (func $sum-of (param $n i32) (result i32)
      (local $k i32) (local $s i32)
      (block $done
        (loop $bytes
          (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
          (local.set $s (i32.add (local.get $s)
            (i32.load8_u (i32.add (i32.const 256) (local.get $k)))))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br $bytes)))
      (local.get $s))
    (func $drain (param $s i32) (result i32)
      (local $ret i32) (local $n i32) (local $count i32) (local $sum i32)
      (loop $more
        (local.set $ret (call $stream.read (local.get $s) (i32.const 256) (i32.const 100)))
        (local.set $n (i32.shr_u (local.get $ret) (i32.const 4)))
        (local.set $count (i32.add (local.get $count) (local.get $n)))
        (local.set $sum (i32.add (local.get $sum) (call $sum-of (local.get $n))))
        (br_if $more (i32.eqz (i32.and (local.get $ret) (i32.const 15)))))
      (call $stream.drop-r (local.get $s))
      (i32.add (i32.mul (local.get $count) (i32.const 1000)) (local.get $sum)))
    (func (export "echo") (param i32) (call $ret-bs (local.get 0)))
    (func (export "echo-words") (param i32) (call $ret-ss (local.get 0)))
    (func (export "echo-fut") (param i32) (call $ret-fs (local.get 0)))
    (func (export "read-once") (param $s i32) (param $n i32)
      (local $ret i32)
      (local.set $ret (call $stream.read (local.get $s) (i32.const 256) (local.get $n)))
      (global.set $sum (call $sum-of (i32.shr_u (local.get $ret) (i32.const 4))))
      (call $stream.drop-r (local.get $s))
      (call $ret-u32 (local.get $ret)))
    (func (export "last-sum") (call $ret-u32 (global.get $sum)))
    (func (export "read-then-trap") (param $s i32)
      (drop (call $stream.read (local.get $s) (i32.const 256) (i32.const 3)))
      unreachable)
    (func (export "probe") (param $s i32)
      (local $code0 i32)
      (local.set $code0 (call $stream.read (local.get $s) (i32.const 256) (i32.const 0)))
      (call $ret-u32 (i32.add (i32.mul (local.get $code0) (i32.const 1000000))
                              (call $drain (local.get $s)))))
    (func (export "consume") (param $s i32) (call $ret-u32 (call $drain (local.get $s))))
    (func (export "consume-pair") (param $x i32) (param $s i32)
      (call $ret-u32 (call $drain (local.get $s))))
    (func (export "hold")
      (local $rw i64)
      (local.set $rw (call $stream.new))
      (global.set $held (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret-u32" (func $ret-u32)) (export "ret-bs" (func $ret-bs))
      (export "ret-ss" (func $ret-ss)) (export "ret-fs" (func $ret-fs))
      (export "stream.new" (func $stream.new)) (export "stream.read" (func $stream.read))
      (export "stream.drop-r" (func $stream.drop-r))))))
  (func (export "echo") async (param "s" $bs) (result $bs)
    (canon lift (core func $i "echo") async))
  (func (export "echo-words") async (param "s" $ss) (result $ss)
    (canon lift (core func $i "echo-words") async))
  (func (export "echo-fut") async (param "f" $fs) (result $fs)
    (canon lift (core func $i "echo-fut") async))
  (func (export "read-once") async (param "s" $bs) (param "n" u32) (result u32)
    (canon lift (core func $i "read-once") async))
  (func (export "last-sum") async (result u32)
    (canon lift (core func $i "last-sum") async))
  (func (export "read-then-trap") async (param "s" $bs)
    (canon lift (core func $i "read-then-trap") async))
  (func (export "probe") async (param "s" $bs) (result u32)
    (canon lift (core func $i "probe") async))
  (func (export "consume") async (param "s" $bs) (result u32)
    (canon lift (core func $i "consume") async))
  (func (export "consume-pair") async (param "pair" (tuple u32 $bs)) (result u32)
    (canon lift (core func $i "consume-pair") async))
  (func (export "hold") async (result $bs)
    (canon lift (core func $i "hold") async))
"""
)

# A stream of host resources (A13): ``take-one(s)`` reads one element, drops
# the resource it received (the host's ``close()`` runs), then drops the stream.
RESOURCE_STREAM = component(
    f"""
  (import "test:demo/conns" (instance $s
    (export "conn" (type $conn (sub resource)))))
  (alias export $s "conn" (type $conn))
  (type $cs (stream (own $conn)))
  (core func $ret (canon task.return (result u32)))
  (core func $res.drop (canon resource.drop $conn))
  (core func $stream.read (canon stream.read $cs {OPTS}))
  (core func $stream.drop-r (canon stream.drop-readable $cs))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret" (func $ret (param i32)))
    (import "" "res.drop" (func $res.drop (param i32)))
    (import "" "stream.read" (func $stream.read (param i32 i32 i32) (result i32)))
    (import "" "stream.drop-r" (func $stream.drop-r (param i32)))
    (func (export "take-one") (param $s i32)
      (local $ret i32)
      (local.set $ret (call $stream.read (local.get $s) (i32.const 256) (i32.const 1)))
      (if (i32.eq (i32.shr_u (local.get $ret) (i32.const 4)) (i32.const 1))
        (then (call $res.drop (i32.load (i32.const 256)))))
      (call $stream.drop-r (local.get $s))
      (call $ret (local.get $ret))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret" (func $ret)) (export "res.drop" (func $res.drop))
      (export "stream.read" (func $stream.read))
      (export "stream.drop-r" (func $stream.drop-r))))))
  (func (export "take-one") async (param "s" $cs) (result u32)
    (canon lift (core func $i "take-one") async))
"""
)

# Guest-made streams and futures for identity round trips and writer semantics:
# ``make-stream(n)`` returns a stream of the first n bytes of "hello world"
# written in a loop until all are taken (a well-behaved writer);
# ``write-once(n)`` returns a stream the guest writes once (n bytes) and then
# drops, keeping the write's count for ``last-count`` (a writer ignoring its
# count); ``make-fut`` returns a future written with "hello"; ``echo``,
# ``echo-words`` and ``echo-fut`` return their argument.
ROUND_TRIP = component(
    f"""
  (type $bs (stream u8))
  (type $ss (stream string))
  (type $fs (future string))
  (core func $ret-u32 (canon task.return (result u32)))
  (core func $ret-bs (canon task.return (result $bs)))
  (core func $ret-ss (canon task.return (result $ss)))
  (core func $ret-fs (canon task.return (result $fs)))
  (core func $stream.new (canon stream.new $bs))
  (core func $stream.write (canon stream.write $bs {MEM}))
  (core func $stream.drop-w (canon stream.drop-writable $bs))
  (core func $future.new (canon future.new $fs))
  (core func $future.write (canon future.write $fs {OPTS}))
  (core func $future.drop-w (canon future.drop-writable $fs))
  (core func $future.drop-r (canon future.drop-readable $fs))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
    (import "" "ret-bs" (func $ret-bs (param i32)))
    (import "" "ret-ss" (func $ret-ss (param i32)))
    (import "" "ret-fs" (func $ret-fs (param i32)))
    (import "" "stream.new" (func $stream.new (result i64)))
    (import "" "stream.write" (func $stream.write (param i32 i32 i32) (result i32)))
    (import "" "stream.drop-w" (func $stream.drop-w (param i32)))
    (import "" "future.new" (func $future.new (result i64)))
    (import "" "future.write" (func $future.write (param i32 i32) (result i32)))
    (import "" "future.drop-w" (func $future.drop-w (param i32)))
    (import "" "future.drop-r" (func $future.drop-r (param i32)))
    (data (i32.const 16) "hello world")
    (global $count (mut i32) (i32.const -1))
    (func (export "make-stream") (param $n i32)
      (local $rw i64) (local $w i32) (local $ptr i32) (local $code i32) (local $k i32)
      (local.set $rw (call $stream.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (local.set $ptr (i32.const 16))
      (block $done
        (loop $more
          (br_if $done (i32.eqz (local.get $n)))
          (local.set $code (call $stream.write (local.get $w) (local.get $ptr) (local.get $n)))
          (local.set $k (i32.shr_u (local.get $code) (i32.const 4)))
          (local.set $ptr (i32.add (local.get $ptr) (local.get $k)))
          (local.set $n (i32.sub (local.get $n) (local.get $k)))
          (br_if $done (i32.ne (i32.and (local.get $code) (i32.const 15)) (i32.const 0)))
          (br $more)))
      (call $stream.drop-w (local.get $w)))
    (func (export "write-once") (param $n i32)
      (local $rw i64) (local $w i32)
      (local.set $rw (call $stream.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (global.set $count (i32.shr_u
        (call $stream.write (local.get $w) (i32.const 16) (local.get $n)) (i32.const 4)))
      (call $stream.drop-w (local.get $w)))
    (func (export "last-count") (call $ret-u32 (global.get $count)))
    (func (export "make-fut")
      (local $rw i64) (local $w i32)
      (local.set $rw (call $future.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-fs (i32.wrap_i64 (local.get $rw)))
      (i32.store (i32.const 512) (i32.const 16))
      (i32.store (i32.const 516) (i32.const 5))
      (drop (call $future.write (local.get $w) (i32.const 512)))
      (call $future.drop-w (local.get $w)))
    (func (export "echo") (param i32) (call $ret-bs (local.get 0)))
    (func (export "echo-words") (param i32) (call $ret-ss (local.get 0)))
    (func (export "echo-fut") (param i32) (call $ret-fs (local.get 0)))
    (func (export "drop-fut") (param $f i32)
      (call $future.drop-r (local.get $f))
      (call $ret-u32 (i32.const 7))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret-u32" (func $ret-u32)) (export "ret-bs" (func $ret-bs))
      (export "ret-ss" (func $ret-ss)) (export "ret-fs" (func $ret-fs))
      (export "stream.new" (func $stream.new)) (export "stream.write" (func $stream.write))
      (export "stream.drop-w" (func $stream.drop-w)) (export "future.new" (func $future.new))
      (export "future.write" (func $future.write))
      (export "future.drop-w" (func $future.drop-w))
      (export "future.drop-r" (func $future.drop-r))))))
  (func (export "make-stream") async (param "n" u32) (result $bs)
    (canon lift (core func $i "make-stream") async))
  (func (export "write-once") async (param "n" u32) (result $bs)
    (canon lift (core func $i "write-once") async))
  (func (export "last-count") async (result u32)
    (canon lift (core func $i "last-count") async))
  (func (export "make-fut") async (result $fs)
    (canon lift (core func $i "make-fut") async))
  (func (export "echo") async (param "s" $bs) (result $bs)
    (canon lift (core func $i "echo") async))
  (func (export "echo-words") async (param "s" $ss) (result $ss)
    (canon lift (core func $i "echo-words") async))
  (func (export "echo-fut") async (param "f" $fs) (result $fs)
    (canon lift (core func $i "echo-fut") async))
  (func (export "drop-fut") async (param "f" $fs) (result u32)
    (canon lift (core func $i "drop-fut") async))
"""
)
