"""The process-global registry of runtime copies (A9) and its census."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import polyengine_protocol as pp

KEY = "polyengine.runtimeCopies/1"


@pytest.fixture(autouse=True)
def fresh_registry() -> Iterator[None]:
    saved = sys.__dict__.pop(KEY, None)
    try:
        yield
    finally:
        sys.__dict__.pop(KEY, None)
        if saved is not None:
            sys.__dict__[KEY] = saved


def test_the_registry_lives_on_sys_under_the_seed_key() -> None:
    entry = pp.register_runtime_copy("0.1.0", module="/site/polyengine/__init__.py")
    assert entry == {
        "module": "/site/polyengine/__init__.py",
        "runtime_version": "0.1.0",
        "protocol_generation": 1,
    }
    assert sys.__dict__[KEY] == [entry]
    assert getattr(sys, KEY) is sys.__dict__[KEY]


def test_the_module_defaults_to_the_callers_file() -> None:
    entry = pp.register_runtime_copy("0.1.0")
    assert entry["module"] == __file__


def test_registering_again_is_one_copy() -> None:
    first = pp.register_runtime_copy("0.1.0", module="/a.py")
    again = pp.register_runtime_copy("0.1.0", module="/a.py")
    assert again is first
    assert len(pp.runtime_copies()) == 1
    pp.register_runtime_copy("0.2.0", module="/a.py")
    assert len(pp.runtime_copies()) == 2


def test_every_copy_of_this_package_shares_one_list(tmp_path: Path) -> None:
    """A second copy of the protocol package, imported from another path, sees our entries."""
    source = Path(pp.__file__).parent
    copy_dir = tmp_path / "copy_of_protocol"
    copy_dir.mkdir()
    for file in source.glob("*.py"):
        (copy_dir / file.name).write_text(file.read_text())
    spec = importlib.util.spec_from_file_location(
        "copy_of_protocol", copy_dir / "__init__.py", submodule_search_locations=[str(copy_dir)]
    )
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    sys.modules["copy_of_protocol"] = other
    try:
        spec.loader.exec_module(other)
        pp.register_runtime_copy("0.1.0", module="/first/polyengine/__init__.py")
        other.register_runtime_copy("0.1.0", module="/second/polyengine/__init__.py")
        assert [c["module"] for c in pp.runtime_copies()] == [
            "/first/polyengine/__init__.py",
            "/second/polyengine/__init__.py",
        ]
        assert other.runtime_copies() == pp.runtime_copies()
        # The other copy's classes are foreign, its brands are not.
        assert other.Trap is not pp.Trap
        assert pp.is_trap(other.Trap("from the other copy"))
        assert other.is_component_exception(pp.ComponentException(1))
        assert pp.is_suspending(other.suspending(len))
        back = pp.from_cloneable(other.to_cloneable(other.PeerTrappedError("p", other.Trap("t"))))
        assert pp.is_peer_trapped_error(back) and pp.is_trap(back.__cause__)  # type: ignore[attr-defined]
    finally:
        for name in [n for n in sys.modules if n.startswith("copy_of_protocol")]:
            del sys.modules[name]


def test_runtime_copies_is_a_snapshot() -> None:
    pp.register_runtime_copy("0.1.0", module="/a.py")
    snapshot = pp.runtime_copies()
    snapshot[0]["module"] = "changed"
    snapshot.clear()
    assert pp.runtime_copies()[0]["module"] == "/a.py"


def test_malformed_entries_are_skipped_and_extra_keys_dropped() -> None:
    sys.__dict__[KEY] = [
        "junk",
        {"module": "/a.py"},
        {"module": "/b.py", "runtime_version": "9.0", "protocol_generation": 1, "url": "x"},
    ]
    assert pp.runtime_copies() == [
        {"module": "/b.py", "runtime_version": "9.0", "protocol_generation": 1}
    ]


def test_a_clobbered_registry_is_reported() -> None:
    sys.__dict__[KEY] = "not a list"
    with pytest.raises(RuntimeError, match="holds a str, not the runtime-copy list"):
        pp.register_runtime_copy("0.1.0")


@pytest.mark.parametrize(("version", "module"), [("", None), (1, None), ("0.1", ""), ("0.1", 3)])
def test_bad_arguments_are_refused(version: object, module: object) -> None:
    with pytest.raises(TypeError, match="must be a non-empty str"):
        pp.register_runtime_copy(version, module=module)  # type: ignore[arg-type]


def test_no_census_for_zero_or_one_copy() -> None:
    assert pp.copy_census() is None
    pp.register_runtime_copy("0.1.0", module="/a.py")
    assert pp.copy_census() is None


def test_the_census_lists_every_copy_and_explains() -> None:
    pp.register_runtime_copy("0.1.0", module="/app/vendor/polyengine/__init__.py")
    pp.register_runtime_copy("0.2.0", module="/site/polyengine/__init__.py")
    census = pp.copy_census()
    assert census is not None
    lines = census.splitlines()
    assert lines[0].startswith("2 polyengine runtime copies are registered in this process")
    assert "/app/vendor/polyengine/__init__.py (runtime 0.1.0, protocol generation 1)" in lines[1]
    assert "/site/polyengine/__init__.py (runtime 0.2.0, protocol generation 1)" in lines[2]
    assert "predates brands" in census
    assert "Resolve exactly one runtime per process." in census
