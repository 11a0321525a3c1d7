"""Host-defined functions that guests call (CanonicalABI.md §Embedding ``FuncInst``;
embedder-api A23/A24 for cancellation).

:func:`host_func_inst` makes a callable component function of a host
callable: a plain result, or a coroutine that finishes in its first step
(started eagerly, as Python 3.12's eager tasks do), answers inside the call;
anything else runs as a host operation of the store, and the threads its
outcome readies run in the loop iteration it settles in.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import sys
from collections.abc import Callable, Coroutine, Generator, Sequence
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from polyengine.abi.trap import host_import_trap

from .engine_seam import no_current_task
from .lift import CanonLower, canon_lower_async
from .reentry import on_stack
from .store import InstanceState
from .task import FuncInst, OnCancel, OnResolve, OnStart, Subtask
from .thread import CoreVal
from .traps import Trap

if TYPE_CHECKING:
    from .driver import Driver

__all__ = ["CancelMode", "host_func_inst", "host_lower_async"]

CancelMode: TypeAlias = Literal["cancel", "discard", "abort", "ignore"]
"""How a host function answers a cancellation request (:meth:`.driver.Driver.host_func_inst`)."""

_CANCEL_MODES = ("cancel", "discard", "abort", "ignore")


def _no_cancel(_requester: InstanceState | None) -> None:
    pass


def host_func_inst(
    driver: Driver,
    fn: Callable[..., Any],
    *,
    name: str,
    has_result: bool,
    cancel: CancelMode = "cancel",
    on_fail: Callable[[list[Any], BaseException], None] | None = None,
) -> FuncInst:
    """The callable component function of ``fn`` (:meth:`.driver.Driver.host_func_inst`)."""
    assert cancel in _CANCEL_MODES, cancel
    spec = _HostFuncSpec(driver, name, has_result, cancel, on_fail)

    def func_inst(
        on_start: OnStart, on_resolve: OnResolve, caller: InstanceState | None
    ) -> OnCancel:
        args = on_start()
        try:
            out = fn(*args)
        except Exception as exc:
            raise spec.fail(caller, exc, args) from exc
        return spec.settle(out, on_resolve, caller, args)

    return func_inst


def host_lower_async(
    driver: Driver,
    fn: Callable[..., Any],
    lower: CanonLower,
    lower_result: Callable[[Any, Sequence[CoreVal]], None],
    *,
    name: str,
    cancel: CancelMode,
) -> Callable[[Sequence[CoreVal]], list[CoreVal]]:
    """``canon lower ... async`` of the host function ``fn`` as a core host function body
    (CanonicalABI.md §``canon lower``; Concurrency.md §Subtasks).

    ``lower`` gives the import's type and value steps (its ``callee`` is
    unused). A host function that answers at once (a plain result) settles
    the call inside the built-in: ``lower_result(value, flat)`` writes its
    result through the out-pointer (as ``lower.lower_results`` with no
    scope would) and the status is ``RETURNED`` with no subtask handle, as
    the spec's ``canon lower`` reports a callee that returned before the
    built-in did; no subtask object is made for it. Any other answer (an
    awaitable, a coroutine, a value of another type) continues as
    :func:`~.lift.canon_lower_async` does, its callee starting with that
    answer (the host function is not called again).

    Only for types whose arguments lend no ``borrow`` (nothing for a
    subtask to count) and hold no ``stream``/``future`` (nothing to release
    on failure): the lifting and lowering scope is ``None``.
    """
    spec = _HostFuncSpec(driver, name, lower.ft.result is not None, cancel, None)
    store = driver.store
    lift_params = lower.lift_params
    plain = _PLAIN_RESULTS
    # the call being handed to the general path: its host call's (args, out),
    # read back by that path's callee as it starts (nothing runs in between)
    handed: list[Any] = [None, None]

    def lift_again(_subtask: Subtask, _flat: list[CoreVal]) -> list[Any]:
        args: list[Any] = handed[0]
        return args

    def callee(on_start: OnStart, on_resolve: OnResolve, caller: InstanceState | None) -> OnCancel:
        args, out = handed
        on_start()
        return spec.settle(out, on_resolve, caller, args)

    started = CanonLower(callee, lower.ft, lift_again, lower.lower_results, async_=True)

    def lower_async(flat: Sequence[CoreVal]) -> list[CoreVal]:
        thread = store.current
        if thread is None:
            no_current_task("a lowered import")
        inst = thread.task.inst
        if not inst.ci.may_leave or inst.record.poisoned is not None:
            inst.check_may_leave()  # traps
        args = lift_params(None, flat)  # type: ignore[arg-type] # no borrow: no scope
        try:
            out = fn(*args)
        except Exception as exc:
            raise spec.fail(inst, exc, args) from exc
        if type(out) in plain:
            lower_result(out, flat)
            return [_RETURNED]
        # anything else: the subtask as canon_lower_async makes it, started with `out`
        handed[0] = args
        handed[1] = out
        try:
            return canon_lower_async(started, thread, list(flat))
        finally:
            handed[0] = handed[1] = None

    return lower_async


_RETURNED = int(Subtask.State.RETURNED)


#: result types that are never awaitable (skips the awaitable test on the hot path)
_PLAIN_RESULTS = frozenset({int, float, bool, str, bytes, list, tuple, dict, type(None)})


class _HostFuncSpec:
    """What every call of one host function shares (:meth:`Driver.host_func_inst`)."""

    __slots__ = ("driver", "has_result", "mode", "name", "on_fail")

    def __init__(
        self,
        driver: Driver,
        name: str,
        has_result: bool,
        mode: CancelMode,
        on_fail: Callable[[list[Any], BaseException], None] | None,
    ) -> None:
        self.driver = driver
        self.name = name
        self.has_result = has_result
        self.mode = mode
        self.on_fail = on_fail

    def fail(
        self, caller: InstanceState | None, exc: BaseException, args: list[Any] | None
    ) -> Trap:
        """Poison ``caller`` with the trap for ``exc``; release what ``args`` handed over."""
        trap = host_import_trap(self.name, exc)
        if caller is not None:
            self.driver.store.poison(caller, trap)
        if self.on_fail is not None and args is not None:
            try:
                self.on_fail(args, exc)
            except Exception as failure:  # never hides the trap itself
                trap.add_note(f"releasing the arguments failed: {failure!r}")
        return trap

    def settle(
        self, out: Any, on_resolve: OnResolve, caller: InstanceState | None, args: list[Any]
    ) -> OnCancel:
        """The host function returned ``out``: resolve the call, or start what settles it."""
        kind = type(out)
        if kind is CoroutineType:
            return self.start_coroutine(out, on_resolve, caller, args)
        if kind in _PLAIN_RESULTS or not inspect.isawaitable(out):
            on_resolve([out] if self.has_result else [])
            return _no_cancel
        return self.start_awaitable(out, on_resolve, caller, args)

    def start_coroutine(
        self,
        coro: Coroutine[Any, Any, Any],
        on_resolve: OnResolve,
        caller: InstanceState | None,
        args: list[Any],
    ) -> OnCancel:
        """Run ``coro``'s first step now; it becomes a host operation only if it suspends."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        current = self.driver.store.current
        sync = current is not None and not current.task.ft.is_async
        with on_stack(caller, sync):
            started = _eager_start(loop, coro, self.name)
        if isinstance(started, _Finished):
            return self._finished(started, on_resolve, caller, args)
        task, cont = started
        return _PendingHostCall(self, task, cont, on_resolve, caller, args).cancel

    def start_awaitable(
        self, aw: Any, on_resolve: OnResolve, caller: InstanceState | None, args: list[Any]
    ) -> OnCancel:
        """Another awaitable: an asyncio future already done answers at once."""
        if isinstance(aw, asyncio.Future) and aw.done():
            if aw.cancelled():
                failure: BaseException = asyncio.CancelledError(
                    "the host returned a cancelled future"
                )
                return self._finished(_Finished(None, failure), on_resolve, caller, args)
            failure_or_none = aw.exception()
            value = aw.result() if failure_or_none is None else None
            return self._finished(_Finished(value, failure_or_none), on_resolve, caller, args)
        task = asyncio.ensure_future(aw)
        return _PendingHostCall(self, task, None, on_resolve, caller, args).cancel

    def _finished(
        self,
        done: _Finished,
        on_resolve: OnResolve,
        caller: InstanceState | None,
        args: list[Any],
    ) -> OnCancel:
        exc = done.exc
        if exc is None:
            on_resolve([done.value] if self.has_result else [])
            return _no_cancel
        raise self.fail(caller, exc, args) from exc


class _PendingHostCall:
    """A host function call that did not settle at once: a host operation of the store.

    It counts as host work (the store is not deadlocked while it runs)
    until it settles or, under ``discard``/``abort``, until the guest
    cancels it.
    """

    __slots__ = (
        "args",
        "caller",
        "cont",
        "context",
        "counted",
        "discarded",
        "on_resolve",
        "requested",
        "settled",
        "spec",
        "task",
    )

    def __init__(  # noqa: PLR0917 (one construction site, all state)
        self,
        spec: _HostFuncSpec,
        task: asyncio.Future[Any],
        cont: _Continuation | None,
        on_resolve: OnResolve,
        caller: InstanceState | None,
        args: list[Any],
    ) -> None:
        self.spec = spec
        self.task = task
        self.cont = cont
        self.on_resolve = on_resolve
        self.caller = caller
        # kept only for on_fail: the host holds them meanwhile anyway
        self.args: list[Any] | None = args if spec.on_fail is not None else None
        self.settled = False
        self.discarded = False
        self.requested = False
        self.counted = True
        spec.driver.store.begin_host_work()
        if cont is None:
            task.add_done_callback(self.done)
        else:
            # the coroutine's value is applied inside the task's last step
            # (:meth:`finish`); any other ending goes through ``done``
            cont.pending = self
            self.context = contextvars.copy_context()

    def done(self, t: asyncio.Future[Any]) -> None:
        """The host operation settled: resolve or fail the call, run what it readied."""
        spec = self.spec
        try:
            if self.discarded:
                if not t.cancelled():
                    t.exception()  # consumed: the guest renounced the call, nobody to tell
                return
            if self.settled:
                return  # applied by finish() already
            self.settled = True
            if t.cancelled():
                if self.requested:
                    self.on_resolve(None)
                    return
                exc: BaseException | None = asyncio.CancelledError(
                    "the host task was cancelled by someone else"
                )
            else:
                exc = t.exception()
                if exc is None:
                    self._resolve(t.result())
                    return
            assert exc is not None
            spec.fail(self.caller, exc, self.args)
        finally:
            self._release()

    def _resolve(self, value: Any) -> None:
        try:
            self.on_resolve([value] if self.spec.has_result else [])
        except Exception as failure:  # the result could not be lowered
            self.spec.fail(self.caller, failure, None)

    def _release(self) -> None:
        """No longer host work of the store: run the threads the outcome readied."""
        self.args = None
        if self.counted:
            self.counted = False
            driver = self.spec.driver
            store = driver.store
            assert store.host_pending > 0
            store.host_pending -= 1
            driver.run_ready()

    def finish(self, value: Any) -> None:
        """The coroutine returned ``value`` in a step of its task (called from that step).

        Resolves the call and runs the threads it readied right away, in the
        loop iteration the coroutine finished in (no done-callback hop):
        with no current task and in the context the call started in, as a
        done-callback of the task would have.
        """
        if self.discarded:
            return  # the guest renounced the call: the value goes nowhere
        if self.settled:
            return
        self.settled = True
        task: Any = self.task  # the coroutine's own asyncio.Task
        loop = task.get_loop()
        _leave_task(loop, task)
        try:
            self.context.run(self._finish_now, value)
        finally:
            _enter_task(loop, task)

    def _finish_now(self, value: Any) -> None:
        try:
            self._resolve(value)
        finally:
            self._release()

    def watch(self) -> None:
        """The coroutine ended otherwise (raised, cancelled): ``done`` applies it."""
        self.task.add_done_callback(self.done, context=self.context)

    def cancel(self, _requester: InstanceState | None) -> None:
        """The guest's cancellation request (see :meth:`Driver.host_func_inst`)."""
        if self.settled or self.discarded:
            return
        mode = self.spec.mode
        if mode == "ignore":
            return
        if mode == "cancel":
            if not self.requested:
                self.requested = True
                asyncio.get_running_loop().call_soon(self._cancel_task)
            return
        # discard (A23): resolved as cancelled now; the store no longer waits on it
        self.discarded = True
        self.args = None
        if self.counted:
            self.counted = False
            store = self.spec.driver.store
            assert store.host_pending > 0
            store.host_pending -= 1
        self.on_resolve(None)
        if mode == "abort":
            asyncio.get_running_loop().call_soon(self._cancel_task)

    def _cancel_task(self) -> None:
        cont = self.cont
        if cont is not None and not cont.started:
            # the task has not taken over the coroutine yet: a cancellation now
            # could never reach it, so ask again one iteration later
            asyncio.get_running_loop().call_soon(self._cancel_task)
            return
        self.task.cancel()


class _Finished:
    """A coroutine that finished in its eager first step."""

    __slots__ = ("exc", "value")

    def __init__(self, value: Any, exc: BaseException | None) -> None:
        self.value = value
        self.exc = exc


class _Continuation:
    """Drives a coroutine from where its eager first step left it (3.11, no eager tasks).

    The task created for the call runs this object as its coroutine (it is
    registered as a :class:`collections.abc.Coroutine`): the first step
    hands the task what the coroutine yielded in the eager step (a future to
    wait on), or resumes it at once after a bare yield (``asyncio.sleep(0)``:
    the loop has turned since); later steps forward what the task sends or
    throws, so cancellation reaches the host coroutine at its pending
    ``await``. When the coroutine returns, the pending call (``pending``) is
    settled from inside that same step; when it raises, the call is settled
    by a done-callback of the task.
    """

    __slots__ = ("coro", "finished", "first", "pending", "started")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.first: Any = None
        self.finished = False
        self.started = False
        self.pending: _PendingHostCall | None = None

    def send(self, sent: Any) -> Any:
        if not self.started:
            self.started = True
            if self.finished:
                raise StopIteration(None)
            first, self.first = self.first, None
            if first is not None:
                return first  # the future the eager step waits on
        try:
            return self.coro.send(sent)
        except StopIteration as stop:
            self._returned(stop.value)
            raise
        except BaseException:
            self._raised()
            raise

    def throw(self, exc: BaseException, *_legacy: Any) -> Any:
        assert not _legacy, "the task throws exception instances"
        self.started = True
        self.first = None
        try:
            return self.coro.throw(exc)
        except StopIteration as stop:
            self._returned(stop.value)
            raise
        except BaseException:
            self._raised()
            raise

    def close(self) -> None:
        self.coro.close()

    def __await__(self) -> Generator[Any, Any, Any]:
        raise TypeError("a host call continuation is run by its task, not awaited")

    # what asyncio's task repr reads: the host coroutine's name, code and frame
    @property
    def __name__(self) -> str:
        return str(getattr(self.coro, "__qualname__", None) or type(self.coro).__name__)

    @property
    def cr_code(self) -> Any:
        return getattr(self.coro, "cr_code", None)

    @property
    def cr_frame(self) -> Any:
        return getattr(self.coro, "cr_frame", None)

    @property
    def cr_running(self) -> bool:
        return bool(getattr(self.coro, "cr_running", False))

    def _returned(self, value: Any) -> None:
        self.finished = True
        pending = self.pending
        if pending is not None:
            self.pending = None
            pending.finish(value)

    def _raised(self) -> None:
        self.finished = True
        pending = self.pending
        if pending is not None:
            self.pending = None
            pending.watch()


Coroutine.register(_Continuation)  # asyncio.Task accepts it as its coroutine


def _eager_start(
    loop: asyncio.AbstractEventLoop | None, coro: Coroutine[Any, Any, Any], name: str
) -> _Finished | tuple[asyncio.Future[Any], _Continuation | None]:
    """Run the first step of a host coroutine now, as Python 3.12's eager tasks do.

    The step runs in a copy of the current context, with the task that will
    own the coroutine as the loop's current task (``asyncio.timeout`` and
    ``TaskGroup`` bind to it). A coroutine that finishes in that step needs
    no loop iteration: its value or exception is returned as
    :class:`_Finished` (``KeyboardInterrupt`` and ``SystemExit`` propagate).
    One that suspends continues in its task (named after the import).
    """
    if loop is None:
        # no event loop (a call driven synchronously): it must finish at once
        try:
            coro.send(None)
        except StopIteration as stop:
            return _Finished(stop.value, None)
        except Exception as exc:
            return _Finished(None, exc)
        coro.close()
        raise RuntimeError(f"host import {name} suspended, but no event loop is running")
    if _EAGER_TASKS:
        task: asyncio.Future[Any] = asyncio.Task(  # type: ignore[call-arg,unused-ignore]
            coro, loop=loop, name=name, eager_start=True
        )
        if not task.done():
            return task, None
        if task.cancelled():
            return _Finished(None, asyncio.CancelledError("the host coroutine cancelled itself"))
        failure = task.exception()
        return _Finished(None if failure is not None else task.result(), failure)
    cont = _Continuation(coro)
    ctx = contextvars.copy_context()
    task = asyncio.Task(cast("Coroutine[Any, Any, Any]", cont), loop=loop, name=name, context=ctx)
    outer = _current_task(loop)
    if outer is not None:
        _leave_task(loop, outer)
    _enter_task(loop, task)
    try:
        cont.first = ctx.run(coro.send, None)
    except StopIteration as stop:
        cont.finished = True
        return _Finished(stop.value, None)
    except (KeyboardInterrupt, SystemExit):
        cont.finished = True
        raise
    except BaseException as exc:
        cont.finished = True
        return _Finished(None, exc)
    finally:
        _leave_task(loop, task)
        if outer is not None:
            _enter_task(loop, outer)
    return task, cont


_EAGER_TASKS = sys.version_info >= (3, 12)
_current_task = asyncio.current_task
# private asyncio API (stable since 3.7): the eager step makes the task current
_enter_task = asyncio.tasks._enter_task
_leave_task = asyncio.tasks._leave_task
