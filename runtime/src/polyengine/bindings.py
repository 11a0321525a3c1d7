"""Support for generated bindings: the world digest, verification and handle types.

A module written by ``polyengine bindgen`` imports this module and public
``polyengine`` only (bindgen.md §1). It holds:

* the world digest ``pe-world/1`` (bindgen.md §3): :func:`world_leaves` and
  :func:`world_digest` compute it from a :class:`~polyengine.translate.Plan`,
  the one implementation bindgen and :func:`verify_world` share;
* :func:`verify_world` and :class:`WorldMismatchError`, the pre-instantiation
  check of seed amendment A17 (the generated ``instantiate`` calls it before
  any guest code runs);
* :class:`WorldInstance`, the base of the generated world classes, and
  :func:`resolve_artifacts`, which translates without running guest code;
* the public generic handle types of python-mapping.md §6 (structural
  protocols the runtime's handles satisfy) and the value shapes generated
  types build on (:class:`Ok`, :class:`Err`, :class:`SomeCase`, ...);
* :func:`imports_from_package`, the per-interface module helper of
  python-mapping.md §7.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import pkgutil
import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Final, Generic, Literal, Self, TypeAlias, TypedDict, TypeVar, cast

from polyengine import Instance
from polyengine.errors import LinkError
from polyengine.translate import Artifacts, Plan, translate
from polyengine.translate.plan import ExternDesc, FuncDesc, InstanceDesc, TypeDesc
from polyengine.types.model import (
    FuncType,
    Json,
    ValType,
    valtype_to_json,
)
from polyengine_protocol import ByteStreamSource as ByteSource
from polyengine_protocol import (
    Chunk,
    ComponentException,
    ErrorContext,
    Future,
    FutureSource,
    Stream,
    StreamSource,
    StreamWriter,
)

__all__ = [
    "DIGEST_DOMAIN",
    "ByteSource",
    "ByteStream",
    "Chunk",
    "ComponentException",
    "Err",
    "ErrEmpty",
    "ErrorContext",
    "Future",
    "FutureSource",
    "Leaf",
    "NoneCase",
    "Ok",
    "OkEmpty",
    "SomeCase",
    "Stream",
    "StreamSource",
    "StreamWriter",
    "WorldInstance",
    "WorldMismatchError",
    "imports_from_package",
    "leaf_key_track",
    "resolve_artifacts",
    "verify_world",
    "world_digest",
    "world_leaves",
]

T = TypeVar("T")
E = TypeVar("E")
X = TypeVar("X")

#: The readable end of a ``stream<u8>``: its chunks are ``bytes``.
ByteStream: TypeAlias = Stream[int]


class Ok(TypedDict, Generic[T]):
    """``{"kind": "ok", "value": v}``: the ok case of a ``result`` used as a value."""

    kind: Literal["ok"]
    value: T


class OkEmpty(TypedDict):
    """``{"kind": "ok"}``: the ok case of a ``result`` with no ok type."""

    kind: Literal["ok"]


class Err(TypedDict, Generic[E]):
    """``{"kind": "err", "value": e}``: the err case of a ``result`` used as a value."""

    kind: Literal["err"]
    value: E


class ErrEmpty(TypedDict):
    """``{"kind": "err"}``: the err case of a ``result`` with no err type."""

    kind: Literal["err"]


class SomeCase(TypedDict, Generic[T]):
    """``{"kind": "some", "value": v}``: a present option nested in an option."""

    kind: Literal["some"]
    value: T


class NoneCase(TypedDict):
    """``{"kind": "none"}``: an absent option nested in an option."""

    kind: Literal["none"]


# -- the world digest (bindgen.md §3) --------------------------------------------------

#: The domain constant hashed in front of every digest; frozen wire content.
DIGEST_DOMAIN: Final = "pe-world/1"

#: A leaf of a world: ``(direction, key, leaf digest)``, direction ``"import"``/``"export"``.
Leaf: TypeAlias = tuple[str, str, str]

_ASYNC_PREFIXES = (("[async method]", "[method]"), ("[async static]", "[static]"), ("[async]", ""))


def _normalize_name(name: str) -> tuple[str, bool]:
    """Strip an ``[async…]`` annotation (the older spelling of async names)."""
    for prefix, plain in _ASYNC_PREFIXES:
        if name.startswith(prefix):
            return plain + name[len(prefix) :], True
    return name, False


def _walk(
    plan: Plan,
) -> list[tuple[str, str, ExternDesc]]:
    """Every ``(direction, key, desc)`` function or resource leaf of the plan's root."""
    out: list[tuple[str, str, ExternDesc]] = []
    sections: tuple[tuple[str, list[tuple[str, ExternDesc]]], ...] = (
        ("import", [(i.name, i.desc) for i in plan.imports]),
        ("export", [(e.name, e.desc) for e in plan.exports]),
    )
    for direction, items in sections:
        for name, desc in items:
            if isinstance(desc, InstanceDesc):
                for member, sub in desc.exports:
                    if isinstance(sub, FuncDesc) or (
                        isinstance(sub, TypeDesc) and sub.resource is not None
                    ):
                        out.append((direction, f"{name}#{member}", sub))
            elif isinstance(desc, FuncDesc) or (
                isinstance(desc, TypeDesc) and desc.resource is not None
            ):
                out.append((direction, name, desc))
    return out


def _resource_refs(plan: Plan, walked: list[tuple[str, str, ExternDesc]]) -> dict[int, str]:
    """Each resource table index → its canonical ``direction:iface#name`` spelling."""
    refs: dict[int, str] = {}
    for direction, key, desc in walked:
        if isinstance(desc, TypeDesc) and desc.resource is not None:
            refs.setdefault(desc.resource, f"{direction}:{leaf_key_track(key)}")
    for index, rt in enumerate(plan.resources):
        if index not in refs and rt.import_path is not None:
            refs[index] = "import:" + leaf_key_track("#".join(rt.import_path))
    return refs


def _type_json(t: ValType, refs: dict[int, str]) -> Json:
    """``valtype_to_json`` with resource indices replaced by their canonical names."""
    j = valtype_to_json(t)
    return _replace_rt(j, refs)


def _replace_rt(j: Json, refs: dict[int, str]) -> Json:
    if isinstance(j, dict):
        out: dict[str, Json] = {}
        for k, v in j.items():
            if k in ("own", "borrow") and isinstance(v, int):
                out[k] = refs.get(v, "?")
            else:
                out[k] = _replace_rt(v, refs)
        return out
    if isinstance(j, list):
        return [_replace_rt(x, refs) for x in j]
    return j


def _hash(payload: Json) -> str:
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(f"{DIGEST_DOMAIN}\n{text}".encode()).hexdigest()


def _func_json(ft: FuncType, is_async: bool, refs: dict[int, str]) -> Json:
    return {
        "kind": "func",
        "async": ft.is_async or is_async,
        "params": [_type_json(t, refs) for _, t in ft.params],
        "result": None if ft.result is None else _type_json(ft.result, refs),
    }


def world_leaves(plan: Plan) -> tuple[Leaf, ...]:
    """The sorted leaves of ``plan``'s world with their ``pe-world/1`` leaf digests.

    A leaf is a function or a resource, keyed ``iface-id#external-name``
    (a bare world item by its bare name); an ``[async]`` name prefix is
    folded into the async flag. Hashed: parameter types, the result, the
    async flag and every label; ``own``/``borrow`` as the canonical
    ``direction:iface#name`` of the resource. Not hashed: type and parameter
    names, docs, world and package names, canonical options.
    """
    walked = _walk(plan)
    refs = _resource_refs(plan, walked)
    leaves: list[Leaf] = []
    for direction, key, desc in walked:
        base, _, member = key.rpartition("#")
        name, was_async = _normalize_name(member if base else key)
        norm_key = f"{base}#{name}" if base else name
        if isinstance(desc, FuncDesc):
            digest = _hash(_func_json(desc.type, was_async, refs))
        else:
            digest = _hash({"kind": "resource"})
        leaves.append((direction, norm_key, digest))
    return tuple(sorted(leaves))


def world_digest(leaves: Plan | Sequence[Leaf]) -> str:
    """``pe-world/1:sha256:<hex>`` of a plan's world (or of its :func:`world_leaves`)."""
    if isinstance(leaves, Plan):
        leaves = world_leaves(leaves)
    body = [list(leaf) for leaf in sorted(leaves)]
    return f"{DIGEST_DOMAIN}:sha256:{_hash(body)}"


_TRACK = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(\+[0-9A-Za-z.-]+)?$")


def leaf_key_track(key: str) -> str:
    """A leaf key with its interface version reduced to its track (``@0.2.6`` → ``@0.2``).

    The runtime resolves interface ids by compatibility track (``1.2.3`` →
    ``@1``, ``0.2.6`` → ``@0.2``; ``0.0.z`` and prereleases match exactly
    only), so verification compares keys the same way.
    """
    iface, sep, member = key.partition("#")
    base, at, version = iface.partition("@")
    if at:
        m = _TRACK.match(version)
        if m is not None:
            major, minor = int(m.group(1)), int(m.group(2))
            if major > 0:
                version = str(major)
            elif minor > 0:
                version = f"0.{minor}"
        iface = f"{base}@{version}"
    return f"{iface}{sep}{member}"


@dataclass(frozen=True, slots=True)
class _Divergence:
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    changed: tuple[str, ...]


class WorldMismatchError(LinkError):
    """A component is not the world its bindings were generated for (seed A17).

    ``missing`` lists the leaves the bindings need and the component lacks
    (``direction key``), ``extra`` the component's leaves the bindings do
    not know, ``changed`` the leaves both have with different types;
    ``expected`` and ``actual`` are the two world digests.
    """

    def __init__(
        self,
        expected: str,
        actual: str,
        missing: Sequence[str],
        extra: Sequence[str],
        changed: Sequence[str],
    ) -> None:
        self.expected = expected
        self.actual = actual
        self.missing = tuple(missing)
        self.extra = tuple(extra)
        self.changed = tuple(changed)
        parts = []
        for label, items in (
            ("missing", self.missing),
            ("extra", self.extra),
            ("changed", self.changed),
        ):
            if items:
                parts.append(f"{label}: {', '.join(items)}")
        super().__init__(
            f"the component's world ({actual}) does not match the bindings' world "
            f"({expected}); " + "; ".join(parts or ["leaf sets differ"])
        )


def _compare(bindings: Sequence[Leaf], component: Sequence[Leaf], strict: bool) -> _Divergence:
    def index(leaves: Sequence[Leaf]) -> dict[tuple[str, str], tuple[str, str]]:
        return {(d, leaf_key_track(k)): (k, digest) for d, k, digest in leaves}

    mine, theirs = index(bindings), index(component)
    missing: list[str] = []
    extra: list[str] = []
    changed: list[str] = []
    for key in sorted(mine.keys() | theirs.keys()):
        direction = key[0]
        a, b = mine.get(key), theirs.get(key)
        if a is not None and b is not None:
            if a[1] != b[1]:
                changed.append(f"{direction} {b[0]}")
        elif a is not None:
            # The component lacks a leaf of the bindings: fine for an import the
            # component does not use, unless strict.
            if strict or direction == "export":
                missing.append(f"{direction} {a[0]}")
        elif b is not None and (strict or direction == "import"):
            extra.append(f"{direction} {b[0]}")
    return _Divergence(tuple(missing), tuple(extra), tuple(changed))


def verify_world(plan: Plan, digest: str, leaves: Sequence[Leaf], *, strict: bool = False) -> None:
    """Check that ``plan`` is the world of bindings with ``digest`` and ``leaves``.

    Passes when the digests are equal. Otherwise (unless ``strict``) passes
    when the component's imports are a subset of the bindings' imports and
    the bindings' exports a subset of the component's exports, every shared
    leaf with an equal leaf digest (keys compared by version track): a
    component built from the same WIT that drops unused imports still
    verifies. Raises :class:`WorldMismatchError` listing the missing, extra
    and changed leaves.
    """
    actual_leaves = world_leaves(plan)
    actual = world_digest(actual_leaves)
    if actual == digest:
        return
    div = _compare(leaves, actual_leaves, strict)
    if strict or div.missing or div.extra or div.changed:
        raise WorldMismatchError(digest, actual, div.missing, div.extra, div.changed)


# -- instances -------------------------------------------------------------------------


def resolve_artifacts(artifacts: Artifacts | bytes | bytearray | memoryview) -> Artifacts:
    """``artifacts`` as :class:`Artifacts`, translating bytes (which runs no guest code)."""
    if isinstance(artifacts, Artifacts):
        return artifacts
    if isinstance(artifacts, bytes | bytearray | memoryview):
        return translate(bytes(artifacts))
    raise TypeError(f"expected Artifacts or component bytes, got {type(artifacts).__name__}")


class WorldInstance(Generic[X]):
    """An instance seen through generated bindings: ``exports`` typed as ``X``.

    It wraps :class:`polyengine.Instance` and converts nothing: ``exports``
    is the instance's own facade, cast to the generated ``Exports`` protocol.
    ``close()`` (also on leaving ``with``) releases the instance.
    """

    __slots__ = ("exports", "instance")

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.exports: X = cast(X, instance.exports)

    def close(self) -> None:
        """Release the engine store (idempotent)."""
        self.instance.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- per-interface modules (python-mapping.md §7) --------------------------------------

_PATTERN = re.compile(r"^(?P<ns>[a-z][a-z0-9-]*):(?P<pkg>[a-z][a-z0-9-]*)/\*(?:@(?P<ver>.+))?$")


def imports_from_package(package: ModuleType | str, pattern: str) -> dict[str, object]:
    """Providers for ``ns:pkg/*@ver`` from the submodules of ``package``.

    Each submodule (or subpackage) ``connections`` of ``package`` provides
    the interface ``ns:pkg/connections@ver`` (the module name's underscores
    become dashes); ``@ver`` is kept verbatim, a full version or a track key
    such as ``0.2``, and resolved by the runtime's version rules. A module
    whose name starts with ``_`` is skipped. Raises ``ValueError`` for a
    malformed pattern and ``TypeError`` when ``package`` is no package.
    """
    m = _PATTERN.match(pattern)
    if m is None:
        raise ValueError(f"pattern {pattern!r} must have the form 'ns:pkg/*' or 'ns:pkg/*@version'")
    pkg = importlib.import_module(package) if isinstance(package, str) else package
    paths = getattr(pkg, "__path__", None)
    if paths is None:
        raise TypeError(f"{pkg.__name__} is a module, not a package of interface modules")
    version = m.group("ver")
    out: dict[str, object] = {}
    for info in sorted(pkgutil.iter_modules(paths), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        key = f"{m.group('ns')}:{m.group('pkg')}/{info.name.replace('_', '-')}"
        if version is not None:
            key += f"@{version}"
        out[key] = module
    return out
