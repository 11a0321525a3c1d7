"""Components in the text format for the host-boundary tests of the task model
(guest cancellation and deadlock, trapping imports and their handles,
embedder cancellation of an export call)."""

from __future__ import annotations

from .components import MEM, OPTS, component

# ``get`` is an async import the host answers (or not); ``notify`` reports a
# number to the host; ``sink``/``fsink`` take a stream / a future.
#
# * ``cancel-then-stall(x)``: starts ``get`` through an async lower (it must
#   still be pending: STARTED), cancels it with the sync ``subtask.cancel``,
#   notifies the cancel's result code, then waits on an empty waitable set
#   forever;
# * ``relay(s)`` / ``frelay(f)``: hand their argument to ``sink`` / ``fsink``
#   (sync lower of the async imports) and return;
# * ``wait-get(x)``: starts ``get`` and waits for it (not cancellably), then
#   returns its value;
# * ``cb-wait()``: a callback-lifted export waiting for ``get``; on a
#   cancellation event (6) it notifies 6 and confirms with ``task.cancel``, on
#   the subtask's event it returns the value;
# * ``cb-stubborn()``: the same, but on cancellation notifies 6 and returns 42.
BOUNDARY = component(
    f"""
  (type $bs (stream u8))
  (type $fu (future u32))
  (import "get" (func $get async (param "x" u32) (result u32)))
  (import "notify" (func $notify (param "v" u32)))
  (import "sink" (func $sink async (param "s" $bs)))
  (import "fsink" (func $fsink async (param "f" $fu)))
  (core func $ret (canon task.return))
  (core func $ret-u32 (canon task.return (result u32)))
  (core func $task.cancel (canon task.cancel))
  (core func $get-async (canon lower (func $get) async {OPTS}))
  (core func $notify (canon lower (func $notify)))
  (core func $sink (canon lower (func $sink)))
  (core func $fsink (canon lower (func $fsink)))
  (core func $cancel (canon subtask.cancel))
  (core func $st.drop (canon subtask.drop))
  (core func $ws.new (canon waitable-set.new))
  (core func $ws.wait (canon waitable-set.wait {MEM}))
  (core func $join (canon waitable.join))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret" (func $ret))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
    (import "" "task.cancel" (func $task.cancel))
    (import "" "get-async" (func $get-async (param i32 i32) (result i32)))
    (import "" "notify" (func $notify (param i32)))
    (import "" "sink" (func $sink (param i32)))
    (import "" "fsink" (func $fsink (param i32)))
    (import "" "cancel" (func $cancel (param i32) (result i32)))
    (import "" "st.drop" (func $st.drop (param i32)))
    (import "" "ws.new" (func $ws.new (result i32)))
    (import "" "ws.wait" (func $ws.wait (param i32 i32) (result i32)))
    (import "" "join" (func $join (param i32 i32)))
    (global $ws (mut i32) (i32.const 0))
    ;; start ``get`` (it must stay pending) and join it to a new set in $ws
    (func $start-get (param $x i32) (result i32)
      (local $st i32)
      (local.set $st (call $get-async (local.get $x) (i32.const 64)))
      (if (i32.ne (i32.and (local.get $st) (i32.const 15)) (i32.const 1 (; STARTED ;)))
        (then unreachable))
      (global.set $ws (call $ws.new))
      (call $join (i32.shr_u (local.get $st) (i32.const 4)) (global.get $ws))
      (i32.shr_u (local.get $st) (i32.const 4)))
    (func (export "cancel-then-stall") (param $x i32)
      (local $st i32)
      (local.set $st (call $get-async (local.get $x) (i32.const 64)))
      (if (i32.ne (i32.and (local.get $st) (i32.const 15)) (i32.const 1 (; STARTED ;)))
        (then unreachable))
      (call $notify (call $cancel (i32.shr_u (local.get $st) (i32.const 4))))
      (call $st.drop (i32.shr_u (local.get $st) (i32.const 4)))
      (drop (call $ws.wait (call $ws.new) (i32.const 32)))
      (call $ret-u32 (i32.const 0)))
    (func (export "relay") (param $s i32)
      (call $sink (local.get $s))
      (call $ret))
    (func (export "frelay") (param $f i32)
      (call $fsink (local.get $f))
      (call $ret))
    (func (export "wait-get") (param $x i32)
      (drop (call $start-get (local.get $x)))
      (drop (call $ws.wait (global.get $ws) (i32.const 32)))
      (call $ret-u32 (i32.load (i32.const 64))))
    (func (export "cb-wait") (result i32)
      (drop (call $start-get (i32.const 2)))
      (i32.or (i32.const 2 (; WAIT ;)) (i32.shl (global.get $ws) (i32.const 4))))
    (func $on-event (param $code i32) (param $stubborn i32) (result i32)
      (if (i32.eq (local.get $code) (i32.const 6 (; TASK_CANCELLED ;)))
        (then
          (call $notify (local.get $code))
          (if (local.get $stubborn)
            (then (call $ret-u32 (i32.const 42)))
            (else (call $task.cancel)))
          (return (i32.const 0 (; EXIT ;)))))
      (call $ret-u32 (i32.load (i32.const 64)))
      (i32.const 0 (; EXIT ;)))
    (func (export "cb-wait-cb") (param $code i32) (param $index i32) (param $payload i32)
      (result i32)
      (call $on-event (local.get $code) (i32.const 0)))
    (func (export "cb-stubborn-cb") (param $code i32) (param $index i32) (param $payload i32)
      (result i32)
      (call $on-event (local.get $code) (i32.const 1))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret" (func $ret)) (export "ret-u32" (func $ret-u32))
      (export "task.cancel" (func $task.cancel)) (export "get-async" (func $get-async))
      (export "notify" (func $notify)) (export "sink" (func $sink))
      (export "fsink" (func $fsink)) (export "cancel" (func $cancel))
      (export "st.drop" (func $st.drop)) (export "ws.new" (func $ws.new))
      (export "ws.wait" (func $ws.wait))
      (export "join" (func $join))))))
  (func (export "cancel-then-stall") async (param "x" u32) (result u32)
    (canon lift (core func $i "cancel-then-stall") async))
  (func (export "relay") async (param "s" $bs)
    (canon lift (core func $i "relay") async))
  (func (export "frelay") async (param "f" $fu)
    (canon lift (core func $i "frelay") async))
  (func (export "wait-get") async (param "x" u32) (result u32)
    (canon lift (core func $i "wait-get") async))
  (func (export "cb-wait") async (result u32)
    (canon lift (core func $i "cb-wait") async (callback (core func $i "cb-wait-cb"))))
  (func (export "cb-stubborn") async (result u32)
    (canon lift (core func $i "cb-wait") async (callback (core func $i "cb-stubborn-cb"))))
"""
)
