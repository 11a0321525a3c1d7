"""What a plan's instances share, worked out once per plan (architecture.md §2).

Every instance of a component asks the same questions of its plan while it
is instantiated: which of its canonical options are equal (the import sites
that share one resolution), which of its trampolines are lowered imports.
The answers are kept by the plan's identity, the plan with them (so its id
stays its own).
"""

from __future__ import annotations

from polyengine.translate import plan as pln

__all__ = ["lowered_imports", "options_of_a_kind"]

#: plans remembered at once, per table
_LIMIT = 64

#: a plan's canonical options: the distinct values, and the one standing for each
#: options object (by its identity): (plan, distinct values, representatives)
_OPTION_KINDS: dict[int, tuple[pln.Plan, list[pln.CanonOptions], dict[int, pln.CanonOptions]]] = {}


#: each plan's lowered imports with their trampoline indices: (plan, imports)
_LOWERED: dict[int, tuple[pln.Plan, tuple[tuple[int, pln.LowerImport], ...]]] = {}


def lowered_imports(plan: pln.Plan) -> tuple[tuple[int, pln.LowerImport], ...]:
    """``(trampoline index, import)`` of each of the plan's lowered imports, in order."""
    found = _LOWERED.get(id(plan))
    if found is None or found[0] is not plan:
        if len(_LOWERED) >= _LIMIT:
            _LOWERED.pop(next(iter(_LOWERED)))
        items = tuple(
            (i, tr) for i, tr in enumerate(plan.trampolines) if isinstance(tr, pln.LowerImport)
        )
        found = _LOWERED[id(plan)] = (plan, items)
    return found[1]


def options_of_a_kind(plan: pln.Plan, o: pln.CanonOptions) -> pln.CanonOptions:
    """The plan's first options object equal to ``o`` (compared once per plan and object)."""
    found = _OPTION_KINDS.get(id(plan))
    if found is None or found[0] is not plan:
        if len(_OPTION_KINDS) >= _LIMIT:
            _OPTION_KINDS.pop(next(iter(_OPTION_KINDS)))
        found = _OPTION_KINDS[id(plan)] = (plan, [], {})
    _, distinct, reps = found
    rep = reps.get(id(o))
    if rep is None:
        rep = next((d for d in distinct if d == o), None)
        if rep is None:
            distinct.append(o)
            rep = o
        reps[id(o)] = rep
    return rep
