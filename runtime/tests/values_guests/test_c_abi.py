"""A real C guest (``c-abi``: clang-19, no libc, the canonical ABI by hand)
called from Python: scalars, strings (with post-return), lists.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import polyengine

from .test_py_stub_values import _builder

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]


def test_c_guest_values() -> None:
    path: Path = _builder().build_guest("c-abi")
    arts = polyengine.translate(path.read_bytes())

    async def main() -> list[Any]:
        inst = await polyengine.instantiate(arts, {})
        ex = inst.exports
        return [
            await ex.add(40, 2),
            await ex.reverse("héllo"),
            await ex.reverse(""),
            await ex.sum([1, 2, 0xFFFFFFFF]),
            await ex.sum([]),
            await ex.count_calls(),
            await ex.count_calls(),
        ]

    add, rev, empty, total, none, c1, c2 = asyncio.run(main())
    assert add == 42
    assert rev == "olléh"
    assert empty == ""
    assert total == 0xFFFFFFFF + 3
    assert none == 0
    # count-calls counts the calls of the other exports: add, two reverses, two sums.
    assert (c1, c2) == (5, 5)
