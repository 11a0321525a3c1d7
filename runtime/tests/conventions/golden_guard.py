"""Golden transcripts and the rule that guards them (seed A22, python-mapping.md §9).

A scenario's transcript is compared with ``golden/<scenario>.json``; with
``POLYENGINE_CONVENTIONS_BLESS=1`` it is written instead. The goldens define
the host ABI, whose version is the protocol package's, so:

* Adding a golden is free.
* Modifying or deleting one, relative to the last release, requires the
  protocol package's minor version (``protocol/pyproject.toml`` and
  ``polyengine_protocol.__version__``, which must agree) to have moved past
  that release's.

"The last release" is the newest tag reachable from ``HEAD`` that matches
``polyengine-protocol-v*`` or ``v*``; its goldens and protocol version are
read from git. Before any such tag exists, the baseline is
``golden/MANIFEST.json``: each golden's sha-256 and the protocol version
that blessed it. Blessing keeps the manifest honest: a new golden is
entered at the current version, and a changed (or deleted) one replaces its
entry only when the protocol minor has moved past the entry's version.
Otherwise the old entry stays and the guard test names the golden and the
bump it needs. ``POLYENGINE_CONVENTIONS_FIX=<reason>`` together with the
bless variable is the reviewed escape for a correction of the suite itself
(the seed's conventions-fix label): changed entries are replaced at the
current version and the reason is kept in the manifest's ``fixes`` list.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN_DIR = HERE / "golden"
MANIFEST = "MANIFEST.json"
REPO = HERE.parents[2]
PROTOCOL_PYPROJECT = REPO / "protocol" / "pyproject.toml"
GOLDEN_PATH_IN_REPO = "runtime/tests/conventions/golden"
BLESS_VARIABLE = "POLYENGINE_CONVENTIONS_BLESS"
FIX_VARIABLE = "POLYENGINE_CONVENTIONS_FIX"
TAG_PATTERNS = ("polyengine-protocol-v*", "v*")


def blessing() -> bool:
    return os.environ.get(BLESS_VARIABLE, "") not in ("", "0")


def render(data: object) -> str:
    """The committed text of a transcript: stable key order as recorded, ASCII only."""
    return json.dumps(data, indent=1, ensure_ascii=True) + "\n"


def sha256_of(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


def parse_version(text: str) -> tuple[int, int, int]:
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)(?:[.+-].*)?", text.strip())
    if m is None:
        raise ValueError(f"not a release version: {text!r}")
    return int(m[1]), int(m[2]), int(m[3])


def minor_moved_past(current: str, baseline: str) -> bool:
    """Whether ``current``'s (major, minor) is beyond ``baseline``'s."""
    return parse_version(current)[:2] > parse_version(baseline)[:2]


def pyproject_version(text: str) -> str:
    return str(tomllib.loads(text)["project"]["version"])


def protocol_version(pyproject: Path = PROTOCOL_PYPROJECT) -> str:
    """The protocol version; ``pyproject.toml`` and ``__version__`` must agree."""
    import polyengine_protocol

    declared = pyproject_version(pyproject.read_text())
    if declared != polyengine_protocol.__version__:
        raise AssertionError(
            f"protocol/pyproject.toml says {declared} but polyengine_protocol.__version__ "
            f"is {polyengine_protocol.__version__}; bump both together"
        )
    return declared


# --------------------------------------------------------------------------
# The manifest


def read_manifest(golden_dir: Path) -> dict[str, object]:
    path = golden_dir / MANIFEST
    if not path.exists():
        return {"goldens": {}, "fixes": []}
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def _entries(manifest: dict[str, object]) -> dict[str, dict[str, str]]:
    entries = manifest.setdefault("goldens", {})
    assert isinstance(entries, dict)
    return entries


def update_manifest(golden_dir: Path, version: str, fix_reason: str | None) -> list[str]:
    """Bring the manifest up to date after a bless; returns the entries left stale.

    A stale entry is a changed or deleted golden whose change needs a
    protocol minor bump the package has not had yet.
    """
    manifest = read_manifest(golden_dir)
    entries = _entries(manifest)
    fixes = manifest.setdefault("fixes", [])
    assert isinstance(fixes, list)
    stale: list[str] = []
    present = {p.name: sha256_of(p.read_bytes()) for p in sorted(golden_dir.glob("*.json"))}
    present.pop(MANIFEST, None)
    for name in sorted(set(entries) | set(present)):
        entry = entries.get(name)
        sha = present.get(name)
        if entry is None:
            assert sha is not None
            entries[name] = {"sha256": sha, "protocol_version": version}
            continue
        if entry["sha256"] == sha:
            continue
        if minor_moved_past(version, entry["protocol_version"]) or fix_reason:
            if fix_reason and not minor_moved_past(version, entry["protocol_version"]):
                fixes.append(
                    {"golden": name, "reason": fix_reason, "from": entry["sha256"], "to": sha}
                )
            if sha is None:
                del entries[name]
            else:
                entries[name] = {"sha256": sha, "protocol_version": version}
        else:
            stale.append(name)
    manifest["goldens"] = dict(sorted(entries.items()))
    (golden_dir / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return stale


# --------------------------------------------------------------------------
# The guard


@dataclass(frozen=True)
class Baseline:
    """What the goldens were at the last release and the protocol version then."""

    source: str
    goldens: dict[str, str]  # name -> sha-256
    versions: dict[str, str]  # name -> protocol version the rule compares with


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)


def last_release_tag(repo: Path) -> str | None:
    """The newest release tag reachable from HEAD, or ``None`` before the first release."""
    args = ["describe", "--tags", "--abbrev=0"]
    for pattern in TAG_PATTERNS:
        args += ["--match", pattern]
    proc = _git(repo, *args, "HEAD")
    if proc.returncode != 0:
        return None
    return proc.stdout.decode().strip() or None


def baseline_from_tag(repo: Path, tag: str, golden_path: str = GOLDEN_PATH_IN_REPO) -> Baseline:
    listing = _git(repo, "ls-tree", "--name-only", f"{tag}:{golden_path}")
    names = listing.stdout.decode().split() if listing.returncode == 0 else []
    goldens: dict[str, str] = {}
    for name in names:
        if not name.endswith(".json") or name == MANIFEST:
            continue
        blob = _git(repo, "show", f"{tag}:{golden_path}/{name}")
        goldens[name] = sha256_of(blob.stdout)
    pyproject = _git(repo, "show", f"{tag}:protocol/pyproject.toml")
    version = pyproject_version(pyproject.stdout.decode()) if pyproject.returncode == 0 else "0.0.0"
    return Baseline(f"tag {tag}", goldens, dict.fromkeys(goldens, version))


def baseline_from_manifest(golden_dir: Path) -> Baseline:
    entries = _entries(read_manifest(golden_dir))
    return Baseline(
        f"{golden_dir.name}/{MANIFEST}",
        {name: e["sha256"] for name, e in entries.items()},
        {name: e["protocol_version"] for name, e in entries.items()},
    )


def guard_violations(golden_dir: Path, baseline: Baseline, current_version: str) -> list[str]:
    """Every golden changed or deleted since the baseline without the protocol minor bump."""
    problems: list[str] = []
    for name, sha in sorted(baseline.goldens.items()):
        path = golden_dir / name
        if path.exists() and sha256_of(path.read_bytes()) == sha:
            continue
        change = "modified" if path.exists() else "deleted"
        released = baseline.versions[name]
        if not minor_moved_past(current_version, released):
            problems.append(
                f"golden {name} was {change} relative to {baseline.source} (protocol "
                f"{released}); a host-ABI change needs the protocol minor version moved past "
                f"{released} (now {current_version}) in protocol/pyproject.toml and "
                "polyengine_protocol.__version__"
            )
    return problems


def current_baseline(repo: Path = REPO, golden_dir: Path = GOLDEN_DIR) -> Baseline:
    tag = last_release_tag(repo)
    if tag is not None:
        return baseline_from_tag(repo, tag)
    return baseline_from_manifest(golden_dir)


# --------------------------------------------------------------------------
# Comparing a transcript with its golden


def check_golden(scenario: str, data: object, golden_dir: Path = GOLDEN_DIR) -> None:
    """Compare (or, when blessing, write) the golden of ``scenario``."""
    text = render(data)
    path = golden_dir / f"{scenario}.json"
    if blessing():
        golden_dir.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        return
    if not path.exists():
        raise AssertionError(
            f"no golden for scenario {scenario!r}; record it with {BLESS_VARIABLE}=1"
        )
    expected = path.read_text()
    if expected != text:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                text.splitlines(keepends=True),
                f"golden/{scenario}.json",
                "this run",
                n=2,
            )
        )
        raise AssertionError(
            f"the engine's host-facing behaviour differs from golden/{scenario}.json "
            f"(re-bless with {BLESS_VARIABLE}=1 only together with a protocol minor bump):\n"
            + diff[:6000]
        )
