"""Probe components of the 0.3 task model: streams, futures, error-contexts.

All exports are stackful async lifts that return through ``task.return``.
Guest reads use the synchronous ``stream.read``/``future.read`` forms, which
block the stackful task until the other end makes progress.
"""

from __future__ import annotations

from .components import LIBC, MEM, OPTS

# Reads every byte of the stream handle in ``$s`` into memory at 2048, then
# returns them as ``list<u8>`` (``$n`` holds the running count).
_READ_ALL = """
      (loop $more
        (local.set $ret (call $stream.read (local.get $s)
          (i32.add (i32.const 2048) (local.get $n)) (i32.const 100)))
        (local.set $n (i32.add (local.get $n) (i32.shr_u (local.get $ret) (i32.const 4))))
        (br_if $more (i32.eqz (i32.and (local.get $ret) (i32.const 15)))))
      (call $stream.drop-r (local.get $s))
      (call $ret-bytes (i32.const 2048) (local.get $n))"""

_READ_FUT = """
      (drop (call $future.read (local.get $f) (i32.const 520)))
      (call $future.drop-r (local.get $f))
      (call $ret-str (i32.load (i32.const 520)) (i32.load (i32.const 524)))"""

_STREAM_BUILTINS = f"""
  (type $bs (stream u8))
  (type $fs (future string))
  (core func $ret-bytes (canon task.return (result (list u8)) {MEM}))
  (core func $ret-str (canon task.return (result string) {MEM}))
  (core func $ret-bs (canon task.return (result $bs)))
  (core func $ret-fs (canon task.return (result $fs)))
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
"""
_STREAM_IMPORTS = """
    (import "libc" "mem" (memory 1))
    (import "" "ret-bytes" (func $ret-bytes (param i32 i32)))
    (import "" "ret-str" (func $ret-str (param i32 i32)))
    (import "" "ret-bs" (func $ret-bs (param i32)))
    (import "" "ret-fs" (func $ret-fs (param i32)))
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
"""
_STREAM_WITH = """
      (export "ret-bytes" (func $ret-bytes)) (export "ret-str" (func $ret-str))
      (export "ret-bs" (func $ret-bs)) (export "ret-fs" (func $ret-fs))
      (export "stream.new" (func $stream.new)) (export "stream.write" (func $stream.write))
      (export "stream.read" (func $stream.read)) (export "stream.drop-w" (func $stream.drop-w))
      (export "stream.drop-r" (func $stream.drop-r)) (export "future.new" (func $future.new))
      (export "future.write" (func $future.write)) (export "future.read" (func $future.read))
      (export "future.drop-r" (func $future.drop-r)) (export "future.drop-w" (func $future.drop-w))
"""

# ``produce(n)``: a stream of the first n bytes of "hello world", written
# once (whatever a short read leaves untaken is never offered again);
# ``produce-all(n)``: the same bytes, written until all are taken;
# ``produce-then-trap``: writes "hel" and traps; ``consume(s)``: the bytes read;
# ``make-fut``: a future written with "hello"; ``read-fut(f)``: its string;
# ``keep-fut(f)``: returns "kept" without ever reading f.
STREAMS = f"""(component
  {LIBC}
  {_STREAM_BUILTINS}
  (core module $m
    {_STREAM_IMPORTS}
    (data (i32.const 16) "hello world")
    (func (export "produce") (param $n i32)
      (local $rw i64) (local $w i32)
      (local.set $rw (call $stream.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (drop (call $stream.write (local.get $w) (i32.const 16) (local.get $n)))
      (call $stream.drop-w (local.get $w)))
    (func (export "produce-all") (param $n i32)
      (local $rw i64) (local $w i32) (local $off i32) (local $ret i32)
      (local.set $rw (call $stream.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (block $done
        (loop $more
          (br_if $done (i32.ge_u (local.get $off) (local.get $n)))
          (local.set $ret (call $stream.write (local.get $w)
            (i32.add (i32.const 16) (local.get $off)) (i32.sub (local.get $n) (local.get $off))))
          (local.set $off (i32.add (local.get $off) (i32.shr_u (local.get $ret) (i32.const 4))))
          (br_if $more (i32.eqz (i32.and (local.get $ret) (i32.const 15))))))
      (call $stream.drop-w (local.get $w)))
    (func (export "produce-then-trap")
      (local $rw i64) (local $w i32)
      (local.set $rw (call $stream.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (drop (call $stream.write (local.get $w) (i32.const 16) (i32.const 3)))
      unreachable)
    (func (export "consume") (param $s i32)
      (local $ret i32) (local $n i32)
      {_READ_ALL})
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
      {_READ_FUT})
    (func (export "keep-fut") (param $f i32)
      (call $future.drop-r (local.get $f))
      (call $ret-str (i32.const 16) (i32.const 4))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance {_STREAM_WITH}))))
  (func (export "produce") async (param "n" u32) (result $bs)
    (canon lift (core func $i "produce") async))
  (func (export "produce-all") async (param "n" u32) (result $bs)
    (canon lift (core func $i "produce-all") async))
  (func (export "produce-then-trap") async (result $bs)
    (canon lift (core func $i "produce-then-trap") async))
  (func (export "consume") async (param "s" $bs) (result (list u8))
    (canon lift (core func $i "consume") async {MEM}))
  (func (export "make-fut") async (result $fs)
    (canon lift (core func $i "make-fut") async))
  (func (export "read-fut") async (param "f" $fs) (result string)
    (canon lift (core func $i "read-fut") async {MEM}))
  (func (export "keep-fut") async (param "f" $fs) (result string)
    (canon lift (core func $i "keep-fut") async {MEM}))
)"""

# Imports producing a stream and a future (the host's natural producers);
# ``read-bytes-source`` and ``read-future-source`` read what they return.
PRODUCERS = f"""(component
  {LIBC}
  (import "probe:conv/producers@0.1.0" (instance $p
    (export "bytes-source" (func (result (stream u8))))
    (export "future-source" (func (result (future string))))))
  (alias export $p "bytes-source" (func $bytes-source))
  (alias export $p "future-source" (func $future-source))
  {_STREAM_BUILTINS}
  (core func $bytes-source (canon lower (func $bytes-source)))
  (core func $future-source (canon lower (func $future-source)))
  (core module $m
    {_STREAM_IMPORTS}
    (import "" "bytes-source" (func $bytes-source (result i32)))
    (import "" "future-source" (func $future-source (result i32)))
    (func (export "read-bytes-source")
      (local $s i32) (local $ret i32) (local $n i32)
      (local.set $s (call $bytes-source))
      {_READ_ALL})
    (func (export "read-future-source")
      (local $f i32)
      (local.set $f (call $future-source))
      {_READ_FUT}))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance {_STREAM_WITH}
      (export "bytes-source" (func $bytes-source))
      (export "future-source" (func $future-source))))))
  (func (export "read-bytes-source") async (result (list u8))
    (canon lift (core func $i "read-bytes-source") async {MEM}))
  (func (export "read-future-source") async (result string)
    (canon lift (core func $i "read-future-source") async {MEM}))
)"""

# stream<string>: ``words()`` writes "hi" and "there"; ``count-words(s)``
# returns count * 1000 + total length of the strings it read.
WORDS = f"""(component
  {LIBC}
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
    (func (export "count-words") (param $s i32)
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
  (func (export "count-words") async (param "s" $ss) (result u32)
    (canon lift (core func $i "count-words") async))
)"""

# error-context both ways, and through host imports: ``report(e)`` receives a
# guest-made context; ``make()`` returns one the host made.
ERRORS = f"""(component
  {LIBC}
  (import "probe:conv/errors@0.1.0" (instance $e
    (export "report" (func (param "e" error-context) (result string)))
    (export "make" (func (result error-context)))))
  (alias export $e "report" (func $report))
  (alias export $e "make" (func $make))
  (core func $report (canon lower (func $report) {OPTS}))
  (core func $make (canon lower (func $make)))
  (core func $ret-err (canon task.return (result error-context)))
  (core func $ret-str (canon task.return (result string) {MEM}))
  (core func $err.new (canon error-context.new {MEM}))
  (core func $err.msg (canon error-context.debug-message {OPTS}))
  (core func $err.drop (canon error-context.drop))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "report" (func $report (param i32 i32)))
    (import "" "make" (func $make (result i32)))
    (import "" "ret-err" (func $ret-err (param i32)))
    (import "" "ret-str" (func $ret-str (param i32 i32)))
    (import "" "err.new" (func $err.new (param i32 i32) (result i32)))
    (import "" "err.msg" (func $err.msg (param i32 i32)))
    (import "" "err.drop" (func $err.drop (param i32)))
    (data (i32.const 16) "it broke")
    (data (i32.const 32) "guest made")
    (func (export "make-err")
      (call $ret-err (call $err.new (i32.const 16) (i32.const 8))))
    (func (export "err-message") (param $e i32)
      (call $err.msg (local.get $e) (i32.const 64))
      (call $err.drop (local.get $e))
      (call $ret-str (i32.load (i32.const 64)) (i32.load (i32.const 68))))
    (func (export "report-new")
      (local $e i32)
      (local.set $e (call $err.new (i32.const 32) (i32.const 10)))
      (call $report (local.get $e) (i32.const 80))
      (call $err.drop (local.get $e))
      (call $ret-str (i32.load (i32.const 80)) (i32.load (i32.const 84))))
    (func (export "host-err-message")
      (local $e i32)
      (local.set $e (call $make))
      (call $err.msg (local.get $e) (i32.const 64))
      (call $err.drop (local.get $e))
      (call $ret-str (i32.load (i32.const 64)) (i32.load (i32.const 68)))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "report" (func $report)) (export "make" (func $make))
      (export "ret-err" (func $ret-err)) (export "ret-str" (func $ret-str))
      (export "err.new" (func $err.new)) (export "err.msg" (func $err.msg))
      (export "err.drop" (func $err.drop))))))
  (func (export "make-err") async (result error-context)
    (canon lift (core func $i "make-err") async))
  (func (export "err-message") async (param "e" error-context) (result string)
    (canon lift (core func $i "err-message") async {MEM}))
  (func (export "report-new") async (result string)
    (canon lift (core func $i "report-new") async {MEM}))
  (func (export "host-err-message") async (result string)
    (canon lift (core func $i "host-err-message") async {MEM}))
)"""

# Guest cancellation of an async host import: ``cancel-get(x)`` starts ``get``
# through an async lower, cancels it with the synchronous ``subtask.cancel``
# and returns the subtask's final state * 1000 + the value written (if any).
CANCEL = f"""(component
  {LIBC}
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
)"""
