"""Each engine's epoch ticker: with the compiled path its loop holds no GIL.

The ticker advances the epoch every tick, so that a running guest reaches the
deadline callback (``_interrupt.py``) about every tick: an infinite loop is
interrupted by a deadline. With the compiled call path the loop is the
extension's (``epoch_ticker``), stopped at exit before the engines go; the
process then exits cleanly, as does a forked child. A forked child has none of
its parent's threads: it starts tickers of its own for its parent's engines, so
its guests, in the stores it inherited and in new ones, still meet their
deadlines.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from polyengine.engine import CoreModule, CoreTrap, EngineStore, _interrupt, instantiate

Wat = Callable[..., CoreModule]

LOOP = '(module (func (export "spin") (loop $l (br $l))))'


def test_a_spinning_guest_is_interrupted_at_its_deadline(wat: Wat) -> None:
    with EngineStore() as store:
        spin = instantiate(store, wat(LOOP), []).func("spin")
        store.set_deadline(0.05)
        with pytest.raises(CoreTrap, match="deadline"):
            spin.call_raw([])
        thread = _interrupt._tickers[id(store.engine)]
        assert thread.is_alive() and thread.name == "polyengine-epoch"
        native: Any = _interrupt._native_ticker()
        native_threads = [t for t, _ in _interrupt._native_threads]
        assert (thread in native_threads) is (native is not None)


def test_the_native_ticker_refuses_what_it_cannot_run() -> None:
    native: Any = _interrupt._native_ticker()
    if native is None:
        pytest.skip("the compiled call path is not active")
    with pytest.raises(ValueError, match="null function or engine"):
        native.epoch_ticker(0, 0, 1)


def test_a_process_with_tickers_exits_cleanly_as_does_a_forked_child(
    run_isolated: Callable[[str], subprocess.CompletedProcess[str]],
) -> None:
    proc = run_isolated(
        """
        import os, time, wasmtime
        from polyengine.engine import (
            CoreTrap, EngineConfig, EngineStore, compile_module, get_engine, instantiate,
            _interrupt,
        )
        wasm = wasmtime.wat2wasm('(module (func (export "spin") (loop $l (br $l))))')
        for config in (None, EngineConfig(max_wasm_stack=256 * 1024)):  # two engines, two tickers
            engine = get_engine(config)
            store = EngineStore(engine)
            spin = instantiate(store, compile_module(wasm, engine=engine), []).func("spin")
            store.set_deadline(0.03)
            try:
                spin.call_raw([])
            except CoreTrap as exc:
                assert "deadline" in str(exc), exc
            else:
                raise AssertionError("not interrupted")
        pid = os.fork()
        if pid == 0:
            raise SystemExit(0)  # the child exits through atexit, stopping its own tickers
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        print("DONE", len(_interrupt._tickers))
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "DONE 2" in proc.stdout
    assert "panicked" not in proc.stderr


def test_a_forked_child_interrupts_its_guests_at_their_deadlines(
    run_isolated: Callable[[str], subprocess.CompletedProcess[str]],
) -> None:
    proc = run_isolated(
        """
        import os, signal, time, wasmtime
        from polyengine.engine import (
            CoreTrap, EngineStore, compile_module, get_engine, instantiate, _interrupt,
        )
        wasm = wasmtime.wat2wasm('(module (func (export "spin") (loop $l (br $l))))')
        engine = get_engine()
        module = compile_module(wasm, engine=engine)

        def interrupted(store):
            spin = instantiate(store, module, []).func("spin")
            store.set_deadline(0.05)
            try:
                spin.call_raw([])
            except CoreTrap as exc:
                return "deadline" in str(exc)
            return False

        inherited = EngineStore(engine)
        assert interrupted(EngineStore(engine))  # the parent's ticker runs
        pid = os.fork()
        if pid == 0:
            ok = interrupted(inherited) and interrupted(EngineStore(engine))
            ticker = _interrupt._tickers[id(engine)]
            ok = ok and ticker.is_alive()
            os._exit(0 if ok else 3)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print("CHILD", os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            print("CHILD HUNG")
        assert interrupted(EngineStore(engine))  # and the parent's still runs
        print("DONE")
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "CHILD 0" in proc.stdout, proc.stdout
    assert "DONE" in proc.stdout
