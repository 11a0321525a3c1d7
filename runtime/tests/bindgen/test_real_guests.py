"""Bindings for the real guests of the suite, used by host code that both checkers accept.

The guests (``runtime/tests/guests``) are built by componentize-py, componentize-js,
componentize-qjs (QuickJS) and clang. For each: bindings are generated, the
guest verifies against them, host code in ``guest_hosts/`` written against them
passes ``mypy --strict`` and pyright and runs, and ``polyengine wit`` round-trips
through ``wasm-tools``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import polyengine
from polyengine.bindgen import render_wit
from polyengine.bindings import WorldMismatchError, world_digest

from .support import bindings_text, build_component, load_module, tool

pytestmark = pytest.mark.toolchain

HOSTS = Path(__file__).parent / "guest_hosts"

# bindings module name → (guest it is generated from, host module using it)
GUESTS = {
    "stub_values": ("py-stub-values", "stub_values_host"),
    "qjs": ("js-qjs", "qjs_host"),
    "c_abi": ("c-abi", "c_abi_host"),
    "pipes": ("py-async", "pipes_host"),
    "js_sm": ("js-sm", None),
    # two interfaces define `error-code` (wasi:filesystem/types, wasi:sockets/types)
    "p3_files": ("py-p3-files", None),
    "p3_tcp": ("py-p3-tcp", None),
    # wasi:http guests: `error-code` in wasi:http/types and wasi:io or wasi:filesystem
    "http_proxy": ("py-http-proxy", None),
    "http_service": ("py-http-service", None),
    "js_http": ("js-http", None),
}
ROUND_TRIP = [
    "py-stub-values",
    "py-async",
    "py-sync-wasi",
    "py-p3-run",
    "js-qjs",
    "js-qjs-async",
    "js-wasi-cli",
    "js-sm",
    "c-abi",
    "c-hello",
    "py-values-composed",
    "py-async-composed",
]


def _builder() -> ModuleType:
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[1] / "guests" / "_build.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def guest(name: str) -> bytes:
    path: Path = _builder().build_guest(name)
    return path.read_bytes()


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding each guest's bindings and the host modules using them."""
    out = tmp_path_factory.mktemp("guest-bindings")
    for module, (name, _) in GUESTS.items():
        (out / f"{module}_bindings.py").write_text(bindings_text(guest(name), f"{name}.wasm"))
    for host in HOSTS.glob("*.py"):
        shutil.copy(host, out)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_guest_bindings_and_hosts_type_check(work: Path, checker: str) -> None:
    files = sorted(p.name for p in work.glob("*.py"))
    if checker == "mypy":
        cmd = [tool("mypy"), "--strict", "--no-incremental", *files]
    else:
        cmd = [tool("pyright"), "--pythonpath", sys.executable, *files]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("module", sorted(GUESTS))
def test_guest_verifies_against_its_bindings(work: Path, module: str) -> None:
    bindings = load_module(work / f"{module}_bindings.py", f"{module}_bindings")
    bindings.verify(polyengine.translate(guest(GUESTS[module][0])).plan, strict=True)


def _run_host(work: Path, module: str, data: bytes) -> list[object]:
    load_module(work / f"{module}_bindings.py", f"{module}_bindings")
    host_name = GUESTS[module][1]
    assert host_name is not None
    host = load_module(work / f"{host_name}.py", host_name)
    result: list[object] = asyncio.run(host.run(data))
    return result


@pytest.mark.slow
def test_componentize_py_guest_through_bindings(work: Path) -> None:
    out = _run_host(work, "stub_values", guest("py-stub-values"))
    assert out == [
        "ABC",
        {"x": 4, "y": 6},
        6.0,
        {"read": True, "write": False, "exec": False},
        "not a number: x",
        5,
        5,
    ]


@pytest.mark.slow
def test_quickjs_guest_through_bindings(work: Path) -> None:
    out = _run_host(work, "qjs", guest("js-qjs"))
    assert out == ["hello, x", {"x": 4, "y": 6}, 6, 3, "not a number: q"]


@pytest.mark.slow
def test_c_guest_through_bindings(work: Path) -> None:
    out = _run_host(work, "c_abi", guest("c-abi"))
    assert out == [5, "!☃ olléh", 4294967298, 3]


@pytest.mark.slow
def test_async_guest_through_bindings(work: Path) -> None:
    out = _run_host(work, "pipes", guest("py-async"))
    assert out[0] == "hello, bob"
    assert out[1] == 5
    assert out[2] == bytes(range(5))
    assert out[3] == b"SHOUT"
    assert str(out[4]).endswith("soon")
    assert out[5] == "desserts"


@pytest.mark.slow
def test_same_interface_other_toolchain_is_named(work: Path) -> None:
    """The QuickJS guest exports the same ``pipes`` but not componentize-py's
    ``exports#init``: the bindings of the one refuse the other, naming the leaf."""
    pipes = load_module(work / "pipes_bindings.py", "pipes_bindings")
    with pytest.raises(WorldMismatchError) as info:
        pipes.verify(polyengine.translate(guest("js-qjs-async")).plan)
    assert info.value.missing == ("export exports#init",)
    assert info.value.changed == ()


@pytest.mark.slow
def test_another_guest_does_not_verify(work: Path) -> None:
    qjs = load_module(work / "qjs_bindings.py", "qjs_bindings")
    with pytest.raises(WorldMismatchError) as info:
        qjs.verify(polyengine.translate(guest("c-abi")).plan)
    assert "export add" in info.value.extra or "export greet" in info.value.missing


@pytest.mark.slow
@pytest.mark.parametrize("name", ROUND_TRIP)
def test_wit_round_trips_real_guests(name: str, wasm_tools: str, tmp_path: Path) -> None:
    data = guest(name)
    plan = polyengine.translate(data).plan
    wit = tmp_path / "world.wit"
    wit.write_text(render_wit(plan))
    again = polyengine.translate(build_component(wasm_tools, wit, "root")).plan
    assert world_digest(again) == world_digest(plan)
