"""Probe components in the component text format, shared by the conventions
suite (``conventions/``) and the embed tests (``embed/``).

The pieces every probe uses (``LIBC``: a bump allocator and its memory;
``MEM``/``OPTS``: the canonical options naming them; :func:`component`), and
the 0.3 task-model probes both suites drive: stackful async exports over
``stream<u8>`` and ``future<string>`` assembled by :func:`stream_probe` from
the exports it is given (each suite picks its set; both name them as the
spec's built-ins are named), ``stream<string>`` (``WORDS``), error contexts
(:func:`error_probe`) and guest cancellation of an async import
(``CANCEL``). Guest reads use the synchronous ``stream.read``/``future.read``
forms, which block the stackful task until the other end makes progress.
"""

from __future__ import annotations

from dataclasses import dataclass

LIBC = """
  (core module $libc
    (memory (export "mem") 16)
    (global $bump (mut i32) (i32.const 8192))
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
MEM = '(memory (core memory $libc "mem"))'
REALLOC = '(realloc (core func $libc "realloc"))'
OPTS = f"{MEM} {REALLOC}"


def component(body: str) -> str:
    """A component holding ``LIBC`` and then ``body``."""
    return f"(component {LIBC} {body})"


# --------------------------------------------------------------------------
# stream<u8> and future<string>

#: the canonical built-ins of the stream and future probes, as core functions
STREAM_BUILTINS = f"""
  (type $bs (stream u8))
  (type $fs (future string))
  (core func $ret-bytes (canon task.return (result (list u8)) {MEM}))
  (core func $ret-str (canon task.return (result string) {MEM}))
  (core func $ret-u32 (canon task.return (result u32)))
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
#: the core module's imports of :data:`STREAM_BUILTINS`
STREAM_IMPORTS = """
    (import "libc" "mem" (memory 1))
    (import "" "ret-bytes" (func $ret-bytes (param i32 i32)))
    (import "" "ret-str" (func $ret-str (param i32 i32)))
    (import "" "ret-u32" (func $ret-u32 (param i32)))
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
#: the instance of :data:`STREAM_BUILTINS` the core module is instantiated with
STREAM_WITH = """
      (export "ret-bytes" (func $ret-bytes)) (export "ret-str" (func $ret-str))
      (export "ret-u32" (func $ret-u32))
      (export "ret-bs" (func $ret-bs)) (export "ret-fs" (func $ret-fs))
      (export "stream.new" (func $stream.new)) (export "stream.write" (func $stream.write))
      (export "stream.read" (func $stream.read)) (export "stream.drop-w" (func $stream.drop-w))
      (export "stream.drop-r" (func $stream.drop-r)) (export "future.new" (func $future.new))
      (export "future.write" (func $future.write)) (export "future.read" (func $future.read))
      (export "future.drop-r" (func $future.drop-r)) (export "future.drop-w" (func $future.drop-w))
"""

# Reads every byte of the stream handle in ``$s`` into memory at 2048, then
# returns them as ``list<u8>`` (``$n`` holds the running count).
READ_ALL = """
      (loop $more
        (local.set $ret (call $stream.read (local.get $s)
          (i32.add (i32.const 2048) (local.get $n)) (i32.const 100)))
        (local.set $n (i32.add (local.get $n) (i32.shr_u (local.get $ret) (i32.const 4))))
        (br_if $more (i32.eqz (i32.and (local.get $ret) (i32.const 15)))))
      (call $stream.drop-r (local.get $s))
      (call $ret-bytes (i32.const 2048) (local.get $n))"""

# Reads the future handle in ``$f`` and returns its string.
READ_FUT = """
      (drop (call $future.read (local.get $f) (i32.const 520)))
      (call $future.drop-r (local.get $f))
      (call $ret-str (i32.load (i32.const 520)) (i32.load (i32.const 524)))"""


@dataclass(frozen=True)
class Export:
    """One export of a probe: its core function and its ``canon lift``."""

    core: str
    lift: str


#: ``produce(n)``: a stream of the first n bytes of "hello world", written once
#: (whatever a short read leaves untaken is never offered again)
PRODUCE = Export(
    """
    (func (export "produce") (param $n i32)
      (local $rw i64) (local $w i32)
      (local.set $rw (call $stream.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (drop (call $stream.write (local.get $w) (i32.const 16) (local.get $n)))
      (call $stream.drop-w (local.get $w)))""",
    """
  (func (export "produce") async (param "n" u32) (result $bs)
    (canon lift (core func $i "produce") async))""",
)

#: ``produce-all(n)``: the same bytes, written until all are taken
PRODUCE_ALL = Export(
    """
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
      (call $stream.drop-w (local.get $w)))""",
    """
  (func (export "produce-all") async (param "n" u32) (result $bs)
    (canon lift (core func $i "produce-all") async))""",
)

#: ``produce-then-trap``: writes "hel" and traps
PRODUCE_THEN_TRAP = Export(
    """
    (func (export "produce-then-trap")
      (local $rw i64) (local $w i32)
      (local.set $rw (call $stream.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-bs (i32.wrap_i64 (local.get $rw)))
      (drop (call $stream.write (local.get $w) (i32.const 16) (i32.const 3)))
      unreachable)""",
    """
  (func (export "produce-then-trap") async (result $bs)
    (canon lift (core func $i "produce-then-trap") async))""",
)

#: ``consume(s)``: the bytes read to the end, as ``list<u8>``
CONSUME_BYTES = Export(
    f"""
    (func (export "consume") (param $s i32)
      (local $ret i32) (local $n i32)
      {READ_ALL})""",
    f"""
  (func (export "consume") async (param "s" $bs) (result (list u8))
    (canon lift (core func $i "consume") async {MEM}))""",
)

#: ``consume(s)``: reads to the end and returns count * 1000 + byte sum
CONSUME_CHECKSUM = Export(
    """
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
      (call $ret-u32 (i32.add (i32.mul (local.get $count) (i32.const 1000)) (local.get $sum))))""",
    """
  (func (export "consume") async (param "s" $bs) (result u32)
    (canon lift (core func $i "consume") async))""",
)

#: ``make-fut``: a future written with "hello"
MAKE_FUT = Export(
    """
    (func (export "make-fut")
      (local $rw i64) (local $w i32)
      (local.set $rw (call $future.new))
      (local.set $w (i32.wrap_i64 (i64.shr_u (local.get $rw) (i64.const 32))))
      (call $ret-fs (i32.wrap_i64 (local.get $rw)))
      (i32.store (i32.const 512) (i32.const 16))
      (i32.store (i32.const 516) (i32.const 5))
      (drop (call $future.write (local.get $w) (i32.const 512)))
      (call $future.drop-w (local.get $w)))""",
    """
  (func (export "make-fut") async (result $fs)
    (canon lift (core func $i "make-fut") async))""",
)

#: ``make-fut-then-trap(in)``: returns a new future, blocks reading ``in``, then traps
MAKE_FUT_THEN_TRAP = Export(
    """
    (func (export "make-fut-then-trap") (param $in i32)
      (local $rw i64)
      (local.set $rw (call $future.new))
      (call $ret-fs (i32.wrap_i64 (local.get $rw)))
      (drop (call $future.read (local.get $in) (i32.const 520)))
      unreachable)""",
    """
  (func (export "make-fut-then-trap") async (param "in" $fs) (result $fs)
    (canon lift (core func $i "make-fut-then-trap") async))""",
)

#: ``read-fut(f)``: the string the future delivers
READ_FUT_EXPORT = Export(
    f"""
    (func (export "read-fut") (param $f i32)
      {READ_FUT})""",
    f"""
  (func (export "read-fut") async (param "f" $fs) (result string)
    (canon lift (core func $i "read-fut") async {MEM}))""",
)

#: ``keep-fut(f)``: returns "kept" without ever reading f
KEEP_FUT = Export(
    """
    (func (export "keep-fut") (param $f i32)
      (call $future.drop-r (local.get $f))
      (call $ret-str (i32.const 16) (i32.const 4)))""",
    f"""
  (func (export "keep-fut") async (param "f" $fs) (result string)
    (canon lift (core func $i "keep-fut") async {MEM}))""",
)


def stream_probe(*exports: Export) -> str:
    """A component of stackful async ``exports`` over :data:`STREAM_BUILTINS`.

    The core module holds "hello world" at 16; futures are written from 512
    and read into 520.
    """
    funcs = "".join(e.core for e in exports)
    lifts = "".join(e.lift for e in exports)
    return component(
        f"""
  {STREAM_BUILTINS}
  (core module $m
    {STREAM_IMPORTS}
    (data (i32.const 16) "hello world"){funcs})
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance {STREAM_WITH}))))
  {lifts}
"""
    )


# --------------------------------------------------------------------------
# stream<string>

# ``words()`` writes "hi" and "there"; ``count-words(s)`` reads strings to the
# end and returns count * 1000 + total length of the strings it read.
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
"""
)


# --------------------------------------------------------------------------
# error-context


def error_probe(*, host: bool) -> str:
    """Error contexts both ways: ``make-err`` returns a context holding "it broke";
    ``err-message(e)`` returns the debug message of the context it receives.

    With ``host``, also through host imports (``probe:conv/errors@0.1.0``):
    ``report-new`` hands ``report(e)`` a context holding "guest made" and
    returns what it answers; ``host-err-message`` returns the debug message
    of the context ``make()`` returns.
    """
    imports = lowers = core_imports = funcs = with_ = lifts = ""
    if host:
        imports = """
  (import "probe:conv/errors@0.1.0" (instance $e
    (export "report" (func (param "e" error-context) (result string)))
    (export "make" (func (result error-context)))))
  (alias export $e "report" (func $report))
  (alias export $e "make" (func $make))"""
        lowers = f"""
  (core func $report (canon lower (func $report) {OPTS}))
  (core func $make (canon lower (func $make)))"""
        core_imports = """
    (import "" "report" (func $report (param i32 i32)))
    (import "" "make" (func $make (result i32)))"""
        funcs = """
    (data (i32.const 32) "guest made")
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
      (call $ret-str (i32.load (i32.const 64)) (i32.load (i32.const 68))))"""
        with_ = """
      (export "report" (func $report)) (export "make" (func $make))"""
        lifts = f"""
  (func (export "report-new") async (result string)
    (canon lift (core func $i "report-new") async {MEM}))
  (func (export "host-err-message") async (result string)
    (canon lift (core func $i "host-err-message") async {MEM}))"""
    return component(
        f"""{imports}{lowers}
  (core func $ret-err (canon task.return (result error-context)))
  (core func $ret-str (canon task.return (result string) {MEM}))
  (core func $err.new (canon error-context.new {MEM}))
  (core func $err.msg (canon error-context.debug-message {OPTS}))
  (core func $err.drop (canon error-context.drop))
  (core module $m
    (import "libc" "mem" (memory 1)){core_imports}
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
      (call $ret-str (i32.load (i32.const 64)) (i32.load (i32.const 68)))){funcs})
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance{with_}
      (export "ret-err" (func $ret-err)) (export "ret-str" (func $ret-str))
      (export "err.new" (func $err.new)) (export "err.msg" (func $err.msg))
      (export "err.drop" (func $err.drop))))))
  (func (export "make-err") async (result error-context)
    (canon lift (core func $i "make-err") async))
  (func (export "err-message") async (param "e" error-context) (result string)
    (canon lift (core func $i "err-message") async {MEM})){lifts}
"""
    )


# --------------------------------------------------------------------------
# guest cancellation

# ``cancel-get(x)`` starts the import ``get`` through an async lower, cancels
# it with the synchronous ``subtask.cancel`` and returns the subtask's final
# state * 1000 + the value written (if any).
CANCEL = component(
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
