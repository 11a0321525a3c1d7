"""The blocking facade (``polyengine.sync``) after close, with guest resources, at exit."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from polyengine.engine import StoreClosedError
from polyengine.sync import instantiate_sync

from .components import ASYNC_RESOURCE, PARKED

Wat = Callable[[str], bytes]

# a synchronous store (the plain path) with a guest resource
PLAIN_RESOURCE = """(component
  (core module $d
    (global $drops (mut i32) (i32.const 0))
    (func (export "dtor") (param i32)
      (global.set $drops (i32.add (global.get $drops) (i32.const 1))))
    (func (export "drops") (result i32) (global.get $drops)))
  (core instance $d (instantiate $d))
  (type $counter (resource (rep i32) (dtor (core func $d "dtor"))))
  (core func $new (canon resource.new $counter))
  (core module $m
    (import "h" "new" (func $new (param i32) (result i32)))
    (func (export "ctor") (param i32) (result i32) (call $new (local.get 0)))
    (func (export "get") (param i32) (result i32) (i32.add (local.get 0) (i32.const 1)))
    (func (export "make") (param i32) (result i32) (call $new (local.get 0))))
  (core instance $i (instantiate $m (with "h" (instance (export "new" (func $new))))))
  (export $c "counter" (type $counter))
  (func (export "[constructor]counter") (param "v" u32) (result (own $c))
    (canon lift (core func $i "ctor")))
  (func (export "[method]counter.get") (param "self" (borrow $c)) (result u32)
    (canon lift (core func $i "get")))
  (func (export "make") (param "v" u32) (result (own $c))
    (canon lift (core func $i "make")))
  (func (export "drops") (result u32) (canon lift (core func $d "drops")))
)"""

SOURCES = {"plain": PLAIN_RESOURCE, "task-model": ASYNC_RESOURCE}


@pytest.mark.parametrize("store", sorted(SOURCES))
def test_guest_resource_methods_block_like_exports(wat: Wat, store: str) -> None:
    with instantiate_sync(wat(SOURCES[store]), {}) as inst:
        c = inst.exports.Counter(5)
        assert c.get() == 6
        made = inst.exports.make(9)  # a wrapper an export returned
        assert made.get() == 10
        c.drop()
        assert inst.exports.drops() == 1


@pytest.mark.parametrize("store", sorted(SOURCES))
def test_a_call_after_close_raises_the_closed_store_error(wat: Wat, store: str) -> None:
    inst = instantiate_sync(wat(SOURCES[store]), {})
    make = inst.exports.make
    c = inst.exports.Counter(1)
    inst.close()
    inst.close()  # idempotent
    with pytest.raises(StoreClosedError, match="closed"):
        make(2)
    with pytest.raises(StoreClosedError, match="closed"):
        c.get()


def test_a_parked_export_after_close_raises_the_closed_store_error(wat: Wat) -> None:
    inst = instantiate_sync(wat(PARKED), {"get": lambda x: x})
    wait = inst.exports.wait
    assert wait(1) == 2
    inst.close()
    with pytest.raises(StoreClosedError, match="closed"):
        wait(1)


_AT_EXIT = """
import sys
from polyengine.sync import instantiate_sync
wasm = open(sys.argv[1], "rb").read()
keep = []
inst = instantiate_sync(wasm, {})
keep += [inst.exports.Counter(5), inst.exports.make(6)]
if sys.argv[2] == "close":
    inst.close()
with instantiate_sync(wasm, {}) as other:
    keep.append(other.exports.Counter(7))
print("done")
"""


@pytest.mark.parametrize("close", ["close", "keep-open"])
@pytest.mark.parametrize("store", sorted(SOURCES))
def test_wrappers_alive_at_interpreter_exit_print_nothing(
    wat: Wat, tmp_path: Path, store: str, close: str
) -> None:
    wasm = tmp_path / "c.wasm"
    wasm.write_bytes(wat(SOURCES[store]))
    out = subprocess.run(
        [sys.executable, "-c", _AT_EXIT, str(wasm), close],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "done\n"
    assert out.stderr == ""
