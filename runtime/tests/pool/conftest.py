"""Fixtures of the pool tests: the text-format guest, a private compile cache, a shared pool."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pool_guests import GUEST


@pytest.fixture(scope="session")
def guest(wat: Callable[[str], bytes]) -> bytes:
    return wat(GUEST)


@pytest.fixture(scope="module", autouse=True)
def module_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A compile cache of each test module's own, inherited by every worker it starts.

    Module-scoped, so the tests that run after this folder's find the
    cache they were given (``POLYENGINE_CACHE_DIR``) unchanged.
    """
    path = tmp_path_factory.mktemp("modules")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POLYENGINE_CACHE_DIR", str(path))
        yield path


@pytest.fixture(scope="module")
def blocking_pool(guest: bytes, module_cache: Path) -> Iterator[object]:
    """Two workers behind the blocking facade, shared by a module's read-only tests."""
    import polyengine.sync

    with polyengine.sync.Pool(guest, "pool_hosts:imports", workers=2, start_timeout=60) as pool:
        yield pool
