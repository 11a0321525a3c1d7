"""The public surface: names, and which built-ins may block."""

from __future__ import annotations

import inspect

import polyengine.concurrency as conc
from polyengine.concurrency import builtins, copy_builtins, lift
from polyengine.concurrency.engine_seam import DEFERRED_BUILTINS


def canon_functions() -> dict[str, object]:
    out: dict[str, object] = {}
    for mod in (builtins, copy_builtins, lift):
        for name, fn in vars(mod).items():
            if (
                name.startswith("canon_")
                and inspect.isfunction(fn)
                and fn.__module__ == mod.__name__
            ):
                out[name] = fn
    return out


def test_blocking_builtins_are_exactly_the_generator_functions() -> None:
    fns = canon_functions()
    generators = {n for n, f in fns.items() if inspect.isgeneratorfunction(f)}
    assert generators == set(builtins.BLOCKING_BUILTINS)
    assert set(DEFERRED_BUILTINS) <= generators


def test_every_spec_builtin_of_the_task_model_is_defined() -> None:
    expected = {
        "canon_context_get",
        "canon_context_set",
        "canon_backpressure_inc",
        "canon_backpressure_dec",
        "canon_task_return",
        "canon_task_cancel",
        "canon_waitable_set_new",
        "canon_waitable_set_wait",
        "canon_waitable_set_poll",
        "canon_waitable_set_drop",
        "canon_waitable_join",
        "canon_subtask_cancel",
        "canon_subtask_drop",
        "canon_stream_new",
        "canon_future_new",
        "canon_stream_read",
        "canon_stream_write",
        "canon_future_read",
        "canon_future_write",
        "canon_stream_cancel_read",
        "canon_stream_cancel_write",
        "canon_future_cancel_read",
        "canon_future_cancel_write",
        "canon_stream_drop_readable",
        "canon_stream_drop_writable",
        "canon_future_drop_readable",
        "canon_future_drop_writable",
        "canon_thread_index",
        "canon_thread_new_indirect",
        "canon_thread_resume_later",
        "canon_thread_suspend",
        "canon_thread_yield",
        "canon_thread_suspend_then_resume",
        "canon_thread_yield_then_resume",
        "canon_thread_suspend_then_promote",
        "canon_thread_yield_then_promote",
        "canon_error_context_new",
        "canon_error_context_debug_message",
        "canon_error_context_drop",
        "canon_lift",
        "canon_lower",
    }
    assert expected <= set(canon_functions())


def test_package_exports_resolve() -> None:
    names = [n for n in dir(conc) if not n.startswith("_")]
    for n in names:
        assert getattr(conc, n) is not None
    for n in ("Store", "InstanceState", "Thread", "Task", "Subtask", "Driver", "CanonLift"):
        assert n in names
