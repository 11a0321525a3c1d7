"""``imports_from_package`` (python-mapping.md §7) and agreement of bindings with the runtime."""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import polyengine
from polyengine.bindings import imports_from_package

from .support import EXPECTED, GOLDEN_NAMES, load_module, stubs_text


def _package(tmp_path: Path, name: str, modules: dict[str, str]) -> None:
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    for mod, text in modules.items():
        (root / f"{mod}.py").write_text(text)


def test_imports_from_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _package(
        tmp_path,
        "shop_hosts",
        {"host": "def lookup(name):\n    return None\n", "_private": "", "tcp_socket": ""},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    imports = imports_from_package("shop_hosts", "demo:shop/*@0.1.0")
    assert sorted(imports) == ["demo:shop/host@0.1.0", "demo:shop/tcp-socket@0.1.0"]
    host = imports["demo:shop/host@0.1.0"]
    assert isinstance(host, ModuleType) and host.__name__ == "shop_hosts.host"
    assert sorted(imports_from_package(sys.modules["shop_hosts"], "demo:shop/*@0.1")) == [
        "demo:shop/host@0.1",
        "demo:shop/tcp-socket@0.1",
    ]
    assert list(imports_from_package("shop_hosts", "demo:shop/*")) == [
        "demo:shop/host",
        "demo:shop/tcp-socket",
    ]


def test_imports_from_package_refuses_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ns:pkg/\\*"):
        imports_from_package("json", "demo:shop/host@0.1.0")
    with pytest.raises(TypeError, match="is a module, not a package"):
        imports_from_package("keyword", "demo:shop/*")


def test_package_providers_instantiate_a_component(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wat: Any
) -> None:
    calls: list[int] = []
    _package(tmp_path, "start_hosts", {"log": "calls = []\ndef log(x):\n    calls.append(x)\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    from .test_verify import START

    imports = imports_from_package("start_hosts", "demo:start/*@0.1.0")
    asyncio.run(polyengine.instantiate(wat(START), imports))
    calls.extend(sys.modules["start_hosts.log"].calls)
    assert calls == [7]


# -- the generated names are the runtime's --------------------------------------------


def _members(cls: type) -> list[str]:
    return sorted(
        n
        for n, v in vars(cls).items()
        if not n.startswith("_") and (inspect.isfunction(v) or isinstance(v, property))
    )


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_names_match_the_runtime(
    name: str, golden_components: dict[str, bytes], tmp_path: Path
) -> None:
    module = load_module(EXPECTED / f"{name}_bindings.py", f"{name}_bindings")
    data = golden_components[name]
    # The provider skeleton (--stubs) supplies every import under the names the
    # runtime looks up; the component's placeholder code never calls them.
    stubs_path = tmp_path / f"{name}_stubs.py"
    stubs_path.write_text(stubs_text(data, f"{name}.wasm", f"{name}_bindings"))
    imports = load_module(stubs_path, f"{name}_stubs").imports()

    async def check() -> None:
        world = module.bind(await polyengine.instantiate(data, imports))
        for attr in _members(module.Exports):
            assert hasattr(world.exports, attr), attr
        for prop, value in vars(type(world)).items():
            if not isinstance(value, property) or prop in ("exports",):
                continue
            iface = getattr(world, prop)
            protocol = getattr(module, value.fget.__annotations__["return"])
            for attr in _members(protocol):
                assert hasattr(iface, attr), f"{prop}.{attr}"
        world.close()

    asyncio.run(check())
