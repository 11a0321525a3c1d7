"""Component text sources for the ``polyengine run`` / ``invoke`` tests.

Every component is written by hand in the component text format; the core
modules speak the canonical ABI directly (no libc). They share a small
prelude: the ``wasi:io`` output-stream imports, ``wasi:cli/stdout`` and
``wasi:cli/stderr``, a memory with a bump ``realloc``, and core helpers
``$out`` / ``$err`` that write a byte range to stdout / stderr.
"""

from __future__ import annotations

# Memory map of every main module: 0..256 scratch for return areas,
# 1024.. static strings, 16384.. the bump heap of realloc.

LIBC = """
  (core module $Libc
    (memory (export "memory") 1)
    (global $heap (mut i32) (i32.const 16384))
    (func (export "realloc") (param $old i32) (param $old-size i32) (param $align i32)
                             (param $new-size i32) (result i32)
      (local $ptr i32)
      (local.set $ptr
        (i32.and
          (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
          (i32.sub (i32.const 0) (local.get $align))))
      (global.set $heap (i32.add (local.get $ptr) (local.get $new-size)))
      (if (i32.gt_u (global.get $heap) (i32.shl (memory.size) (i32.const 16)))
        (then
          (drop (memory.grow
            (i32.add
              (i32.shr_u
                (i32.sub (global.get $heap) (i32.shl (memory.size) (i32.const 16)))
                (i32.const 16))
              (i32.const 1))))))
      (if (i32.ne (local.get $old) (i32.const 0))
        (then (memory.copy (local.get $ptr) (local.get $old) (local.get $old-size))))
      (local.get $ptr)))
  (core instance $libc (instantiate $Libc))
  (alias core export $libc "memory" (core memory $memory))
  (alias core export $libc "realloc" (core func $realloc))
"""

STDIO = (
    """
  (import "wasi:io/error@0.2.0" (instance $io-error
    (export "error" (type (sub resource)))))
  (alias export $io-error "error" (type $error))
  (import "wasi:io/streams@0.2.0" (instance $streams
    (alias outer $c $error (type $error'))
    (export "error" (type $error-named (eq $error')))
    (type $stream-error' (variant
      (case "last-operation-failed" (own $error-named))
      (case "closed")))
    (export "stream-error" (type $stream-error (eq $stream-error')))
    (export "output-stream" (type $output-stream (sub resource)))
    (export "[method]output-stream.blocking-write-and-flush" (func
      (param "self" (borrow $output-stream))
      (param "contents" (list u8))
      (result (result (error $stream-error)))))
    (export "input-stream" (type $input-stream (sub resource)))
    (export "[method]input-stream.blocking-read" (func
      (param "self" (borrow $input-stream))
      (param "len" u64)
      (result (result (list u8) (error $stream-error)))))))
  (alias export $streams "output-stream" (type $output-stream))
  (alias export $streams "input-stream" (type $input-stream))
  (import "wasi:cli/stdout@0.2.0" (instance $stdout
    (alias outer $c $output-stream (type $os))
    (export "output-stream" (type $os-named (eq $os)))
    (export "get-stdout" (func (result (own $os-named))))))
  (import "wasi:cli/stderr@0.2.0" (instance $stderr
    (alias outer $c $output-stream (type $os))
    (export "output-stream" (type $os-named (eq $os)))
    (export "get-stderr" (func (result (own $os-named))))))
"""
    + LIBC
    + """
  (alias export $stdout "get-stdout" (func $get-stdout))
  (alias export $stderr "get-stderr" (func $get-stderr))
  (alias export $streams "[method]output-stream.blocking-write-and-flush" (func $write))
  (core func $get-stdout-core (canon lower (func $get-stdout)))
  (core func $get-stderr-core (canon lower (func $get-stderr)))
  (core func $write-core (canon lower (func $write) (memory $memory)))
  (core func $drop-os-core (canon resource.drop $output-stream))
"""
)

#: Imports and helper functions spliced at the top of every main core module.
CORE_IO = """
    (import "libc" "memory" (memory 1))
    (import "libc" "realloc" (func $realloc (param i32 i32 i32 i32) (result i32)))
    (import "io" "get-stdout" (func $get-stdout (result i32)))
    (import "io" "get-stderr" (func $get-stderr (result i32)))
    (import "io" "write" (func $write (param i32 i32 i32 i32)))
    (import "io" "drop" (func $drop-os (param i32)))
"""

#: Helper functions of every main core module (after its imports).
CORE_HELPERS = """
    (func $out (param $ptr i32) (param $len i32)
      (local $h i32)
      (local.set $h (call $get-stdout))
      (call $write (local.get $h) (local.get $ptr) (local.get $len) (i32.const 240))
      (call $drop-os (local.get $h)))
    (func $err (param $ptr i32) (param $len i32)
      (local $h i32)
      (local.set $h (call $get-stderr))
      (call $write (local.get $h) (local.get $ptr) (local.get $len) (i32.const 240))
      (call $drop-os (local.get $h)))
    (data (i32.const 1000) "\\n")
    (func $nl (call $out (i32.const 1000) (i32.const 1)))
"""

#: The ``with`` clauses that feed CORE_IO's imports.
WITH_IO = """
    (with "libc" (instance (export "memory" (memory $memory)) (export "realloc" (func $realloc))))
    (with "io" (instance
      (export "get-stdout" (func $get-stdout-core))
      (export "get-stderr" (func $get-stderr-core))
      (export "write" (func $write-core))
      (export "drop" (func $drop-os-core))))
"""

RUN_EXPORT = """
  (func $run (result (result)) (canon lift (core func $main "run")))
  (instance $run-instance (export "run" (func $run)))
  (export "wasi:cli/run@0.2.0" (instance $run-instance))
"""


def command(
    *, imports: str = "", lowers: str = "", core_imports: str = "", core: str = "", withs: str = ""
) -> str:
    """A ``wasi:cli/run@0.2.0`` command: ``core`` holds the main module's body with a
    ``run`` export; ``imports``/``lowers`` add component imports and lowered
    functions, ``core_imports`` the main module's extra imports and ``withs``
    the extra instantiation arguments that feed them."""
    return (
        "(component $c\n"
        + STDIO
        + imports
        + lowers
        + "  (core module $Main\n"
        + CORE_IO
        + core_imports
        + CORE_HELPERS
        + core
        + "  )\n  (core instance $main (instantiate $Main\n"
        + WITH_IO
        + withs
        + "  ))\n"
        + RUN_EXPORT
        + ")\n"
    )


def _data(offset: int, text: str) -> str:
    escaped = "".join(
        chr(b) if 0x20 <= b < 0x7F and chr(b) not in '"\\' else f"\\{b:02x}" for b in text.encode()
    )
    return f'    (data (i32.const {offset}) "{escaped}")\n'


def hello(message: str = "Hello, world!\n") -> str:
    """Writes ``message`` to stdout and returns ok."""
    n = len(message.encode())
    return command(
        core=_data(1024, message)
        + f"""
    (func (export "run") (result i32)
      (call $out (i32.const 1024) (i32.const {n}))
      (i32.const 0))
"""
    )


def stdio(out: str, err: str, *, fail: bool = False) -> str:
    """Writes to stdout and stderr, then returns ok (or err when ``fail``)."""
    return command(
        core=_data(1024, out)
        + _data(2048, err)
        + f"""
    (func (export "run") (result i32)
      (call $out (i32.const 1024) (i32.const {len(out.encode())}))
      (call $err (i32.const 2048) (i32.const {len(err.encode())}))
      (i32.const {1 if fail else 0}))
"""
    )


EXIT_IMPORT = """
  (import "wasi:cli/exit@0.2.0" (instance $exit
    (export "exit" (func (param "status" (result))))
    (export "exit-with-code" (func (param "status-code" u8)))))
  (alias export $exit "exit" (func $exit-fn))
  (alias export $exit "exit-with-code" (func $exit-with-code-fn))
"""
EXIT_LOWERS = """
  (core func $exit-core (canon lower (func $exit-fn)))
  (core func $exit-with-code-core (canon lower (func $exit-with-code-fn)))
"""
EXIT_WITH = """
    (with "exit" (instance
      (export "exit" (func $exit-core))
      (export "exit-with-code" (func $exit-with-code-core))))
"""


def exit_with(code: int | None) -> str:
    """Prints to stdout and stderr, then exits: ``exit-with-code(code)``, or
    ``exit(err)`` when ``code`` is ``None``. Reaching the end would print more."""
    call = (
        "(call $exit (i32.const 1))"
        if code is None
        else f"(call $exit-with-code (i32.const {code}))"
    )
    return command(
        imports=EXIT_IMPORT,
        lowers=EXIT_LOWERS,
        withs=EXIT_WITH,
        core_imports="""
    (import "exit" "exit" (func $exit (param i32)))
    (import "exit" "exit-with-code" (func $exit-with-code (param i32)))
""",
        core=_data(1024, "before exit\n")
        + _data(2048, "exiting\n")
        + _data(3072, "after exit\n")
        + f"""
    (func (export "run") (result i32)
      (call $out (i32.const 1024) (i32.const 12))
      (call $err (i32.const 2048) (i32.const 8))
      {call}
      (call $out (i32.const 3072) (i32.const 11))
      (i32.const 0))
""",
    )


TRAP = command(
    core=_data(1024, "about to trap\n")
    + """
    (func (export "run") (result i32)
      (call $out (i32.const 1024) (i32.const 14))
      unreachable)
"""
)

#: Prints its arguments, one a line, then ``--``, then its environment as ``K=V`` lines.
ARGS_ENV = command(
    imports="""
  (import "wasi:cli/environment@0.2.0" (instance $environment
    (export "get-environment" (func (result (list (tuple string string)))))
    (export "get-arguments" (func (result (list string))))))
  (alias export $environment "get-arguments" (func $get-arguments-fn))
  (alias export $environment "get-environment" (func $get-environment-fn))
""",
    lowers="""
  (core func $get-arguments-core
    (canon lower (func $get-arguments-fn) (memory $memory) (realloc $realloc)))
  (core func $get-environment-core
    (canon lower (func $get-environment-fn) (memory $memory) (realloc $realloc)))
""",
    withs="""
    (with "env" (instance
      (export "get-arguments" (func $get-arguments-core))
      (export "get-environment" (func $get-environment-core))))
""",
    core_imports="""
    (import "env" "get-arguments" (func $get-arguments (param i32)))
    (import "env" "get-environment" (func $get-environment (param i32)))
""",
    core=_data(1024, "--\n")
    + _data(1040, "=")
    + """
    (func (export "run") (result i32)
      (local $ptr i32) (local $end i32)
      (call $get-arguments (i32.const 16))
      (local.set $ptr (i32.load (i32.const 16)))
      (local.set $end (i32.add (local.get $ptr) (i32.mul (i32.load (i32.const 20)) (i32.const 8))))
      (block $done
        (loop $next
          (br_if $done (i32.ge_u (local.get $ptr) (local.get $end)))
          (call $out (i32.load (local.get $ptr)) (i32.load offset=4 (local.get $ptr)))
          (call $nl)
          (local.set $ptr (i32.add (local.get $ptr) (i32.const 8)))
          (br $next)))
      (call $out (i32.const 1024) (i32.const 3))
      (call $get-environment (i32.const 16))
      (local.set $ptr (i32.load (i32.const 16)))
      (local.set $end (i32.add (local.get $ptr) (i32.mul (i32.load (i32.const 20)) (i32.const 16))))
      (block $done
        (loop $next
          (br_if $done (i32.ge_u (local.get $ptr) (local.get $end)))
          (call $out (i32.load (local.get $ptr)) (i32.load offset=4 (local.get $ptr)))
          (call $out (i32.const 1040) (i32.const 1))
          (call $out (i32.load offset=8 (local.get $ptr)) (i32.load offset=12 (local.get $ptr)))
          (call $nl)
          (local.set $ptr (i32.add (local.get $ptr) (i32.const 16)))
          (br $next)))
      (i32.const 0))
""",
)

ERROR_CODE = [
    "access",
    "would-block",
    "already",
    "bad-descriptor",
    "busy",
    "deadlock",
    "quota",
    "exist",
    "file-too-large",
    "illegal-byte-sequence",
    "in-progress",
    "interrupted",
    "invalid",
    "io",
    "is-directory",
    "loop",
    "too-many-links",
    "message-size",
    "name-too-long",
    "no-device",
    "no-entry",
    "no-lock",
    "insufficient-memory",
    "insufficient-space",
    "not-directory",
    "not-empty",
    "not-recoverable",
    "unsupported",
    "no-tty",
    "no-such-device",
    "overflow",
    "not-permitted",
    "pipe",
    "read-only",
    "invalid-seek",
    "text-file-busy",
    "cross-device",
]

_ENUM_CASES = " ".join(f'"{c}"' for c in ERROR_CODE)

#: Opens ``input.txt`` in the first preopened directory, prints it, and writes
#: ``output.txt`` next to it with the same bytes after a ``copy: `` prefix.
FILES = command(
    imports="""
  (import "wasi:filesystem/types@0.2.0" (instance $types
    (export "descriptor" (type $descriptor (sub resource)))
    (type $error-code' (enum """
    + _ENUM_CASES
    + """))
    (export "error-code" (type $error-code (eq $error-code')))
    (type $path-flags' (flags "symlink-follow"))
    (export "path-flags" (type $path-flags (eq $path-flags')))
    (type $open-flags' (flags "create" "directory" "exclusive" "truncate"))
    (export "open-flags" (type $open-flags (eq $open-flags')))
    (type $descriptor-flags' (flags "read" "write" "file-integrity-sync" "data-integrity-sync"
      "requested-write-sync" "mutate-directory"))
    (export "descriptor-flags" (type $descriptor-flags (eq $descriptor-flags')))
    (type $filesize' u64)
    (export "filesize" (type $filesize (eq $filesize')))
    (export "[method]descriptor.open-at" (func
      (param "self" (borrow $descriptor))
      (param "path-flags" $path-flags)
      (param "path" string)
      (param "open-flags" $open-flags)
      (param "flags" $descriptor-flags)
      (result (result (own $descriptor) (error $error-code)))))
    (export "[method]descriptor.read" (func
      (param "self" (borrow $descriptor))
      (param "length" $filesize)
      (param "offset" $filesize)
      (result (result (tuple (list u8) bool) (error $error-code)))))
    (export "[method]descriptor.write" (func
      (param "self" (borrow $descriptor))
      (param "buffer" (list u8))
      (param "offset" $filesize)
      (result (result $filesize (error $error-code)))))))
  (alias export $types "descriptor" (type $descriptor))
  (import "wasi:filesystem/preopens@0.2.0" (instance $preopens
    (alias outer $c $descriptor (type $d))
    (export "descriptor" (type $d-named (eq $d)))
    (export "get-directories" (func (result (list (tuple (own $d-named) string)))))))
  (alias export $preopens "get-directories" (func $get-directories-fn))
  (alias export $types "[method]descriptor.open-at" (func $open-at-fn))
  (alias export $types "[method]descriptor.read" (func $read-fn))
  (alias export $types "[method]descriptor.write" (func $write-fn))
""",
    lowers="""
  (core func $get-directories-core
    (canon lower (func $get-directories-fn) (memory $memory) (realloc $realloc)))
  (core func $open-at-core (canon lower (func $open-at-fn) (memory $memory) (realloc $realloc)))
  (core func $read-core (canon lower (func $read-fn) (memory $memory) (realloc $realloc)))
  (core func $write-file-core (canon lower (func $write-fn) (memory $memory) (realloc $realloc)))
  (core func $drop-descriptor-core (canon resource.drop $descriptor))
""",
    withs="""
    (with "fs" (instance
      (export "get-directories" (func $get-directories-core))
      (export "open-at" (func $open-at-core))
      (export "read" (func $read-core))
      (export "write" (func $write-file-core))
      (export "drop" (func $drop-descriptor-core))))
""",
    core_imports="""
    (import "fs" "get-directories" (func $get-directories (param i32)))
    (import "fs" "open-at" (func $open-at (param i32 i32 i32 i32 i32 i32 i32)))
    (import "fs" "read" (func $read (param i32 i64 i64 i32)))
    (import "fs" "write" (func $write-file (param i32 i32 i32 i64 i32)))
    (import "fs" "drop" (func $drop-descriptor (param i32)))
""",
    core=_data(1024, "input.txt")
    + _data(1040, "output.txt")
    + _data(1056, "no preopened directory\n")
    + _data(1088, "cannot open input.txt\n")
    + _data(1120, "cannot read input.txt\n")
    + _data(1152, "cannot open output.txt\n")
    + _data(1184, "cannot write output.txt\n")
    + _data(1216, "copy: ")
    + """
    (func $fail (param $msg i32) (param $len i32) (result i32)
      (call $err (local.get $msg) (local.get $len))
      (i32.const 1))
    (func (export "run") (result i32)
      (local $dir i32) (local $file i32) (local $data i32) (local $len i32) (local $buf i32)
      (call $get-directories (i32.const 16))
      (if (i32.eqz (i32.load (i32.const 20)))
        (then (return (call $fail (i32.const 1056) (i32.const 23)))))
      (local.set $dir (i32.load (i32.load (i32.const 16))))
      ;; open-at(dir, {}, "input.txt", {}, {read})
      (call $open-at (local.get $dir) (i32.const 0) (i32.const 1024) (i32.const 9)
        (i32.const 0) (i32.const 1) (i32.const 32))
      (if (i32.load8_u (i32.const 32))
        (then (return (call $fail (i32.const 1088) (i32.const 22)))))
      (local.set $file (i32.load (i32.const 36)))
      (call $read (local.get $file) (i64.const 4096) (i64.const 0) (i32.const 48))
      (if (i32.load8_u (i32.const 48))
        (then (return (call $fail (i32.const 1120) (i32.const 22)))))
      (local.set $data (i32.load (i32.const 52)))
      (local.set $len (i32.load (i32.const 56)))
      (call $drop-descriptor (local.get $file))
      (call $out (local.get $data) (local.get $len))
      ;; output.txt: "copy: " followed by the input
      (local.set $buf (call $realloc (i32.const 0) (i32.const 0) (i32.const 1)
        (i32.add (local.get $len) (i32.const 6))))
      (memory.copy (local.get $buf) (i32.const 1216) (i32.const 6))
      (memory.copy (i32.add (local.get $buf) (i32.const 6)) (local.get $data) (local.get $len))
      ;; open-at(dir, {}, "output.txt", {create, truncate}, {write})
      (call $open-at (local.get $dir) (i32.const 0) (i32.const 1040) (i32.const 10)
        (i32.const 9) (i32.const 2) (i32.const 32))
      (if (i32.load8_u (i32.const 32))
        (then (return (call $fail (i32.const 1152) (i32.const 23)))))
      (local.set $file (i32.load (i32.const 36)))
      (call $write-file (local.get $file) (local.get $buf) (i32.add (local.get $len) (i32.const 6))
        (i64.const 0) (i32.const 64))
      (if (i32.load8_u (i32.const 64))
        (then (return (call $fail (i32.const 1184) (i32.const 24)))))
      (call $drop-descriptor (local.get $file))
      (call $drop-descriptor (local.get $dir))
      (i32.const 0))
""",
)

#: A command that needs an interface no host provides.
MISSING_IMPORT = command(
    imports="""
  (import "example:missing/thing@1.0.0" (instance $thing
    (export "frob" (func (param "x" u32) (result u32)))))
  (alias export $thing "frob" (func $frob-fn))
""",
    lowers="""
  (core func $frob-core (canon lower (func $frob-fn)))
""",
    withs="""
    (with "thing" (instance (export "frob" (func $frob-core))))
""",
    core_imports="""
    (import "thing" "frob" (func $frob (param i32) (result i32)))
""",
    core="""
    (func (export "run") (result i32)
      (drop (call $frob (i32.const 1)))
      (i32.const 0))
""",
)

#: Exports over many value types for ``--invoke``; most return their argument.
VALUES = (
    """
(component $c
"""
    + LIBC
    + """
  (type $point' (record (field "x" s32) (field "y" s32) (field "label-text" string)))
  (export $point "point" (type $point'))
  (type $shape' (variant (case "circle" u32) (case "named" string) (case "empty")))
  (export $shape "shape" (type $shape'))
  (type $perms' (flags "read" "write" "exec"))
  (export $perms "perms" (type $perms'))
  (type $color' (enum "red" "green" "blue-ish" "ok"))
  (export $color "color" (type $color'))
  (type $opt-rec' (record (field "id" u32) (field "note" (option string))))
  (export $opt-rec "opt-rec" (type $opt-rec'))

  (core module $Values
    (import "libc" "memory" (memory 1))
    (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
    (func (export "id32") (param i32) (result i32) (local.get 0))
    (func (export "id64") (param i64) (result i64) (local.get 0))
    (func (export "idf32") (param f32) (result f32) (local.get 0))
    (func (export "idf64") (param f64) (result f64) (local.get 0))
    (func (export "nothing"))
    ;; (ptr, len) -> return area at 64
    (func (export "id-pair") (param i32 i32) (result i32)
      (i32.store (i32.const 64) (local.get 0))
      (i32.store (i32.const 68) (local.get 1))
      (i32.const 64))
    (func (export "sum") (param $ptr i32) (param $len i32) (result i32)
      (local $acc i32) (local $end i32)
      (local.set $end (i32.add (local.get $ptr) (i32.mul (local.get $len) (i32.const 4))))
      (block $done
        (loop $next
          (br_if $done (i32.ge_u (local.get $ptr) (local.get $end)))
          (local.set $acc (i32.add (local.get $acc) (i32.load (local.get $ptr))))
          (local.set $ptr (i32.add (local.get $ptr) (i32.const 4)))
          (br $next)))
      (local.get $acc))
    ;; four i32 fields -> return area at 64
    (func (export "id-quad") (param i32 i32 i32 i32) (result i32)
      (i32.store (i32.const 64) (local.get 0))
      (i32.store (i32.const 68) (local.get 1))
      (i32.store (i32.const 72) (local.get 2))
      (i32.store (i32.const 76) (local.get 3))
      (i32.const 64))
    ;; discriminant + two payload words (variant, option<string>, result, tuple<u8, string>)
    (func (export "id-tagged") (param i32 i32 i32) (result i32)
      (i32.store8 (i32.const 64) (local.get 0))
      (i32.store (i32.const 68) (local.get 1))
      (i32.store (i32.const 72) (local.get 2))
      (i32.const 64))
    ;; option<option<u32>>: (d1, d2, v) -> d1 @0, d2 @4, v @8
    (func (export "id-opt-opt") (param i32 i32 i32) (result i32)
      (i32.store8 (i32.const 64) (local.get 0))
      (i32.store8 (i32.const 68) (local.get 1))
      (i32.store (i32.const 72) (local.get 2))
      (i32.const 64))
    ;; record {id: u32, note: option<string>}: (id, d, ptr, len) -> id @0, d @4, ptr @8, len @12
    (func (export "id-opt-rec") (param i32 i32 i32 i32) (result i32)
      (i32.store (i32.const 64) (local.get 0))
      (i32.store8 (i32.const 68) (local.get 1))
      (i32.store (i32.const 72) (local.get 2))
      (i32.store (i32.const 76) (local.get 3))
      (i32.const 64))
    (func (export "double") (param i32) (result i32) (i32.mul (local.get 0) (i32.const 2)))
  )
  (core instance $v (instantiate $Values
    (with "libc" (instance (export "memory" (memory $memory))))))

  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $v "add")))
  (func (export "echo-u8") (param "x" u8) (result u8) (canon lift (core func $v "id32")))
  (func (export "echo-s32") (param "x" s32) (result s32) (canon lift (core func $v "id32")))
  (func (export "echo-s64") (param "x" s64) (result s64) (canon lift (core func $v "id64")))
  (func (export "echo-u64") (param "x" u64) (result u64) (canon lift (core func $v "id64")))
  (func (export "echo-f32") (param "x" f32) (result f32) (canon lift (core func $v "idf32")))
  (func (export "echo-f64") (param "x" f64) (result f64) (canon lift (core func $v "idf64")))
  (func (export "echo-bool") (param "x" bool) (result bool) (canon lift (core func $v "id32")))
  (func (export "echo-char") (param "x" char) (result char) (canon lift (core func $v "id32")))
  (func (export "nothing") (canon lift (core func $v "nothing")))
  (func (export "echo-string") (param "s" string) (result string)
    (canon lift (core func $v "id-pair") (memory $memory) (realloc $realloc)))
  (func (export "echo-list") (param "l" (list u32)) (result (list u32))
    (canon lift (core func $v "id-pair") (memory $memory) (realloc $realloc)))
  (func (export "echo-bytes") (param "l" (list u8)) (result (list u8))
    (canon lift (core func $v "id-pair") (memory $memory) (realloc $realloc)))
  (func (export "echo-strings") (param "l" (list string)) (result (list string))
    (canon lift (core func $v "id-pair") (memory $memory) (realloc $realloc)))
  (func (export "sum") (param "l" (list u32)) (result u32)
    (canon lift (core func $v "sum") (memory $memory) (realloc $realloc)))
  (func (export "echo-point") (param "p" $point) (result $point)
    (canon lift (core func $v "id-quad") (memory $memory) (realloc $realloc)))
  (func (export "echo-shape") (param "s" $shape) (result $shape)
    (canon lift (core func $v "id-tagged") (memory $memory) (realloc $realloc)))
  (func (export "echo-option") (param "o" (option string)) (result (option string))
    (canon lift (core func $v "id-tagged") (memory $memory) (realloc $realloc)))
  (func (export "echo-result") (param "r" (result u32 (error string)))
    (result (result u32 (error string)))
    (canon lift (core func $v "id-tagged") (memory $memory) (realloc $realloc)))
  (func (export "echo-tuple") (param "t" (tuple u8 string)) (result (tuple u8 string))
    (canon lift (core func $v "id-tagged") (memory $memory) (realloc $realloc)))
  (func (export "echo-perms") (param "f" $perms) (result $perms)
    (canon lift (core func $v "id32")))
  (func (export "echo-color") (param "c" $color) (result $color)
    (canon lift (core func $v "id32")))
  (func (export "echo-opt-opt") (param "o" (option (option u32))) (result (option (option u32)))
    (canon lift (core func $v "id-opt-opt") (memory $memory) (realloc $realloc)))
  (func (export "echo-opt-rec") (param "r" $opt-rec) (result $opt-rec)
    (canon lift (core func $v "id-opt-rec") (memory $memory) (realloc $realloc)))

  (func $double (param "x" u32) (result u32) (canon lift (core func $v "double")))
  (instance $iface (export "double" (func $double)))
  (export "example:values/iface@0.1.0" (instance $iface))
)
"""
)

#: Copies stdin to stdout until the stream closes (``blocking-read`` in 4 KiB chunks).
CAT = command(
    imports="""
  (import "wasi:cli/stdin@0.2.0" (instance $stdin
    (alias outer $c $input-stream (type $is))
    (export "input-stream" (type $is-named (eq $is)))
    (export "get-stdin" (func (result (own $is-named))))))
  (alias export $stdin "get-stdin" (func $get-stdin-fn))
  (alias export $streams "[method]input-stream.blocking-read" (func $read-fn))
""",
    lowers="""
  (core func $get-stdin-core (canon lower (func $get-stdin-fn)))
  (core func $read-core (canon lower (func $read-fn) (memory $memory) (realloc $realloc)))
  (core func $drop-is-core (canon resource.drop $input-stream))
""",
    withs="""
    (with "in" (instance
      (export "get-stdin" (func $get-stdin-core))
      (export "read" (func $read-core))
      (export "drop" (func $drop-is-core))))
""",
    core_imports="""
    (import "in" "get-stdin" (func $get-stdin (result i32)))
    (import "in" "read" (func $read (param i32 i64 i32)))
    (import "in" "drop" (func $drop-is (param i32)))
""",
    core="""
    (func (export "run") (result i32)
      (local $in i32)
      (local.set $in (call $get-stdin))
      (block $closed
        (loop $next
          (call $read (local.get $in) (i64.const 4096) (i32.const 32))
          (br_if $closed (i32.load8_u (i32.const 32)))
          (call $out (i32.load (i32.const 36)) (i32.load (i32.const 40)))
          (br $next)))
      (call $drop-is (local.get $in))
      (i32.const 0))
""",
)
