;; Exports a guest resource `counter` (constructor, method `get`), `consume(own<counter>)`, and `drops`/`last` which report its destructor calls.
;; Compile: wasm-tools parse counter.wat -o counter.wasm
(component
  (core module $d
    (global $drops (export "drops-g") (mut i32) (i32.const 0))
    (global $last (export "last-g") (mut i32) (i32.const 0))
    (func (export "dtor") (param i32)
      (global.set $last (local.get 0))
      (global.set $drops (i32.add (global.get $drops) (i32.const 1))))
    (func (export "drops") (result i32) (global.get $drops))
    (func (export "last") (result i32) (global.get $last)))
  (core instance $d (instantiate $d))
  (type $counter (resource (rep i32) (dtor (core func $d "dtor"))))
  (core func $new (canon resource.new $counter))
  (core func $rep (canon resource.rep $counter))
  (core module $m
    (import "h" "new" (func $new (param i32) (result i32)))
    (import "h" "rep" (func $rep (param i32) (result i32)))
    (func (export "ctor") (param i32) (result i32) (call $new (local.get 0)))
    (func (export "get") (param i32) (result i32) (local.get 0))
    (func (export "consume") (param i32) (result i32) (call $rep (local.get 0))))
  (core instance $i (instantiate $m
    (with "h" (instance (export "new" (func $new)) (export "rep" (func $rep))))))
  (export $c "counter" (type $counter))
  (func (export "[constructor]counter") (param "v" u32) (result (own $c))
    (canon lift (core func $i "ctor")))
  (func (export "[method]counter.get") (param "self" (borrow $c)) (result u32)
    (canon lift (core func $i "get")))
  (func (export "consume") (param "c" (own $c)) (result u32)
    (canon lift (core func $i "consume")))
  (func (export "drops") (result u32) (canon lift (core func $d "drops")))
  (func (export "last") (result u32) (canon lift (core func $d "last")))
)
