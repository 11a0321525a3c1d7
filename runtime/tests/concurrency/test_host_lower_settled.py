"""An async ``canon lower`` of a host function that answers at once (CanonicalABI.md
§``canon lower``; Concurrency.md §Subtasks).

The call settles inside the built-in: the status is ``RETURNED``, the result
is written through the out-pointer and no subtask handle is added to the
caller's table. No subtask object is made for it, so each case runs twice:
through that settled-at-once path (an unmarked import) and through the general
path with a subtask (the same function marked ``suspending()``, which keeps
the general lower), on the compiled call path and on the pure one; the
outcome, traps and their messages included, must be the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import polyengine
from polyengine.abi import HostResultError
from polyengine.engine import _callpath
from polyengine_protocol import Trap, suspending

Wat = Callable[[str], bytes]

#: ``call(x, ptr)``: one async lower of ``get(x)`` with its out-pointer at ``ptr``;
#: returns (the status word, the u32 at 64, handles the call added plus one)
SETTLED = """(component
  (core module $libc (memory (export "mem") 1))
  (core instance $libc (instantiate $libc))
  (import "get" (func $get async (param "x" u32) (result u32)))
  (core func $ret (canon task.return (result (tuple u32 u32 u32))))
  (core func $get-async (canon lower (func $get) async (memory (core memory $libc "mem"))))
  (core func $ws.new (canon waitable-set.new))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret" (func $ret (param i32 i32 i32)))
    (import "" "get-async" (func $get-async (param i32 i32) (result i32)))
    (import "" "ws.new" (func $ws.new (result i32)))
    (func (export "call") (param $x i32) (param $ptr i32)
      (local $before i32) (local $st i32)
      (i32.store (i32.const 64) (i32.const 0xdead))
      (local.set $before (call $ws.new))
      (local.set $st (call $get-async (local.get $x) (local.get $ptr)))
      (call $ret
        (local.get $st)
        (i32.load (i32.const 64))
        (i32.sub (call $ws.new) (local.get $before)))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance
      (export "ret" (func $ret)) (export "get-async" (func $get-async))
      (export "ws.new" (func $ws.new))))))
  (func (export "call") async (param "x" u32) (param "ptr" u32) (result (tuple u32 u32 u32))
    (canon lift (core func $i "call") async))
)"""

RETURNED = 2


@contextmanager
def _path(pure: bool) -> Iterator[None]:
    if pure:
        with _callpath.pure_stores():
            yield
    else:
        yield


def _outcome(
    wat: Wat, get: Callable[[int], Any], calls: list[tuple[int, int]], *, pure: bool
) -> list[Any]:
    """What each call gave (its result, or the exception's type and message)."""

    async def run() -> list[Any]:
        with _path(pure):
            inst = await polyengine.instantiate(wat(SETTLED), {"get": get})
        out: list[Any] = []
        with inst:
            for x, ptr in calls:
                try:
                    out.append(tuple(await inst.exports.call(x, ptr)))
                except Exception as exc:
                    out.append((type(exc), str(exc)))
        return out

    return asyncio.run(run())


def _both(
    wat: Wat, make: Callable[[], Callable[[int], Any]], calls: list[tuple[int, int]]
) -> list[Any]:
    """The outcome on every path; asserts they are all the same."""
    seen = [
        _outcome(wat, fn, calls, pure=pure)
        for pure in (False, True)
        for fn in (make(), suspending(make()))
    ]
    assert all(s == seen[0] for s in seen[1:]), seen
    return seen[0]


def _plain() -> Callable[[int], Any]:
    def get(x: int) -> int:
        return x + 1

    return get


def _coroutine() -> Callable[[int], Awaitable[int]]:
    async def get(x: int) -> int:
        return x + 1

    return get


@pytest.mark.parametrize("make", [_plain, _coroutine], ids=["plain", "coroutine"])
def test_an_answer_at_once_returns_with_the_result_written_and_no_handle(
    wat: Wat, make: Callable[[], Callable[[int], Any]]
) -> None:
    out = _both(wat, make, [(7, 64), (0, 64), (0xFFFF_FFFE, 64)])
    assert out == [(RETURNED, 8, 1), (RETURNED, 1, 1), (RETURNED, 0xFFFF_FFFF, 1)]


def test_the_out_pointer_may_be_anywhere_aligned_in_memory(wat: Wat) -> None:
    # written elsewhere: the word at 64 keeps the marker
    out = _both(wat, _plain, [(5, 128), (5, 65532)])
    assert out == [(RETURNED, 0xDEAD, 1), (RETURNED, 0xDEAD, 1)]


@pytest.mark.parametrize(
    ("ptr", "what"),
    [
        (66, "unaligned"),
        (65533, "unaligned"),
        (65536, "out of bounds"),
        (0xFFFF_FFFC, "out of bounds"),
    ],
)
def test_a_bad_out_pointer_traps_as_on_the_general_path(wat: Wat, ptr: int, what: str) -> None:
    calls: list[int] = []

    def make() -> Callable[[int], int]:
        def get(x: int) -> int:
            calls.append(x)
            return x

        return get

    (out,) = _both(wat, make, [(1, ptr)])
    assert issubclass(out[0], Trap) and what in out[1], out
    assert calls == [1, 1, 1, 1]  # the host ran, then its result could not be stored


@pytest.mark.parametrize("value", [-1, 1 << 32, "one", 1.0, True, None])
def test_a_result_that_cannot_be_lowered_names_the_import(wat: Wat, value: object) -> None:
    def make() -> Callable[[int], Any]:
        def get(_x: int) -> Any:
            return value

        return get

    out = _both(wat, make, [(1, 64), (2, 64)])
    assert out[0][0] is HostResultError and "host import get" in out[0][1], out
    # the instance is poisoned: the next call cannot enter it
    assert issubclass(out[1][0], Trap), out


def test_a_host_failure_traps_with_the_import_named(wat: Wat) -> None:
    def make() -> Callable[[int], int]:
        def get(x: int) -> int:
            if x == 2:
                raise ValueError("boom")
            return x

        return get

    out = _both(wat, make, [(1, 64), (2, 64), (3, 64)])
    assert out[0] == (RETURNED, 1, 1)
    assert issubclass(out[1][0], Trap)
    assert out[1][1] == "host import get raised ValueError: boom"
    assert issubclass(out[2][0], Trap)


def test_a_coroutine_failing_in_its_first_step_traps_the_same(wat: Wat) -> None:
    def make() -> Callable[[int], Awaitable[int]]:
        async def get(_x: int) -> int:
            raise KeyError("k")

        return get

    (out,) = _both(wat, make, [(1, 64)])
    assert issubclass(out[0], Trap) and out[1] == "host import get raised KeyError: 'k'", out


#: ``call(ptr)``: one async lower of ``get() -> T`` with its out-pointer at ``ptr``;
#: returns (the status word, the 8 bytes at 64, which were all 0xaa before)
TYPED = """(component
  (core module $libc (memory (export "mem") 1))
  (core instance $libc (instantiate $libc))
  (import "get" (func $get async (result T)))
  (core func $ret (canon task.return (result (tuple u32 u64))))
  (core func $get-async (canon lower (func $get) async (memory (core memory $libc "mem"))))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "" "ret" (func $ret (param i32 i64)))
    (import "" "get-async" (func $get-async (param i32) (result i32)))
    (func (export "call") (param $ptr i32)
      (local $st i32)
      (i64.store (i32.const 64) (i64.const 0xaaaaaaaaaaaaaaaa))
      (local.set $st (call $get-async (local.get $ptr)))
      (call $ret (local.get $st) (i64.load (i32.const 64)))))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance (export "ret" (func $ret)) (export "get-async" (func $get-async))))))
  (func (export "call") async (param "ptr" u32) (result (tuple u32 u64))
    (canon lift (core func $i "call") async))
)"""


@pytest.mark.parametrize(
    ("t", "values"),
    [
        ("u8", [0, 255, 256, -1, True]),
        ("s16", [-32768, 32767, 40000, 1.5]),
        ("u64", [0, (1 << 64) - 1, 1 << 64]),
        ("s64", [-(1 << 63), 1 << 63]),
        ("f32", [1.5, -0.0, float("nan"), 1e40, 3, "x"]),
        ("f64", [2.25, float("inf"), 7, None]),
        ("bool", [True, False, 1]),
        ("char", ["a", "\U0001f600", "ab", 65]),
    ],
)
def test_each_scalar_result_is_stored_as_on_the_general_path(
    wat: Wat, t: str, values: list[object]
) -> None:
    text = TYPED.replace("(result T)", f"(result {t})")
    for value in values:

        def make(value: object = value) -> Callable[[], object]:
            def get() -> object:
                return value

            return get

        seen = []
        for pure in (False, True):
            for fn in (make(), suspending(make())):

                async def run(fn: Callable[[], object] = fn, pure: bool = pure) -> list[Any]:
                    with _path(pure):
                        inst = await polyengine.instantiate(wat(text), {"get": fn})
                    out: list[Any] = []
                    with inst:
                        for ptr in (64, 72, 65535):
                            try:
                                out.append(tuple(await inst.exports.call(ptr)))
                            except Exception as exc:
                                out.append((type(exc), str(exc)))
                    return out

                seen.append(asyncio.run(run()))
        assert all(s == seen[0] for s in seen[1:]), (t, value, seen)
