"""The host's call of a lifted export (CanonicalABI.md §``canon lift``).

One ``canon lift`` serves every export called from the host: the steps
:class:`HostLift` writes once (the entry check, the per-call limits, the
lowering of the host's arguments with their borrow scope and the host
objects they lend, the fault door) and an activation, the only thing that
varies:

* :class:`ExportCall` runs the core function in place and completes
  before the call returns, a synchronous export being the degenerate case
  of a task (architecture.md §1); its general call serves any signature,
  and for scalar-only signatures a generated call (or the compiled kernel,
  ``engine.export_kernel``) specialises it, chosen on the first call, never
  per call;
* :class:`~polyengine.instance._async.AsyncExportCall` starts a task on the
  store's driver and awaits it, or runs it to completion (the task model,
  CanonicalABI.md §``Task``).

:func:`export_call` picks the activation for the runtime at hand.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from threading import get_ident
from typing import TYPE_CHECKING, Any, NamedTuple

from polyengine import engine
from polyengine.abi.bulk import NAN
from polyengine.abi.codegen import make_function
from polyengine.abi.functions import LiftedFunc, scalar_lifting, scalar_lowering
from polyengine.abi.kernels import export_plan
from polyengine.abi.resources import CallBorrows
from polyengine.instance._hostlift import HostLift
from polyengine.translate import plan as pln
from polyengine.types.layout import flatten_functype
from polyengine.types.model import S32, S64, U32, U64
from polyengine_protocol import Trap

if TYPE_CHECKING:
    from polyengine.instance._async import AsyncExportCall
    from polyengine.instance._runtime import ComponentRuntime, ResolvedOptions

__all__ = ["ExportCall", "InlineCall", "export_call"]


def export_call(rt: ComponentRuntime, lift: pln.Lift, name: str) -> ExportCall | AsyncExportCall:
    """The host's call of export ``lift`` in ``rt``: in place, or through the task model.

    One ``canon lift`` per export, specialised at instantiation: a runtime
    without the task model runs every call as an in-place activation
    (:class:`ExportCall`); one with it starts a task per call
    (:class:`~polyengine.instance._async.AsyncExportCall`).
    """
    if rt.tasks is None:
        return ExportCall(rt, lift, name)
    from polyengine.instance._async import AsyncExportCall

    return AsyncExportCall(rt.tasks, lift, name)


#: integer types whose 32- or 64-bit slot format range-checks exactly (engine.CoreFunc.specialize)
_EXACT_FORMATS: dict[type, str] = {U32: "I", S32: "i", U64: "Q", S64: "q"}
#: the slot format of each core type's unsigned reading
_CORE_FORMATS = {"i32": "I", "i64": "Q", "f32": "f", "f64": "d"}


class InlineCall(NamedTuple):
    """An export call as Python statements, for code generated around it.

    ``body`` (the lines of one function body, every path of which returns)
    calls the export with the arguments held in the local variables
    ``names`` and returns the lifted result; ``env`` holds every global name
    it uses.
    """

    names: list[str]
    body: list[str]
    env: dict[str, Any]
    #: the body's first step tests every argument's type and hands any value of
    #: another type to the global ``general`` (the general call), before anything else
    typed: bool
    #: when the body is ``return kernel(a0, a1, ...)`` (the compiled call,
    #: ``engine.export_kernel``): ``kernel(general, arity)`` makes that call
    #: over another general call, refusing other counts of arguments with
    #: ``arity(given)`` (which raises); the caller puts it in ``env["kernel"]``
    kernel: Callable[[Callable[[Sequence[Any]], Any], Callable[..., Any]], Any] | None = None


class ExportCall:
    """A lifted export specialized for calls from the host (``canon lift``, sync path).

    Built once at instantiation; the first call resolves the options and
    compiles the call into one closure (the value codecs for the function
    type, the callee's unchecked entry point, the instance's state), so a
    call does no type dispatch and no attribute lookups. An export whose
    parameters and result are all ``bool``, integers or floats, without
    ``post-return``, gets a generated function that converts them inline and
    needs no lifting context and no borrow scope; arguments its inline
    checks do not accept take the general path, which converts or rejects
    them.

    ``__call__`` is a slot holding the compiled call (before the first call,
    the step that compiles it), so calling the instance enters the compiled
    call with no Python frame in between; :meth:`inline` gives the same call
    as statements, which the exports facade compiles into its coroutines.
    """

    __slots__ = ("__call__", "__weakref__", "_callee", "_inline", "_rt", "_steps", "lift", "name")

    if TYPE_CHECKING:

        def __call__(self, args: Sequence[Any]) -> Any:
            """Call the export with host values; return the lifted result value."""

    def __init__(self, rt: ComponentRuntime, lift: pln.Lift, name: str) -> None:
        self._rt = rt
        self.lift = lift
        self.name = name
        self._steps: HostLift | None = None
        self._callee: engine.CoreFunc | None = None
        self._inline: InlineCall | None = None
        ExportCall.__dict__["__call__"].__set__(self, _first_call(weakref.ref(self)))

    @property
    def _options(self) -> ResolvedOptions | None:
        return None if self._steps is None else self._steps.ro

    @property
    def _lifted(self) -> LiftedFunc | None:
        return None if self._steps is None else self._steps.values

    def _prepare(self) -> Callable[[Sequence[Any]], Any]:
        rt = self._rt
        self._steps = steps = HostLift(rt, self.lift, self.name)
        self._callee = callee = rt.resolve_func(self.lift.func)
        post = None
        if self.lift.options.post_return is not None:
            post = rt.resolve_func(self.lift.options.post_return)
        general = self._general(steps.ro, steps.values, callee, post)
        begin = steps.begin
        if begin is not None:
            general = _begun(begin, general)
        names = [f"a{k}" for k in range(len(self.lift.type.params))]
        args = "(" + "".join(f"{a}, " for a in names) + ")"
        run: Callable[[Sequence[Any]], Any] = general
        inline = InlineCall(names, [f"return general({args})"], {"general": general}, False)
        # An export lifted in a nested instance enters its ancestors too (only
        # the general path does that).
        nested = len(steps.ci.entering_set(None)) > 1
        plain = post is not None or nested or begin is not None
        scalar = None if plain else self._scalar(steps, callee, names)
        values = None if plain or scalar is not None else self._values(steps, callee, general)
        if values is not None:
            # the compiled call over values (engine.export_kernel with a plan)
            run, make = values
            env = {"kernel": make(general, None), "general": general}
            inline = InlineCall(names, [f"return kernel({', '.join(names)})"], env, True, make)
        if scalar is not None:
            guard, core, env, exact = scalar
            env["general"] = general
            kernel = self._kernel(steps, callee, env, len(names)) if exact else None
            entry = [
                "if rec.poisoned is not None or not ci.may_enter or get_ident() != owner:",
                "    check_enter(rec, name)",
            ]

            def test(fallback: str) -> list[str]:
                return [f"if not ({guard}):", f"    return general({fallback})"] if names else []

            unpack = [f"{''.join(a + ', ' for a in names)}= args"] if names else []
            count = [f"if len(args) != {len(names)}:", "    return general(args)"]
            if kernel is not None:
                # The same statements compiled (engine.export_kernel): ``run`` takes the
                # sequence, the inline body calls the kernel over the arguments.
                run, make = kernel
                call = f"return kernel({', '.join(names)})"
                env["kernel"] = make(general, None)
                inline = InlineCall(names, [call], env, True, make)
            else:
                run = make_function(
                    "export_call",
                    "args",
                    [*entry, *count, *unpack, *test("args"), *core("args")],
                    env,
                )
                # its globals need not name it (it does not call itself): without the
                # name, function and globals are no reference cycle holding the instance
                del run.__globals__["export_call"]
                # The type tests first: a value they refuse reaches ``general`` before
                # anything else happens (the general call makes the entry test itself).
                inline = InlineCall(names, [*test(args), *entry, *core(args)], env, True)
        self._inline = inline
        ExportCall.__dict__["__call__"].__set__(self, run)
        return run

    def inline(self) -> InlineCall:
        """The call as statements over the arguments ``a0, a1, ...`` (compiling it if needed).

        For callers that generate their own entry point around the call (the
        exports facade's coroutine functions), saving the frame of ``__call__``.
        """
        if self._inline is None:
            self._prepare()
        assert self._inline is not None
        return self._inline

    def _general(
        self,
        ro: ResolvedOptions,
        lifted: LiftedFunc,
        callee: engine.CoreFunc,
        post: engine.CoreFunc | None,
    ) -> Callable[[Sequence[Any]], Any]:
        """The in-place activation of any signature: :class:`HostLift`'s steps around
        the core call, then lift and post-return (§"`canon lift`")."""
        steps = self._steps
        if steps is None or steps.ro is not ro or steps.values is not lifted:
            steps = HostLift(self._rt, self.lift, self.name, ro, lifted)
        rec = steps.rec
        ci = steps.ci
        name = self.name
        check_enter = self._rt.check_enter
        owner = self._rt.owner_thread
        context, lower, release, caught = steps.context, steps.lower, steps.release, steps.caught
        lower_params, lift_results = steps.values.lower_params, steps.values.lift_results
        # (arguments that cannot lend host objects skip the lending bracket)
        lends = steps.lender is not None
        post_call = None if post is None else post.call_raw
        call_flat = callee.flat_call()

        def call(args: Sequence[Any]) -> Any:
            if rec.poisoned is not None or not ci.may_enter or get_ident() != owner:
                check_enter(rec, name)
            ci.may_enter = False
            lent = None
            try:
                borrows = CallBorrows()
                cx = context(borrows)
                if lends:
                    flat, lent = lower(cx, args)
                else:
                    flat = lower_params(cx, args)
                results = call_flat(flat)
                borrows.exit()
                cx.refresh()
                value = lift_results(cx, results)
                if post_call is not None:
                    ci.may_leave = False
                    try:
                        post_call(results)
                    finally:
                        ci.may_leave = True
                return value
            except BaseException as exc:
                failure = caught(exc)
                if failure is None:
                    raise
                raise failure from failure.__cause__
            finally:
                ci.may_enter = True
                if lent:
                    release(lent)

        ancestors = tuple(a for a in ci.entering_set(None) if a is not ci)
        if not ancestors:
            return call

        def call_nested(args: Sequence[Any]) -> Any:
            """``call`` for an instance with ancestors: enter them all (``enter_from``)."""
            if rec.poisoned is not None:
                check_enter(rec, name)
            for a in ancestors:
                if not a.may_enter:
                    raise Trap(
                        f"cannot enter component instance {a.name} to call {name}: "
                        f"it is an ancestor of {ci.name} and already entered",
                        code="cannot-enter",
                    )
            for a in ancestors:
                a.may_enter = False
            try:
                return call(args)
            finally:
                for a in ancestors:
                    a.may_enter = True

        return call_nested

    def _kernel(
        self, steps: HostLift, callee: engine.CoreFunc, env: dict[str, Any], n: int
    ) -> tuple[Callable[[Sequence[Any]], Any], Any] | None:
        """The compiled form of the scalar call's statements, or ``None`` on the pure path.

        ``(run, make)``: ``run(args)`` is the call over a sequence (``__call__``),
        ``make(general, arity)`` the call over ``a0, a1, ...`` for an inline body.
        Only for signatures whose every parameter and result is a 32- or 64-bit
        integer: those whose guard is ``type(v) is int`` and whose result needs
        no conversion, so the kernel's steps are the statements' exactly.
        """
        return self._compiled(steps, callee, env["core"], n, env["general"], None)

    def _values(
        self,
        steps: HostLift,
        callee: engine.CoreFunc,
        general: Callable[[Sequence[Any]], Any],
    ) -> tuple[Callable[[Sequence[Any]], Any], Any] | None:
        """The compiled call of an export over fixed-shape values, or ``None``.

        ``(run, make)`` as :meth:`_kernel`'s, for an export whose values have
        programs (:func:`polyengine.abi.kernels.export_plan`): the same steps as
        :meth:`_general` with the lower, the core call and the lift in C.
        """
        if callee.store.closed:
            return None
        realloc = None
        if self.lift.options.realloc is not None:
            func = self._rt.resolve_func(self.lift.options.realloc)
            if func.params == ("i32",) * 4 and func.results == ("i32",):
                realloc = func.specialize("IIII", "I")
        ro = steps.ro
        plan = export_plan(ro.compiler, steps.values, ro.opts, ro.record.ci, realloc)
        if plan is None:
            return None
        n = len(self.lift.type.params)
        return self._compiled(steps, callee, callee.flat_call(), n, general, plan)

    def _compiled(  # noqa: PLR0917 - the kernel's inputs
        self,
        steps: HostLift,
        callee: engine.CoreFunc,
        core: Callable[..., Any],
        n: int,
        general: Callable[[Sequence[Any]], Any],
        plan: tuple[Any, ...] | None,
    ) -> tuple[Callable[[Sequence[Any]], Any], Any] | None:
        """``(run, make)`` of :func:`engine.export_kernel` over ``core``, or ``None``.

        ``plan``: the value programs of :meth:`_values`, ``None`` for the
        scalar statements of :meth:`_kernel`.
        """
        rec, name, failed = steps.rec, self.name, steps.caught
        check_enter, owner = self._rt.check_enter, self._rt.owner_thread

        def make(
            general: Callable[[Sequence[Any]], Any],
            arity: Callable[[tuple[Any, ...]], Any] | None,
            sequence: bool = False,
        ) -> Callable[..., Any] | None:
            return engine.export_kernel(
                callee,
                core,
                n,
                sequence=sequence,
                rec=rec,
                ci=rec.ci,
                name=name,
                check_enter=check_enter,
                general=general,
                failed=failed,
                arity=arity,
                owner=owner,
                values=plan,
            )

        run = make(general, None, True)
        if run is None:
            return None
        return run, make

    def _scalar(
        self, steps: HostLift, callee: engine.CoreFunc, names: Sequence[str]
    ) -> tuple[str, Callable[[str], list[str]], dict[str, Any], bool] | None:
        """The inline call of a scalar-only export, or ``None`` for other signatures.

        ``(guard, body, env, exact)`` for arguments held in the variables ``names``:
        when ``guard`` holds, the lines ``body(fallback)`` perform the same
        steps as :meth:`_general` with nothing to lift from or lower into
        memory and no handle to borrow (the entry bookkeeping, the core call,
        the result's conversion), after the caller has done the entry test;
        otherwise the general call converts or rejects the arguments. ``env``
        holds the names the statements use; ``exact`` says that every parameter
        and the result (if any) are 32- or 64-bit integers.

        The core call is the engine's specialised call of the callee
        (:meth:`engine.CoreFunc.specialize`): a 32- or 64-bit integer goes
        into its slot in the format of its own signedness, which refuses
        exactly the values out of its range (``ValueError`` before anything
        runs, then ``general(fallback)`` converts or rejects them), so its
        guard is only ``type(v) is int``; a result of such a type comes back
        in its own format.
        """
        ft = self.lift.type
        ptypes, rtypes = ft.param_types(), ft.result_types()
        core = flatten_functype(ft, "lift")
        if (
            callee.params != tuple(core.params)
            or callee.results != tuple(core.results)
            or len(core.params) != len(ptypes)
            or len(core.results) != len(rtypes)
            or any(t not in _CORE_FORMATS for t in (*core.params, *core.results))
        ):
            return None
        lowerings = [scalar_lowering(t, v) for t, v in zip(ptypes, names, strict=True)]
        liftings = [scalar_lifting(t, "r", 0, exact=True) for t in rtypes]
        if None in lowerings or None in liftings:
            return None
        if callee.store.closed:  # the general call says so
            return None
        parts: list[str] = []
        formats: list[str] = []
        flats: list[str] = []
        for t, v, lowering, core_t in zip(ptypes, names, lowerings, core.params, strict=True):
            assert lowering is not None
            exact = _EXACT_FORMATS.get(type(t))
            if exact is not None:
                parts.append(f"type({v}) is int")
                formats.append(exact)
                flats.append(v)
            else:
                parts.append(lowering[0])
                formats.append(_CORE_FORMATS[core_t])
                flats.append(lowering[1])
        guard = " and ".join(f"({p})" for p in parts) or "True"
        rformats = ""
        result = "None"
        if rtypes:
            exact = _EXACT_FORMATS.get(type(rtypes[0]))
            rformats = exact if exact is not None else _CORE_FORMATS[core.results[0]]
            result = "r" if exact is not None else str(liftings[0])
        call = f"r = core({', '.join(flats)})" if rtypes else f"core({', '.join(flats)})"

        def body(fallback: str) -> list[str]:
            return [
                "ci.may_enter = False",
                "try:",
                f"    {call}",
                # raised by the core call only before the guest runs: an argument
                # out of its slot's range (the general call converts or rejects it)
                "except ValueError:",
                "    ci.may_enter = True",
                f"    return general({fallback})",
                "except BaseException as exc:",
                "    failure = caught(exc)",
                "    if failure is None:",
                "        raise",
                "    raise failure from failure.__cause__",
                "finally:",
                "    ci.may_enter = True",
                f"return {result}",
            ]

        rec = steps.rec
        env: dict[str, Any] = {
            "core": callee.specialize("".join(formats), rformats),
            "NAN": NAN,
            "rec": rec,
            "ci": rec.ci,
            "name": self.name,
            "check_enter": self._rt.check_enter,
            "get_ident": get_ident,
            "owner": self._rt.owner_thread,
            "caught": steps.caught,
        }
        all_exact = all(type(t) in _EXACT_FORMATS for t in (*ptypes, *rtypes))
        return guard, body, env, all_exact


def _begun(
    begin: Callable[[], None], call: Callable[[Sequence[Any]], Any]
) -> Callable[[Sequence[Any]], Any]:
    """``call`` re-arming the per-call limits first (``Limits.timeout``, per-call fuel)."""

    def begun(args: Sequence[Any]) -> Any:
        begin()
        return call(args)

    return begun


def _first_call(ref: weakref.ref[ExportCall]) -> Callable[[Sequence[Any]], Any]:
    """An export's ``__call__`` before its first call: the step that compiles the call.

    It refers to the export weakly, so an export never called is not in a
    reference cycle with itself (a closed instance is freed by reference
    counting; the caller holds the export while it runs).
    """

    def first_call(args: Sequence[Any]) -> Any:
        call = ref()
        assert call is not None  # the caller holds it
        return call._prepare()(args)

    return first_call
