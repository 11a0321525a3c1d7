"""What a plan's instances share, worked out once per plan (architecture.md §2).

Every instance of a component asks the same questions of its plan while it
is instantiated: which of its canonical options are equal (the import sites
that share one resolution), which of its trampolines are lowered imports.
The answers are kept by the plan's identity (:class:`~polyengine.memo.IdentityMemo`).
"""

from __future__ import annotations

from polyengine.memo import IdentityMemo
from polyengine.translate import plan as pln

__all__ = [
    "lowered_imports",
    "options_of_a_kind",
    "plain_builtin_signature",
    "plain_task_builtins",
]

#: plans remembered at once, per table
_LIMIT = 64

_Kinds = tuple[list[pln.CanonOptions], dict[int, pln.CanonOptions]]

#: a plan's canonical options: the distinct values, and the one standing for each
#: options object (by its identity)
_OPTION_KINDS: IdentityMemo[pln.Plan, _Kinds] = IdentityMemo(_LIMIT)


#: each plan's lowered imports with their trampoline indices
_LOWERED: IdentityMemo[pln.Plan, tuple[tuple[int, pln.LowerImport], ...]] = IdentityMemo(_LIMIT)


def lowered_imports(plan: pln.Plan) -> tuple[tuple[int, pln.LowerImport], ...]:
    """``(trampoline index, import)`` of each of the plan's lowered imports, in order."""
    return _LOWERED.get(plan, _work_out_lowered)


def _work_out_lowered(plan: pln.Plan) -> tuple[tuple[int, pln.LowerImport], ...]:
    return tuple(
        (i, tr) for i, tr in enumerate(plan.trampolines) if isinstance(tr, pln.LowerImport)
    )


def options_of_a_kind(plan: pln.Plan, o: pln.CanonOptions) -> pln.CanonOptions:
    """The plan's first options object equal to ``o`` (compared once per plan and object)."""
    distinct, reps = _OPTION_KINDS.get(plan, _no_kinds)
    rep = reps.get(id(o))
    if rep is None:
        rep = next((d for d in distinct if d == o), None)
        if rep is None:
            distinct.append(o)
            rep = o
        reps[id(o)] = rep
    return rep


def _no_kinds(plan: pln.Plan) -> _Kinds:
    return [], {}


def builtin_is_async(b: pln.Builtin) -> bool:
    """A built-in's ``async``: its option (a copy) or its immediate (a cancel)."""
    return b.is_async or (b.options is not None and b.options.is_async)


def plain_builtin_signature(
    b: pln.Builtin,
) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The core signature of task-model built-in ``b`` when it never parks (a plain
    host function runs it, CanonicalABI.md §"Canonical built-ins"), else ``None``.

    Such a built-in needs no deferring (only ``subtask.cancel`` does, and it may park).
    """
    if b.kind.startswith("resource.") or b.kind == "unavailable":
        return None
    from polyengine.concurrency.engine_seam import plain_in_bulk  # the task model's
    from polyengine.instance._builtins import builtin_signature

    if not plain_in_bulk(b.kind, builtin_is_async(b)):
        return None
    params, results = builtin_signature(b)
    return tuple(params), tuple(results)


#: each plan's task-model built-ins that never park, by trampoline index
_PLAIN_BUILTINS: IdentityMemo[pln.Plan, frozenset[int]] = IdentityMemo(_LIMIT)


def plain_task_builtins(plan: pln.Plan) -> frozenset[int]:
    """The trampoline indices of ``plan``'s task-model built-ins that never park."""
    return _PLAIN_BUILTINS.get(plan, _work_out_plain_builtins)


def _work_out_plain_builtins(plan: pln.Plan) -> frozenset[int]:
    return frozenset(
        i
        for i, tr in enumerate(plan.trampolines)
        if isinstance(tr, pln.Builtin) and plain_builtin_signature(tr) is not None
    )
