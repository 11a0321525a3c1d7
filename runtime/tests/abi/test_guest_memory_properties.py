"""Property tests through real guest memory: a wasm module's linear memory and
its own ``realloc`` (a bump allocator that grows memory), driven through the
engine, with every generated type, value and string encoding.

Growing memory mid-store exercises the rule that memory views are re-read
after anything that can grow memory (architecture.md §5).
"""

from __future__ import annotations

from typing import Any

from abi_helpers import same
from abi_strategies import encodings, types, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyengine import engine
from polyengine.abi.compile import Compiler
from polyengine.abi.options import CanonicalOptions, LiftLowerContext, StringEncoding
from polyengine.abi.resources import ComponentInstance
from polyengine.types.model import ValType

# One page to start with; realloc grows memory whenever a block does not fit,
# and copies the old block when it moves (the canonical realloc contract).
ALLOCATOR = """
(module
  (memory (export "mem") 1)
  (global $bump (mut i32) (i32.const 16))
  (func (export "realloc") (param $old i32) (param $old_size i32) (param $align i32)
      (param $new_size i32) (result i32)
    (local $r i32) (local $end i32)
    (if (i32.and (i32.ne (local.get $old) (i32.const 0))
                 (i32.le_u (local.get $new_size) (local.get $old_size)))
      (then (return (local.get $old))))
    (local.set $r (i32.and (i32.add (global.get $bump) (i32.sub (local.get $align) (i32.const 1)))
                           (i32.sub (i32.const 0) (local.get $align))))
    (local.set $end (i32.add (local.get $r) (local.get $new_size)))
    (if (i32.gt_u (local.get $end) (i32.mul (memory.size) (i32.const 65536)))
      (then
        (if (i32.lt_s
              (memory.grow (i32.add (i32.div_u (i32.sub (local.get $end)
                                                         (i32.mul (memory.size) (i32.const 65536)))
                                               (i32.const 65536))
                                    (i32.const 1)))
              (i32.const 0))
          (then unreachable))))
    (global.set $bump (local.get $end))
    (if (i32.ne (local.get $old) (i32.const 0))
      (then (memory.copy (local.get $r) (local.get $old) (local.get $old_size))))
    (local.get $r)))
"""

SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _guest_cx(
    encoding: StringEncoding,
) -> tuple[LiftLowerContext, engine.GuestMemory, engine.EngineStore]:
    import wasmtime

    store = engine.EngineStore()
    module = engine.compile_module(wasmtime.wat2wasm(ALLOCATOR))
    inst = engine.instantiate(store, module, [])
    memory = inst.memory("mem")
    realloc_func = inst.func("realloc")

    def realloc(old: int, old_size: int, align: int, new_size: int) -> int:
        return int(realloc_func.call_raw([old, old_size, align, new_size])[0])

    opts = CanonicalOptions(encoding, memory, realloc)
    cx = LiftLowerContext(opts, ComponentInstance())
    return cx, memory, store


@SETTINGS
@given(st.data(), types, encodings)
def test_store_load_round_trip_in_wasm_memory(
    data: st.DataObject, t: ValType, enc: StringEncoding
) -> None:
    v: Any = data.draw(values(t))
    cx, _, _store = _guest_cx(enc)
    codec = Compiler(enc).codec(t)
    ptr = cx.allocate(codec.align, codec.size)
    codec.store(cx, v, ptr)
    cx.refresh()
    assert same(codec.load(cx, ptr), v)


@SETTINGS
@given(st.lists(st.text(min_size=0, max_size=3000), min_size=1, max_size=40), encodings)
def test_strings_that_grow_memory_round_trip(strings: list[str], enc: StringEncoding) -> None:
    from polyengine.types.model import List, String

    cx, memory, _store = _guest_cx(enc)
    big = [s * 8 for s in strings]
    expected = [s.encode("utf-16", "surrogatepass").decode("utf-16", "replace") for s in big]
    codec = Compiler(enc).codec(List(String()))
    ptr = cx.allocate(codec.align, codec.size)
    codec.store(cx, big, ptr)
    cx.refresh()
    assert codec.load(cx, ptr) == expected
    if sum(len(s.encode("utf-8", "surrogatepass")) for s in big) > 65536:
        assert memory.size() > 65536  # realloc grew memory mid-store
