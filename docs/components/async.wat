;; Two async exports: `inc` (callback-lifted) and `dbl` (stackful, yields twice).
;; Compile: wasm-tools parse async.wat -o async.wasm
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

  (core func $ret (canon task.return (result u32)))
  (core func $yield (canon thread.yield))
  (core module $m
    (import "" "ret" (func $ret (param i32)))
    (import "" "yield" (func $yield (result i32)))
    (global $n (mut i32) (i32.const 0))
    (func (export "inc") (param i32) (result i32)
      (global.set $n (local.get 0))
      (i32.const 1 (; YIELD ;)))
    (func (export "inc-cb") (param i32 i32 i32) (result i32)
      (call $ret (i32.add (global.get $n) (i32.const 1)))
      (i32.const 0 (; EXIT ;)))
    (func (export "dbl") (param i32)
      (drop (call $yield))
      (drop (call $yield))
      (call $ret (i32.mul (local.get 0) (i32.const 2)))))
  (core instance $i (instantiate $m (with "" (instance
     (export "ret" (func $ret)) (export "yield" (func $yield))))))
  (func (export "inc") async (param "x" u32) (result u32)
    (canon lift (core func $i "inc") async (callback (core func $i "inc-cb"))))
  (func (export "dbl") async (param "x" u32) (result u32)
    (canon lift (core func $i "dbl") async))
)
