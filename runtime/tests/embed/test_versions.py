"""Version canonicalization: one test per rule of the seed's §"Version canonicalization"."""

from __future__ import annotations

import pytest

from polyengine.embed._versions import ImportKeyError, VersionedRegistry, parse_version, track_of


def reg(*keys: str) -> VersionedRegistry[str]:
    return VersionedRegistry((k, k) for k in keys)


@pytest.mark.parametrize(
    ("version", "track"),
    [
        ("1.2.3", "1"),
        ("1.0.0", "1"),
        ("2.1.2+abc", "2"),
        ("0.2.6", "0.2"),
        ("0.2.12", "0.2"),
        ("0.0.1", None),
        ("0.2.0-rc-2023-11-10", None),
        ("1.0.0-alpha", None),
    ],
)
def test_track_keys(version: str, track: str | None) -> None:
    v = parse_version(version)
    assert v is not None
    assert v.track == track


def test_exact_match_wins_over_track() -> None:
    r = reg("wasi:io/streams@0.2.0", "wasi:io/streams@0.2.9")
    assert r.resolve_key("wasi:io/streams@0.2.0") == "wasi:io/streams@0.2.0"


def test_track_max_wins() -> None:
    r = reg("wasi:io/streams@0.2.3", "wasi:io/streams@0.2.12", "wasi:io/streams@0.2.9")
    assert r.resolve_key("wasi:io/streams@0.2.6") == "wasi:io/streams@0.2.12"
    # Limited forwards compatibility: a newer import on the same track still resolves.
    assert r.resolve_key("wasi:io/streams@0.2.20") == "wasi:io/streams@0.2.12"


def test_major_track() -> None:
    r = reg("a:b/c@1.4.0")
    assert r.resolve_key("a:b/c@1.0.0") == "a:b/c@1.4.0"
    assert r.resolve_key("a:b/c@2.0.0") is None


def test_track_key_registration_serves_whole_track() -> None:
    r = reg("wasi:clocks/monotonic-clock@0.2", "wasi:clocks/monotonic-clock@0.3.0")
    assert r.resolve_key("wasi:clocks/monotonic-clock@0.2.0") == "wasi:clocks/monotonic-clock@0.2"
    assert r.resolve_key("wasi:clocks/monotonic-clock@0.2.9") == "wasi:clocks/monotonic-clock@0.2"
    assert r.resolve_key("wasi:clocks/monotonic-clock@0.3.0") == "wasi:clocks/monotonic-clock@0.3.0"


def test_mixed_registration_on_one_track_refused() -> None:
    with pytest.raises(ImportKeyError, match=r"track key.*same track"):
        reg("wasi:io/poll@0.2", "wasi:io/poll@0.2.3")


def test_different_tracks_do_not_fold() -> None:
    r = reg("wasi:io/poll@0.2.3")
    assert r.resolve_key("wasi:io/poll@0.3.0") is None


def test_prerelease_is_exact_only() -> None:
    r = reg("wasi:io/poll@0.2.0-rc-2023-11-10", "wasi:io/poll@0.2.1")
    assert r.resolve_key("wasi:io/poll@0.2.0-rc-2023-11-10") == "wasi:io/poll@0.2.0-rc-2023-11-10"
    assert r.resolve_key("wasi:io/poll@0.2.0-rc-2023-12-05") is None
    # A registered prerelease never claims the track slot.
    assert reg("wasi:io/poll@0.2.5-rc").resolve_key("wasi:io/poll@0.2.1") is None


def test_patch_only_versions_are_exact_only() -> None:
    r = reg("a:b/c@0.0.1")
    assert r.resolve_key("a:b/c@0.0.1") == "a:b/c@0.0.1"
    assert r.resolve_key("a:b/c@0.0.2") is None
    assert track_of("a:b/c@0.0.2") is None


def test_unversioned_never_folds() -> None:
    r = reg("a:b/c")
    assert r.resolve_key("a:b/c") == "a:b/c"
    assert r.resolve_key("a:b/c@0.2.0") is None
    assert reg("a:b/c@0.2.0").resolve_key("a:b/c") is None


def test_malformed_version_key_refused() -> None:
    with pytest.raises(ImportKeyError, match="neither a semver version"):
        reg("a:b/c@1.2")


def test_prerelease_ordering_below_release() -> None:
    a = parse_version("1.0.0-alpha")
    b = parse_version("1.0.0")
    assert a is not None and b is not None
    assert (a.major, a.minor, a.patch) == (b.major, b.minor, b.patch)


def test_registries_of_the_same_keys_resolve_alike_with_their_own_providers() -> None:
    keys = ("a:b/c@0.2.3", "a:b/c@0.2.9", "x:y/z@1.0.0")
    first = VersionedRegistry((k, f"first {k}") for k in keys)
    second = VersionedRegistry((k, f"second {k}") for k in keys)
    assert first.lookup("a:b/c@0.2.0") == "first a:b/c@0.2.9"
    assert second.lookup("a:b/c@0.2.0") == "second a:b/c@0.2.9"
    assert second.resolve_key("x:y/z@1.4.0") == "x:y/z@1.0.0"
    # a refused set of keys is refused every time
    for _ in range(2):
        with pytest.raises(ImportKeyError, match=r"track key.*same track"):
            reg("a:b/c@0.2", "a:b/c@0.2.1")
