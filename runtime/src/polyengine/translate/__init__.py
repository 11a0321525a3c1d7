"""polyengine.translate: component bytes to a flat, validated Plan and its envelope.

``translate(component_bytes) -> Artifacts`` is the public entry point
(python-mapping.md §7); ``translate_component`` returns the bare Plan.

The face imports nothing until it is used: the Plan and the envelope load on
first use of their names (PEP 562 module ``__getattr__``), and the reader
(:mod:`polyengine.binary`), the validator and the translator proper when a
component is first translated, so a process whose plans come from the cache
never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyengine.faces import lazy_face

if TYPE_CHECKING:
    import mmap
    import os

    from polyengine.translate.artifacts import Artifacts as Artifacts
    from polyengine.translate.artifacts import artifacts_from_envelope as artifacts_from_envelope
    from polyengine.translate.plan import Plan as Plan
    from polyengine.translate.plan import plan_from_json as plan_from_json
    from polyengine.translate.plan import plan_to_json as plan_to_json


def translate_component(component_bytes: bytes) -> Plan:
    """Translate a component binary into its :class:`Plan`, uncached.

    Raises :class:`polyengine.errors.TranslationError` for malformed or invalid input.
    """
    from polyengine.translate._translate import translate_component as run

    return run(component_bytes)


def translate(component_bytes: bytes) -> Artifacts:
    """Translate a component binary into :class:`Artifacts` (plan + bytes + sha-256).

    Translations are cached by the component's sha-256, in the process and on
    disk (see :mod:`polyengine.translate._cache`).

    Raises :class:`polyengine.errors.TranslationError` for malformed or invalid input.
    """
    return _translate_cached(bytes(component_bytes), disk_any_size=False)


def translate_for_run(
    component_bytes: bytes | mmap.mmap, *, source: tuple[str, os.stat_result] | None = None
) -> Artifacts:
    """:func:`translate` for a process that starts to run one component (the command line).

    The plan is kept on disk whatever the component's size: in a fresh
    process reading a cached plan also spares importing the translator.
    ``source`` is the file the bytes were read from and its ``stat`` taken
    before reading: an unchanged file's digest is remembered, not computed
    again (:func:`polyengine.translate._cache.known_digest`). The bytes may
    be a read-only mapping of that file: a run whose plan and modules are
    cached then reads none of its pages.
    """
    return _translate_cached(component_bytes, disk_any_size=True, source=source)


def _translate_cached(
    data: bytes | mmap.mmap,
    *,
    disk_any_size: bool,
    source: tuple[str, os.stat_result] | None = None,
) -> Artifacts:
    import hashlib

    from polyengine.translate._cache import cached_plan, known_digest, remember_digest, store_plan
    from polyengine.translate.artifacts import Artifacts

    sha = known_digest(source[0], source[1], data) if source is not None else None
    if sha is None:
        sha = hashlib.sha256(data).hexdigest()
        if source is not None:
            remember_digest(source[0], source[1], sha)
    plan = cached_plan(sha, len(data), disk_any_size=disk_any_size)
    if plan is None:
        plan = translate_component(data if isinstance(data, bytes) else bytes(data))
        store_plan(sha, len(data), plan, disk_any_size=disk_any_size)
    return Artifacts._trusted(plan, data, sha)


__all__ = [
    "Artifacts",
    "Plan",
    "artifacts_from_envelope",
    "plan_from_json",
    "plan_to_json",
    "translate",
    "translate_component",
    "translate_for_run",
]

#: the module of each name imported on first use
_LAZY = {
    "Artifacts": ".artifacts",
    "artifacts_from_envelope": ".artifacts",
    "Plan": ".plan",
    "plan_from_json": ".plan",
    "plan_to_json": ".plan",
}

__getattr__, __dir__ = lazy_face(globals(), _LAZY)
