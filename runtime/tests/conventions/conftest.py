"""Hooks of the conventions suite (its `wat` fixture is in runtime/tests/conftest.py)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the golden guard after every scenario, so a bless run checks what it wrote."""
    items.sort(key=lambda item: "test_golden_guard" in item.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from .golden_guard import GOLDEN_DIR, blessing, update_manifest

    if blessing() and GOLDEN_DIR.exists():
        import os

        from .golden_guard import FIX_VARIABLE, protocol_version

        update_manifest(GOLDEN_DIR, protocol_version(), os.environ.get(FIX_VARIABLE) or None)
