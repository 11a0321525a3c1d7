;; World-level imports `log(msg: string)` and `fail()`; exports `add`, `greet` (calls `log`), `boom` (calls `fail`), `crash` (traps).
;; Compile: wasm-tools parse basic.wat -o basic.wasm
(component
  (core module $libc
    (memory (export "mem") 1)
    (global $bump (mut i32) (i32.const 4096))
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

  (import "log" (func $log (param "msg" string)))
  (import "fail" (func $fail))
  (core func $log (canon lower (func $log) (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
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
    (canon lift (core func $i "greet") (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
  (func (export "boom") (canon lift (core func $i "boom")))
  (func (export "crash") (canon lift (core func $i "crash")))
)
