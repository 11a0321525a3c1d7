"""The pool tests' guest, in the component text format (no toolchain needed).

World-level exports:

* ``add(a, b)``, ``counter()`` (a global that counts calls: a new instance
  starts again at 1), ``crash()`` (``unreachable``), ``spin(n)`` (a
  CPU-bound loop of ``n`` xorshift steps);
* ``whoami()`` (the host's ``pid``), ``nap(ms)`` (the host sleeps, then
  ``pid``), ``poke(how)`` (the host does ``how``: see ``pool_hosts.py``);
* ``echo(items)`` returns its ``list<item>`` argument as it came (the host
  lowers it, the guest hands the same memory back to be lifted), ``fail(items)``
  returns it as the error of a ``result<u32, list<item>>``, ``div(a, b)``
  errs with ``"division by zero"``;
* ``make-thing(v)`` returns an ``own<thing>`` of an exported resource.

Interface export ``test:pool/math@1.2.0``: ``mul(a, b)``.
"""

from __future__ import annotations

LIBC = """
  (core module $libc
    (memory (export "mem") 2)
    (global $bump (mut i32) (i32.const 4096))
    (func (export "reset") (global.set $bump (i32.const 4096)))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $r i32)
      (if (i32.and (i32.ne (local.get 0) (i32.const 0)) (i32.le_u (local.get 3) (local.get 1)))
        (then (return (local.get 0))))
      (local.set $r
        (i32.and
          (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
          (i32.sub (i32.const 0) (local.get 2))))
      (global.set $bump (i32.add (local.get $r) (local.get 3)))
      (if (i32.ne (local.get 0) (i32.const 0))
        (then (memory.copy (local.get $r) (local.get 0) (local.get 1))))
      (local.get $r)))
  (core instance $libc (instantiate $libc))
"""
OPTS = '(memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))'

GUEST = f"""
(component
  (import "test:pool/host" (instance $host
    (export "poke" (func (param "how" u32)))
    (export "pid" (func (result u32)))
    (export "nap" (func (param "ms" u32)))))
  (alias export $host "poke" (func $poke))
  (alias export $host "pid" (func $pid))
  (alias export $host "nap" (func $nap))
  {LIBC}
  (type $thing (resource (rep i32)))
  (core func $new (canon resource.new $thing))
  (core func $poke (canon lower (func $poke)))
  (core func $pid (canon lower (func $pid)))
  (core func $nap (canon lower (func $nap)))
  (core module $m
    (import "libc" "mem" (memory 2))
    (import "libc" "reset" (func $reset))
    (import "host" "poke" (func $poke (param i32)))
    (import "host" "pid" (func $pid (result i32)))
    (import "host" "nap" (func $nap (param i32)))
    (import "host" "new" (func $new (param i32) (result i32)))
    (global $count (mut i32) (i32.const 0))
    (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
    (func (export "mul") (param i32 i32) (result i32) (i32.mul (local.get 0) (local.get 1)))
    (func (export "spin") (param $n i32) (result i32)
      (local $x i32)
      (local.set $x (i32.const 1))
      (block $done
        (loop $top
          (br_if $done (i32.eqz (local.get $n)))
          (local.set $x (i32.xor (local.get $x) (i32.shl (local.get $x) (i32.const 13))))
          (local.set $x (i32.xor (local.get $x) (i32.shr_u (local.get $x) (i32.const 17))))
          (local.set $x (i32.xor (local.get $x) (i32.shl (local.get $x) (i32.const 5))))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br $top)))
      (local.get $x))
    (func (export "counter") (result i32)
      (global.set $count (i32.add (global.get $count) (i32.const 1)))
      (global.get $count))
    (func (export "crash") unreachable)
    (func (export "poke") (param i32) (call $poke (local.get 0)))
    (func (export "whoami") (result i32) (call $pid))
    (func (export "nap") (param i32) (result i32) (call $nap (local.get 0)) (call $pid))
    (func (export "echo") (param i32 i32) (result i32)
      (i32.store (i32.const 8) (local.get 0))
      (i32.store (i32.const 12) (local.get 1))
      (call $reset)
      (i32.const 8))
    (func (export "fail") (param i32 i32) (result i32)
      (i32.store8 (i32.const 16) (i32.const 1))
      (i32.store (i32.const 20) (local.get 0))
      (i32.store (i32.const 24) (local.get 1))
      (call $reset)
      (i32.const 16))
    (func (export "div") (param i32 i32) (result i32)
      (if (i32.eqz (local.get 1))
        (then
          (i32.store (i32.const 32) (i32.const 1))
          (i32.store (i32.const 36) (i32.const 64))
          (i32.store (i32.const 40) (i32.const 16))
          (return (i32.const 32))))
      (i32.store (i32.const 32) (i32.const 0))
      (i32.store (i32.const 36) (i32.div_u (local.get 0) (local.get 1)))
      (i32.const 32))
    (func (export "make-thing") (param i32) (result i32) (call $new (local.get 0)))
    (data (i32.const 64) "division by zero"))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "host" (instance
      (export "poke" (func $poke)) (export "pid" (func $pid)) (export "nap" (func $nap))
      (export "new" (func $new))))))
  (type $shape0 (variant (case "circle" f64) (case "square" u32) (case "none")))
  (export $shape "shape" (type $shape0))
  (type $mode0 (enum "fast" "slow"))
  (export $mode "mode" (type $mode0))
  (type $bits0 (flags "a" "b"))
  (export $bits "bits" (type $bits0))
  (type $item0 (record
    (field "name" string) (field "data" (list u8)) (field "tags" (list string))
    (field "size" (option u64)) (field "shape" $shape) (field "pair" (tuple s32 char))
    (field "mode" $mode) (field "bits" $bits)))
  (export $item "item" (type $item0))
  (export $thing-t "thing" (type $thing))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
  (func (export "spin") (param "n" u32) (result u32) (canon lift (core func $i "spin")))
  (func (export "counter") (result u32) (canon lift (core func $i "counter")))
  (func (export "crash") (canon lift (core func $i "crash")))
  (func (export "poke") (param "how" u32) (canon lift (core func $i "poke")))
  (func (export "whoami") (result u32) (canon lift (core func $i "whoami")))
  (func (export "nap") (param "ms" u32) (result u32) (canon lift (core func $i "nap")))
  (func (export "echo") (param "items" (list $item)) (result (list $item))
    (canon lift (core func $i "echo") {OPTS}))
  (func (export "fail") (param "items" (list $item)) (result (result u32 (error (list $item))))
    (canon lift (core func $i "fail") {OPTS}))
  (func (export "div") (param "a" u32) (param "b" u32) (result (result u32 (error string)))
    (canon lift (core func $i "div") {OPTS}))
  (func (export "make-thing") (param "v" u32) (result (own $thing-t))
    (canon lift (core func $i "make-thing")))
  (func $mul (param "a" u32) (param "b" u32) (result u32) (canon lift (core func $i "mul")))
  (instance $math (export "mul" (func $mul)))
  (export "test:pool/math@1.2.0" (instance $math))
)
"""

#: ``oops(why) -> error-context``: an error-context made by the guest from its argument
#: (a 0.3 built-in, so this guest runs on the task model)
ERROR_CONTEXT_GUEST = f"""
(component
  {LIBC}
  (alias core export $libc "mem" (core memory $libc-mem))
  (core func $ecnew (canon error-context.new (memory $libc-mem)))
  (core module $m
    (import "h" "ecnew" (func $ecnew (param i32 i32) (result i32)))
    (func (export "oops") (param i32 i32) (result i32) (call $ecnew (local.get 0) (local.get 1))))
  (core instance $i (instantiate $m (with "h" (instance (export "ecnew" (func $ecnew))))))
  (func (export "oops") (param "why" string) (result error-context)
    (canon lift (core func $i "oops") {OPTS}))
)
"""
