"""Hostile guests in the text format, shared by the limit tests."""

from __future__ import annotations

# A guest that spins forever (``spin``), grows its memory or table on request,
# answers at once (``ok``) and spins after yielding once (``spin-async``, a
# stackful async export on the task model).
SPIN = """(component
  (core module $m
    (memory (export "mem") 1)
    (table $t 1 funcref)
    (func (export "spin") (loop (br 0)))
    (func (export "count") (param i32) (result i32)
      (local $i i32)
      (loop
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br_if 0 (i32.lt_u (local.get $i) (local.get 0))))
      (local.get $i))
    (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0)))
    (func (export "grow-table") (param i32) (result i32)
      (table.grow $t (ref.null func) (local.get 0)))
    (func (export "ok") (result i32) (i32.const 7)))
  (core instance $i (instantiate $m))
  (func (export "spin") (canon lift (core func $i "spin")))
  (func (export "count") (param "n" u32) (result u32) (canon lift (core func $i "count")))
  (func (export "grow") (param "pages" u32) (result s32) (canon lift (core func $i "grow")))
  (func (export "grow-table") (param "n" u32) (result s32)
    (canon lift (core func $i "grow-table")))
  (func (export "ok") (result u32) (canon lift (core func $i "ok")))
)"""

SPIN_ASYNC = """(component
  (core func $yield (canon thread.yield))
  (core module $m
    (import "" "yield" (func $yield (result i32)))
    (func (export "spin") (drop (call $yield)) (loop (br 0)))
    (func (export "spin-now") (loop (br 0)))
    (func (export "ok") (result i32) (i32.const 7)))
  (core instance $i (instantiate $m (with "" (instance (export "yield" (func $yield))))))
  (func (export "spin") async (canon lift (core func $i "spin") async))
  (func (export "spin-now") async (canon lift (core func $i "spin-now") async))
  (func (export "ok") (result u32) (canon lift (core func $i "ok")))
)"""

# A core memory of two pages (creation beyond a one-page limit fails).
BIG_MEMORY = """(component
  (core module $m (memory (export "mem") 2) (func (export "ok") (result i32) (i32.const 1)))
  (core instance $i (instantiate $m))
  (func (export "ok") (result u32) (canon lift (core func $i "ok")))
)"""

BIG_TABLE = """(component
  (core module $m (table 100 funcref) (func (export "ok") (result i32) (i32.const 1)))
  (core instance $i (instantiate $m))
  (func (export "ok") (result u32) (canon lift (core func $i "ok")))
)"""

# ``nest`` returns list<list<list<list<u8>>>> whose every list is the same 64 pairs
# at 1024, each (1024, 64): 64**4 bytes (16 MiB) lifted out of 512 bytes of memory.
_PAIR = "\\00\\04\\00\\00\\40\\00\\00\\00"
NESTED = f"""(component
  (core module $m
    (memory (export "mem") 1)
    (data (i32.const 1024) "{_PAIR * 64}")
    (func (export "nest") (result i32) (i32.const 1024))
    (func (export "nest3") (result i32) (i32.const 1024)))
  (core instance $i (instantiate $m))
  (type $l4 (list (list (list (list u8)))))
  (type $l3 (list (list (list u8))))
  (func (export "nest") (result $l4)
    (canon lift (core func $i "nest") (memory (core memory $i "mem"))))
  (func (export "nest3") (result $l3)
    (canon lift (core func $i "nest3") (memory (core memory $i "mem"))))
)"""

_LIBC = """
  (core module $libc
    (memory (export "mem") 1)
    (global $bump (mut i32) (i32.const 4096))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $r i32)
      (local.set $r (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                             (i32.sub (i32.const 0) (local.get 2))))
      (global.set $bump (i32.add (local.get $r) (local.get 3)))
      (local.get $r)))
  (core instance $libc (instantiate $libc))
"""
LIBC_OPTS = '(memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))'


def with_libc(body: str) -> str:
    """A component with a bump-allocating ``$libc`` instance before ``body``."""
    return f"(component {_LIBC} {body})"


PARKED = """(component
  (import "get" (func $get async (param "x" u32) (result u32)))
  (core func $ret (canon task.return (result u32)))
  (core func $get (canon lower (func $get)))
  (core module $m
    (import "" "ret" (func $ret (param i32)))
    (import "" "get" (func $get (param i32) (result i32)))
    (func (export "wait") (param i32)
      (call $ret (i32.add (call $get (local.get 0)) (i32.const 1)))))
  (core instance $i (instantiate $m
    (with "" (instance (export "ret" (func $ret)) (export "get" (func $get))))))
  (func (export "wait") async (param "x" u32) (result u32)
    (canon lift (core func $i "wait") async))
)"""
"""``wait(x)``: a stackful async export whose guest calls the async import
``get(x)`` through a synchronous lower (its fiber parks) and returns ``get(x) + 1``."""
