"""Sources of the guest used by ``bench/boundary.py``.

One core module (:data:`CORE_FIELDS`) is used twice: on its own, as a core
module run directly by wasmtime-py (the raw floor), and embedded in the
component :data:`COMPONENT`, which lifts its exports with canonical ABI
types. Both therefore run the same machine code per call.

Linear memory layout (40 pages, 2.5 MiB):

* ``RET_AREA`` (16): the 8-byte ``(ptr, len)`` return area of the
  ``give*`` exports; ``RECORD_AREA`` (32): the 20-byte return area of
  ``echo-record``, which stores its flat parameters back as the record;
* ``SRC8`` (64 KiB): 1 MiB of ``'a'`` bytes, returned by ``give8`` as a
  ``list<u8>`` or a UTF-8 ``string`` of the requested length;
* ``SRC16``: 256 KiB of UTF-16LE ``'a'`` code units, returned by ``give16``;
* ``HEAP``: a single 1 MiB + 64 KiB block handed out by ``realloc``. Every
  export call lowers at most one list or string, so ``realloc`` returns the
  same block each time (and grows a block in place), which keeps the guest's
  side of a transfer constant and the benchmark free of allocator noise.

The start function fills ``SRC8`` and ``SRC16``; the exports themselves do
no work proportional to the payload (``take`` returns the length it was
given), so a transfer's cost is the host side of the boundary alone.
"""

from __future__ import annotations

__all__ = [
    "COMPONENT",
    "CORE_MODULE",
    "HEAP",
    "HEAP_SIZE",
    "LIST_BYTES",
    "SRC8",
    "SRC16",
    "SRC16_UNITS",
    "STRING_CHARS",
]

#: payload of the ``list<u8>`` transfers (1 MiB)
LIST_BYTES = 1 << 20
#: characters of the string transfers (100 KB of ASCII)
STRING_CHARS = 100_000
#: capacity of the UTF-16 source region, in code units
SRC16_UNITS = 128 * 1024
#: size of the single heap block ``realloc`` hands out
HEAP_SIZE = LIST_BYTES + 65536

_RET_AREA = 16
#: the 20-byte return area of ``echo-record``
_RECORD_AREA = 32
#: address of the 1 MiB of ``'a'`` bytes
SRC8 = 65536
#: address of the UTF-16LE ``'a'`` code units
SRC16 = SRC8 + LIST_BYTES
#: address of the heap block
HEAP = SRC16 + 2 * SRC16_UNITS

CORE_FIELDS = f"""
  (import "host" "f" (func $f (param i32) (result i32)))
  (memory (export "mem") 40)
  (func $init
    (local $i i32)
    (memory.fill (i32.const {SRC8}) (i32.const 0x61) (i32.const {LIST_BYTES}))
    (loop $l
      (i32.store16 (i32.add (i32.const {SRC16}) (i32.shl (local.get $i) (i32.const 1)))
        (i32.const 0x61))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const {SRC16_UNITS})))))
  (start $init)
  (func (export "realloc") (param $old i32) (param $old_size i32) (param $align i32)
      (param $new i32) (result i32)
    (if (i32.gt_u (local.get $new) (i32.const {HEAP_SIZE})) (then unreachable))
    (if (local.get $old) (then (return (local.get $old))))
    (i32.const {HEAP}))
  (func (export "add") (param i32 i32) (result i32)
    (i32.add (local.get 0) (local.get 1)))
  (func (export "call-host") (param $n i32) (result i32)
    (local $acc i32)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $acc (i32.add (local.get $acc) (call $f (local.get $n))))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $l)))
    (local.get $acc))
  (func (export "take") (param $ptr i32) (param $len i32) (result i32)
    (local.get $len))
  (func (export "give8") (param $n i32) (result i32)
    (if (i32.gt_u (local.get $n) (i32.const {LIST_BYTES})) (then unreachable))
    (i32.store (i32.const {_RET_AREA}) (i32.const {SRC8}))
    (i32.store (i32.const {_RET_AREA + 4}) (local.get $n))
    (i32.const {_RET_AREA}))
  (func (export "echo-record") (param $x i32) (param $y i32) (param $d i32) (param $p i32)
      (param $l i32) (result i32)
    (i32.store (i32.const {_RECORD_AREA}) (local.get $x))
    (i32.store (i32.const {_RECORD_AREA + 4}) (local.get $y))
    (i32.store8 (i32.const {_RECORD_AREA + 8}) (local.get $d))
    (i32.store (i32.const {_RECORD_AREA + 12}) (local.get $p))
    (i32.store (i32.const {_RECORD_AREA + 16}) (local.get $l))
    (i32.const {_RECORD_AREA}))
  (func (export "give16") (param $n i32) (result i32)
    (if (i32.gt_u (local.get $n) (i32.const {SRC16_UNITS})) (then unreachable))
    (i32.store (i32.const {_RET_AREA}) (i32.const {SRC16}))
    (i32.store (i32.const {_RET_AREA + 4}) (local.get $n))
    (i32.const {_RET_AREA}))
"""

#: the core module on its own (core wasm text)
CORE_MODULE = f"(module {CORE_FIELDS})"

_MEM = '(memory (core memory $i "mem"))'
_REALLOC = '(realloc (core func $i "realloc"))'

#: the component (component text; compile with ``wasm-tools parse``)
COMPONENT = f"""(component
  (import "f" (func $f (param "x" u32) (result u32)))
  (core func $f (canon lower (func $f)))
  (core module $m {CORE_FIELDS})
  (core instance $i (instantiate $m (with "host" (instance (export "f" (func $f))))))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
  (func (export "call-host") (param "n" u32) (result u32)
    (canon lift (core func $i "call-host")))
  (func (export "take-bytes") (param "data" (list u8)) (result u32)
    (canon lift (core func $i "take") {_MEM} {_REALLOC}))
  (func (export "give-bytes") (param "n" u32) (result (list u8))
    (canon lift (core func $i "give8") {_MEM}))
  (func (export "take-string") (param "s" string) (result u32)
    (canon lift (core func $i "take") {_MEM} {_REALLOC}))
  (func (export "give-string") (param "n" u32) (result string)
    (canon lift (core func $i "give8") {_MEM}))
  (func (export "take-string16") (param "s" string) (result u32)
    (canon lift (core func $i "take") string-encoding=utf16 {_MEM} {_REALLOC}))
  (func (export "give-string16") (param "n" u32) (result string)
    (canon lift (core func $i "give16") string-encoding=utf16 {_MEM}))
  (type $point (record (field "x" s32) (field "y" s32) (field "label" (option string))))
  (export $point-t "point" (type $point))
  (func (export "echo-record") (param "p" $point-t) (result $point-t)
    (canon lift (core func $i "echo-record") {_MEM} {_REALLOC}))
)"""
