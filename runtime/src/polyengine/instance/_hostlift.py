"""The steps of one ``canon lift`` called from the host (CanonicalABI.md §``canon lift``).

:class:`HostLift` writes them once for both activations of an export: the
in-place call (:class:`~polyengine.instance._lift.ExportCall`) and the
task-model call (:class:`~polyengine.instance._async.AsyncExportCall`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from polyengine.abi.functions import LiftedFunc
from polyengine.abi.options import LiftLowerContext
from polyengine.abi.trap import escaped, fault, passes_through, poisons
from polyengine.translate import plan as pln

if TYPE_CHECKING:
    from polyengine.instance._runtime import ComponentRuntime, ResolvedOptions

__all__ = ["HostLift"]


class HostLift:
    """The steps of one ``canon lift`` called from the host, whatever runs it
    (CanonicalABI.md §``canon lift``; architecture.md §5 for the fault door).

    Made once per export, on its first call: the resolved options, the
    compiled values of the function type, the host table its arguments lend
    to (``None`` when they cannot lend), the per-call limits and how a trap
    poisons the instance (on the task model, through its store, which fails
    the instance's pending tasks). An activation calls the steps in order:
    :meth:`enter`, :attr:`begin`, :meth:`lower`, then runs the core function
    its own way, :meth:`release` at the end, :meth:`caught` for anything
    that escaped.
    """

    __slots__ = (
        "begin",
        "ci",
        "lender",
        "lift",
        "name",
        "opts",
        "owner",
        "poison",
        "rec",
        "ro",
        "rt",
        "values",
    )

    def __init__(
        self,
        rt: ComponentRuntime,
        lift: pln.Lift,
        name: str,
        ro: ResolvedOptions | None = None,
        values: LiftedFunc | None = None,
    ) -> None:
        o = lift.options
        if ro is None:
            ro = rt.resolve_options(o, host_side=True)
        if values is None:
            values = LiftedFunc.compile(
                ro.compiler, lift.type, is_async=o.is_async, callback=o.callback is not None
            )
        self.rt = rt
        #: the thread that created the runtime, the only one that may call it
        self.owner = rt.owner_thread
        self.lift = lift
        self.name = name
        self.ro = ro
        self.opts = ro.opts
        self.rec = rec = ro.record
        self.ci = rec.ci
        self.values = values
        self.lender: Any = rt.lender(lift.type)
        state = rec.tasks
        #: what every call does first, if anything: re-arm the per-call limits
        self.begin: Callable[[], None] | None = rt.begin_call
        self.poison: Callable[[BaseException], None]
        if state is None:
            self.poison = rec.poison
        else:
            store_poison = state.store.poison

            def poison(trap: BaseException) -> None:
                store_poison(state, trap)  # type: ignore[arg-type]

            self.poison = poison

    def enter(self, *, held: bool = True) -> None:
        """Refuse the call from another thread or into a poisoned instance; with
        ``held``, also into one entered already (Component Invariant #2; the
        task model tests that itself, as the task starts)."""
        self.rt.check_enter(self.rec, self.name, held=held)

    def context(self, scope: Any) -> LiftLowerContext:
        """The lifting context of one call; ``scope`` counts the borrows it creates
        (the call's own, or a scope the task takes over when it starts)."""
        cx = LiftLowerContext(self.opts, self.ci, scope)
        cx.where = self.name
        return cx

    def lower(
        self, cx: LiftLowerContext, args: Sequence[Any]
    ) -> tuple[list[Any], list[int] | None]:
        """Lower the host's arguments into the callee's flat values (§``canon lift``).

        Host objects passed as ``borrow`` are lent for the call only: the
        second value is what :meth:`release` gives back when it ends. A
        failure releases them at once and propagates (the caller's
        :meth:`caught` decides whether it poisons).
        """
        host = self.lender
        if host is None:
            return self.values.lower_params(cx, args), None
        outer = host.begin_lending()
        try:
            flat = self.values.lower_params(cx, args)
        except BaseException:
            host.release_lent(host.end_lending(outer))
            raise
        return flat, host.end_lending(outer)

    def release(self, lent: list[int] | None) -> None:
        """The call ended: give back the host objects its arguments lent."""
        if lent:
            self.lender.release_lent(lent)

    def caught(self, exc: BaseException) -> BaseException | None:
        """The fault door of a call (:func:`~polyengine.abi.trap.fault`): ``exc`` escaped it.

        Poisons the instance when the failure is the guest's (a trap, an
        interrupt, a host fault converted on its way out), not when it is
        embedder misuse raised before the guest ran; returns the exception
        to raise in place of ``exc`` (chained to its cause), or ``None`` to
        raise ``exc`` itself.
        """
        failure = fault(exc)
        if poisons(exc, failure):
            self.poison(escaped(exc))
            if failure is not exc:
                return failure
        return None

    @staticmethod
    def reraise(trap: BaseException) -> NoReturn:
        """The fault door for a trap the task model reports for the call it ran.

        The task model let it through :func:`~polyengine.abi.trap.escaped`
        and poisoned the instance already (when it should): what passes
        through (a WASI exit request, a host result of the wrong shape, an
        interrupt) reaches the embedder unchanged, as from :meth:`caught`;
        anything else as :func:`~polyengine.abi.trap.fault` converts it,
        chained to the trap.
        """
        cause = trap.__cause__
        if cause is not None and passes_through(cause):
            raise cause
        converted = fault(trap)
        if converted is trap:
            raise trap
        raise converted from trap

    def fail(self, exc: BaseException) -> NoReturn:
        """Raise what the embedder sees for ``exc`` (:meth:`caught`), poisoning first."""
        failure = self.caught(exc)
        if failure is None:
            raise exc
        raise failure from failure.__cause__
