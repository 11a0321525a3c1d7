"""The runtime's public surface (seed §"Module wiring"): ``polyengine.__all__`` is pinned.

Adding or removing a public name is a contract change: update this list
together with the embedder-api document.
"""

from __future__ import annotations

import polyengine

PUBLIC = [
    "Artifacts",
    "ImportLeaf",
    "Instance",
    "LimitCode",
    "Limits",
    "LinkError",
    "MissingImportError",
    "NameCollisionError",
    "TranslationError",
    "__version__",
    "artifacts_from_envelope",
    "create_stream",
    "instantiate",
    "required_imports",
    "translate",
]


def test_all_is_pinned() -> None:
    assert sorted(polyengine.__all__) == PUBLIC


def test_every_public_name_resolves() -> None:
    for name in polyengine.__all__:
        assert getattr(polyengine, name) is not None, name
