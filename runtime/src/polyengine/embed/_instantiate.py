"""``instantiate`` and ``required_imports`` (python-mapping.md §7, seed §"Module wiring").

``await instantiate(artifacts, imports)`` accepts a translation result
(:class:`~polyengine.translate.Artifacts`), an ``(envelope, component_bytes)``
pair, or raw component bytes (seed A3: bytes in, instance out).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from polyengine.embed._facade import Exports, build_exports
from polyengine.embed._host import HostLinker, LinkTemplate
from polyengine.embed._linkcheck import check_links
from polyengine.embed._providers import Imports
from polyengine.engine import EngineConfig
from polyengine.errors import LinkError
from polyengine.instance import ComponentRuntime, lowered_imports, needs_task_model
from polyengine.limits import Limits
from polyengine.memo import IdentityMemo
from polyengine.translate import Artifacts, artifacts_from_envelope, translate
from polyengine.translate import plan as pln
from polyengine.types.model import FuncType

if TYPE_CHECKING:
    from polyengine.instance import HostValuesFactory

__all__ = ["Instance", "ImportLeaf", "instantiate", "required_imports", "to_artifacts"]


def to_artifacts(artifacts: Any) -> Artifacts:
    """Normalize the accepted forms of the first argument of ``instantiate``."""
    if isinstance(artifacts, Artifacts):
        return artifacts
    if isinstance(artifacts, bytes | bytearray | memoryview):
        return translate(bytes(artifacts))
    if isinstance(artifacts, tuple) and len(artifacts) == 2:
        envelope, data = artifacts
        if isinstance(envelope, Mapping) and isinstance(data, bytes | bytearray | memoryview):
            return artifacts_from_envelope(dict(envelope), bytes(data))
    raise TypeError(
        "instantiate expects Artifacts, component bytes, or an (envelope, component_bytes) "
        f"pair, got {type(artifacts).__name__}"
    )


class Instance:
    """An instantiated component; ``exports`` is its facade."""

    def __init__(self, runtime: ComponentRuntime, exports: Exports) -> None:
        self._runtime = runtime
        self.exports = exports

    def close(self) -> None:
        """Release the engine store (idempotent); exports are unusable afterwards."""
        self._runtime.close()

    def __enter__(self) -> Instance:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def instantiate(
    artifacts: Any,
    imports: Mapping[str, object] | None = None,
    *,
    suspend: bool | None = None,
    limits: Limits | None = None,
    engine_config: EngineConfig | None = None,
) -> Instance:
    """Instantiate a component with the host's ``imports``.

    A component with 0.3 async features (async lifts or lowers, task
    built-ins, streams, futures, error contexts) or with an import marked
    ``suspending()`` runs on the task model, driven on the running event
    loop (architecture.md §4); any other keeps plain synchronous calls.
    ``suspend=False`` forces the plain path: marked imports then refuse
    awaitables (``SuspensionUnavailable``), and a component that needs the
    task model is refused with ``LinkError``. ``limits``
    (:class:`polyengine.Limits`) bounds the instance's fuel, time, memory,
    tables and instances; exceeding one traps with its code.
    ``engine_config`` (:class:`polyengine.engine.EngineConfig`) picks the
    engine the instance runs on (default: the default engine; fuel limits
    turn ``consume_fuel`` on), such as one with the pooling allocator.

    Raises :class:`~polyengine.errors.TranslationError` for a malformed
    component, :class:`~polyengine.errors.LinkError` (and its subclass
    ``MissingImportError``) when an import is missing or mis-shaped (a
    supplied import whose type is known, such as another instance's exports,
    is checked against the declared type before any guest code runs), and
    ``polyengine_protocol.Trap`` when a start function traps; with the
    pooling allocator, ``polyengine.engine.PoolLimitError`` when the pool
    cannot hold the instance.
    """
    if limits is not None and not isinstance(limits, Limits):
        raise TypeError(f"limits must be a polyengine.Limits, not {type(limits).__name__}")
    if engine_config is not None and not isinstance(engine_config, EngineConfig):
        raise TypeError(
            "engine_config must be a polyengine.engine.EngineConfig, "
            f"not {type(engine_config).__name__}"
        )
    arts = to_artifacts(artifacts)
    supplied = Imports(imports)
    check_links(arts.plan, supplied, require=("module", "component"))
    linker = HostLinker(supplied, suspend=bool(suspend))
    template = _TEMPLATES.peek(arts.plan)
    taken = None if template is None else linker.adopt(template)
    linker.resolve_all(_func_import_paths(arts))
    if taken is None or not taken.size:
        # none yet, or made with other providers: this linking's is kept
        _TEMPLATES.put(arts.plan, linker.template())
    elif taken is not template:
        # what was taken over: the members of this instance's own providers go
        _TEMPLATES.put(arts.plan, taken)
    task_model = suspend is not False and needs_task_model(arts.plan, linker.is_marked)
    if suspend is False and arts.plan.uses_async():
        raise LinkError(
            "this component uses the 0.3 async features (async functions, streams, "
            "futures or task built-ins), which need suspension; instantiate it "
            "without suspend=False"
        )
    runtime = ComponentRuntime(
        arts,
        linker.trampoline,
        host_resources=linker.resources,
        host_resource_dtor=lambda _index, rep: linker.resources.host_dtor(rep),
        bind_host_resource=linker.bind_resource,
        task_model=task_model,
        task_lowerer=linker.task_trampoline if task_model else None,
        task_lowered=linker.lowers_on_tasks if task_model else None,
        task_taken=linker.taken_by_tasks(lowered_imports(arts.plan)) if task_model else None,
        host_values=_host_values() if task_model else None,
        limits=limits,
        engine_config=engine_config,
    )
    return Instance(runtime, build_exports(runtime))


def _host_values() -> HostValuesFactory:
    """The host values of the task model (imported only by a store that runs on it)."""
    from functools import partial

    from polyengine.embed._streams import ErrorContext, Future, Stream
    from polyengine.instance import HostHandles, HostValues

    return partial(HostValues, handles=HostHandles(Stream, Future, ErrorContext))


@dataclass(frozen=True, slots=True)
class ImportLeaf:
    """One linkable import leaf: a function or a resource type, by path."""

    path: tuple[str, ...]
    kind: str  # "func" | "resource" | "type" | "module" | "component" | "value"
    type: FuncType | None = None

    @property
    def name(self) -> str:
        return self.path[0] if len(self.path) == 1 else f"{self.path[0]}#{'/'.join(self.path[1:])}"


#: what linking each plan resolved, narrowed to what later linkings took over
#: (``HostLinker.adopt``: the members their providers held too)
_TEMPLATES: IdentityMemo[pln.Plan, LinkTemplate] = IdentityMemo(64)

#: the paths of each plan's imported functions
_FUNC_PATHS: IdentityMemo[pln.Plan, tuple[tuple[str, ...], ...]] = IdentityMemo(64)


def _func_import_paths(arts: Artifacts) -> tuple[tuple[str, ...], ...]:
    """The paths of the function leaves of :func:`required_imports` (once per plan)."""
    return _FUNC_PATHS.get(
        arts.plan,
        lambda _plan: tuple(leaf.path for leaf in required_imports(arts) if leaf.kind == "func"),
    )


def required_imports(artifacts: Any) -> list[ImportLeaf]:
    """The component's linkable import leaves with kinds and types (seed §"Module wiring")."""
    arts = to_artifacts(artifacts)
    used = {tr.path for tr in arts.plan.trampolines if isinstance(tr, pln.LowerImport)}
    out: list[ImportLeaf] = []
    for imp in arts.plan.imports:
        _walk_leaves((imp.name,), imp.desc, used, out)
    return out


def _walk_leaves(
    prefix: tuple[str, ...], desc: pln.ExternDesc, used: set[tuple[str, ...]], out: list[ImportLeaf]
) -> None:
    """Append the leaves under ``desc`` at ``prefix`` to ``out`` (functions only if ``used``).

    A module-level function rather than a closure: a recursive closure refers to
    itself, a reference cycle left for the cyclic collector on every instantiation.
    """
    if isinstance(desc, pln.FuncDesc):
        if prefix in used:
            out.append(ImportLeaf(prefix, "func", desc.type))
    elif isinstance(desc, pln.InstanceDesc):
        for name, sub in desc.exports:
            _walk_leaves((*prefix, name), sub, used, out)
    elif isinstance(desc, pln.TypeDesc):
        if desc.resource is not None:
            out.append(ImportLeaf(prefix, "resource"))
    elif isinstance(desc, pln.ModuleDesc):
        out.append(ImportLeaf(prefix, "module"))
    elif isinstance(desc, pln.ComponentDesc):
        out.append(ImportLeaf(prefix, "component"))
