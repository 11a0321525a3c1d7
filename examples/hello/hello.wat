;; Hello, world! as a WASI 0.2 command, written by hand in the component text format.
;;
;; The component imports the three interfaces it needs (wasi:io/error for the
;; error resource that stream-error carries, wasi:io/streams for output-stream,
;; wasi:cli/stdout for the stdout stream), lowers them into a core module that
;; does the work with the canonical ABI by hand (no libc), and exports
;; wasi:cli/run@0.2.0.
;;
;; Build and run:  wasm-tools parse hello.wat -o hello.wasm && wasmtime run hello.wasm
(component $hello
  ;; ---------------------------------------------------------------- imports

  (import "wasi:io/error@0.2.0" (instance $io-error
    (export "error" (type (sub resource)))
  ))
  (alias export $io-error "error" (type $error))

  (import "wasi:io/streams@0.2.0" (instance $streams
    (alias outer $hello $error (type $error'))
    (export "error" (type $error-named (eq $error')))
    (type $stream-error' (variant
      (case "last-operation-failed" (own $error-named))
      (case "closed")))
    (export "stream-error" (type $stream-error (eq $stream-error')))
    (export "output-stream" (type $output-stream (sub resource)))
    ;; blocking-write-and-flush: func(contents: list<u8>) -> result<_, stream-error>
    (export "[method]output-stream.blocking-write-and-flush" (func
      (param "self" (borrow $output-stream))
      (param "contents" (list u8))
      (result (result (error $stream-error)))))
  ))
  (alias export $streams "output-stream" (type $output-stream))

  (import "wasi:cli/stdout@0.2.0" (instance $stdout
    (alias outer $hello $output-stream (type $output-stream'))
    (export "output-stream" (type $output-stream-named (eq $output-stream')))
    (export "get-stdout" (func (result (own $output-stream-named))))
  ))

  ;; ---------------------------------------------------------------- core side

  ;; The memory lives in its own module so the lowered imports can name it
  ;; before the main module is instantiated.
  (core module $Memory
    (memory (export "memory") 1)
  )
  (core instance $memory (instantiate $Memory))

  (alias export $stdout "get-stdout" (func $get-stdout))
  (alias export $streams "[method]output-stream.blocking-write-and-flush" (func $write))
  (core func $get-stdout-lowered (canon lower (func $get-stdout)))
  ;; (self, contents.ptr, contents.len, result pointer): the result does not
  ;; fit in one core value, so it is written to memory at the pointer.
  (core func $write-lowered (canon lower (func $write) (memory (core memory $memory "memory"))))
  (core func $drop-output-stream (canon resource.drop $output-stream))

  (core module $Main
    (import "env" "memory" (memory 1))
    (import "wasi" "get-stdout" (func $get-stdout (result i32)))
    (import "wasi" "blocking-write-and-flush" (func $write (param i32 i32 i32 i32)))
    (import "wasi" "drop-output-stream" (func $drop-output-stream (param i32)))

    ;; result<_, stream-error> at offset 0 (12 bytes: discriminant, then the
    ;; error case and its handle); the message at offset 16.
    (data (i32.const 16) "Hello, world!\n")

    ;; run: func() -> result  (flat result: 0 = ok, 1 = err)
    (func (export "run") (result i32)
      (local $stdout i32)
      (local.set $stdout (call $get-stdout))
      (call $write (local.get $stdout) (i32.const 16) (i32.const 14) (i32.const 0))
      (call $drop-output-stream (local.get $stdout))
      ;; the write's result discriminant doubles as run's result
      (i32.load8_u (i32.const 0))
    )
  )
  (core instance $main (instantiate $Main
    (with "env" (instance (export "memory" (memory $memory "memory"))))
    (with "wasi" (instance
      (export "get-stdout" (func $get-stdout-lowered))
      (export "blocking-write-and-flush" (func $write-lowered))
      (export "drop-output-stream" (func $drop-output-stream))
    ))
  ))

  ;; ---------------------------------------------------------------- export

  (func $run (result (result)) (canon lift (core func $main "run")))
  (instance $run-instance (export "run" (func $run)))
  (export "wasi:cli/run@0.2.0" (instance $run-instance))
)
