;; A sync-typed import `sleep(x: u32) -> u32` and an export `nap(x)` returning sleep(x) + 1.
;; Compile: wasm-tools parse suspending.wat -o suspending.wasm
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

  (import "sleep" (func $sleep (param "x" u32) (result u32)))
  (core func $sleep (canon lower (func $sleep)))
  (core module $m
    (import "" "sleep" (func $sleep (param i32) (result i32)))
    (func (export "nap") (param i32) (result i32)
      (i32.add (call $sleep (local.get 0)) (i32.const 1))))
  (core instance $i (instantiate $m (with "" (instance (export "sleep" (func $sleep))))))
  (func (export "nap") (param "x" u32) (result u32) (canon lift (core func $i "nap")))
)
