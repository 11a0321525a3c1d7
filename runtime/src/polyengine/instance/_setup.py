"""The engine side of making a component instance (architecture.md §2, §3).

Which engine an instance runs on (:func:`engine_for`: fuel needs code that
counts it), the store limits and per-call budgets it starts with
(:func:`apply_limits`), and the instance-pre of its plan (:func:`instance_pre`):
the compiled core modules with every core import checked once per engine and
plan, what wasmtime's ``InstancePre`` is; each instance only links it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from polyengine import engine
from polyengine.errors import LinkError
from polyengine.translate import plan as pln
from polyengine.translate.artifacts import Artifacts

if TYPE_CHECKING:
    from polyengine.limits import Limits

__all__ = ["apply_limits", "engine_for", "instance_pre"]

#: instance-pres by (engine, artifacts): (plan, pre), the plan kept so its id stays its own
_PRES: dict[tuple[int, int, str], tuple[pln.Plan, engine.InstancePre]] = {}
_PRES_LIMIT = 64


def engine_for(limits: Limits | None, config: engine.EngineConfig | None = None) -> engine.Engine:
    """The engine an instance under ``limits`` runs on: ``config``'s, else the
    default one (fuel needs code that counts it)."""
    if limits is not None and limits.fuel is not None:
        if config is None:
            config = engine.EngineConfig(consume_fuel=True)
        elif not config.consume_fuel:
            config = replace(config, consume_fuel=True)
    return engine.get_engine(config)


def apply_limits(store: engine.EngineStore, limits: Limits | None) -> Callable[[], None] | None:
    """Install ``limits`` on a new store; return the per-call step, if one is needed."""
    if limits is None:
        return None
    store.set_limits(
        memory_size=limits.max_memory_size,
        table_elements=limits.max_table_elements,
        instances=limits.max_instances,
        tables=limits.max_tables,
        memories=limits.max_memories,
    )
    if limits.fuel is not None:
        store.set_fuel(limits.fuel)
    if not limits.per_call:
        return None
    timeout = limits.timeout
    fuel = limits.fuel if limits.fuel_per_call else None
    arm = store.arm
    if timeout is not None:
        store.set_deadline(timeout)  # the start functions run under the first deadline

    def begin_call() -> None:
        arm(timeout, fuel)

    return begin_call


def instance_pre(artifacts: Artifacts, eng: engine.Engine) -> engine.InstancePre:
    """The engine's instance-pre of ``artifacts``' plan (made once per engine and plan)."""
    plan = artifacts.plan
    key = (id(eng), id(plan), artifacts.sha256)
    found = _PRES.get(key)
    if found is not None and found[0] is plan:
        return found[1]
    try:
        modules = [  # the plan's digests: a module compiled or loaded before is not hashed again
            engine.compile_module(
                artifacts.module_view(i), name=f"module {i}", sha256=m.sha256, engine=eng
            )
            for i, m in enumerate(plan.modules)
        ]
    except engine.CompileError as exc:  # a pooled engine checks its limits when compiling
        pooled = engine.pool_limit(exc.reason, f"{exc.module}: ") if eng.pooled else None
        if pooled is None:
            raise
        raise pooled from None
    instances: list[tuple[int, list[engine.ExportSource | engine.HostSource]]] = []
    for index, core in enumerate(plan.core_instances):
        if not isinstance(core.module, pln.StaticModule):
            raise LinkError(
                f"core instance {index} instantiates an imported core module "
                f"({'/'.join(core.module.path)}), which polyengine does not support"
            )
        sources: list[engine.ExportSource | engine.HostSource] = []
        for arg in core.args:
            item = arg.item
            if isinstance(item, pln.CoreExport):
                sources.append(engine.ExportSource(item.instance, item.name))
            elif isinstance(item, pln.TrampolineRef):
                sources.append(engine.HostSource(item.index))
            else:
                raise LinkError(
                    f"core item {'/'.join(item.path)} is imported from the host as a core "
                    f"{item.kind}, which polyengine does not support"
                )
        instances.append((core.module.index, sources))
    pre = engine.InstancePre(eng, modules, instances, len(plan.trampolines))
    if len(_PRES) >= _PRES_LIMIT:
        _PRES.pop(next(iter(_PRES)))
    _PRES[key] = (plan, pre)
    return pre
