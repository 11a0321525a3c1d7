"""Session fixtures of the bindgen tests (see ``support.py``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .support import GOLDEN, GOLDEN_NAMES, build_component


@pytest.fixture(scope="session")
def golden_components(wasm_tools: str) -> dict[str, bytes]:
    return {name: build_component(wasm_tools, GOLDEN / f"{name}.wit") for name in GOLDEN_NAMES}


@pytest.fixture(scope="session")
def component_of(wasm_tools: str) -> Callable[..., bytes]:
    def build(wit: str, world: str | None = None) -> bytes:
        return build_component(wasm_tools, wit, world)

    return build
