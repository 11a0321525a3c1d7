"""Later instances of a plan bind their plain host functions without a binding each.

The first instance of a plan binds every trampoline one by one (working out
the lowered imports' core signatures with its live memories); later ones
make the lowered imports the task model does not take, and the
``resource.new``/``drop``/``rep`` built-ins, from those signatures. Which
imports the task model takes is decided per instance, from that instance's
imports.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from test_shared_compilation import CELLS, _cell_class

import polyengine
from polyengine.translate import translate
from polyengine_protocol import suspending


def _imports(marked: bool, scale: int) -> dict[str, Any]:
    cell = _cell_class(scale)
    if marked:
        cell.get = suspending(cell.get)  # type: ignore[method-assign]
    return {"Cell": cell}


async def _run_once(artifacts: Any, marked: bool, scale: int) -> int:
    inst = await polyengine.instantiate(artifacts, _imports(marked, scale))
    try:
        assert (inst._runtime.tasks is not None) is marked
        return int(await inst.exports.run(3))
    finally:
        inst.close()


def test_later_instances_bind_no_plain_host_function_one_by_one(
    wat: Callable[[str], bytes], bound: list[int]
) -> None:
    artifacts = translate(wat(CELLS))

    async def main() -> None:
        assert await _run_once(artifacts, False, 10) == 30
        # ctor, get, drop: bound one by one by the plan's first instance (the plan may
        # be cached from an earlier test, whose instance was the first)
        assert set(bound) <= {0, 1, 2}
        assert len(bound) == len(set(bound))
        bound.clear()
        assert await _run_once(artifacts, False, 7) == 21
        assert await _run_once(artifacts, False, 2) == 6
        assert bound == []  # both lowered imports and resource.drop made in bulk

    asyncio.run(main())


def test_the_task_model_takes_the_marked_import_of_each_instance(
    wat: Callable[[str], bytes], bound: list[int]
) -> None:
    artifacts = translate(wat(CELLS))

    async def main() -> None:
        assert await _run_once(artifacts, False, 10) == 30  # the plan's first instance
        bound.clear()
        assert await _run_once(artifacts, True, 5) == 15
        assert len(bound) == 1  # the marked method alone, on the task model
        bound.clear()
        assert await _run_once(artifacts, False, 4) == 12
        assert bound == []

    asyncio.run(main())
