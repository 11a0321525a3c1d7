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


_PRODUCER = f"""(component $P
  {_LIBC}
  (type $e (list (list (list (list u8)))))
  (type $s (stream $e))
  (type $f (future $e))
  (core func $ret-s (canon task.return (result $s)))
  (core func $ret-f (canon task.return (result $f)))
  (core func $ret-u32 (canon task.return (result u32)))
  (core func $s.new (canon stream.new $s))
  (core func $s.write (canon stream.write $s {LIBC_OPTS}))
  (core func $s.read (canon stream.read $s {LIBC_OPTS}))
  (core func $s.drop-w (canon stream.drop-writable $s))
  (core func $f.new (canon future.new $f))
  (core func $f.write (canon future.write $f {LIBC_OPTS}))
  (core func $f.read (canon future.read $f {LIBC_OPTS}))
  (core func $f.drop-w (canon future.drop-writable $f))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret-s" (func $ret-s (param i32)))
    (import "" "ret-f" (func $ret-f (param i32)))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
    (import "" "s.new" (func $s.new (result i64)))
    (import "" "s.write" (func $s.write (param i32 i32 i32) (result i32)))
    (import "" "s.read" (func $s.read (param i32 i32 i32) (result i32)))
    (import "" "s.drop-w" (func $s.drop-w (param i32)))
    (import "" "f.new" (func $f.new (result i64)))
    (import "" "f.write" (func $f.write (param i32 i32) (result i32)))
    (import "" "f.read" (func $f.read (param i32 i32) (result i32)))
    (import "" "f.drop-w" (func $f.drop-w (param i32)))
    (data (i32.const 8) "{_PAIR}")
    (data (i32.const 1024) "{_PAIR * 64}")
    (func (export "produce") (param $n i32)
      (local $rw i64) (local $w i32)
      (local.set $rw (call $s.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-s (i32.wrap_i64 (local.get $rw)))
      (block $done
        (loop $more
          (br_if $done (i32.eqz (local.get $n)))
          (drop (call $s.write (local.get $w) (i32.const 8) (i32.const 1)))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br $more)))
      (call $s.drop-w (local.get $w)))
    (func (export "make-fut")
      (local $rw i64) (local $w i32)
      (local.set $rw (call $f.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-f (i32.wrap_i64 (local.get $rw)))
      (drop (call $f.write (local.get $w) (i32.const 8)))
      (call $f.drop-w (local.get $w)))
    (func (export "consume") (param $s i32)
      (local $ret i32) (local $count i32)
      (loop $more
        (local.set $ret (call $s.read (local.get $s) (i32.const 16) (i32.const 1)))
        (local.set $count (i32.add (local.get $count) (i32.shr_u (local.get $ret) (i32.const 4))))
        (br_if $more (i32.eqz (i32.and (local.get $ret) (i32.const 15)))))
      (call $ret-u32 (local.get $count)))
    (func (export "read-fut") (param $f i32)
      (call $ret-u32 (call $f.read (local.get $f) (i32.const 16)))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret-s" (func $ret-s)) (export "ret-f" (func $ret-f))
      (export "ret-u32" (func $ret-u32)) (export "s.new" (func $s.new))
      (export "s.write" (func $s.write)) (export "s.read" (func $s.read))
      (export "s.drop-w" (func $s.drop-w)) (export "f.new" (func $f.new))
      (export "f.write" (func $f.write)) (export "f.read" (func $f.read))
      (export "f.drop-w" (func $f.drop-w))))))
  (func (export "produce") async (param "n" u32) (result $s)
    (canon lift (core func $i "produce") async))
  (func (export "make-fut") async (result $f)
    (canon lift (core func $i "make-fut") async))
  (func (export "consume") async (param "s" $s) (result u32)
    (canon lift (core func $i "consume") async))
  (func (export "read-fut") async (param "f" $f) (result u32)
    (canon lift (core func $i "read-fut") async)))"""

ALIASED_COPIES = f"""(component
  {_PRODUCER}
  (instance $a (instantiate $P))
  (instance $b (instantiate $P))
  (export "produce" (func $a "produce"))
  (export "make-fut" (func $a "make-fut"))
  (export "consume" (func $b "consume"))
  (export "read-fut" (func $b "read-fut"))
)"""
"""Stream and future copies of ``list<list<list<list<u8>>>>`` values whose lists all
alias 512 bytes (each 16 MiB lifted): ``produce(n)`` returns a stream it writes
``n`` of them to, one per write; ``make-fut()`` a future it writes one to (both
in instance ``a``); ``consume(s)`` and ``read-fut(f)`` read them in instance
``b`` (guest to guest) and return how many arrived."""


ASYNC_RESOURCE = """(component
  (core module $d
    (global $drops (mut i32) (i32.const 0))
    (func (export "dtor") (param i32)
      (global.set $drops (i32.add (global.get $drops) (i32.const 1))))
    (func (export "drops") (result i32) (global.get $drops)))
  (core instance $d (instantiate $d))
  (type $counter (resource (rep i32) (dtor (core func $d "dtor"))))
  (core func $new (canon resource.new $counter))
  (core func $ret (canon task.return (result u32)))
  (core module $m
    (import "h" "new" (func $new (param i32) (result i32)))
    (import "h" "ret" (func $ret (param i32)))
    (func (export "ctor") (param i32) (result i32) (call $new (local.get 0)))
    (func (export "get") (param i32) (call $ret (i32.add (local.get 0) (i32.const 1))))
    (func (export "make") (param i32) (result i32) (call $new (local.get 0))))
  (core instance $i (instantiate $m
    (with "h" (instance (export "new" (func $new)) (export "ret" (func $ret))))))
  (export $c "counter" (type $counter))
  (func (export "[constructor]counter") (param "v" u32) (result (own $c))
    (canon lift (core func $i "ctor")))
  (func (export "[method]counter.get") async (param "self" (borrow $c)) (result u32)
    (canon lift (core func $i "get") async))
  (func (export "make") (param "v" u32) (result (own $c))
    (canon lift (core func $i "make")))
  (func (export "drops") (result u32) (canon lift (core func $d "drops")))
)"""
"""A guest resource ``counter`` on the task model: ``counter.get()`` is an async
method (stackful) returning the handle's rep plus one; ``make(v)`` returns a
new counter; ``drops()`` counts destructor runs."""
