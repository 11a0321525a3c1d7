"""The synchronous-path behaviours hold when a component runs on the task model.

Each end-to-end test of ``test_instantiate`` runs again with the task model
forced (as if the component had an async feature): values, the error model,
poisoning, host and guest resources, cross-component calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from polyengine.embed import _instantiate

from . import test_instantiate as ti

Wat = Callable[[str], bytes]

CASES = [
    ti.test_scalar_and_string_exports,
    ti.test_argument_count_and_range_checked,
    ti.test_unbranded_host_exception_traps_naming_import_and_poisons,
    ti.test_core_trap_is_a_branded_trap,
    ti.test_keyboard_interrupt_propagates,
    ti.test_result_error_model_both_ways,
    ti.test_interface_imports_resolve_by_track,
    ti.test_host_resource,
    ti.test_guest_resource_wrappers,
    ti.test_cross_component_string_transcoding,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[5:] for c in CASES])
def test_on_the_task_model(
    case: Callable[[Wat], None], wat: Wat, monkeypatch: pytest.MonkeyPatch
) -> None:
    def forced(_plan: Any, _marked: Any) -> bool:
        return True

    monkeypatch.setattr(_instantiate, "needs_task_model", forced)
    case(wat)
