"""The translation caches: core-module validations, signatures and plans by sha-256."""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from polyengine.engine import _validate
from polyengine.errors import TranslationError
from polyengine.translate import plan_to_json, translate, translate_component

_cache = importlib.import_module("polyengine.translate._cache")
_translate = importlib.import_module("polyengine.translate._translate")
_inline = importlib.import_module("polyengine.translate._inline")

TEXT = """(component
  (core module $m
    (memory (export "mem") 1)
    (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
  (core instance $i (instantiate $m))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
)"""

CORE = bytes.fromhex("0061736d01000000010401600000030201000a040102000b")  # (func) only


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty disk cache, every size cached, and empty in-process caches."""
    monkeypatch.setenv("POLYENGINE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_cache, "DISK_CACHE_MIN_SIZE", 0)
    monkeypatch.setattr(_validate, "DISK_CACHE_MIN_SIZE", 0)
    _cache.clear_plan_cache()
    _validate.clear_validation_cache()
    _inline._SIGNATURES.clear()
    yield tmp_path
    _cache.clear_plan_cache()
    _validate.clear_validation_cache()


@pytest.fixture(scope="module")
def component(wat2wasm: Callable[[str], bytes]) -> bytes:
    return wat2wasm(TEXT)


def test_translate_reuses_the_plan_in_process(cache_dir: Path, component: bytes) -> None:
    first = translate(component)
    second = translate(component)
    assert second.plan is first.plan
    assert second.sha256 == hashlib.sha256(component).hexdigest()
    assert first.plan == translate_component(component)


def test_plan_cache_on_disk(cache_dir: Path, component: bytes) -> None:
    arts = translate(component)
    files = list((cache_dir).rglob("plans/*"))
    assert len(files) == 1 and files[0].name.startswith(arts.sha256)
    _cache.clear_plan_cache()
    plan = _cache.cached_plan(arts.sha256, len(component))
    assert plan is not None and plan is not arts.plan
    assert plan_to_json(plan) == plan_to_json(arts.plan)


def test_damaged_plan_entry_is_a_miss_and_is_rewritten(cache_dir: Path, component: bytes) -> None:
    arts = translate(component)
    (entry,) = cache_dir.rglob("plans/*")
    good = entry.read_bytes()
    entry.write_bytes(good[:-5] + b"XXXXX")
    _cache.clear_plan_cache()
    assert _cache.cached_plan(arts.sha256, len(component)) is None
    assert translate(component).plan == arts.plan
    assert entry.read_bytes() == good


def test_plan_outside_the_component_is_refused(cache_dir: Path, component: bytes) -> None:
    arts = translate(component)
    _cache.clear_plan_cache()
    assert _cache.cached_plan(arts.sha256, 10) is None


def test_disk_cache_off(monkeypatch: pytest.MonkeyPatch, component: bytes) -> None:
    monkeypatch.setenv("POLYENGINE_CACHE_DIR", "off")
    assert _cache.plan_cache_path("00" * 32) is None
    assert translate(component).plan == translate_component(component)


def test_failures_are_not_cached(cache_dir: Path) -> None:
    bad = b"\x00asm\x0d\x00\x01\x00\x01\x09" + CORE[:9]
    for _ in range(2):
        with pytest.raises(TranslationError):
            translate(bad)
    assert not list(cache_dir.rglob("plans/*"))


def test_validation_is_remembered_on_disk(cache_dir: Path) -> None:
    sha = hashlib.sha256(CORE).hexdigest()
    _validate.validate_core_module(CORE)
    (marker,) = cache_dir.rglob("validated/*")
    assert marker.name.startswith(sha)
    assert sha in _validate._validated


def test_invalid_module_is_refused_every_time(cache_dir: Path) -> None:
    bad = CORE[:-1] + b"\x0c"  # the function body no longer ends
    for _ in range(2):
        with pytest.raises(TranslationError, match="invalid core module"):
            _validate.validate_core_module(bad, 40)
    assert not list(cache_dir.rglob("validated/*"))


def test_marker_stands_for_validation(cache_dir: Path) -> None:
    bad = CORE[:-1] + b"\x0c"
    sha = hashlib.sha256(bad).hexdigest()
    with pytest.raises(TranslationError):
        _validate.validate_core_module(bad)
    marker = _validate._marker(sha)
    assert marker is not None
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_bytes(b"")
    _validate.validate_core_module(bad)  # the marker is trusted: no second validation


def test_small_modules_leave_no_marker(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_validate, "DISK_CACHE_MIN_SIZE", 1 << 20)
    _validate.validate_core_module(CORE)
    assert not list(cache_dir.rglob("validated/*"))


def test_timed_translation_reports_every_phase(cache_dir: Path, component: bytes) -> None:
    plan, timings = _translate.translate_component_timed(component)
    assert plan == translate_component(component)
    assert set(timings) == set(_translate.PHASES)
    assert all(t >= 0 for t in timings.values())
    assert timings["read"] > 0 and timings["core"] > 0 and timings["plan"] > 0


def test_translator_digest_is_stable() -> None:
    assert _cache.translator_digest() == _cache.translator_digest()
    assert len(_cache.translator_digest()) == 16


def test_module_signatures_on_disk(
    cache_dir: Path, component: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_inline, "SIGNATURE_DISK_MIN_SIZE", 0)
    plan = translate_component(component)
    (entry,) = cache_dir.rglob("signatures/*")
    assert entry.name.startswith(plan.modules[0].sha256)
    _inline._SIGNATURES.clear()

    def unused(*args: object) -> None:
        raise AssertionError("the signature should come from the disk cache")

    monkeypatch.setattr(_inline, "read_module_signature", unused)
    assert translate_component(component) == plan
    entry.write_bytes(b"damaged")
    _inline._SIGNATURES.clear()
    with pytest.raises(TranslationError, match="internal error AssertionError"):
        translate_component(component)


def test_translator_digest_follows_an_edited_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest covers the sources' contents; a record by their stat spares reading them."""
    import os

    root = tmp_path / "polyengine"
    for sub in _cache._TRANSLATOR_FOLDERS:
        (root / sub / "deep").mkdir(parents=True)
        (root / sub / "deep" / "m.py").write_text("x = 1\n")
    (root / "engine").mkdir()
    (root / "engine" / "_validate.py").write_text("y = 1\n")
    (root / "translate" / "_cache.py").write_text("")
    monkeypatch.setattr(_cache, "__file__", str(root / "translate" / "_cache.py"))
    digest = _cache.translator_digest.__wrapped__
    base = tmp_path / "cache"
    first = digest(base)
    assert digest(base) == first == digest(None)
    (record,) = (base / "translator").iterdir()
    assert record.read_text() == first
    record.write_text("0" * 16)  # a remembered digest is used as it is: no source is read
    assert digest(base) == "0" * 16
    source = root / "types" / "deep" / "m.py"
    st = source.stat()
    source.write_text("x = 2\n")  # same size; the time moves
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    second = digest(base)
    assert second not in (first, "0" * 16) and second == digest(None)
    source.write_text("x = 1\n")  # the first contents again: the first digest
    assert digest(base) == first
    (root / "validate" / "deep" / "__pycache__").mkdir()
    (root / "validate" / "deep" / "__pycache__" / "m.py").write_text("changed")
    assert digest(None) == first  # bytecode folders do not count


def _settled(path: Path) -> None:
    """Move a file's modification time back, as if it had been written minutes ago."""
    import os

    st = path.stat()
    old = st.st_mtime_ns - 600 * 1_000_000_000
    os.utime(path, ns=(old, old))


def test_a_run_file_digest_is_remembered_until_the_file_changes(
    cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    app = tmp_path / "app.wasm"
    app.write_bytes(b"\0asm-one")
    # change time is now: too fresh to remember
    monkeypatch.setattr(_cache, "SETTLED_NS", 10**18)
    before = os.stat(app)
    _cache.remember_digest(str(app), before, "a" * 64)
    assert _cache.known_digest(str(app), before, app.read_bytes()) is None
    monkeypatch.setattr(_cache, "SETTLED_NS", 0)
    _settled(app)
    before = os.stat(app)
    _cache.remember_digest(str(app), before, "b" * 64)
    assert _cache.known_digest(str(app), before, app.read_bytes()) == "b" * 64
    # the same size, new bytes: the change time moves, the record no longer holds
    app.write_bytes(b"\0asm-two")
    _settled(app)
    after = os.stat(app)
    assert _cache.known_digest(str(app), after, app.read_bytes()) is None
    # a stat taken before a change that happened while the file was read
    _cache.remember_digest(str(app), after, "c" * 64)
    assert _cache.known_digest(str(app), after, app.read_bytes()) == "c" * 64
    app.write_bytes(b"\0asm-333")
    assert _cache.known_digest(str(app), after, b"\0asm-two") is None
    # bytes of another length than the stat's are never trusted
    assert _cache.known_digest(str(app), after, b"\0asm") is None


def test_translate_for_run_uses_the_remembered_digest(
    cache_dir: Path, component: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from polyengine.translate import translate_for_run

    monkeypatch.setattr(_cache, "SETTLED_NS", 0)
    app = tmp_path / "app.wasm"
    app.write_bytes(component)
    _settled(app)
    before = os.stat(app)
    first = translate_for_run(app.read_bytes(), source=(str(app), before))
    assert first.sha256 == hashlib.sha256(component).hexdigest()
    hashed: list[int] = []
    real = hashlib.sha256

    def counting(data: bytes = b"") -> object:
        hashed.append(len(data))
        return real(data)

    monkeypatch.setattr(hashlib, "sha256", counting)
    second = translate_for_run(app.read_bytes(), source=(str(app), before))
    assert second.sha256 == first.sha256 and second.plan is first.plan
    assert len(component) not in hashed  # the component was not hashed again
