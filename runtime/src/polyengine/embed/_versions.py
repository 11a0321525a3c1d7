"""Version canonicalization of import keys (embedder-api §"Version canonicalization").

Every semver version belongs to at most one compatibility *track*, following
the canonical-interface-name split of Explainer.md §"Import and export names":
``1.2.3`` → ``@1`` (major > 0), ``0.2.6`` → ``@0.2`` (major 0, minor > 0);
``0.0.z`` and every prerelease have no track and match exactly only.

An import name is resolved (1) exactly against the provided keys, then (2)
against the provider serving the import's track: a key registered as the
track itself (``ns:pkg/iface@0.2``), or else the highest full version
registered on that track (max wins). Registering a track key together with
full versions on the same track is refused when the registry is built.
Unversioned keys only ever match unversioned names.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from polyengine.errors import LinkError

T = TypeVar("T")

_NUM = r"(?:0|[1-9][0-9]*)"
_IDENT = r"[0-9A-Za-z-]+"
_SEMVER = re.compile(
    rf"^(?P<major>{_NUM})\.(?P<minor>{_NUM})\.(?P<patch>{_NUM})"
    rf"(?:-(?P<pre>{_IDENT}(?:\.{_IDENT})*))?"
    rf"(?:\+(?P<build>{_IDENT}(?:\.{_IDENT})*))?$"
)
_TRACK = re.compile(r"^(?:(?P<major>[1-9][0-9]*)|0\.(?P<minor>[1-9][0-9]*))$")


class ImportKeyError(LinkError):
    """An imports-mapping key is malformed or ambiguous with another key."""


@dataclass(frozen=True, slots=True, order=True)
class Version:
    """A parsed semver version; ordering ignores build metadata (semver §10)."""

    major: int
    minor: int
    patch: int
    pre: tuple[tuple[int, int | str], ...] | None = None

    @property
    def track(self) -> str | None:
        """The track key (``"1"``, ``"0.2"``), or ``None`` for exact-only versions."""
        if self.pre is not None:
            return None
        if self.major > 0:
            return str(self.major)
        if self.minor > 0:
            return f"0.{self.minor}"
        return None


def _pre_key(pre: str) -> tuple[tuple[int, int | str], ...]:
    # Numeric identifiers sort before alphanumeric ones (semver §11.4).
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split("."))


@functools.lru_cache(maxsize=4096)
def parse_version(text: str) -> Version | None:
    """Parse a full semver version, or return ``None`` when ``text`` is not one
    (cached: every instantiation's imports mapping spells the same versions)."""
    m = _SEMVER.match(text)
    if m is None:
        return None
    pre = m.group("pre")
    return Version(
        int(m.group("major")),
        int(m.group("minor")),
        int(m.group("patch")),
        None if pre is None else _pre_key(pre),
    )


def split_name(name: str) -> tuple[str, str | None]:
    """Split ``ns:pkg/iface@1.2.3`` into ``("ns:pkg/iface", "1.2.3")``."""
    base, sep, version = name.partition("@")
    return (base, version) if sep else (base, None)


@functools.lru_cache(maxsize=4096)
def track_of(name: str) -> str | None:
    """The track key of an import name (``"ns:pkg/i@0.2"``), or ``None``."""
    base, version = split_name(name)
    if version is None:
        return None
    parsed = parse_version(version)
    if parsed is None or parsed.track is None:
        return None
    return f"{base}@{parsed.track}"


@functools.lru_cache(maxsize=256)
def _tracks_of(keys: tuple[str, ...]) -> Mapping[str, str]:
    """The registered key serving each track of ``keys`` (the rules above); raises
    :class:`ImportKeyError` for a key that is neither a version nor a track key, or a
    track key and a full version registered on the same track. Worked out once per
    set of keys (every instantiation of a server's component registers the same
    keys); the mapping is shared, never written."""
    explicit: dict[str, str] = {}
    best: dict[str, tuple[Version, str]] = {}
    for key in keys:
        base, version = split_name(key)
        if version is None:
            continue
        if _TRACK.match(version):
            explicit[key] = key
            continue
        parsed = parse_version(version)
        if parsed is None:
            raise ImportKeyError(
                f"import key {key!r}: {version!r} is neither a semver version "
                "nor a track key such as '1' or '0.2'"
            )
        if parsed.track is None:
            continue
        track = f"{base}@{parsed.track}"
        current = best.get(track)
        if current is None or parsed > current[0]:
            best[track] = (parsed, key)
    for track in explicit:
        if track in best:
            raise ImportKeyError(
                f"import key {track!r} is a track key and {best[track][1]!r} is a full "
                "version on the same track; register one or the other"
            )
    tracks = dict(explicit)
    for track, (_, key) in best.items():
        tracks[track] = key
    return tracks


class VersionedRegistry(Generic[T]):
    """Providers keyed by interface id, resolved with the track rules above."""

    __slots__ = ("_exact", "_tracks")

    def __init__(self, entries: Iterable[tuple[str, T]]):
        self._exact: dict[str, T] = {}
        for key, value in entries:
            if key in self._exact:
                raise ImportKeyError(f"import key {key!r} is registered twice")
            self._exact[key] = value
        #: the registered key serving each track (shared by the registries of those keys)
        self._tracks: Mapping[str, str] = _tracks_of(tuple(self._exact))

    def resolve_key(self, name: str) -> str | None:
        """The registered key that serves import ``name``, or ``None``."""
        if name in self._exact:
            return name
        track = track_of(name)
        if track is None:
            return None
        return self._tracks.get(track)

    def lookup(self, name: str) -> T | None:
        key = self.resolve_key(name)
        return None if key is None else self._exact[key]

    def keys(self) -> list[str]:
        return list(self._exact)
