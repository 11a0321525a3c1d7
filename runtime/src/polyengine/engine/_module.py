"""Compiling core modules, with an in-process and an on-disk cache.

Compiled modules are keyed by the sha-256 of their bytes.  Within a process a
module is compiled once per engine; across processes the compiled artifact is
kept in ``<cache>/<wasmtime version>/<sha256>-<config digest>.cwasm`` through
wasmtime's module serialization, and loaded with ``Module.deserialize_file``
(wasmtime maps the file instead of the process reading and copying it).

Beside each artifact a small ``.meta`` file (:mod:`marshal`) records the
artifact's size and modification time, the sha-256 of its bytes, and the
module's imports and exports, so a cached module needs neither wasmtime's
type queries nor a read of the artifact.  An artifact whose size or
modification time is not the recorded one (truncated, rewritten, replaced)
never reaches wasmtime: it is ignored and rewritten.  A cache directory is
trusted as far as that (it holds native code): damage that keeps a file's
size and time is not looked for.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import wasmtime

from ._config import Engine, get_engine
from ._errors import CompileError
from ._features import explain
from ._ffi import WASMTIME_VERSION, address

__all__ = [
    "ARTIFACT_SUFFIX",
    "CoreModule",
    "ImportDesc",
    "cached_module_path",
    "compile_module",
    "has_start_section",
    "module_cache_dir",
]

#: The first item of a ``.meta`` record: a record of another layout is a miss.
_META_FORMAT = "polyengine-module-meta/2"
#: The suffix of a serialized module (wasmtime's own file layout, nothing before it).
ARTIFACT_SUFFIX = ".cwasm"


@dataclass(frozen=True, slots=True)
class ImportDesc:
    """One import of a core module: its two-level name and its kind."""

    module: str
    name: str
    kind: str  # "func" | "memory" | "table" | "global" | "tag"


class CoreModule:
    """A compiled core module (obtain via :func:`compile_module`)."""

    __slots__ = (
        "_exports",
        "_imports",
        "_link_names",
        "_ptr",
        "engine",
        "export_signatures",
        "name",
        "runs_start",
        "sha256",
        "wasmtime_module",
    )

    engine: Engine
    name: str
    sha256: str
    wasmtime_module: wasmtime.Module
    _ptr: int
    #: whether instantiating runs guest code: the module has a start function, or
    #: its bytes were not read to tell (see :func:`has_start_section`)
    runs_start: bool
    #: ``name -> (params, results)`` of the exported functions with numeric
    #: signatures, filled as instances ask for them (``CoreInstance.get``)
    export_signatures: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
    _imports: tuple[ImportDesc, ...] | None
    _exports: dict[str, str] | None
    _link_names: tuple[tuple[tuple[bytes, int, bytes, int], ...], bool] | None

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
        self.runs_start = True
        self.export_signatures = {}
        self._imports = None
        self._exports = None
        self._link_names = None
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
    def link_names(self) -> tuple[tuple[tuple[bytes, int, bytes, int], ...], bool]:
        """Each import's encoded module and field names with their lengths, as a linker
        defines them, and whether two imports share a (module, field) pair."""
        if self._link_names is None:
            names = []
            keys = set()
            for desc in self.imports:
                m, n = desc.module.encode(), desc.name.encode()
                names.append((m, len(m), n, len(n)))
                keys.add((m, n))
            self._link_names = (tuple(names), len(keys) != len(names))
        return self._link_names

    @property
    def export_kinds(self) -> dict[str, str]:
        """The module's exports: name to kind (``"func"``, ``"memory"``, ...)."""
        if self._exports is None:
            self._exports = {e.name: _kind(e.type) for e in self.wasmtime_module.exports}
        return self._exports

    @property
    def export_names(self) -> tuple[str, ...]:
        """The names the module exports, in declaration order."""
        return tuple(self.export_kinds)

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


def _read_cached(path: Path, engine: Engine) -> CoreModule | None:
    """The module cached at ``path`` (its ``.meta`` beside it), or ``None`` for a miss."""
    try:
        meta = marshal.loads(path.with_suffix(".meta").read_bytes())
        st = path.stat()
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if (
        not isinstance(meta, tuple)
        or len(meta) != 6
        or meta[0] != _META_FORMAT
        or meta[1] != st.st_size
        or meta[2] != st.st_mtime_ns
    ):
        return None
    _, _, _, sha, imports, exports = meta
    try:
        module = wasmtime.Module.deserialize_file(engine.wasmtime_engine, str(path))
        result = CoreModule._create(engine, module, sha, "")
        result._imports = tuple(ImportDesc(m, n, k) for m, n, k in imports)
        result._exports = dict(exports)
    except (wasmtime.WasmtimeError, ValueError, TypeError):
        return None
    return result


def _write_cached(path: Path, module: CoreModule) -> None:
    """Serialize ``module`` to ``path`` and record its ``.meta`` (both atomically)."""
    try:
        payload = bytes(module.wasmtime_module.serialize())
        imports = tuple((d.module, d.name, d.kind) for d in module.imports)
        exports = tuple(module.export_kinds.items())
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(path, payload)
        st = path.stat()
        record = (_META_FORMAT, st.st_size, st.st_mtime_ns, module.sha256, imports, exports)
        _write_atomically(path.with_suffix(".meta"), marshal.dumps(record))
    except (OSError, ValueError, wasmtime.WasmtimeError):
        # The disk cache is an optimization; failing to fill it is not an error.
        return


def _write_atomically(path: Path, data: bytes) -> None:
    import tempfile  # only when a module is compiled (start-up)

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def cached_module_path(sha256: str, engine: Engine | None = None) -> Path | None:
    """Where the compiled module with hex digest ``sha256`` is cached on disk (``None``: off)."""
    eng = engine if engine is not None else get_engine()
    cache_dir = module_cache_dir(eng)
    if cache_dir is None:
        return None
    return cache_dir / f"{sha256}-{eng.config.code_fingerprint()}{ARTIFACT_SUFFIX}"


def compile_module(
    data: bytes | bytearray | memoryview,
    name: str | None = None,
    *,
    engine: Engine | None = None,
    sha256: str | None = None,
) -> CoreModule:
    """Compile the core module ``data`` (binary format) for ``engine``.

    Results are cached by sha-256 in the process and on disk (see
    :func:`module_cache_dir`).  ``sha256``, when given, is the hex digest of
    ``data`` as the caller already knows it (a plan records each module's),
    which spares hashing the bytes again.  Raises :class:`CompileError`
    naming ``name`` (or the module's hash) when the bytes are not a valid
    core module.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"compile_module expects bytes, not {type(data).__name__}")
    eng = engine if engine is not None else get_engine()
    sha = sha256 if sha256 is not None else hashlib.sha256(data).hexdigest()
    label = name if name is not None else f"sha256:{sha[:12]}"
    key = (id(eng), sha)
    cached = _memory_cache.get(key)
    if cached is not None:
        return cached
    with _lock:
        cached = _memory_cache.get(key)
        if cached is not None:
            return cached
        path = cached_module_path(sha, eng)
        result = _read_cached(path, eng) if path is not None else None
        if result is not None:
            result.name = label
        else:
            raw = bytes(data)
            if raw[:4] != b"\0asm":
                raise CompileError(label, "not a WebAssembly binary (bad magic)")
            try:
                module = wasmtime.Module(eng.wasmtime_engine, raw)
            except wasmtime.WasmtimeError as exc:
                lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
                raise CompileError(label, explain("; ".join(lines))) from None
            result = CoreModule._create(eng, module, sha, label)
            if path is not None:
                _write_cached(path, result)
        result.runs_start = has_start_section(data)
        _memory_cache[key] = result
        return result


#: the id of the start section (WebAssembly core spec, "Binary Format", §5.5.2)
_START_SECTION = 8


def has_start_section(data: bytes | bytearray | memoryview) -> bool:
    """Whether the core module ``data`` has a start section (core spec §5.5.10, "Modules").

    Only the section headers are read (an id byte and a u32 LEB128 size
    each), so a module of many megabytes costs a dozen steps. Anything that
    is not a well-formed sequence of sections answers ``True``: the caller
    then assumes instantiating may run guest code.
    """
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    end = len(view)
    if end < 8 or bytes(view[:4]) != b"\0asm":
        return True
    pos = 8
    while pos < end:
        section = view[pos]
        if section == _START_SECTION:
            return True
        size = shift = 0
        pos += 1
        while True:
            if pos >= end or shift > 28:
                return True
            byte = view[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        pos += size
    return pos != end
