"""componentize-py wasi:http guests (0.2 ``proxy``, 0.3 ``service``) through the ASGI app.

Each guest's source is ``py_proxy/app.py`` or ``py_service/app.py`` with a
one-line world; the wasi:http 0.2.12 and 0.3.0 WIT packages come from jco's
bundled copies in the guest builder's ``node_modules`` (linked at build
time, never committed).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from asgi_client import asgi_call, scope_of

from polyengine.asgi import App

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]
HERE = Path(__file__).parent


def _builder() -> Any:
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    path = HERE.parent / "guests" / "_build.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _build(
    tmp_path_factory: pytest.TempPathFactory, folder: str, version: str, world: str
) -> bytes:
    tool = Path(sys.executable).with_name("componentize-py")
    if not tool.exists():
        pytest.skip("componentize-py is not installed")
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed (jco provides the wasi:http WIT)")
    builder = _builder()
    try:
        modules = builder.node_modules()
    except Exception as exc:  # the builder names the missing tool
        pytest.skip(f"jco is not available: {exc}")
    wit_root = modules / "@bytecodealliance" / "jco" / "lib" / "wit" / "builtin" / version
    if not (wit_root / "wasi-http").is_dir():
        pytest.skip(f"jco has no bundled wasi:http {version} WIT ({wit_root})")
    work = tmp_path_factory.mktemp(folder)
    shutil.copy(HERE / folder / "app.py", work / "app.py")
    deps = work / "wit" / "deps"
    deps.mkdir(parents=True)
    shutil.copy(HERE / folder / "world.wit", work / "wit" / "world.wit")
    for package in wit_root.iterdir():
        (deps / package.name).symlink_to(package)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    out = work / "guest.wasm"
    subprocess.run(
        [str(tool), "-q", "-d", "wit", "-w", world, "componentize", "app", "-o", str(out)],
        cwd=work, env=env, check=True, timeout=600,
    )
    return out.read_bytes()


@pytest.fixture(scope="module")
def py_proxy(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _build(tmp_path_factory, "py_proxy", "0.2.12", "local:guest/proxy")


@pytest.fixture(scope="module")
def py_service(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _build(tmp_path_factory, "py_service", "0.3.0", "local:guest/service")


def test_componentize_py_proxy_through_the_asgi_app(py_proxy: bytes) -> None:
    app = App(py_proxy, reuse=100, log=lambda _: None)

    async def main() -> None:
        await app.startup()
        ex = await asgi_call(app, scope_of("GET", "/a", query=b"b=1"))
        assert ex.status == 200
        assert ex.headers == [(b"content-type", b"text/plain")]
        assert ex.body == b"hello from python at /a?b=1\n"
        payload = [b"abc", b"def" * 5000]
        ex = await asgi_call(app, scope_of("POST", "/"), payload)
        assert ex.body == b"".join(payload)
        await app.shutdown()

    asyncio.run(asyncio.wait_for(main(), 300))


def test_componentize_py_service_with_wasmtimes_reuse_defaults(py_service: bytes) -> None:
    """A wasi:http 0.3 service: 128 requests per instance, 16 at a time on one."""
    app = App(py_service, log=lambda _: None)

    async def main() -> None:
        await app.startup()
        ex = await asgi_call(app, scope_of("GET", "/a", query=b"b=1", trailers=True))
        assert ex.status == 200
        assert ex.headers == [(b"content-type", b"text/plain")]
        assert ex.body == b"hello from python p3 at /a?b=1\n"
        assert ex.trailers == []
        exchanges = await asyncio.gather(*(asgi_call(app, scope_of()) for _ in range(32)))
        assert {e.status for e in exchanges} == {200}
        # 33 requests, at most 16 at once per instance: two or three instances, not 33.
        assert 2 <= app.pool_stats["created"] <= 4
        await app.shutdown()

    asyncio.run(asyncio.wait_for(main(), 300))
