"""Executing a plan on the 0.3 task model (architecture.md §4,
python-mapping.md §4; CanonicalABI.md §``canon lift``, §``canon lower``).

A plan with async features (async lifts or lowers, async-typed functions,
task-model built-ins, ``stream``/``future`` values) or with imports marked
``suspending()`` runs in a store with parkable calls: every guest entry is
an activation of the concurrency layer on a wasmtime fiber, scheduled by one
:class:`~polyengine.concurrency.Driver` per instantiation on the running
asyncio loop. :class:`TaskModel` builds, for a
:class:`~polyengine.instance._runtime.ComponentRuntime`:

* the :class:`~polyengine.concurrency.CanonLift` of each ``canon lift``
  (callback or stackful when ``async``);
* lowered host imports: an ``async func`` import (coroutine function or
  plain function) and a ``suspending()``-marked sync import run as host
  functions of the driver, the call parking the guest until they settle; an
  unmarked sync import keeps the plain trampoline;
* guest→guest adapters as ``canon lower`` of the callee's lift;
* every canonical built-in (:mod:`~polyengine.instance._builtins`).

Exports are awaited through :class:`AsyncExportCall`.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Awaitable, Callable, Sequence
from threading import get_ident
from types import AsyncGeneratorType, CoroutineType, FrameType, GeneratorType, ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from polyengine import engine
from polyengine.abi.compile import AsyncValueHooks
from polyengine.abi.functions import LiftedFunc, LoweredFunc
from polyengine.concurrency import (
    CanonLift,
    CanonLower,
    Driver,
    FuncInst,
    InstanceState,
    Store,
    TaskModelHooks,
    canon_lift,
    canon_lower,
    lift_func,
    run_to_completion,
)
from polyengine.concurrency.driver import CancelMode
from polyengine.concurrency.engine_seam import (
    builtin_host_func,
    engine_core,
    no_current_task,
    plain_builtin_entry,
    plain_in_bulk,
)
from polyengine.concurrency.glue import canon_lift_from_abi, canon_lower_from_abi
from polyengine.concurrency.hostfunc import host_lower_async
from polyengine.concurrency.lift import canon_lower_async
from polyengine.concurrency.reentry import ON_STACK, check_not_on_stack
from polyengine.concurrency.thread import CoreVal, Thread
from polyengine.concurrency.traps import Trap as ConcurrencyTrap
from polyengine.concurrency.traps import TrapCode, ctrap_if
from polyengine.instance._builtins import ReturnKey, builtin_signature, task_model_builtin
from polyengine.instance._features import _has_async_value, needs_task_model
from polyengine.instance._hostlift import HostLift
from polyengine.instance._perplan import builtin_is_async
from polyengine.translate import plan as pln
from polyengine.types import model as m
from polyengine.types.layout import contains_borrow
from polyengine_protocol import (
    Trap,
    is_future,
    is_stream,
)

if TYPE_CHECKING:
    from polyengine.instance._runtime import ComponentRuntime

__all__ = ["AsyncExportCall", "FutureSource", "HostValueHooks", "TaskModel", "needs_task_model"]


class FutureSource:
    """An awaitable that an import returned as its ``future`` result (A12), kept unawaited."""

    __slots__ = ("awaitable",)

    def __init__(self, awaitable: Awaitable[Any]) -> None:
        self.awaitable = awaitable


class HostValueHooks(AsyncValueHooks, Protocol):
    """The host side's stream, future and error-context values of one store.

    The embed layer makes them (host ``Stream``/``Future`` handles) and hands
    the factory down at construction; the task model calls them when a value
    crosses to or from the host, and tells them when an instance is poisoned
    (embedder-api A7).
    """

    #: (resource type of an index, host resource table), for stream<own<R>> (A13)
    resources: Callable[[], tuple[Callable[[int], Any], Any]] | None

    def on_poison(self, inst: InstanceState, trap: BaseException) -> None: ...


class HostImportLower(Protocol):
    """The one lower of a host import (``instance._hostlower.HostLower``), as the task
    model runs it (CanonicalABI.md §``canon lower``)."""

    #: the import's name in traps (``wasi:cli/stdout@0.2.0#get-stdout``)
    where: str
    #: marked ``suspending()``: a sync import that may park its caller
    marked: bool

    def prepare(self) -> None: ...

    def lift_params(self, scope: Any, flat: Sequence[CoreVal]) -> list[Any]: ...

    def lower_results(
        self, scope: Any, result: list[Any], flat: Sequence[CoreVal]
    ) -> list[CoreVal]: ...

    def lower_result(self, value: Any, flat: Sequence[CoreVal]) -> None: ...

    def host_callable(self) -> Callable[..., Any]: ...


#: makes the host values of one store, driven by its driver
HostValuesFactory = Callable[[Store, Driver], HostValueHooks]


class TaskModel:
    """The task-model half of a :class:`ComponentRuntime` (see the module docstring)."""

    def __init__(self, rt: ComponentRuntime) -> None:
        self.rt = rt
        self.store = Store()
        if rt.limits is not None:
            self.store.max_stackful = rt.limits.max_stackful
        self.driver = Driver(self.store)
        self.states = [InstanceState(self.store, rec.ci, record=rec) for rec in rt.records]
        for rec, state in zip(rt.records, self.states, strict=True):
            rec.tasks = state
        self.hooks = TaskModelHooks()
        self.host_values = rt.host_values(self.store, self.driver)
        self.host_values.resources = lambda: (rt.resource_types.__getitem__, rt.host_resources)
        #: true while core instances are instantiated (start functions run)
        self.in_start = False
        # keyed by the lift's identity (the plan keeps it alive): hashing a
        # plan dataclass walks all of it, on every export call
        self._lifts: dict[tuple[int, str], CanonLift] = {}
        self._pinned: list[pln.Lift] = []  # the lifts keyed by id stay alive
        self._func_insts: dict[pln.Lift, FuncInst] = {}
        self.store.on_poison.append(self.host_values.on_poison)

    # -- lifts ---------------------------------------------------------------------------

    def lift(self, lift: pln.Lift, side: str, values: LiftedFunc | None = None) -> CanonLift:
        """The :class:`CanonLift` of ``lift`` with values for ``side`` (``host``/``guest``).

        ``values`` are the compiled values of the host side's lift
        (:class:`~polyengine.instance._hostlift.HostLift`), which lowers the
        host's arguments itself before the task starts.
        """
        key = (id(lift), side)
        found = self._lifts.get(key)
        if found is not None:
            return found
        rt = self.rt
        o = lift.options
        ro = rt.resolve_options(o, side=side)
        if values is None:
            values = LiftedFunc.compile(
                ro.compiler, lift.type, is_async=o.is_async, callback=o.callback is not None
            )
        lf = canon_lift_from_abi(
            values,
            ro.opts,
            self.states[o.instance],
            engine_core(rt.resolve_func(lift.func)),
            callback=None if o.callback is None else engine_core(rt.resolve_func(o.callback)),
            post_return=(
                None if o.post_return is None else engine_core(rt.resolve_func(o.post_return))
            ),
        )
        lf.return_key = ReturnKey(rt.return_key(o, lift.type.result), side)
        if side == "host":
            # the host's arguments are lowered before the call starts, so
            # embedder misuse raises in the caller and never poisons
            lf.lower_args = _take_prelowered
        self._lifts[key] = lf
        self._pinned.append(lift)
        return lf

    def func_inst(self, lift: pln.Lift) -> FuncInst:
        """The callable component function of a lift, for guest callers."""
        found = self._func_insts.get(lift)
        if found is None:
            found = self._func_insts[lift] = lift_func(self.lift(lift, "guest"))
        return found

    # -- trampolines ---------------------------------------------------------------------------

    def _lower_trampoline(
        self,
        tr: pln.LowerImport | pln.Adapter,
        build: Callable[[], CanonLower],
        *,
        defer: bool = True,
        never_parks: bool = False,
    ) -> engine.CoreFunc:
        params, results = self.rt.lowered_core_type(tr)
        built: CanonLower | None = None
        if never_parks:
            # an async lower of a host function never blocks: a plain host function
            store = self.store

            def lower_async(args: Sequence[CoreVal]) -> list[CoreVal]:
                nonlocal built
                if built is None:
                    built = build()
                thread = store.current
                if thread is None:
                    no_current_task("a lowered import")
                return canon_lower_async(built, thread, list(args))

            return engine.define_host_func(self.rt.store, params, results, lower_async)

        def lower(thread: Thread, args: list[CoreVal]) -> Any:
            nonlocal built
            if built is None:
                built = build()
            return canon_lower(built, thread, args)

        return builtin_host_func(self.rt.store, self.store, params, results, lower, defer=defer)

    def adapter(self, a: pln.Adapter) -> engine.CoreFunc:
        """A guest→guest call through the task model (sync or async on either side)."""

        def build() -> CanonLower:
            ro = self.rt.resolve_options(a.options, side="guest")
            values = LoweredFunc.compile(ro.compiler, a.type, is_async=a.options.is_async)
            callee = self.func_inst(a.lift)
            return canon_lower_from_abi(values, ro.opts, self.states[a.options.instance], callee)

        return self._lower_trampoline(a, build)

    def lower_import(
        self,
        tr: pln.LowerImport,
        steps: HostImportLower,
        *,
        defer_cancel: bool = False,
        abortable: bool = False,
    ) -> engine.CoreFunc:
        """A host import called through the task model (it may park its caller).

        The task-model variant of the import's one lower (``steps``, the
        embed layer's): the same lifting of the guest's arguments, host call
        and lowering of the result as the in-place trampoline, with the host
        callable run as a host function of the driver, so that an awaitable
        it returns parks the guest (or leaves the subtask pending) until it
        settles.

        A guest's cancellation of the call discards it (embedder-api A23):
        the subtask resolves as cancelled at once and the host's late
        settlement (value or failure) is dropped unreported; the host
        coroutine keeps running unless the import is ``abortable()``, whose
        asyncio task is then cancelled one loop iteration after the cancel
        built-in returns (A24, python-mapping.md §4). A
        ``defer_cancel()``-marked import ignores the request and runs to
        completion.
        """
        ft = tr.type
        where = steps.where
        mode: CancelMode = "ignore" if defer_cancel else "abort" if abortable else "discard"
        if (
            tr.options.is_async
            and not steps.marked
            and not contains_borrow(ft)
            and not any(_has_async_value(t) for t in ft.param_types())
        ):
            return self._host_lower_async(tr, steps, mode)
        func_inst = self.driver.host_func_inst(
            steps.host_callable(),
            name=where,
            has_result=ft.result is not None,
            cancel=mode,
            on_fail=(
                _release_abandoned if any(_has_async_value(t) for t in ft.param_types()) else None
            ),
        )
        if steps.marked and not ft.is_async:
            inner = func_inst

            def guarded(on_start: Any, on_resolve: Any, caller: Any) -> Any:
                ctrap_if(
                    self.in_start,
                    TrapCode.CANNOT_BLOCK_SYNC,
                    f"suspending import {where} reached from a start function",
                )
                return inner(on_start, on_resolve, caller)

            func_inst = guarded

        def build() -> CanonLower:
            steps.prepare()  # on the first call: the options resolve once
            return CanonLower(
                callee=func_inst,
                ft=ft,
                lift_params=steps.lift_params,
                lower_results=steps.lower_results,
                async_=tr.options.is_async,
            )

        # a host callee starts no core call of this store, so the lower runs
        # on the caller's fiber: a call that settles at once never parks, and
        # an async lower never parks at all (a pending host call becomes a
        # subtask), so it is a plain host function
        return self._lower_trampoline(tr, build, defer=False, never_parks=tr.options.is_async)

    def _host_lower_async(
        self, tr: pln.LowerImport, steps: HostImportLower, mode: CancelMode
    ) -> engine.CoreFunc:
        """An async lower of a host import that settles at once without a subtask."""
        lower = CanonLower(_unused_callee, tr.type, steps.lift_params, steps.lower_results, True)
        fn = steps.host_callable()
        body = host_lower_async(
            self.driver, fn, lower, steps.lower_result, name=steps.where, cancel=mode
        )
        params, results = self.rt.lowered_core_type(tr)  # (an async lower)
        return engine.define_host_func(self.rt.store, params, results, body)

    def builtin(self, b: pln.Builtin) -> engine.CoreFunc:
        fn, defer = task_model_builtin(self.rt, b)
        params, results = builtin_signature(b)
        return builtin_host_func(
            self.rt.store, self.store, params, results, fn, defer=defer, kind=b.kind,
            is_async=builtin_is_async(b),
        )

    def plain_builtin(self, b: pln.Builtin) -> engine.HostFunction:
        """The body of built-in ``b`` that never parks (``plain_builtin_signature``),
        run by a plain host function of the plan's shared signatures and built on
        its first call: what :func:`builtin_host_func` runs for such a kind."""
        fn, defer = task_model_builtin(self.rt, b)
        assert not defer and plain_in_bulk(b.kind, builtin_is_async(b)), b.kind
        return plain_builtin_entry(self.store, b.kind, fn)

    def guest_dtor(self, ref: pln.CoreDef, instance: int) -> Callable[[int], None]:
        """A guest destructor run as a synchronous task of its own instance.

        Called by ``resource.drop`` from a guest (a nested call of the current
        thread) or from the host (driven to completion at once).
        """
        lifts: list[CanonLift] = []

        def lift() -> CanonLift:
            if not lifts:
                lifts.append(
                    CanonLift(
                        ft=m.FuncType((("rep", m.U32()),), None, False),
                        inst=self.states[instance],
                        callee=engine_core(self.rt.resolve_func(ref)),
                        lower_args=_flat_args,
                    )
                )
            return lifts[0]

        def dtor(rep: int) -> None:
            current = self.store.current
            if current is None:
                run_to_completion(lift(), [rep])
                return
            # resource.drop has entered the destructor's instance already
            done: list[object] = []
            lf = lift()
            try:
                canon_lift(lf, lambda: [rep], done.append, current.inst)
            except ConcurrencyTrap as trap:
                self.store.poison(lf.inst, trap)
                raise
            ctrap_if(not done, TrapCode.CANNOT_BLOCK_SYNC, "a resource destructor blocked")

        return dtor

    def close(self) -> None:
        """Fail the export calls in flight, then abandon every parked thread.

        The lifts and the host values then let go of what refers back to the
        runtime (its options and core functions, its resource types), so a
        closed instance is freed by reference counting.
        """
        self.driver.close("the component instance was closed")
        self.store.close()
        self._lifts.clear()
        self._func_insts.clear()
        self.store.on_poison.clear()
        self.host_values.resources = None


def _flat_args(_task: Any, args: list[Any]) -> list[CoreVal]:
    return [int(a) for a in args]


class _BorrowScope:
    """The borrow count of a call whose arguments were lowered before its task existed.

    Borrowed handles point at this scope; once the task exists the count is
    the task's own (``num_borrows`` reads and writes it).
    """

    __slots__ = ("_count", "task")

    def __init__(self) -> None:
        self._count = 0
        self.task: Any = None

    @property
    def num_borrows(self) -> int:
        return int(self.task.num_borrows) if self.task is not None else self._count

    @num_borrows.setter
    def num_borrows(self, n: int) -> None:
        if self.task is not None:
            self.task.num_borrows = n
        else:
            self._count = n

    def bind(self, task: Any) -> None:
        task.num_borrows += self._count
        self.task = task


class _Prelowered:
    """The flat arguments of a host call, lowered before its task started."""

    __slots__ = ("flat", "scope")

    def __init__(self, flat: list[CoreVal], scope: _BorrowScope) -> None:
        self.flat = flat
        self.scope = scope


def _unused_callee(*_args: Any) -> Any:
    raise AssertionError("the host function is called by host_lower_async")


def _take_prelowered(task: Any, args: list[Any]) -> list[CoreVal]:
    (pre,) = args
    assert isinstance(pre, _Prelowered)
    pre.scope.bind(task)
    return pre.flat


def _release_abandoned(args: list[Any], exc: BaseException) -> None:
    """Drop the stream and future arguments a trapping host import abandoned (A7).

    embedder-api A7: a host import that traps drops the stream/future
    handles it received and did not keep, so their peers settle (a writer
    sees the reader gone) now, not when the trap's traceback is collected.
    A handle the host kept is left alone: one referenced from anything but
    the failed call's own frames (an object, a container, a closure, a
    coroutine or task still running) is the host's to use.
    """
    handles: list[Any] = []
    _collect_handles(args, handles, 0)
    if not handles:
        return
    ignore: set[int] = {id(args), id(handles)}
    seen_tb: set[int] = set()
    _traceback_frames(exc, ignore, seen_tb)
    frame: FrameType | None = sys._getframe()
    while frame is not None:  # the machinery reporting the failure (this call's frames)
        ignore.add(id(frame))
        frame = frame.f_back
    for handle in handles:
        if not _held_elsewhere(handle, ignore):
            handle.drop()


def _collect_handles(v: Any, out: list[Any], depth: int) -> None:
    """The host stream/future handles in a lifted argument value (records, lists, variants)."""
    if is_stream(v) or is_future(v):
        out.append(v)
    elif depth < 64:
        if isinstance(v, list | tuple):
            for x in v:
                _collect_handles(x, out, depth + 1)
        elif isinstance(v, dict):
            for x in v.values():
                _collect_handles(x, out, depth + 1)


def _traceback_frames(exc: BaseException | None, ignore: set[int], seen: set[int]) -> None:
    """Add the frames ``exc`` (and the exceptions chained to it) unwound to ``ignore``."""
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            ignore.add(id(tb.tb_frame))
            tb = tb.tb_next
        if exc.__cause__ is not None:
            _traceback_frames(exc.__cause__, ignore, seen)
        exc = exc.__context__


#: how far up the referrers of a handle the ownership search looks
_HOLDER_DEPTH = 8
_HOLDER_WIDTH = 256
#: referrers that hold what they refer to (live code, or reachable for good)
_HOLDERS = (FrameType, CoroutineType, GeneratorType, AsyncGeneratorType, ModuleType, type)


def _held_elsewhere(handle: object, ignore: set[int]) -> bool:
    """Whether something outside ``ignore`` (the failed call's frames) holds ``handle``.

    A walk up the referrers, level by level: a frame that is not ignored,
    a suspended coroutine or generator, a module or a class holds it; so
    does anything the garbage collector cannot see (an object no tracked
    object refers to: a C-level or running-frame reference); a plain object
    or container holds it when something holds that. The walk gives up
    (and says held, the safe answer) past a depth or width bound.
    """
    visited: set[int] = {id(handle)}
    frontier: list[Any] = [handle]
    for _ in range(_HOLDER_DEPTH):
        found = gc.get_referrers(*frontier)
        ignore.add(id(frontier))
        ignore.add(id(found))
        covered: set[int] = set()
        nxt: list[Any] = []
        try:
            for r in found:
                key = id(r)
                if key == id(frontier) or key == id(found) or _is_call_args(r, frontier):
                    continue
                covered.update(map(id, gc.get_referents(r)))
                if key in visited or key in ignore:
                    continue
                visited.add(key)
                if isinstance(r, _HOLDERS):
                    return True
                nxt.append(r)
            if any(id(x) not in covered for x in frontier):
                return True  # referenced from where the collector cannot look
        finally:
            ignore.discard(id(frontier))
            ignore.discard(id(found))
            del found
        if not nxt:
            return False
        if len(nxt) > _HOLDER_WIDTH:
            return True
        frontier = nxt
    return True


def _is_call_args(r: object, frontier: list[Any]) -> bool:
    """Whether ``r`` is the argument tuple of the ``gc.get_referrers(*frontier)`` call
    itself (Python 3.13 lists it among the referrers)."""
    return (
        type(r) is tuple
        and len(r) == len(frontier)
        and all(a is b for a, b in zip(r, frontier, strict=True))
    )


def _refuse_sync_reentrance(current: Thread, lf: CanonLift, name: str) -> None:
    """Trap when the host calls into the instance of the synchronous task running now.

    A synchronous task holds its instance (and the ancestors it entered)
    until it returns (CanonicalABI.md §``canon lift``, Component Invariant
    #2), so a host import it called cannot enter that instance again: the
    call is refused at once, as on the plain synchronous path, rather than
    deferred to a loop iteration in which the caller still holds it. A call
    into another instance, or made while an ``async`` task runs, is deferred.
    """
    task = current.task
    if task.async_:
        return
    held = task.inst.ci.self_and_ancestors()
    ci = lf.inst.ci
    if ci in held:
        raise Trap(
            f"cannot enter component instance {ci.name} to call {name}: it is already entered",
            code="cannot-enter",
        )


class AsyncExportCall:
    """A lifted export called from the host through the task model.

    The task-model activation of the one host lift
    (:class:`~polyengine.instance._lift.HostLift`): the same steps as the
    in-place :class:`~polyengine.instance._lift.ExportCall`, with the core
    function run as a task the store's driver starts and the call awaits
    (or, in :meth:`call_sync`, drives to completion at once).
    """

    __slots__ = ("_lf", "_steps", "lift", "name", "tasks")

    def __init__(self, tasks: TaskModel, lift: pln.Lift, name: str) -> None:
        self.tasks = tasks
        self.lift = lift
        self.name = name
        self._steps: HostLift | None = None
        self._lf: CanonLift | None = None

    def _prepare(self) -> tuple[HostLift, CanonLift]:
        """The lift's steps and its task-model lift, made on the first call (from the
        instance's own thread only: resolving the options reads its store)."""
        steps = self._steps
        lf = self._lf
        if steps is None or lf is None:
            self.tasks.rt.check_thread(self.name)
            steps = HostLift(self.tasks.rt, self.lift, self.name)
            lf = self.tasks.lift(self.lift, "host", steps.values)
            self._steps, self._lf = steps, lf
        return steps, lf

    def _lower(self, steps: HostLift, lf: CanonLift, args: Any) -> tuple[list[Any], Any]:
        """The host's arguments lowered before the task exists, into a borrow scope it
        takes over as it starts (:func:`_take_prelowered`); the lends to release.

        Raises the lowering error (``TypeError``, ``OverflowError``,
        ``InvalidHandleError``...) for bad arguments; a trap in the guest's
        ``realloc`` poisons the instance.
        """
        if not lf.inst.may_enter_from(None):
            raise Trap("cannot enter component instance", code="cannot-enter")
        scope = _BorrowScope()
        try:
            flat, lent = steps.lower(steps.context(scope), list(args))
        except BaseException as exc:
            steps.fail(exc)
        return [_Prelowered(flat, scope)], lent

    async def __call__(self, args: Any) -> Any:
        """Call the export and await its result value.

        Cancelling the await (``task.cancel()``, an ``asyncio.wait_for``
        timeout) requests the cancellation of the guest's task
        (CanonicalABI.md §``Task.request_cancellation``): a guest waiting
        cancellably sees ``TASK_CANCELLED`` and may confirm it with
        ``task.cancel``; one that returns anyway (or cannot see the request)
        finishes on its own and its result is dropped. The await raises
        ``CancelledError`` at once either way; a trap the guest raises later
        poisons its instance.

        Called while a guest of this store runs (the eager first step of a
        host coroutine, python-mapping.md §4), the call starts one loop
        iteration later, once the guest is off the engine.
        """
        steps, lf = self._steps, self._lf
        if steps is None or lf is None:
            steps, lf = self._prepare()
        if steps.rec.poisoned is not None or get_ident() != steps.owner:
            steps.enter(held=False)
        tasks = self.tasks
        current = tasks.store.current
        if current is not None:
            _refuse_sync_reentrance(current, lf, self.name)
            await asyncio.sleep(0)
            steps.enter(held=False)
        if ON_STACK.get():
            try:
                check_not_on_stack(lf.inst, self.name)
            except ConcurrencyTrap as trap:
                steps.reraise(trap)
        begin = steps.begin
        if begin is not None:
            begin()
        else:
            tasks.rt.store.note_task()
        lowered, lent = self._lower(steps, lf, args)
        call, fut = tasks.driver.start(lf, lowered)
        try:
            results = await fut
        except asyncio.CancelledError:
            # the embedder gave up on the call (``fut`` is cancelled with it):
            # request the guest task's cancellation; it may still finish, and
            # a later trap only poisons
            if call is not None:
                call.cancel()
            raise
        except ConcurrencyTrap as trap:
            steps.reraise(trap)
        finally:
            if lent:
                steps.release(lent)
        if call is not None:
            # the callee task may outlive the call (work after task.return):
            # it must not keep the host's result values alive
            call.result = None
        return results[0] if results else None

    def call_sync(self, args: Any) -> Any:
        """Run the export to completion now (resource constructors): nothing may wait."""
        steps, lf = self._prepare()
        steps.enter(held=False)
        begin = steps.begin
        if begin is not None:
            begin()
        lowered, lent = self._lower(steps, lf, args)
        try:
            results = run_to_completion(lf, lowered)
        except ConcurrencyTrap as trap:
            steps.reraise(trap)
        except RuntimeError as exc:
            raise Trap(
                f"{self.name} did not complete synchronously: {exc}", code="cannot-block-sync"
            ) from exc
        finally:
            if lent:
                steps.release(lent)
        return results[0] if results else None
