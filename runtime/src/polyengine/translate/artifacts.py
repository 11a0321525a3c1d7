"""Translation artifacts and the translation envelope (python-mapping.md §7, amendment A4).

An :class:`Artifacts` pairs a component binary with its :class:`Plan`. The
envelope is the JSON document ``polyengine translate`` writes: the format
name and version, the component's sha-256 and the plan. Reading an envelope
back needs the same component bytes; a mismatched pair is refused loudly.
"""

from __future__ import annotations

import hashlib
import mmap

from polyengine.translate.plan import PLAN_FORMAT_VERSION, Plan, plan_from_json, plan_to_json
from polyengine.types.model import Json

ENVELOPE_FORMAT = "polyengine.translation-envelope"
ENVELOPE_VERSION = PLAN_FORMAT_VERSION


class Artifacts:
    """A translated component: the bytes, their sha-256 and the Plan.

    The plan's record of each core module (offset, length, sha-256) holds
    for the bytes: the runtime finds compiled modules by those digests
    without hashing the modules again. The translator's plans hold by
    construction; a plan given from outside (the constructor, an envelope) is
    checked here.
    """

    __slots__ = ("_bytes", "_plan", "_sha256")
    _bytes: bytes | mmap.mmap

    def __init__(self, plan: Plan, component_bytes: bytes, sha256: str | None = None) -> None:
        digest = hashlib.sha256(component_bytes).hexdigest()
        if sha256 is not None and sha256 != digest:
            raise ValueError(f"component sha-256 {digest} does not match the expected {sha256}")
        self._plan = plan
        self._bytes = bytes(component_bytes)
        self._sha256 = digest
        _check_modules(plan, self._bytes)

    @classmethod
    def _trusted(cls, plan: Plan, component_bytes: bytes | mmap.mmap, sha256: str) -> Artifacts:
        """Artifacts whose ``sha256`` the caller has just computed (no second hashing).

        ``component_bytes`` may be a read-only mapping of the component file
        (the command line's): its pages are read only where a module is
        compiled, and :attr:`component_bytes` copies it out on first use.
        """
        self = cls.__new__(cls)
        self._plan = plan
        self._bytes = component_bytes
        self._sha256 = sha256
        return self

    @property
    def plan(self) -> Plan:
        return self._plan

    @property
    def component_bytes(self) -> bytes:
        data = self._bytes
        if not isinstance(data, bytes):
            data = self._bytes = bytes(data)
        return data

    @property
    def sha256(self) -> str:
        """Hex sha-256 of the component binary."""
        return self._sha256

    def module_bytes(self, index: int) -> bytes:
        """The bytes of core module ``plan.modules[index]``."""
        m = self._plan.modules[index]
        return self._bytes[m.offset : m.offset + m.length]

    def module_view(self, index: int) -> memoryview:
        """Core module ``plan.modules[index]`` in place (no copy: a cached module needs none)."""
        m = self._plan.modules[index]
        return memoryview(self._bytes)[m.offset : m.offset + m.length]

    def to_envelope(self) -> dict[str, Json]:
        """The translation envelope: JSON-ready, deterministic under ``sort_keys``."""
        return {
            "format": ENVELOPE_FORMAT,
            "version": ENVELOPE_VERSION,
            "component_sha256": self._sha256,
            "plan": plan_to_json(self._plan),
        }

    def __repr__(self) -> str:
        return f"<Artifacts sha256={self._sha256[:12]} modules={len(self._plan.modules)}>"


def artifacts_from_envelope(envelope: dict[str, Json], component_bytes: bytes) -> Artifacts:
    """Rebuild :class:`Artifacts` from an envelope and the component it was made from.

    Raises ``ValueError`` for an unknown format or version, and for a
    component whose sha-256 differs from the envelope's (naming both hashes).
    """
    if not isinstance(envelope, dict) or envelope.get("format") != ENVELOPE_FORMAT:
        got = envelope.get("format") if isinstance(envelope, dict) else type(envelope).__name__
        raise ValueError(
            f"not a translation envelope (format {got!r}, expected {ENVELOPE_FORMAT!r})"
        )
    version = envelope.get("version")
    if version != ENVELOPE_VERSION:
        raise ValueError(
            f"unsupported translation envelope version {version!r} "
            f"(this polyengine reads version {ENVELOPE_VERSION})"
        )
    expected = envelope.get("component_sha256")
    actual = hashlib.sha256(component_bytes).hexdigest()
    if expected != actual:
        raise ValueError(
            f"translation envelope is for component sha-256 {expected}, "
            f"but the component bytes given have sha-256 {actual}"
        )
    plan_json = envelope.get("plan")
    if not isinstance(plan_json, dict):
        raise ValueError("translation envelope has no plan")
    plan = plan_from_json(plan_json)
    data = bytes(component_bytes)
    _check_modules(plan, data, "translation envelope")
    return Artifacts._trusted(plan, data, actual)


def _check_modules(plan: Plan, data: bytes, what: str = "plan") -> None:
    """Refuse a plan whose core modules are not where, or not what, it says in ``data``."""
    view = memoryview(data)
    for index, m in enumerate(plan.modules):
        if m.offset < 0 or m.length < 0 or m.offset + m.length > len(data):
            raise ValueError(f"{what} names a core module outside the component")
        digest = hashlib.sha256(view[m.offset : m.offset + m.length]).hexdigest()
        if digest != m.sha256:
            raise ValueError(
                f"{what}: core module {index} has sha-256 {digest}, the plan says {m.sha256}"
            )
