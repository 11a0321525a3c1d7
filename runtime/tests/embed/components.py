"""Component text sources shared by the embed tests (the allocator and the
canonical options come from the probe library, ``runtime/tests/wat_probes.py``)."""

from __future__ import annotations

from ..wat_probes import LIBC, MEM, OPTS, component

__all__ = [
    "BASIC",
    "CROSS",
    "GUEST_RESOURCE",
    "HOST_RESOURCE",
    "Blob",
    "LIBC",
    "MEM",
    "OPTS",
    "RESULTS",
    "VERSIONED",
    "component",
]

BASIC = component(
    f"""
  (import "log" (func $log (param "msg" string)))
  (import "fail" (func $fail))
  (core func $log (canon lower (func $log) {OPTS}))
  (core func $fail (canon lower (func $fail)))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "host" "log" (func $log (param i32 i32)))
    (import "host" "fail" (func $fail))
    (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
    (func (export "greet") (param i32 i32) (result i32)
      (call $log (local.get 0) (local.get 1))
      (i32.store (i32.const 16) (local.get 0))
      (i32.store (i32.const 20) (local.get 1))
      (i32.const 16))
    (func (export "boom") (call $fail))
    (func (export "crash") unreachable))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "host" (instance (export "log" (func $log)) (export "fail" (func $fail))))))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
  (func (export "greet") (param "name" string) (result string)
    (canon lift (core func $i "greet") {OPTS}))
  (func (export "boom") (canon lift (core func $i "boom")))
  (func (export "crash") (canon lift (core func $i "crash")))
"""
)

RESULTS = component(
    f"""
  (type $r (result u32 (error string)))
  (import "check" (func $check (param "x" u32) (result $r)))
  (core func $check (canon lower (func $check) {OPTS}))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "host" "check" (func $check (param i32 i32)))
    (func (export "div") (param i32 i32) (result i32)
      (if (i32.eqz (local.get 1))
        (then
          (i32.store (i32.const 32) (i32.const 1))
          (i32.store (i32.const 36) (i32.const 64))
          (i32.store (i32.const 40) (i32.const 4))
          (return (i32.const 32))))
      (i32.store (i32.const 32) (i32.const 0))
      (i32.store (i32.const 36) (i32.div_u (local.get 0) (local.get 1)))
      (i32.const 32))
    (func (export "via-check") (param i32) (result i32)
      (call $check (local.get 0) (i32.const 128))
      (i32.const 128))
    (data (i32.const 64) "zero"))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "host" (instance (export "check" (func $check))))))
  (func (export "div") (param "a" u32) (param "b" u32) (result $r)
    (canon lift (core func $i "div") {OPTS}))
  (func (export "via-check") (param "x" u32) (result $r)
    (canon lift (core func $i "via-check") {OPTS}))
"""
)

VERSIONED = """
(component
  (import "test:demo/math@0.2.3" (instance $math
    (export "double" (func (param "x" u32) (result u32)))))
  (alias export $math "double" (func $double))
  (core func $d (canon lower (func $double)))
  (core module $m
    (import "h" "double" (func $d (param i32) (result i32)))
    (func (export "quad") (param i32) (result i32) (call $d (call $d (local.get 0)))))
  (core instance $i (instantiate $m (with "h" (instance (export "double" (func $d))))))
  (func $quad (param "x" u32) (result u32) (canon lift (core func $i "quad")))
  (instance $api (export "quad" (func $quad)))
  (export "test:demo/api@0.2.0" (instance $api))
)
"""

HOST_RESOURCE = component(
    f"""
  (import "test:demo/store" (instance $s
    (export "blob" (type $blob (sub resource)))
    (export "[constructor]blob" (func (param "init" string) (result (own $blob))))
    (export "[method]blob.size" (func (param "self" (borrow $blob)) (result u32)))
    (export "[static]blob.kind" (func (result u32)))
    (export "take" (func (param "b" (own $blob)) (result u32)))
    (export "give" (func (result (own $blob))))))
  (alias export $s "blob" (type $blob))
  (alias export $s "[constructor]blob" (func $ctor))
  (alias export $s "[method]blob.size" (func $size))
  (alias export $s "[static]blob.kind" (func $kind))
  (alias export $s "take" (func $take))
  (alias export $s "give" (func $give))
  (core func $drop (canon resource.drop $blob))
  (core func $ctor (canon lower (func $ctor) {OPTS}))
  (core func $size (canon lower (func $size)))
  (core func $kind (canon lower (func $kind)))
  (core func $take (canon lower (func $take)))
  (core func $give (canon lower (func $give)))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "h" "ctor" (func $ctor (param i32 i32) (result i32)))
    (import "h" "size" (func $size (param i32) (result i32)))
    (import "h" "kind" (func $kind (result i32)))
    (import "h" "take" (func $take (param i32) (result i32)))
    (import "h" "give" (func $give (result i32)))
    (import "h" "drop" (func $drop (param i32)))
    (func (export "run") (result i32) (local $h i32) (local $n i32)
      (local.set $h (call $ctor (i32.const 0) (i32.const 5)))
      (local.set $n (call $size (local.get $h)))
      (call $drop (local.get $h))
      (i32.add (local.get $n) (call $kind)))
    (func (export "round-trip") (result i32)
      (call $take (call $give)))
    (data (i32.const 0) "hello"))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "h" (instance
      (export "ctor" (func $ctor)) (export "size" (func $size)) (export "kind" (func $kind))
      (export "take" (func $take)) (export "give" (func $give)) (export "drop" (func $drop))))))
  (func (export "run") (result u32) (canon lift (core func $i "run")))
  (func (export "round-trip") (result u32) (canon lift (core func $i "round-trip")))
"""
)


class Blob:
    """A host class of :data:`HOST_RESOURCE`'s ``blob``: its size is its text's."""

    def __init__(self, init: str) -> None:
        self.init = init

    def size(self) -> int:
        return len(self.init)

    @staticmethod
    def kind() -> int:
        return 100


GUEST_RESOURCE = """
(component
  (core module $d
    (global $drops (export "drops-g") (mut i32) (i32.const 0))
    (global $last (export "last-g") (mut i32) (i32.const 0))
    (func (export "dtor") (param i32)
      (global.set $last (local.get 0))
      (global.set $drops (i32.add (global.get $drops) (i32.const 1))))
    (func (export "drops") (result i32) (global.get $drops))
    (func (export "last") (result i32) (global.get $last)))
  (core instance $d (instantiate $d))
  (type $counter (resource (rep i32) (dtor (core func $d "dtor"))))
  (core func $new (canon resource.new $counter))
  (core func $rep (canon resource.rep $counter))
  (core module $m
    (import "h" "new" (func $new (param i32) (result i32)))
    (import "h" "rep" (func $rep (param i32) (result i32)))
    (func (export "ctor") (param i32) (result i32) (call $new (local.get 0)))
    (func (export "get") (param i32) (result i32) (local.get 0))
    (func (export "consume") (param i32) (result i32) (call $rep (local.get 0))))
  (core instance $i (instantiate $m
    (with "h" (instance (export "new" (func $new)) (export "rep" (func $rep))))))
  (export $c "counter" (type $counter))
  (func (export "[constructor]counter") (param "v" u32) (result (own $c))
    (canon lift (core func $i "ctor")))
  (func (export "[method]counter.get") (param "self" (borrow $c)) (result u32)
    (canon lift (core func $i "get")))
  (func (export "consume") (param "c" (own $c)) (result u32)
    (canon lift (core func $i "consume")))
  (func (export "drops") (result u32) (canon lift (core func $d "drops")))
  (func (export "last") (result u32) (canon lift (core func $d "last")))
)
"""

CROSS = f"""
(component
  (component $callee
    {LIBC}
    (core module $m
      (import "libc" "mem" (memory 1))
      (func (export "echo") (param i32 i32) (result i32)
        (i32.store (i32.const 8) (local.get 0))
        (i32.store (i32.const 12) (local.get 1))
        (i32.const 8)))
    (core instance $i (instantiate $m (with "libc" (instance $libc))))
    (func (export "echo") (param "s" string) (result string)
      (canon lift (core func $i "echo") {OPTS} string-encoding=utf16)))
  (instance $c (instantiate $callee))
  (alias export $c "echo" (func $echo))
  {LIBC}
  (core func $echo (canon lower (func $echo) {OPTS}))
  (core module $m2
    (import "libc" "mem" (memory 1))
    (import "h" "echo" (func $e (param i32 i32 i32)))
    (func (export "run") (param i32 i32) (result i32)
      (call $e (local.get 0) (local.get 1) (i32.const 256))
      (i32.const 256)))
  (core instance $i2 (instantiate $m2
    (with "libc" (instance $libc)) (with "h" (instance (export "echo" (func $echo))))))
  (func (export "run") (param "s" string) (result string)
    (canon lift (core func $i2 "run") {OPTS}))
)
"""
