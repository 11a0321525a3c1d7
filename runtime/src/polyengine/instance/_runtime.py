"""Executing a Plan: one top-level component instantiation (architecture.md §2).

:class:`ComponentRuntime` compiles the plan's core modules, creates the
per-instance state of every flattened component instance, builds the
trampolines (lowered host imports, guest→guest adapters, canonical
built-ins) and instantiates the core instances in plan order in one
engine store. Exports are then called through :meth:`ComponentRuntime.call`.

Canonical options are resolved lazily, on a trampoline's first call: the
plan allows a trampoline to name the memory or realloc of a core instance
that is created after the instance importing the trampoline.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Collection, Sequence
from threading import get_ident
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from polyengine import engine
from polyengine.abi.compile import AsyncValueHooks, Compiler
from polyengine.abi.functions import (
    LiftedFunc,
    LoweredFunc,
)
from polyengine.abi.options import CanonicalOptions, LiftLowerContext
from polyengine.abi.resources import (
    CallBorrows,
    CallLenders,
    ComponentInstance,
    ResourceType,
    canon_resource_drop,
    canon_resource_new,
    canon_resource_rep,
)
from polyengine.abi.trap import escaped, fault
from polyengine.errors import LinkError, ThreadRuleError
from polyengine.instance._perplan import (
    lowered_imports,
    options_of_a_kind,
    plain_builtin_signature,
    plain_task_builtins,
)
from polyengine.instance._setup import apply_limits, engine_for, instance_pre
from polyengine.memo import IdentityMemo
from polyengine.translate import plan as pln
from polyengine.translate.artifacts import Artifacts
from polyengine.types.layout import (
    MAX_FLAT_PARAMS,
    PtrType,
    contains,
    flatten_functype,
    flatten_type,
    needs_pointer,
)
from polyengine.types.model import Borrow, FuncType, ValType
from polyengine_protocol import Trap

if TYPE_CHECKING:
    from polyengine.concurrency import Driver, InstanceState, Store
    from polyengine.instance._async import HostValueHooks, HostValuesFactory, TaskModel
    from polyengine.limits import Limits

__all__ = ["ComponentRuntime", "ImportSite"]

CoreVal = int | float


class InstanceRecord:
    """The one state object of a flattened component instance (CanonicalABI.md
    §Component Instances).

    ``ci`` holds the handle table and the ``may_enter``/``may_leave`` flags,
    ``poisoned`` the trap that escaped the instance (entering it afterwards is
    refused), and ``tasks`` the task model's part
    (:class:`~polyengine.concurrency.InstanceState`), created only when the
    plan runs on the task model; that part reads and writes ``poisoned`` here.
    """

    __slots__ = ("ci", "id", "poisoned", "tasks")

    def __init__(self, ci: ComponentInstance, ident: int) -> None:
        self.ci = ci
        self.id = ident
        #: the trap that escaped this instance; entering it afterwards is refused
        self.poisoned: BaseException | None = None
        #: the task model's part of this instance (``None`` on the synchronous path)
        self.tasks: InstanceState | None = None

    def poison(self, trap: BaseException) -> None:
        """``trap`` escaped this instance: entering it is refused from now on."""
        self.poisoned = trap


class ResolvedOptions:
    """Canonical options of one lift/lower, resolved against the live core instances."""

    __slots__ = ("compiler", "opts", "record")

    def __init__(self, opts: CanonicalOptions, compiler: Compiler, record: InstanceRecord) -> None:
        self.opts = opts
        self.compiler = compiler
        self.record = record


class ImportSite(NamedTuple):
    """What a lowered host import's trampoline needs of the instance lowering it.

    The runtime hands it down to the embed layer's trampoline builder, so
    the builder never holds the runtime: ``instance`` is the lowering
    component instance, ``resolve`` its canonical options (resolved on the
    first call, CanonicalABI.md §``canon lower``), ``tasks`` the task model
    when the plan runs on it.
    """

    instance: ComponentInstance
    resolve: Callable[[], ResolvedOptions]
    tasks: TaskModel | None


def _closed_trampolines(_site: ImportSite, _tr: pln.LowerImport) -> engine.HostFunction:
    raise engine.StoreClosedError("the store is closed")


def _closed_dtor(_rep: int) -> None:
    raise engine.StoreClosedError("the store is closed")


def _no_host_values(_store: Store, _driver: Driver) -> HostValueHooks:
    raise AssertionError("the plain synchronous path has no task-model store")


class ComponentRuntime:
    """One instantiated component: its engine store, core instances and per-instance state.

    ``host_imports`` maps a lowered import's path (``("wasi:cli/stdout@0.2.0",
    "get-stdout")``) to the trampoline body the embed layer built for it
    (a function from flat core arguments to flat core results).
    """

    def __init__(
        self,
        artifacts: Artifacts,
        host_trampolines: Callable[[ImportSite, pln.LowerImport], engine.HostFunction],
        *,
        host_resources: Any = None,
        host_resource_dtor: Callable[[int, int], None] | None = None,
        bind_host_resource: Callable[[ResourceType, pln.ResourceType], None] | None = None,
        task_model: bool = False,
        task_lowerer: Callable[[ImportSite, pln.LowerImport], engine.CoreFunc | None] | None = None,
        task_lowered: Callable[[pln.LowerImport], bool] | None = None,
        task_taken: Collection[int] | None = None,
        host_values: HostValuesFactory | None = None,
        limits: Limits | None = None,
        engine_config: engine.EngineConfig | None = None,
    ) -> None:
        plan = artifacts.plan
        self.plan = plan
        self.artifacts = artifacts
        self.limits = limits
        #: the thread that created the runtime, the only one that may call it
        self.owner_thread = get_ident()
        eng = engine_for(limits, engine_config)
        self.store = engine.EngineStore(eng, suspend=task_model)
        #: what every call from the host does first (re-arming per-call limits), if anything
        self.begin_call: Callable[[], None] | None = apply_limits(self.store, limits)
        self.host_resources = host_resources
        if task_model and host_values is None:
            raise ValueError("a task-model runtime needs the host values' factory")
        #: makes the host side's stream/future values of the task model's store
        self.host_values: HostValuesFactory = host_values or _no_host_values
        self.records: list[InstanceRecord] = []
        for ci_plan in plan.component_instances:
            parent = None if ci_plan.parent is None else self.records[ci_plan.parent].ci
            ci = ComponentInstance(parent, ci_plan.path or f"#{ci_plan.id}")
            if limits is not None:
                ci.lift_budget = limits.max_lift_bytes
            self.records.append(InstanceRecord(ci, ci_plan.id))
        self.resource_types: list[ResourceType] = []
        for index, res in enumerate(plan.resources):
            impl = None if res.imported or res.instance is None else self.records[res.instance].ci
            rtype = ResourceType(impl, None, res.name)
            if res.dtor is not None:
                rtype.dtor = self._guest_dtor(res.dtor)
            elif res.imported and host_resource_dtor is not None:
                rtype.dtor = _bind_index(host_resource_dtor, index)
            if res.imported and impl is None and bind_host_resource is not None:
                bind_host_resource(rtype, res)
            self.resource_types.append(rtype)
        # What the host side's shared handle codecs read at call time (``late_resources``).
        for record in self.records:
            record.ci.rtypes = self.resource_types
            record.ci.host_table = host_resources
        self._host_trampolines = host_trampolines
        self._task_lowerer = task_lowerer
        #: which imports ``task_lowerer`` may take (``None``: offer it every one)
        self._task_lowered = task_lowered
        #: the trampoline indices of the imports ``task_lowered`` accepts, when the
        #: caller worked them out (``None``: it is asked of each import)
        self._task_taken = task_taken
        self._option_cache: dict[tuple[pln.CanonOptions, str], ResolvedOptions] = {}
        #: the same by the options object's identity (kept alive with its entry)
        self._option_ids: dict[tuple[int, str], tuple[pln.CanonOptions, ResolvedOptions]] = {}
        #: what an import site's options resolver holds of the runtime (weakly)
        self._weak_self = weakref.ref(self)
        self._sites: dict[int, ImportSite] = {}
        #: the task-model half (``None`` on the plain synchronous path)
        self.tasks: TaskModel | None = None
        if task_model:
            from polyengine.instance._async import TaskModel

            self.tasks = TaskModel(self)
            # what the host side's shared stream/future codecs read at call time
            for record in self.records:
                record.ci.host_async_values = self.tasks.host_values
            for rtype, res in zip(self.resource_types, plan.resources, strict=True):
                if res.dtor is not None and res.instance is not None:
                    rtype.dtor = self.tasks.guest_dtor(res.dtor, res.instance)
        self.core_instances: list[engine.CoreInstance] = []
        # The store-independent part (compiled modules, import wiring) is made once per plan.
        self._linking = instance_pre(artifacts, eng).link(
            self.store, self._host_binding, self._plain_hosts()
        )
        for index, core in enumerate(plan.core_instances):
            self.core_instances.append(self._instantiate_core(index, core))
        if self.tasks is not None:
            self.tasks.in_start = False

    def _instantiate_core(self, index: int, core: pln.CoreInstance) -> engine.CoreInstance:
        tasks = self.tasks
        try:
            if tasks is None:
                return self._linking.instantiate(index)
            from polyengine.concurrency import sync_scope

            tasks.in_start = True
            state = tasks.states[core.component_instance]
            try:
                with sync_scope(state):
                    return self._linking.instantiate(index)
            except BaseException as exc:
                trap = fault(exc)
                if trap is not exc:
                    raise trap from trap.__cause__
                raise
        except engine.CoreTrap as exc:
            raise (f := fault(exc)) from f.__cause__

    # -- resolution --------------------------------------------------------------------

    def resolve(self, item: pln.CoreDef) -> engine.Extern:
        """The live core item a plan reference names."""
        if isinstance(item, pln.CoreExport):
            found = self.core_instances[item.instance].get(item.name)
            if found is None:
                raise LinkError(f"core instance {item.instance} has no export {item.name!r}")
            return found
        if isinstance(item, pln.TrampolineRef):
            return self.trampoline(item.index)
        raise LinkError(
            f"core item {'/'.join(item.path)} is imported from the host as a core "
            f"{item.kind}, which polyengine does not support"
        )

    def resolve_func(self, item: pln.CoreDef) -> engine.CoreFunc:
        ext = self.resolve(item)
        assert isinstance(ext, engine.CoreFunc), ext
        return ext

    def addrtype(self, o: pln.CanonOptions) -> PtrType:
        """The address type of ``o``'s memory: ``"i64"`` for a 64-bit one (memory64).

        A live memory says so itself (the engine asks wasmtime); before its core
        instance exists, the exporting module's signature is read instead. Once
        per plan and memory: every instance of a plan has the same memory types.
        """
        m = o.memory
        if m is None:
            return "i32"
        known = _ADDRTYPES.get(self.plan, _new_table)  # a memory's type is the plan's
        found = known.get(m)
        if found is None:
            if isinstance(m, pln.CoreExport) and m.instance < len(self.core_instances):
                live = self.core_instances[m.instance].get(m.name)
                if isinstance(live, engine.GuestMemory):
                    found = known[m] = "i64" if live.is_64() else "i32"
                    return found
            from polyengine.instance._memtype import memory_addrtype

            found = known[m] = memory_addrtype(self.plan, self.artifacts.component_bytes, m)
        return found

    def resolve_options(
        self, o: pln.CanonOptions, *, host_side: bool | None = None, side: str | None = None
    ) -> ResolvedOptions:
        """Resolve ``o`` into ABI options and a compiler (cached per options and side).

        ``side="host"`` (``host_side=True``) compilers convert resources,
        streams and futures to and from host objects; ``"guest"`` compilers
        (guest-to-guest calls) keep handles as representations and strings as
        guest string values (so the store side can transcode per the spec);
        ``"copy"`` compilers (stream and future element copies, error-context
        messages) decode strings to ``str`` and keep handles as representations.
        """
        if side is None:
            side = "host" if host_side else "guest"
        seen = self._option_ids.get((id(o), side))  # without hashing the options' fields
        if seen is not None and seen[0] is o:
            return seen[1]
        key = (o, side)
        cached = self._option_cache.get(key)
        if cached is not None:
            self._option_ids[(id(o), side)] = (o, cached)
            return cached
        memory = None
        if o.memory is not None:
            mem = self.resolve(o.memory)
            assert isinstance(mem, engine.GuestMemory), mem
            memory = mem
        realloc = None
        if o.realloc is not None:
            realloc = _realloc_of(self.resolve_func(o.realloc))
        post_return = None
        if o.post_return is not None:
            post_return = self.resolve_func(o.post_return).call_raw
        addrtype = self.addrtype(o)
        opts = CanonicalOptions(
            string_encoding=o.string_encoding,  # type: ignore[arg-type]
            addrtype=addrtype,
            memory=memory,
            realloc=realloc,
            post_return=post_return,
            is_async=o.is_async,
        )
        async_values: AsyncValueHooks | None = None
        if self.tasks is not None:
            async_values = self.tasks.host_values if side == "host" else self.tasks.hooks
        compiler = Compiler(
            o.string_encoding,  # type: ignore[arg-type]
            addrtype,
            resource_type=self.resource_types.__getitem__,
            host_resources=self.host_resources if side == "host" else None,
            async_values=async_values,
            guest_strings=side == "guest",
            late_resources=side == "host",
            late_async_values=side == "host" and self.tasks is not None,
        )
        compiler.kernels = engine.compiled_path(self.store)
        ro = ResolvedOptions(opts, compiler, self.records[o.instance])
        self._option_cache[key] = ro
        self._option_ids[(id(o), side)] = (o, ro)
        return ro

    def lender(self, ft: FuncType) -> Any:
        """The host resource table when ``ft``'s parameters lend host objects, else ``None``.

        A host object passed as ``borrow<R>`` of a host-implemented ``R`` is
        registered for the export call only (CanonicalABI.md §"Borrowed
        handles"): the caller brackets the lowering of its arguments with the
        table's ``begin_lending``/``end_lending`` and calls ``release_lent``
        when the call ends.
        """
        host = self.host_resources
        if host is None:
            return None
        types = self.resource_types
        if any(_lends(t, types) for t in ft.param_types()):
            return host
        return None

    def return_key(self, o: pln.CanonOptions, result: ValType | None) -> object:
        """What ``task.return``'s options must share with the lift: encoding and memory.

        Only options the result's lifting uses are compared: a result that
        needs no memory (scalars within the flat limit) ignores them.
        """
        if result is None or not (
            needs_pointer(result) or len(flatten_type(result)) > MAX_FLAT_PARAMS
        ):
            return None
        memory = None if o.memory is None else self.resolve(o.memory)
        return (o.string_encoding, memory)

    def check_thread(self, what: str) -> None:
        """Refuse a call from a thread other than the creator's (the thread rule)."""
        if get_ident() != self.owner_thread:
            raise ThreadRuleError(
                f"{what} was called from another thread than the one that instantiated "
                "its component; the thread rule: an instance is used only from the thread "
                "that created it (its store and event loop live there)"
            )

    def check_enter(self, rec: InstanceRecord, what: str, *, held: bool = True) -> None:
        """Refuse to enter a poisoned or (with ``held``) already-entered instance
        (Component Invariant #2), or one called from another thread (:meth:`check_thread`)."""
        self.check_thread(what)
        if rec.poisoned is not None:
            raise Trap(
                f"cannot enter component instance {rec.ci.name} to call {what}: "
                f"it was poisoned by an earlier trap ({rec.poisoned})",
                code="instance-poisoned",
            )
        if held and not rec.ci.may_enter:
            raise Trap(
                f"cannot enter component instance {rec.ci.name} to call {what}: "
                "it is already entered",
                code="cannot-enter",
            )

    # -- trampolines -------------------------------------------------------------------

    def trampoline(self, index: int) -> engine.CoreFunc:
        """Trampoline ``index`` as a core function of the store (made on first use)."""
        return self._linking.host_func(index)

    def _host_binding(self, index: int) -> engine.CoreFunc | engine.DeferredHost:
        """What trampoline ``index`` is in this store (called once, before its first use).

        A task-model trampoline is a core function of its own; any other is a
        plain host function whose body is built on its first call.
        """
        tr = self.plan.trampolines[index]
        tasks = self.tasks
        if tasks is not None:
            found = self._task_trampoline(tasks, index, tr)
            if found is not None:
                return found
        if isinstance(tr, pln.LowerImport):
            params, results = self._lowered_signature(index, tr)

            def build_import() -> engine.HostFunction:
                return self._host_trampolines(self._import_site(tr), tr)

            return engine.DeferredHost(params, results, build_import)
        if isinstance(tr, pln.Adapter):
            params, results = self.lowered_core_type(tr)
            adapter = self._adapter(tr)
            return engine.DeferredHost(params, results, lambda: adapter)
        fn, bparams, bresults = self._builtin(tr)
        return engine.DeferredHost(tuple(bparams), tuple(bresults), lambda: fn)

    def _plain_hosts(self) -> engine.PlainHosts | None:
        """The lowered imports that are plain host functions in this store, made
        without a binding each: those the task model does not take (the same
        decision as :meth:`_task_trampoline`'s)."""
        sigs = self._plain_signatures()
        if (
            self.tasks is not None
            and self._task_lowerer is not None
            and self._task_taken is not None
        ):
            return engine.PlainHosts(sigs, self._build_plain, self._task_taken)
        taken: set[int] = set()
        if self.tasks is not None and self._task_lowerer is not None:
            lowered = self._task_lowered
            if lowered is None:  # every import is offered to the task model
                taken.update(i for i, _ in lowered_imports(self.plan))
            else:
                taken.update(i for i, tr in lowered_imports(self.plan) if lowered(tr))
        if self.tasks is None:
            # without the task model its built-ins are refused while linking (``_builtin``)
            taken.update(plain_task_builtins(self.plan))
        return engine.PlainHosts(sigs, self._build_plain, taken)

    def _build_plain(self, index: int) -> engine.HostFunction:
        """The body of plain trampoline ``index`` (built on its first call)."""
        tr = self.plan.trampolines[index]
        if isinstance(tr, pln.LowerImport):
            return self._host_trampolines(self._import_site(tr), tr)
        assert isinstance(tr, pln.Builtin)
        if self.tasks is not None and not tr.kind.startswith("resource."):
            return self.tasks.plain_builtin(tr)
        return self._builtin(tr)[0]

    def _plain_signatures(self) -> _PlainSigs:
        """The core signature of each trampoline that is a lowered import, a
        ``resource.new``/``drop``/``rep`` built-in or a task-model built-in that
        never parks (``None``: another), per plan (CanonicalABI.md §"Flattening",
        §"Canonical built-ins"). A lowered import's is the one an earlier
        instance worked out binding it (:meth:`_lowered_signature`, with live
        memories: no module is read); the first instance binds those one by one."""
        plan = self.plan
        lowered = _SIGNATURES.peek(plan)
        if lowered is None:
            lowered = _NO_SIGNATURES
        found = _PLAIN_SIGNATURES.peek(plan)
        if found is not None and found[0] == len(lowered):
            return found[1]
        sigs = tuple(
            lowered.get(i)
            if isinstance(tr, pln.LowerImport)
            else _resource_builtin_signature(plan, tr) or plain_builtin_signature(tr)
            if isinstance(tr, pln.Builtin)
            else None
            for i, tr in enumerate(plan.trampolines)
        )
        _PLAIN_SIGNATURES.put(plan, (len(lowered), sigs))
        return sigs

    def _task_trampoline(
        self, tasks: TaskModel, index: int, tr: pln.Trampoline
    ) -> engine.CoreFunc | None:
        """The task-model trampoline of ``tr`` (``None``: the plain one serves)."""
        if isinstance(tr, pln.Adapter):
            return tasks.adapter(tr)
        if isinstance(tr, pln.Builtin):
            if tr.kind.startswith("resource.") or tr.kind == "unavailable":
                return None
            return tasks.builtin(tr)
        if self._task_lowerer is None or not isinstance(tr, pln.LowerImport):
            return None
        if self._task_taken is not None:
            if index not in self._task_taken:
                return None  # most imports: decided without an import site
        elif self._task_lowered is not None and not self._task_lowered(tr):
            return None
        return self._task_lowerer(self._import_site(tr), tr)

    def _lowered_signature(
        self, index: int, tr: pln.LowerImport
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The core signature of lowered import ``index`` (CanonicalABI.md §"Flattening").

        It depends on the plan alone (the memory's address type included), so
        it is worked out once per plan.
        """
        sigs = _SIGNATURES.get(self.plan, _new_table)
        sig = sigs.get(index)
        if sig is None:
            sig = sigs[index] = self.lowered_core_type(tr)
        return sig

    def lowered_core_type(self, tr: pln.LowerImport | pln.Adapter) -> _CoreSig:
        """The core signature the guest calls ``tr`` with (CanonicalABI.md
        §"Flattening", ``flatten_functype(ft, 'lower')``), once per plan's trampoline:
        it depends on the plan alone (its type, ``async`` and memory's address type)."""
        found = _CORE_TYPES.peek(tr)
        if found is None:
            o = tr.options
            core = flatten_functype(
                tr.type, "lower", is_async=o.is_async, ptr_type=self.addrtype(o)
            )
            found = (tuple(core.params), tuple(core.results))
            _CORE_TYPES.put(tr, found)
        return found

    def _import_site(self, tr: pln.LowerImport) -> ImportSite:
        """What the embed layer's trampoline of host import ``tr`` needs of this runtime
        (one per distinct canonical options: the imports lowered alike share it)."""
        o = options_of_a_kind(self.plan, tr.options)
        site = self._sites.get(id(o))
        if site is None:
            site = self._sites[id(o)] = self._new_import_site(o)
        return site

    def _new_import_site(self, o: pln.CanonOptions) -> ImportSite:
        me = self._weak_self

        def resolve() -> ResolvedOptions:
            runtime = me()
            if runtime is None:
                raise ReferenceError("the component instance is gone")
            return runtime.resolve_options(o, host_side=True)

        return ImportSite(self.records[o.instance].ci, resolve, self.tasks)

    def _guest_dtor(self, ref: pln.CoreDef) -> Callable[[int], None]:
        def dtor(rep: int) -> None:
            self.resolve_func(ref).call_raw([rep])

        return dtor

    def _builtin(self, b: pln.Builtin) -> tuple[engine.HostFunction, list[str], list[str]]:
        rec = self.records[b.instance]
        ci = rec.ci
        kind = b.kind
        if kind in ("resource.new", "resource.drop", "resource.rep"):
            assert b.resource is not None
            rtype = self.resource_types[b.resource]
            rep_type = self.plan.resources[b.resource].rep
            if kind == "resource.new":

                def new(flat: Sequence[CoreVal]) -> list[CoreVal]:
                    return [canon_resource_new(ci, rtype, int(flat[0]))]

                return new, [rep_type], ["i32"]
            if kind == "resource.drop":

                def drop(flat: Sequence[CoreVal]) -> list[CoreVal]:
                    canon_resource_drop(ci, rtype, int(flat[0]))
                    return []

                return drop, ["i32"], []

            def rep(flat: Sequence[CoreVal]) -> list[CoreVal]:
                return [canon_resource_rep(ci, rtype, int(flat[0]))]

            return rep, ["i32"], [rep_type]
        raise LinkError(
            f"the canonical built-in {kind} needs the 0.3 task model, which this "
            "instantiation path does not provide yet"
        )

    def _adapter(self, a: pln.Adapter) -> engine.HostFunction:
        """A guest→guest call: lift from the caller, lower into the callee (sync path)."""
        caller_o = a.options
        callee_o = a.lift.options
        state: dict[str, Any] = {}

        def prepare() -> None:
            caller = self.resolve_options(caller_o, host_side=False)
            callee = self.resolve_options(callee_o, host_side=False)
            state["caller"] = caller
            state["callee"] = callee
            state["lowered"] = LoweredFunc.compile(caller.compiler, a.type)
            state["lifted"] = LiftedFunc.compile(callee.compiler, a.lift.type)
            state["func"] = self.resolve_func(a.lift.func)
            state["post"] = (
                None if callee_o.post_return is None else self.resolve_func(callee_o.post_return)
            )

        def adapter(flat: Sequence[CoreVal]) -> list[CoreVal]:
            if not state:
                prepare()
            caller: ResolvedOptions = state["caller"]
            callee: ResolvedOptions = state["callee"]
            lowered: LoweredFunc = state["lowered"]
            lifted: LiftedFunc = state["lifted"]
            lenders = CallLenders()
            ccx = LiftLowerContext(caller.opts, caller.record.ci, lenders)
            if not caller.record.ci.may_leave:
                raise Trap("cannot leave component instance", code="may-not-leave")
            callee_rec = callee.record
            if callee_rec.poisoned is not None or not callee_rec.ci.may_enter_from(
                caller.record.ci
            ):
                raise Trap("cannot enter component instance", code="cannot-enter")
            args = lowered.lift_params(ccx, list(flat))
            callee_rec.ci.enter_from(caller.record.ci)
            try:
                borrows = CallBorrows()
                tcx = LiftLowerContext(callee.opts, callee_rec.ci, borrows)
                core_args = lifted.lower_params(tcx, args)
                results = state["func"].call_raw(core_args)
                borrows.exit()
                tcx.refresh()
                value = lifted.lift_results(tcx, results)
                post = state["post"]
                if post is not None:
                    callee_rec.ci.may_leave = False
                    try:
                        post.call_raw(results)
                    finally:
                        callee_rec.ci.may_leave = True
            except engine.CoreTrap as exc:
                trap = fault(exc)
                callee_rec.poisoned = escaped(exc)
                raise trap from trap.__cause__
            finally:
                callee_rec.ci.leave_to(caller.record.ci)
            ccx.refresh()
            out = lowered.lower_results(ccx, value, list(flat))
            lenders.deliver_resolve()
            return out

        return adapter

    def close(self) -> None:
        """Close the store (idempotent), then let go of the bindings.

        The bindings refer back to the runtime (options resolvers, trampoline
        builders, the task model, the host linker's callbacks), so an instance
        would otherwise stay in reference cycles until the cyclic collector ran;
        with them dropped, reference counting frees it as soon as the host lets
        go.  What the host may still hold (export functions, resource handles)
        finds the store closed and raises ``StoreClosedError``.
        """
        tasks = self.tasks
        if tasks is not None:
            tasks.close()
        self.store.close()
        self._linking.release()
        self._sites.clear()
        self._option_cache.clear()
        self._option_ids.clear()
        self._host_trampolines = _closed_trampolines
        self._task_lowerer = None
        self._task_lowered = None
        self._task_taken = None
        for record in self.records:
            record.ci.host_async_values = None  # (the hooks refer back to the store)
        if self.host_resources is not None:
            self.host_resources.wrap_guest = None
        for rtype in self.resource_types:
            if rtype.dtor is not None:
                rtype.dtor = _closed_dtor
        self.tasks = None


_PLANS_LIMIT = 64  # plans remembered by each per-plan memo
_CoreSig: TypeAlias = tuple[tuple[str, ...], tuple[str, ...]]
#: the core signatures of a plan's lowered imports, by trampoline index
_SIGNATURES: IdentityMemo[pln.Plan, dict[int, _CoreSig]] = IdentityMemo(_PLANS_LIMIT)
#: the address type of each memory a plan's options name
_ADDRTYPES: IdentityMemo[pln.Plan, dict[pln.CoreDef, PtrType]] = IdentityMemo(_PLANS_LIMIT)
#: each plan's plain host signatures, with how many lowered ones they were made from
_PlainSigs: TypeAlias = tuple[_CoreSig | None, ...]
_PLAIN_SIGNATURES: IdentityMemo[pln.Plan, tuple[int, _PlainSigs]] = IdentityMemo(_PLANS_LIMIT)
#: the core signature of each lowered import and adapter, by the plan's trampoline
_CORE_TYPES: IdentityMemo[pln.LowerImport | pln.Adapter, _CoreSig] = IdentityMemo(1 << 15)
#: the lowered imports' signatures before a first instance worked them out
_NO_SIGNATURES: dict[int, _CoreSig] = {}


def _new_table(plan: pln.Plan) -> dict[Any, Any]:
    """A plan's table, empty until its instances fill it."""
    return {}


def _resource_builtin_signature(
    plan: pln.Plan, b: pln.Builtin
) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The core signature of a ``resource.new``/``drop``/``rep`` built-in, as
    :meth:`ComponentRuntime._builtin` makes it (``None`` for another built-in)."""
    if b.resource is None or b.kind not in ("resource.new", "resource.drop", "resource.rep"):
        return None
    rep = plan.resources[b.resource].rep
    if b.kind == "resource.new":
        return (rep,), ("i32",)
    return (("i32",), ()) if b.kind == "resource.drop" else (("i32",), (rep,))


def _realloc_of(func: engine.CoreFunc) -> Callable[[int, int, int, int], int]:
    call = func.call_raw

    def realloc(old_ptr: int, old_size: int, align: int, new_size: int) -> int:
        return int(call([old_ptr, old_size, align, new_size])[0])

    return realloc


def _lends(t: ValType, types: list[ResourceType]) -> bool:
    """Whether a value of type ``t`` may hold a ``borrow`` of a host-implemented resource."""
    return contains(t, lambda u: isinstance(u, Borrow) and types[u.rt].impl is None)


def _bind_index(fn: Callable[[int, int], None], index: int) -> Callable[[int], None]:
    def dtor(rep: int) -> None:
        fn(index, rep)

    return dtor
