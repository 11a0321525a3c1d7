"""What a plan's instances share, worked out once per plan (architecture.md §2).

Every instance of a component asks the same questions of its plan while it
is instantiated: which of its canonical options are equal (the import sites
that share one resolution), which of its trampolines are lowered imports.
The answers are kept by the plan's identity (:class:`~polyengine.memo.IdentityMemo`).
"""

from __future__ import annotations

from polyengine.memo import IdentityMemo
from polyengine.translate import plan as pln

__all__ = ["lowered_imports", "options_of_a_kind"]

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
