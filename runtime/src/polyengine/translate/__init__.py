"""polyengine.translate: component bytes to a flat, validated Plan and its envelope.

``translate(component_bytes) -> Artifacts`` is the public entry point
(python-mapping.md §7); ``translate_component`` returns the bare Plan.
"""

from __future__ import annotations

import hashlib

from polyengine.translate._cache import cached_plan, store_plan
from polyengine.translate._translate import translate_component as translate_component
from polyengine.translate.artifacts import Artifacts as Artifacts
from polyengine.translate.artifacts import artifacts_from_envelope as artifacts_from_envelope
from polyengine.translate.plan import Plan as Plan
from polyengine.translate.plan import plan_from_json as plan_from_json
from polyengine.translate.plan import plan_to_json as plan_to_json


def translate(component_bytes: bytes) -> Artifacts:
    """Translate a component binary into :class:`Artifacts` (plan + bytes + sha-256).

    Translations are cached by the component's sha-256, in the process and on
    disk (see :mod:`polyengine.translate._cache`).

    Raises :class:`polyengine.errors.TranslationError` for malformed or invalid input.
    """
    data = bytes(component_bytes)
    sha = hashlib.sha256(data).hexdigest()
    plan = cached_plan(sha, len(data))
    if plan is None:
        plan = translate_component(data)
        store_plan(sha, len(data), plan)
    return Artifacts._trusted(plan, data, sha)


__all__ = [
    "Artifacts",
    "Plan",
    "artifacts_from_envelope",
    "plan_from_json",
    "plan_to_json",
    "translate",
    "translate_component",
]
