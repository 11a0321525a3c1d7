(component $A
  (core module $m
    (func (export "f") (result i32) i32.const 7)
    (func (export "h") (param i32) (result i32) local.get 0))
  (core instance $i (instantiate $m))
  (type $r1 (resource (rep i32)))
  (type $r2 (resource (rep i32)))
  (export $e1 "r1" (type $r1))
  (export "r2" (type $r2))
  (func (export "f") (result u32) (canon lift (core func $i "f")))
  (func $g (result u32) (canon lift (core func $i "f")))
  (instance $inner (export "g" (func $g)))
  (export "inner" (instance $inner))
)
(register "a")

;; the right types link, and the component runs
(component
  (import "a" (instance
    (export "f" (func (result u32)))
    (export "inner" (instance (export "g" (func (result u32)))))))
  (core module $m (func (export "k") (result i32) i32.const 3))
  (core instance $i (instantiate $m))
  (func (export "k") (result u32) (canon lift (core func $i "k")))
)
(assert_return (invoke "k") (u32.const 3))

(assert_unlinkable
  (component (import "a" (instance (export "f" (func (result string))))))
  "export 'f' has the wrong type")
(assert_unlinkable
  (component (import "a" (instance (export "inner" (instance (export "g" (func (param "x" u32))))))))
  "export 'g' has the wrong type")
(assert_unlinkable
  (component (import "a" (func)))
  "expected func found instance")
(assert_unlinkable
  (component (import "a" (instance (export "f" (instance)))))
  "expected instance found func")
(assert_unlinkable
  (component (import "a" (instance (export "nope" (func)))))
  "export 'nope' was not found")
(assert_unlinkable
  (component (import "undefined-name" (instance)))
  "was not found")
;; one imported resource type, bound to r1; r2 is another resource
(assert_unlinkable
  (component (import "a" (instance
    (export "r1" (type $r (sub resource)))
    (export "r2" (type (eq $r))))))
  "mismatched resource types")
(component (import "a" (instance
    (export "r1" (type $r (sub resource)))
    (export "r2" (type (sub resource))))))

(module $core
  (func (export "g") (result i32) i32.const 1)
  (global (export "v") i32 (i32.const 0)))
(register "m")
(component (import "m" (core module (export "g" (func (result i32))))))
(assert_unlinkable
  (component (import "m" (core module (export "h" (func)))))
  "module export 'h' was not found")
(assert_unlinkable
  (component (import "m" (core module (export "v" (func)))))
  "module export 'v' has the wrong type")
(assert_unlinkable
  (component (import "a" (core module)))
  "expected module found instance")
