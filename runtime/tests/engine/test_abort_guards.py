"""Every process-abort precondition of the async C API is unreachable through our API.

architecture.md §4 lists what makes libwasmtime abort the process: a callback
that leaves its continuation unset, polling a finished future, dropping the
store while a future is alive, a ctypes callback returning a wrong type, host
code overflowing a fiber's stack.  Each test runs the unguarded scenario
through ``polyengine.engine`` in a fresh interpreter and checks that the
process finished normally (a negative return code means a signal: abort or
segfault).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

Run = Callable[[str], subprocess.CompletedProcess[str]]

PRELUDE = """
import asyncio, gc, sys
import wasmtime
from polyengine.engine import *

GUEST = '''(module
  (import "h" "wait" (func $wait (param i32) (result i32)))
  (import "h" "sync" (func $sync (param i32) (result i32)))
  (table (export "tab") 1 funcref)
  (func (export "run") (param i32) (result i32) local.get 0 call $wait)
  (func (export "viasync") (param i32) (result i32) local.get 0 call $sync)
  (func (export "both") (param i32) (result i32) local.get 0 call $wait call $sync))'''
MODULE = compile_module(wasmtime.wat2wasm(GUEST), "guest")

def make(store, wait, sync=lambda a: a):
    w = define_async_host_func(store, ["i32"], ["i32"], wait)
    s = define_host_func(store, ["i32"], ["i32"], sync)
    return instantiate(store, MODULE, [w, s])

def expect_trap(fn, exc_type=None):
    try:
        fn()
    except CoreTrap as e:
        assert exc_type is None or isinstance(e.host_exception, exc_type), repr(e)
        return e
    raise AssertionError("no trap")
"""


def check(run: Run, body: str) -> None:
    proc = run(PRELUDE + body + "\nprint('SCENARIO-OK')\n")
    assert proc.returncode >= 0, f"process died by signal {-proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "SCENARIO-OK" in proc.stdout
    assert "panicked" not in proc.stderr
    assert "Exception ignored" not in proc.stderr, proc.stderr[-2000:]


def test_async_callback_never_leaves_its_continuation_unset(run_isolated: Run) -> None:
    check(
        run_isolated,
        """
class Weird:
    def add_done_callback(self, fn): raise RuntimeError("cannot register")
    def done(self): return False
    def result(self): return [0]
    def cancel(self): return False

class BadDone(Weird):
    def add_done_callback(self, fn): pass
    def done(self): raise OSError("cannot tell")
def raising(a): raise ValueError("before any result")
cases = [(raising, ValueError), (lambda a: Weird(), RuntimeError), (lambda a: BadDone(), OSError)]
for fn, exc in cases:
    with EngineStore() as store:
        inst = make(store, fn)
        expect_trap(lambda: inst.func("run").call_raw([1]), exc)
        call = start(inst.func("run"), [1])
        expect_trap(call.result, exc)
# Not an Exception, but not an interrupt either: a trap carrying it.
def base(a): raise GeneratorExit()
with EngineStore() as store:
    inst = make(store, base)
    expect_trap(lambda: inst.func("run").call_raw([1]), GeneratorExit)
    expect_trap(start(inst.func("run"), [1]).result, GeneratorExit)
    assert inst.func("viasync").call_raw([2]) == [2]
# KeyboardInterrupt is re-raised as itself once the guest has unwound.
def interrupt(a): raise KeyboardInterrupt()
with EngineStore() as store:
    inst = make(store, interrupt)
    for attempt in (lambda: inst.func("run").call_raw([1]), lambda: start(inst.func("run"), [1])):
        try:
            attempt()
        except KeyboardInterrupt:
            pass
        else:
            raise AssertionError("KeyboardInterrupt lost")
    assert inst.func("viasync").call_raw([2]) == [2]
""",
    )


def test_finished_futures_are_never_polled(run_isolated: Run) -> None:
    check(
        run_isolated,
        """
async def main():
    loop = asyncio.get_running_loop()
    futs = []
    def wait(a):
        f = loop.create_future(); futs.append(f); return f
    store = EngineStore()
    inst = make(store, wait)
    call = start(inst.func("run"), [1])
    futs[0].set_result([5])
    await asyncio.sleep(0)
    assert call.done() and call.result() == [5]
    for _ in range(3):
        assert call.poll() is True
    assert call.cancel() is False
    # A wake arriving for a cancelled call, and for a closed store.
    call = start(inst.func("run"), [2])
    f = futs[1]
    call.cancel()
    call.poll(); call.poll()
    call = start(inst.func("run"), [3])
    store.close()
    call.poll(); call.poll(); call.cancel()
    await asyncio.sleep(0)
    # A future that settles at once, whose callback runs during the poll.
    import concurrent.futures
    with EngineStore() as store2:
        def ready(a):
            f = concurrent.futures.Future(); f.set_result([int(a[0]) + 1]); return f
        inst2 = make(store2, ready)
        assert start(inst2.func("run"), [41]).result() == [42]
        assert inst2.func("run").call_raw([1]) == [2]
asyncio.run(main())
""",
    )


def test_dropping_the_store_with_live_futures(run_isolated: Run) -> None:
    check(
        run_isolated,
        """
async def main():
    loop = asyncio.get_running_loop()
    futs = []
    def wait(a):
        f = loop.create_future(); futs.append(f); return f
    # 1. The store object is collected while calls are parked.
    store = EngineStore()
    inst = make(store, wait)
    calls = [start(inst.func("run"), [k]) for k in range(10)]
    del store, inst
    gc.collect()
    for f in futs: f.set_result([0]) if not f.done() else None
    await asyncio.sleep(0)
    for c in calls:
        c.poll()
    del calls
    gc.collect()
    # 2. Parked calls are collected while the store lives, then the store.
    store = EngineStore()
    inst = make(store, wait)
    calls = [start(inst.func("run"), [k]) for k in range(10)]
    del calls
    gc.collect()
    assert inst.func("viasync").call_raw([4]) == [4]
    store.close()
    # 3. Store and calls collected together in a reference cycle.
    store = EngineStore()
    inst = make(store, wait)
    cycle = [store, inst, [start(inst.func("run"), [k]) for k in range(10)]]
    cycle.append(cycle)
    del store, inst, cycle
    gc.collect()
    await asyncio.sleep(0)
asyncio.run(main())
""",
    )


def test_callbacks_never_return_a_wrong_type(run_isolated: Run) -> None:
    check(
        run_isolated,
        """
class BadIter:
    def __iter__(self): raise RuntimeError("no iteration")
    def __len__(self): return 1
bad_results = [None, "x", [1, 2], [1.5], [2**40], BadIter(), 7]
for bad in bad_results:
    with EngineStore() as store:
        inst = make(store, lambda a: [0], sync=lambda a, bad=bad: bad)
        expect_trap(lambda: inst.func("viasync").call_raw([1]))
    with EngineStore() as store:
        inst = make(store, lambda a, bad=bad: bad)
        expect_trap(lambda: inst.func("run").call_raw([1]))
        expect_trap(start(inst.func("run"), [1]).result)

async def main():
    loop = asyncio.get_running_loop()
    for bad in bad_results:
        with EngineStore() as store:
            futs = []
            def wait(a):
                f = loop.create_future(); futs.append(f); return f
            inst = make(store, wait)
            call = start(inst.func("run"), [1])
            futs[0].set_result(bad)
            try:
                await wait_call(call)
            except CoreTrap:
                pass
            else:
                raise AssertionError(bad)
wait_call = wait
asyncio.run(main())
""",
    )


@pytest.mark.xfail(
    sys.version_info >= (3, 13),
    strict=True,
    reason="on Python 3.13 the process aborts (signal 6): execution on async fiber has"
    " overflowed its stack",
)
def test_host_python_cannot_overflow_a_fiber_stack(run_isolated: Run) -> None:
    check(
        run_isolated,
        """
sys.setrecursionlimit(1_000_000)
class R:
    def __repr__(self): return repr(R())
def deep(n): return deep(n + 1)
def recurse_repr(a):
    repr(R()); return [0]
def recurse_py(a):
    deep(0); return [0]
def nested_json(a):
    import json
    x = []
    for _ in range(200_000): x = [x]
    json.dumps(x); return [0]
for size in (8 * 1024 * 1024, 768 * 1024):
    engine = get_engine(EngineConfig(fiber_stack_size=size, max_wasm_stack=256 * 1024))
    module = compile_module(wasmtime.wat2wasm(GUEST), "guest", engine=engine)
    for fn in (recurse_repr, recurse_py, nested_json):
        with EngineStore(engine) as store:
            w = define_async_host_func(store, ["i32"], ["i32"], lambda a: [a[0]])
            s = define_host_func(store, ["i32"], ["i32"], fn)
            inst = instantiate(store, module, [w, s])
            # On a fiber: a parkable call, and a sync call in an async store.
            expect_trap(start(inst.func("viasync"), [1]).result, RecursionError)
            expect_trap(lambda: inst.func("viasync").call_raw([1]), RecursionError)
        with EngineStore(engine) as store:
            w = define_async_host_func(store, ["i32"], ["i32"], fn)
            s = define_host_func(store, ["i32"], ["i32"], lambda a: a)
            inst = instantiate(store, module, [w, s])
            expect_trap(start(inst.func("run"), [1]).result, RecursionError)
assert sys.getrecursionlimit() == 1_000_000
""",
    )


def test_no_sync_entry_into_a_suspending_function(run_isolated: Run) -> None:
    check(
        run_isolated,
        """
async def main():
    loop = asyncio.get_running_loop()
    with EngineStore() as store:
        inst = make(store, lambda a: loop.create_future())
        e = expect_trap(lambda: inst.func("run").call_raw([1]))
        assert e.code == "cannot_block_sync_task"
        # Through a table, and from a host function running on a fiber.
        inst.table("tab").set(0, inst.func("run"))
        f = inst.table("tab").get(0)
        expect_trap(lambda: f.call_raw([1]))
        inst2 = make(store, lambda a: [1], sync=lambda a: f.call_raw(a))
        e = expect_trap(start(inst2.func("viasync"), [1]).result)
        assert e.code == "cannot_block_sync_task"
        await asyncio.sleep(0)
asyncio.run(main())
""",
    )


def test_cross_store_and_reentrant_misuse_is_refused(run_isolated: Run) -> None:
    check(
        run_isolated,
        """
async def main():
    loop = asyncio.get_running_loop()
    futs = []
    def wait(a):
        f = loop.create_future(); futs.append(f); return f
    with EngineStore() as a, EngineStore() as b:
        ia = make(a, wait)
        fb = define_host_func(b, ["i32"], ["i32"], lambda x: x)
        try:
            ia.table("tab").set(0, fb)
        except ValueError:
            pass
        else:
            raise AssertionError("foreign function stored")
        try:
            instantiate(a, MODULE, [fb, fb])
        except ValueError:
            pass
        else:
            raise AssertionError("foreign import accepted")
        parked = start(ia.func("run"), [1])
        seen = []
        def meddle(x):
            for op in (parked.poll, parked.cancel):
                try:
                    op()
                except EngineError:
                    seen.append(op)
            return x
        ib = make(a, wait, sync=meddle)
        assert start(ib.func("viasync"), [3]).result() == [3]
        assert len(seen) == 2
        futs[0].set_result([8])
        assert await wait_call(parked) == [8]
wait_call = wait
asyncio.run(main())
""",
    )


@pytest.mark.parametrize("limit", [100, 1000])
def test_guard_scenarios_leave_recursion_limit_alone(run_isolated: Run, limit: int) -> None:
    check(
        run_isolated,
        f"""
sys.setrecursionlimit({limit})
with EngineStore() as store:
    inst = make(store, lambda a: [a[0]])
    assert start(inst.func("both"), [1]).result() == [1]
assert sys.getrecursionlimit() == {limit}
""",
    )


def test_memory_views_outlive_a_closed_store_safely(run_isolated: Run) -> None:
    check(
        run_isolated,
        """
m = compile_module(wasmtime.wat2wasm('(module (memory (export "m") 1))'))
store = EngineStore()
mem = instantiate(store, m, []).memory("m")
view = mem.view()
part = view[100:200]
mem.write(100, b"kept")
store.close()
assert bytes(part[:4]) == b"kept"
view[0:4] = b"safe"  # still mapped: deletion waits for the views
try:
    mem.view()
except StoreClosedError:
    pass
del view, part
gc.collect()
assert store._state.store_ptr == 0  # deleted once the last view went
# Collected store with a live view.
store = EngineStore()
view = instantiate(store, m, []).memory("m").view()
del store
gc.collect()
view[65535] = 1
assert view[65535] == 1
""",
    )


def test_other_threads_cannot_drive_a_store(run_isolated: Run) -> None:
    check(
        run_isolated,
        """
import threading
async def main():
    loop = asyncio.get_running_loop()
    with EngineStore() as store:
        inst = make(store, lambda a: loop.create_future())
        call = start(inst.func("run"), [1])
        errors = []
        def other():
            for op in (call.poll, call.cancel, lambda: start(inst.func("viasync"), [1])):
                try:
                    op()
                except EngineError as e:
                    errors.append(e)
        t = threading.Thread(target=other)
        t.start(); t.join()
        assert len(errors) == 3, errors
        assert call.cancel()
asyncio.run(main())
""",
    )


def test_closing_a_store_from_inside_its_calls_is_refused(run_isolated: Run) -> None:
    check(
        run_isolated,
        """
refused = []
def closer(store):
    def fn(a):
        try:
            store.close()
        except EngineError:
            refused.append(1)
        return a
    return fn
# The plain synchronous path.
store = EngineStore()
s = define_host_func(store, ["i32"], ["i32"], lambda a: closer(store)(a))
m = compile_module(wasmtime.wat2wasm('''(module (import "h" "s" (func $s (param i32) (result i32)))
  (func (export "f") (param i32) (result i32) local.get 0 call $s))'''))
assert instantiate(store, m, [s]).func("f").call_raw([3]) == [3]
store.close()
# On a fiber, in a sync host function and in an async one.
with EngineStore() as store:
    inst = make(store, closer(store), sync=closer(store))
    assert start(inst.func("both"), [5]).result() == [5]
    assert inst.func("both").call_raw([6]) == [6]
assert len(refused) == 5, refused
# A store cannot switch to async mode from inside a synchronous call.
with EngineStore() as store:
    seen = []
    def define(a):
        try:
            define_async_host_func(store, ["i32"], ["i32"], lambda x: x)
        except EngineError:
            seen.append(1)
        return a
    s = define_host_func(store, ["i32"], ["i32"], define)
    assert instantiate(store, m, [s]).func("f").call_raw([3]) == [3]
    assert seen == [1] and not store.async_required
""",
    )


def test_nested_calls_on_a_fiber_never_park_with_python_on_it(run_isolated: Run) -> None:
    check(
        run_isolated,
        """
async def main():
    loop = asyncio.get_running_loop()
    futs = []
    mode = {"ready": False}
    def wait(a):
        if mode["ready"]:
            return [int(a[0]) * 2]
        f = loop.create_future(); futs.append(f); return f
    windows = []
    with EngineStore() as store:
        holder = {}
        def sync(a):
            windows.append(store._state.sync_window)
            key = int(a[0])
            if key == 1:  # nested call that reaches a pending async host function
                try:
                    holder["i"].func("run").call_raw([7])
                except CoreTrap as e:
                    assert e.code == "cannot_block_sync_task", e
                    return [100]
                raise AssertionError("parked with Python on the fiber")
            if key == 2:  # nested call whose async host function is ready
                mode["ready"] = True
                try:
                    return holder["i"].func("run").call_raw([21])
                finally:
                    mode["ready"] = False
            if key == 3:  # two levels of nesting, innermost would park
                return holder["i"].func("viasync").call_raw([1])
            return a
        inst = make(store, wait, sync=sync)
        holder["i"] = inst
        assert start(inst.func("viasync"), [1]).result() == [100]
        assert futs and futs[-1].cancelled()
        assert start(inst.func("viasync"), [2]).result() == [42]
        assert start(inst.func("viasync"), [3]).result() == [100]
        assert windows[:3] == [0, 0, 0] and windows[3] == 1  # nested sync ran in place
        # A parked call with nested activity around it still resumes.
        parked = start(inst.func("both"), [9])
        assert start(inst.func("viasync"), [2]).result() == [42]
        futs[-1].set_result([4])
        await asyncio.sleep(0)
        assert parked.result() == [4]
        # An async host entry calling into the guest gets a fiber of its own.
        def reenter(a):
            return holder["j"].func("viasync").call_raw([5])
        inst2 = make(store, reenter)
        holder["j"] = inst2
        assert start(inst2.func("run"), [0]).result() == [5]
        assert inst2.func("run").call_raw([0]) == [5]
asyncio.run(main())
""",
    )
