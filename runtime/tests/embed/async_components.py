"""Async components in the text format, shared by the embed tests of the task model."""

from __future__ import annotations

from .components import MEM, OPTS, component

# A callback-lifted export (``inc``) and a stackful one (``dbl``).
EXPORTS = component(
    """
  (core func $ret (canon task.return (result u32)))
  (core func $yield (canon thread.yield))
  (core module $m
    (import "" "ret" (func $ret (param i32)))
    (import "" "yield" (func $yield (result i32)))
    (global $n (mut i32) (i32.const 0))
    (func (export "inc") (param i32) (result i32)
      (global.set $n (local.get 0))
      (i32.const 1 (; YIELD ;)))
    (func (export "inc-cb") (param i32 i32 i32) (result i32)
      (call $ret (i32.add (global.get $n) (i32.const 1)))
      (i32.const 0 (; EXIT ;)))
    (func (export "dbl") (param i32)
      (drop (call $yield))
      (drop (call $yield))
      (call $ret (i32.mul (local.get 0) (i32.const 2)))))
  (core instance $i (instantiate $m (with "" (instance
     (export "ret" (func $ret)) (export "yield" (func $yield))))))
  (func (export "inc") async (param "x" u32) (result u32)
    (canon lift (core func $i "inc") async (callback (core func $i "inc-cb"))))
  (func (export "dbl") async (param "x" u32) (result u32)
    (canon lift (core func $i "dbl") async))
"""
)

# Async host import ``get`` reached three ways: a stackful export calling it
# through a sync lower (``wait``), a callback export calling it through an
# async lower (``wait-cb``), and a stackful export that waits forever on an
# empty waitable set (``stuck``: a deadlock).
HOST_ASYNC = component(
    f"""
  (import "get" (func $get async (param "x" u32) (result u32)))
  (core func $ret (canon task.return (result u32)))
  (core func $get (canon lower (func $get)))
  (core func $get-async (canon lower (func $get) async {OPTS}))
  (core func $ws.new (canon waitable-set.new))
  (core func $ws.wait (canon waitable-set.wait (memory (core memory $libc "mem"))))
  (core func $join (canon waitable.join))
  (core func $st.drop (canon subtask.drop))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret" (func $ret (param i32)))
    (import "" "get" (func $get (param i32) (result i32)))
    (import "" "get-async" (func $get-async (param i32 i32) (result i32)))
    (import "" "ws.new" (func $ws.new (result i32)))
    (import "" "ws.wait" (func $ws.wait (param i32 i32) (result i32)))
    (import "" "join" (func $join (param i32 i32)))
    (import "" "st.drop" (func $st.drop (param i32)))
    (global $ws (mut i32) (i32.const 0))
    (func (export "wait") (param i32)
      (call $ret (i32.add (call $get (local.get 0)) (i32.const 1))))
    (func (export "wait-cb") (param i32) (result i32)
      (local $st i32)
      (local.set $st (call $get-async (local.get 0) (i32.const 64)))
      (if (i32.eq (local.get $st) (i32.const 2 (; RETURNED ;)))
        (then
          (call $ret (i32.add (i32.load (i32.const 64)) (i32.const 1000)))
          (return (i32.const 0 (; EXIT ;)))))
      (global.set $ws (call $ws.new))
      (call $join (i32.shr_u (local.get $st) (i32.const 4)) (global.get $ws))
      (i32.or (i32.const 2 (; WAIT ;)) (i32.shl (global.get $ws) (i32.const 4))))
    (func (export "wait-cb-cb") (param $code i32) (param $index i32) (param $payload i32)
      (result i32)
      (if (i32.ne (local.get $payload) (i32.const 2 (; RETURNED ;)))
        (then (return (i32.or (i32.const 2) (i32.shl (global.get $ws) (i32.const 4))))))
      (call $st.drop (local.get $index))
      (call $ret (i32.add (i32.load (i32.const 64)) (i32.const 1000)))
      (i32.const 0 (; EXIT ;)))
    (func (export "stuck")
      (drop (call $ws.wait (call $ws.new) (i32.const 32)))
      (call $ret (i32.const 0))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret" (func $ret)) (export "get" (func $get))
      (export "get-async" (func $get-async)) (export "ws.new" (func $ws.new))
      (export "ws.wait" (func $ws.wait)) (export "join" (func $join))
      (export "st.drop" (func $st.drop))))))
  (func (export "wait") async (param "x" u32) (result u32)
    (canon lift (core func $i "wait") async))
  (func (export "wait-cb") async (param "x" u32) (result u32)
    (canon lift (core func $i "wait-cb") async (callback (core func $i "wait-cb-cb"))))
  (func (export "stuck") async (result u32)
    (canon lift (core func $i "stuck") async))
"""
)

# The same stackful ``wait`` in two instances of one inner component, so a
# trap poisons one instance and leaves the other running.
TWO_INSTANCES = """(component
  (import "get" (func $get async (param "x" u32) (result u32)))
  (component $W
    (import "get" (func $get async (param "x" u32) (result u32)))
    (core func $ret (canon task.return (result u32)))
    (core func $get (canon lower (func $get)))
    (core module $m
      (import "" "ret" (func $ret (param i32)))
      (import "" "get" (func $get (param i32) (result i32)))
      (func (export "wait") (param i32)
        (local $v i32)
        (local.set $v (call $get (local.get 0)))
        (if (i32.eqz (local.get $v)) (then unreachable))
        (call $ret (i32.add (local.get $v) (i32.const 1)))))
    (core instance $i (instantiate $m (with "" (instance
      (export "ret" (func $ret)) (export "get" (func $get))))))
    (func (export "wait") async (param "x" u32) (result u32)
      (canon lift (core func $i "wait") async)))
  (instance $a (instantiate $W (with "get" (func $get))))
  (instance $b (instantiate $W (with "get" (func $get))))
  (export "a-wait" (func $a "wait"))
  (export "b-wait" (func $b "wait"))
)"""

# A sync import that the host may mark ``suspending()`` (``sleep``), called by a
# sync-lifted export and, in START, by a start function.
SUSPENDING = component(
    """
  (import "sleep" (func $sleep (param "x" u32) (result u32)))
  (core func $sleep (canon lower (func $sleep)))
  (core module $m
    (import "" "sleep" (func $sleep (param i32) (result i32)))
    (func (export "nap") (param i32) (result i32)
      (i32.add (call $sleep (local.get 0)) (i32.const 1))))
  (core instance $i (instantiate $m (with "" (instance (export "sleep" (func $sleep))))))
  (func (export "nap") (param "x" u32) (result u32) (canon lift (core func $i "nap")))
"""
)

START = component(
    """
  (import "sleep" (func $sleep (param "x" u32) (result u32)))
  (core func $sleep (canon lower (func $sleep)))
  (core module $m
    (import "" "sleep" (func $sleep (param i32) (result i32)))
    (func $start (drop (call $sleep (i32.const 1))))
    (start $start))
  (core instance $i (instantiate $m (with "" (instance (export "sleep" (func $sleep))))))
"""
)

# Between-calls liveness: ``spawn`` returns at once and keeps waiting on an
# async host call; when it lands, the callback reports through ``notify``.
BACKGROUND = component(
    f"""
  (import "tick" (func $tick async (result u32)))
  (import "notify" (func $notify (param "v" u32)))
  (core func $ret (canon task.return))
  (core func $tick (canon lower (func $tick) async {OPTS}))
  (core func $notify (canon lower (func $notify)))
  (core func $ws.new (canon waitable-set.new))
  (core func $join (canon waitable.join))
  (core func $st.drop (canon subtask.drop))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret" (func $ret))
    (import "" "tick" (func $tick (param i32) (result i32)))
    (import "" "notify" (func $notify (param i32)))
    (import "" "ws.new" (func $ws.new (result i32)))
    (import "" "join" (func $join (param i32 i32)))
    (import "" "st.drop" (func $st.drop (param i32)))
    (global $ws (mut i32) (i32.const 0))
    (func (export "spawn") (result i32)
      (local $st i32)
      (local.set $st (call $tick (i32.const 128)))
      (call $ret)
      (global.set $ws (call $ws.new))
      (call $join (i32.shr_u (local.get $st) (i32.const 4)) (global.get $ws))
      (i32.or (i32.const 2) (i32.shl (global.get $ws) (i32.const 4))))
    (func (export "spawn-cb") (param $code i32) (param $index i32) (param $payload i32)
      (result i32)
      (if (i32.ne (local.get $payload) (i32.const 2))
        (then (return (i32.or (i32.const 2) (i32.shl (global.get $ws) (i32.const 4))))))
      (call $st.drop (local.get $index))
      (call $notify (i32.load (i32.const 128)))
      (i32.const 0)))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret" (func $ret)) (export "tick" (func $tick)) (export "notify" (func $notify))
      (export "ws.new" (func $ws.new)) (export "join" (func $join))
      (export "st.drop" (func $st.drop))))))
  (func (export "spawn") async
    (canon lift (core func $i "spawn") async (callback (core func $i "spawn-cb"))))
"""
)

# stream<u8> and future<string> in both directions, all stackful:
# ``produce(n)`` returns a stream of the first ``n`` bytes of "hello world";
# ``consume(s)`` reads a stream to its end and returns count * 1000 + byte sum;
# ``make-fut()`` returns a future written with "hello"; ``read-fut(f)`` returns
# the string a future delivers, with "!" appended by the host side test.
STREAMS = component(
    f"""
  (type $bs (stream u8))
  (type $fs (future string))
  (core func $ret-u32 (canon task.return (result u32)))
  (core func $ret-bs (canon task.return (result $bs)))
  (core func $ret-fs (canon task.return (result $fs)))
  (core func $ret-str (canon task.return (result string) {MEM}))
  (core func $stream.new (canon stream.new $bs))
  (core func $stream.write (canon stream.write $bs {MEM}))
  (core func $stream.read (canon stream.read $bs {MEM}))
  (core func $stream.drop-w (canon stream.drop-writable $bs))
  (core func $stream.drop-r (canon stream.drop-readable $bs))
  (core func $future.new (canon future.new $fs))
  (core func $future.write (canon future.write $fs {OPTS}))
  (core func $future.read (canon future.read $fs {OPTS}))
  (core func $future.drop-r (canon future.drop-readable $fs))
  (core func $future.drop-w (canon future.drop-writable $fs))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
    (import "" "ret-bs" (func $ret-bs (param i32)))
    (import "" "ret-fs" (func $ret-fs (param i32)))
    (import "" "ret-str" (func $ret-str (param i32 i32)))
    (import "" "stream.new" (func $stream.new (result i64)))
    (import "" "stream.write" (func $stream.write (param i32 i32 i32) (result i32)))
    (import "" "stream.read" (func $stream.read (param i32 i32 i32) (result i32)))
    (import "" "stream.drop-w" (func $stream.drop-w (param i32)))
    (import "" "stream.drop-r" (func $stream.drop-r (param i32)))
    (import "" "future.new" (func $future.new (result i64)))
    (import "" "future.write" (func $future.write (param i32 i32) (result i32)))
    (import "" "future.read" (func $future.read (param i32 i32) (result i32)))
    (import "" "future.drop-r" (func $future.drop-r (param i32)))
    (import "" "future.drop-w" (func $future.drop-w (param i32)))
    (data (i32.const 16) "hello world")
    (func (export "produce") (param $n i32)
      (local $rw i64) (local $w i32) (local $r i32)
      (local.set $rw (call $stream.new))
      (local.set $r (i32.wrap_i64 (local.get $rw)))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (local.get $r))
      (drop (call $stream.write (local.get $w) (i32.const 16) (local.get $n)))
      (call $stream.drop-w (local.get $w)))
    (func (export "produce-then-trap")
      (local $rw i64) (local $w i32)
      (local.set $rw (call $stream.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (drop (call $stream.write (local.get $w) (i32.const 16) (i32.const 3)))
      unreachable)
    (func (export "make-fut-then-trap") (param $in i32)
      (local $rw i64)
      (local.set $rw (call $future.new))
      (call $ret-fs (i32.wrap_i64 (local.get $rw)))
      (drop (call $future.read (local.get $in) (i32.const 520)))
      unreachable)
    (func (export "consume") (param $s i32)
      (local $ret i32) (local $n i32) (local $count i32) (local $sum i32) (local $k i32)
      (loop $more
        (local.set $ret (call $stream.read (local.get $s) (i32.const 256) (i32.const 100)))
        (local.set $n (i32.shr_u (local.get $ret) (i32.const 4)))
        (local.set $count (i32.add (local.get $count) (local.get $n)))
        (local.set $k (i32.const 0))
        (block $done
          (loop $bytes
            (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
            (local.set $sum (i32.add (local.get $sum)
              (i32.load8_u (i32.add (i32.const 256) (local.get $k)))))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $bytes)))
        (br_if $more (i32.eqz (i32.and (local.get $ret) (i32.const 15)))))
      (call $stream.drop-r (local.get $s))
      (call $ret-u32 (i32.add (i32.mul (local.get $count) (i32.const 1000)) (local.get $sum))))
    (func (export "make-fut")
      (local $rw i64) (local $w i32)
      (local.set $rw (call $future.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-fs (i32.wrap_i64 (local.get $rw)))
      (i32.store (i32.const 512) (i32.const 16))
      (i32.store (i32.const 516) (i32.const 5))
      (drop (call $future.write (local.get $w) (i32.const 512)))
      (call $future.drop-w (local.get $w)))
    (func (export "read-fut") (param $f i32)
      (drop (call $future.read (local.get $f) (i32.const 520)))
      (call $future.drop-r (local.get $f))
      (call $ret-str (i32.load (i32.const 520)) (i32.load (i32.const 524)))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret-u32" (func $ret-u32)) (export "ret-bs" (func $ret-bs))
      (export "ret-fs" (func $ret-fs)) (export "ret-str" (func $ret-str))
      (export "stream.new" (func $stream.new)) (export "stream.write" (func $stream.write))
      (export "stream.read" (func $stream.read)) (export "stream.drop-w" (func $stream.drop-w))
      (export "stream.drop-r" (func $stream.drop-r)) (export "future.new" (func $future.new))
      (export "future.write" (func $future.write)) (export "future.read" (func $future.read))
      (export "future.drop-r" (func $future.drop-r))
      (export "future.drop-w" (func $future.drop-w))))))
  (func (export "produce") async (param "n" u32) (result $bs)
    (canon lift (core func $i "produce") async))
  (func (export "produce-then-trap") async (result $bs)
    (canon lift (core func $i "produce-then-trap") async))
  (func (export "make-fut-then-trap") async (param "in" $fs) (result $fs)
    (canon lift (core func $i "make-fut-then-trap") async))
  (func (export "consume") async (param "s" $bs) (result u32)
    (canon lift (core func $i "consume") async))
  (func (export "make-fut") async (result $fs)
    (canon lift (core func $i "make-fut") async))
  (func (export "read-fut") async (param "f" $fs) (result string)
    (canon lift (core func $i "read-fut") async {MEM}))
"""
)

# error-context both ways: ``make-err`` returns a context holding "it broke";
# ``err-message(e)`` returns the debug message of the context it receives.
ERRORS = component(
    f"""
  (core func $ret-err (canon task.return (result error-context)))
  (core func $ret-str (canon task.return (result string) {MEM}))
  (core func $err.new (canon error-context.new {MEM}))
  (core func $err.msg (canon error-context.debug-message {OPTS}))
  (core func $err.drop (canon error-context.drop))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret-err" (func $ret-err (param i32)))
    (import "" "ret-str" (func $ret-str (param i32 i32)))
    (import "" "err.new" (func $err.new (param i32 i32) (result i32)))
    (import "" "err.msg" (func $err.msg (param i32 i32)))
    (import "" "err.drop" (func $err.drop (param i32)))
    (data (i32.const 16) "it broke")
    (func (export "make-err")
      (call $ret-err (call $err.new (i32.const 16) (i32.const 8))))
    (func (export "err-message") (param $e i32)
      (call $err.msg (local.get $e) (i32.const 64))
      (call $err.drop (local.get $e))
      (call $ret-str (i32.load (i32.const 64)) (i32.load (i32.const 68)))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret-err" (func $ret-err)) (export "ret-str" (func $ret-str))
      (export "err.new" (func $err.new)) (export "err.msg" (func $err.msg))
      (export "err.drop" (func $err.drop))))))
  (func (export "make-err") async (result error-context)
    (canon lift (core func $i "make-err") async))
  (func (export "err-message") async (param "e" error-context) (result string)
    (canon lift (core func $i "err-message") async {MEM}))
"""
)

# Guest→guest calls through the task model: an async-typed, sync-lifted export
# calls an async callee through a sync lower (it blocks until the callee's
# task returns); a stackful export calls a sync-lifted callee through an async
# lower (it returns at once).
ADAPTERS = """(component
  (component $Callee
    (core func $ret (canon task.return (result u32)))
    (core func $yield (canon thread.yield))
    (core module $m
      (import "" "ret" (func $ret (param i32)))
      (import "" "yield" (func $yield (result i32)))
      (func (export "slow") (param i32)
        (drop (call $yield))
        (call $ret (i32.add (local.get 0) (i32.const 100))))
      (func (export "fast") (param i32) (result i32)
        (i32.mul (local.get 0) (i32.const 3))))
    (core instance $i (instantiate $m (with "" (instance
      (export "ret" (func $ret)) (export "yield" (func $yield))))))
    (func (export "slow") async (param "x" u32) (result u32)
      (canon lift (core func $i "slow") async))
    (func (export "fast") async (param "x" u32) (result u32)
      (canon lift (core func $i "fast"))))
  (instance $callee (instantiate $Callee))
  (component $Caller
    (import "slow" (func $slow async (param "x" u32) (result u32)))
    (import "fast" (func $fast async (param "x" u32) (result u32)))
    (core module $mem (memory (export "mem") 1))
    (core instance $mem (instantiate $mem))
    (core func $ret (canon task.return (result u32)))
    (core func $slow (canon lower (func $slow)))
    (core func $fast-async (canon lower (func $fast) async (memory (core memory $mem "mem"))))
    (core module $m
      (import "" "mem" (memory 1))
      (import "" "ret" (func $ret (param i32)))
      (import "" "slow" (func $slow (param i32) (result i32)))
      (import "" "fast-async" (func $fast-async (param i32 i32) (result i32)))
      (func (export "sync-calls-async") (param i32) (result i32)
        (i32.add (call $slow (local.get 0)) (i32.const 1)))
      (func (export "async-calls-sync") (param i32)
        (if (i32.ne (call $fast-async (local.get 0) (i32.const 8)) (i32.const 2 (; RETURNED ;)))
          (then unreachable))
        (call $ret (i32.add (i32.load (i32.const 8)) (i32.const 1)))))
    (core instance $i (instantiate $m (with "" (instance
      (export "mem" (memory $mem "mem")) (export "ret" (func $ret))
      (export "slow" (func $slow)) (export "fast-async" (func $fast-async))))))
    (func (export "sync-calls-async") async (param "x" u32) (result u32)
      (canon lift (core func $i "sync-calls-async")))
    (func (export "async-calls-sync") async (param "x" u32) (result u32)
      (canon lift (core func $i "async-calls-sync") async)))
  (instance $caller (instantiate $Caller
    (with "slow" (func $callee "slow")) (with "fast" (func $callee "fast"))))
  (export "sync-calls-async" (func $caller "sync-calls-async"))
  (export "async-calls-sync" (func $caller "async-calls-sync"))
)"""

# An import whose result is a future (embedder-api A12): the host returns the
# future's source; ``fetch-read`` reads the future the sync import ``fetch``
# returned, ``afetch-read`` the one the async import ``afetch`` returned.
FUTURE_IMPORT = component(
    f"""
  (type $fs (future string))
  (import "fetch" (func $fetch (result $fs)))
  (import "afetch" (func $afetch async (result $fs)))
  (core func $fetch (canon lower (func $fetch)))
  (core func $afetch (canon lower (func $afetch)))
  (core func $ret-str (canon task.return (result string) {MEM}))
  (core func $future.read (canon future.read $fs {OPTS}))
  (core func $future.drop-r (canon future.drop-readable $fs))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "fetch" (func $fetch (result i32)))
    (import "" "afetch" (func $afetch (result i32)))
    (import "" "ret-str" (func $ret-str (param i32 i32)))
    (import "" "future.read" (func $future.read (param i32 i32) (result i32)))
    (import "" "future.drop-r" (func $future.drop-r (param i32)))
    (func $read (param $f i32)
      (drop (call $future.read (local.get $f) (i32.const 520)))
      (call $future.drop-r (local.get $f))
      (call $ret-str (i32.load (i32.const 520)) (i32.load (i32.const 524))))
    (func (export "fetch-read") (call $read (call $fetch)))
    (func (export "afetch-read") (call $read (call $afetch))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "fetch" (func $fetch)) (export "afetch" (func $afetch))
      (export "ret-str" (func $ret-str)) (export "future.read" (func $future.read))
      (export "future.drop-r" (func $future.drop-r))))))
  (func (export "fetch-read") async (result string)
    (canon lift (core func $i "fetch-read") async {MEM}))
  (func (export "afetch-read") async (result string)
    (canon lift (core func $i "afetch-read") async {MEM}))
"""
)

# Guest cancellation of an async host import: ``cancel-get(x)`` starts ``get``
# through an async lower, cancels it with the sync ``subtask.cancel`` and
# returns the subtask's final state * 1000 + the value written (if any).
CANCEL_IMPORT = component(
    f"""
  (import "get" (func $get async (param "x" u32) (result u32)))
  (core func $ret (canon task.return (result u32)))
  (core func $get-async (canon lower (func $get) async {OPTS}))
  (core func $cancel (canon subtask.cancel))
  (core func $st.drop (canon subtask.drop))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret" (func $ret (param i32)))
    (import "" "get-async" (func $get-async (param i32 i32) (result i32)))
    (import "" "cancel" (func $cancel (param i32) (result i32)))
    (import "" "st.drop" (func $st.drop (param i32)))
    (func (export "cancel-get") (param $x i32)
      (local $st i32) (local $code i32)
      (i32.store (i32.const 64) (i32.const 0))
      (local.set $st (call $get-async (local.get $x) (i32.const 64)))
      (if (i32.ne (i32.and (local.get $st) (i32.const 15)) (i32.const 1 (; STARTED ;)))
        (then unreachable))
      (local.set $code (call $cancel (i32.shr_u (local.get $st) (i32.const 4))))
      (call $st.drop (i32.shr_u (local.get $st) (i32.const 4)))
      (call $ret (i32.add (i32.mul (local.get $code) (i32.const 1000))
                          (i32.load (i32.const 64))))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret" (func $ret)) (export "get-async" (func $get-async))
      (export "cancel" (func $cancel)) (export "st.drop" (func $st.drop))))))
  (func (export "cancel-get") async (param "x" u32) (result u32)
    (canon lift (core func $i "cancel-get") async))
"""
)

# stream<string> both ways: ``words()`` writes "hi" and "there";
# ``measure(s)`` reads strings to the end and returns count * 1000 + total length.
WORDS = component(
    f"""
  (type $ss (stream string))
  (core func $ret-ss (canon task.return (result $ss)))
  (core func $ret-u32 (canon task.return (result u32)))
  (core func $stream.new (canon stream.new $ss))
  (core func $stream.write (canon stream.write $ss {OPTS}))
  (core func $stream.read (canon stream.read $ss {OPTS}))
  (core func $stream.drop-w (canon stream.drop-writable $ss))
  (core func $stream.drop-r (canon stream.drop-readable $ss))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret-ss" (func $ret-ss (param i32)))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
    (import "" "stream.new" (func $stream.new (result i64)))
    (import "" "stream.write" (func $stream.write (param i32 i32 i32) (result i32)))
    (import "" "stream.read" (func $stream.read (param i32 i32 i32) (result i32)))
    (import "" "stream.drop-w" (func $stream.drop-w (param i32)))
    (import "" "stream.drop-r" (func $stream.drop-r (param i32)))
    (data (i32.const 16) "hi")
    (data (i32.const 24) "there")
    (func (export "words")
      (local $rw i64) (local $w i32)
      (local.set $rw (call $stream.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-ss (i32.wrap_i64 (local.get $rw)))
      (i32.store (i32.const 64) (i32.const 16))
      (i32.store (i32.const 68) (i32.const 2))
      (i32.store (i32.const 72) (i32.const 24))
      (i32.store (i32.const 76) (i32.const 5))
      (drop (call $stream.write (local.get $w) (i32.const 64) (i32.const 2)))
      (call $stream.drop-w (local.get $w)))
    (func (export "measure") (param $s i32)
      (local $ret i32) (local $n i32) (local $k i32) (local $count i32) (local $len i32)
      (loop $more
        (local.set $ret (call $stream.read (local.get $s) (i32.const 128) (i32.const 10)))
        (local.set $n (i32.shr_u (local.get $ret) (i32.const 4)))
        (local.set $count (i32.add (local.get $count) (local.get $n)))
        (local.set $k (i32.const 0))
        (block $done
          (loop $each
            (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
            (local.set $len (i32.add (local.get $len)
              (i32.load (i32.add (i32.const 132) (i32.shl (local.get $k) (i32.const 3))))))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $each)))
        (br_if $more (i32.eqz (i32.and (local.get $ret) (i32.const 15)))))
      (call $stream.drop-r (local.get $s))
      (call $ret-u32 (i32.add (i32.mul (local.get $count) (i32.const 1000)) (local.get $len)))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret-ss" (func $ret-ss)) (export "ret-u32" (func $ret-u32))
      (export "stream.new" (func $stream.new)) (export "stream.write" (func $stream.write))
      (export "stream.read" (func $stream.read)) (export "stream.drop-w" (func $stream.drop-w))
      (export "stream.drop-r" (func $stream.drop-r))))))
  (func (export "words") async (result $ss)
    (canon lift (core func $i "words") async))
  (func (export "measure") async (param "s" $ss) (result u32)
    (canon lift (core func $i "measure") async))
"""
)
