;; A library component (no imports, no WASI) for the embedding example:
;;   add: func(a: u32, b: u32) -> u32
;;   fib: func(n: u32) -> u64
;;   motto: func() -> string
;; Build: wasm-tools parse calc.wat -o calc.wasm
(component
  (core module $Calc
    (memory (export "memory") 1)
    (data (i32.const 64) "small components, plain Python")

    (func (export "add") (param i32 i32) (result i32)
      (i32.add (local.get 0) (local.get 1)))

    ;; iterative Fibonacci, wrapping at 64 bits
    (func (export "fib") (param $n i32) (result i64)
      (local $a i64) (local $b i64) (local $t i64)
      (local.set $b (i64.const 1))
      (block $done
        (loop $next
          (br_if $done (i32.eqz (local.get $n)))
          (local.set $t (i64.add (local.get $a) (local.get $b)))
          (local.set $a (local.get $b))
          (local.set $b (local.get $t))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br $next)))
      (local.get $a))

    ;; A string result does not fit in one core value: return a pointer to
    ;; (pointer, length) of the UTF-8 bytes, here static data at offset 64.
    (func (export "motto") (result i32)
      (i32.store (i32.const 0) (i32.const 64))
      (i32.store (i32.const 4) (i32.const 30))
      (i32.const 0))
  )
  (core instance $calc (instantiate $Calc))

  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $calc "add")))
  (func (export "fib") (param "n" u32) (result u64)
    (canon lift (core func $calc "fib")))
  (func (export "motto") (result string)
    (canon lift (core func $calc "motto") (memory (core memory $calc "memory"))))
)
