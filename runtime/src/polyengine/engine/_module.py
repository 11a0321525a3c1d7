"""Compiling core modules, with an in-process and an on-disk cache.

Compiled modules are keyed by the sha-256 of their bytes.  Within a process a
module is compiled once per engine; across processes the compiled artifact is
kept in ``<cache>/<wasmtime version>/<sha256>-<config digest>`` through
wasmtime's module serialization.  Each cache file starts with a header and
the sha-256 of the serialized payload, so a truncated or corrupted entry is
detected before it reaches wasmtime, then ignored and rewritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import wasmtime

from ._config import Engine, get_engine
from ._errors import CompileError
from ._features import explain
from ._ffi import WASMTIME_VERSION, address

__all__ = ["CoreModule", "ImportDesc", "compile_module", "module_cache_dir"]

_MAGIC = b"polyengine-module\x00v1\x00"


@dataclass(frozen=True, slots=True)
class ImportDesc:
    """One import of a core module: its two-level name and its kind."""

    module: str
    name: str
    kind: str  # "func" | "memory" | "table" | "global" | "tag"


class CoreModule:
    """A compiled core module (obtain via :func:`compile_module`)."""

    __slots__ = ("_exports", "_imports", "_ptr", "engine", "name", "sha256", "wasmtime_module")

    engine: Engine
    name: str
    sha256: str
    wasmtime_module: wasmtime.Module
    _ptr: int
    _imports: tuple[ImportDesc, ...] | None
    _exports: dict[str, str] | None

    def __init__(self) -> None:
        raise TypeError("use compile_module() to obtain a CoreModule")

    @classmethod
    def _create(cls, engine: Engine, module: wasmtime.Module, sha: str, name: str) -> CoreModule:
        self = object.__new__(cls)
        self.engine = engine
        self.wasmtime_module = module
        self.sha256 = sha
        self.name = name
        self._ptr = address(module.ptr())
        self._imports = None
        self._exports = None
        return self

    @property
    def imports(self) -> tuple[ImportDesc, ...]:
        """The module's imports in declaration order."""
        if self._imports is None:
            self._imports = tuple(
                ImportDesc(imp.module, imp.name or "", _kind(imp.type))
                for imp in self.wasmtime_module.imports
            )
        return self._imports

    @property
    def export_kinds(self) -> dict[str, str]:
        """The module's exports: name to kind (``"func"``, ``"memory"``, ...)."""
        if self._exports is None:
            self._exports = {e.name: _kind(e.type) for e in self.wasmtime_module.exports}
        return self._exports

    @property
    def export_names(self) -> tuple[str, ...]:
        """The names the module exports, in declaration order."""
        return tuple(e.name for e in self.wasmtime_module.exports)

    def __repr__(self) -> str:
        return f"<CoreModule {self.name} sha256={self.sha256[:12]}>"


def _kind(ty: object) -> str:
    return {
        wasmtime.FuncType: "func",
        wasmtime.MemoryType: "memory",
        wasmtime.TableType: "table",
        wasmtime.GlobalType: "global",
    }.get(type(ty), "tag")


_memory_cache: dict[tuple[int, str], CoreModule] = {}
_lock = threading.Lock()


def module_cache_dir(engine: Engine) -> Path | None:
    """Where compiled modules of ``engine`` are cached on disk, or ``None`` if off.

    ``POLYENGINE_CACHE_DIR`` overrides the default location; setting it to an
    empty string, ``0`` or ``off`` disables the disk cache.
    """
    config = engine.config
    if not config.module_cache:
        return None
    if config.cache_dir is not None:
        base = Path(config.cache_dir)
    else:
        env = os.environ.get("POLYENGINE_CACHE_DIR")
        if env is not None:
            if env.strip().lower() in ("", "0", "off", "none", "false"):
                return None
            base = Path(env)
        else:
            xdg = os.environ.get("XDG_CACHE_HOME")
            root = Path(xdg) if xdg else Path.home() / ".cache"
            base = root / "polyengine" / "modules"
    return base / WASMTIME_VERSION


def _read_cached(path: Path, engine: Engine) -> wasmtime.Module | None:
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC)
    if len(blob) < head + 32 or not blob.startswith(_MAGIC):
        return None
    digest, payload = blob[head : head + 32], blob[head + 32 :]
    if hashlib.sha256(payload).digest() != digest:
        return None
    try:
        return wasmtime.Module.deserialize(engine.wasmtime_engine, payload)
    except wasmtime.WasmtimeError:
        return None


def _write_cached(path: Path, module: wasmtime.Module) -> None:
    try:
        payload = bytes(module.serialize())
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except (OSError, wasmtime.WasmtimeError):
        # The disk cache is an optimization; failing to fill it is not an error.
        return


def compile_module(
    data: bytes | bytearray | memoryview,
    name: str | None = None,
    *,
    engine: Engine | None = None,
) -> CoreModule:
    """Compile the core module ``data`` (binary format) for ``engine``.

    Results are cached by sha-256 in the process and on disk (see
    :func:`module_cache_dir`).  Raises :class:`CompileError` naming ``name``
    (or the module's hash) when the bytes are not a valid core module.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"compile_module expects bytes, not {type(data).__name__}")
    raw = bytes(data)
    eng = engine if engine is not None else get_engine()
    sha = hashlib.sha256(raw).hexdigest()
    label = name if name is not None else f"sha256:{sha[:12]}"
    key = (id(eng), sha)
    cached = _memory_cache.get(key)
    if cached is not None:
        return cached
    with _lock:
        cached = _memory_cache.get(key)
        if cached is not None:
            return cached
        cache_dir = module_cache_dir(eng)
        path = cache_dir / f"{sha}-{eng.config.code_fingerprint()}" if cache_dir else None
        module = _read_cached(path, eng) if path is not None else None
        if module is None:
            if raw[:4] != b"\0asm":
                raise CompileError(label, "not a WebAssembly binary (bad magic)")
            try:
                module = wasmtime.Module(eng.wasmtime_engine, raw)
            except wasmtime.WasmtimeError as exc:
                lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
                raise CompileError(label, explain("; ".join(lines))) from None
            if path is not None:
                _write_cached(path, module)
        result = CoreModule._create(eng, module, sha, label)
        _memory_cache[key] = result
        return result
