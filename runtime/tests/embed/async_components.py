"""Async components in the text format, shared by the embed tests of the task model.

The stream, future, error-context, ``stream<string>`` (``WORDS``) and
cancellation (``CANCEL``) probes are built from the probe library the
conventions suite uses too (``runtime/tests/wat_probes.py``).
"""

from __future__ import annotations

from ..wat_probes import (
    CANCEL,
    CONSUME_CHECKSUM,
    MAKE_FUT,
    MAKE_FUT_THEN_TRAP,
    MEM,
    OPTS,
    PRODUCE,
    PRODUCE_THEN_TRAP,
    READ_FUT_EXPORT,
    WORDS,
    component,
    error_probe,
    stream_probe,
)

__all__ = [
    "ADAPTERS",
    "BACKGROUND",
    "CANCEL",
    "ERRORS",
    "EXPORTS",
    "FUTURE_IMPORT",
    "HOST_ASYNC",
    "START",
    "STREAMS",
    "SUSPENDING",
    "TWO_INSTANCES",
    "WORDS",
]

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
# ``produce-then-trap`` writes "hel" and traps; ``make-fut-then-trap(in)``
# returns a future, then traps once ``in`` is written; ``consume(s)`` reads a
# stream to its end and returns count * 1000 + byte sum; ``make-fut()``
# returns a future written with "hello"; ``read-fut(f)`` returns the string a
# future delivers.
STREAMS = stream_probe(
    PRODUCE, PRODUCE_THEN_TRAP, MAKE_FUT_THEN_TRAP, CONSUME_CHECKSUM, MAKE_FUT, READ_FUT_EXPORT
)

# error-context both ways: ``make-err`` returns a context holding "it broke";
# ``err-message(e)`` returns the debug message of the context it receives.
ERRORS = error_probe(host=False)

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
