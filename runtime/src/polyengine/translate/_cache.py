"""The plan cache: translations remembered by the component's sha-256.

Translation is deterministic (architecture.md §2), so a Plan depends only on
the component bytes and on the translator itself. Plans are kept in the
process (the last :data:`MEMORY_CACHE_LIMIT` of them; a Plan is immutable and
safe to share) and, for components of at least :data:`DISK_CACHE_MIN_SIZE`
bytes, on disk next to the compiled-module cache as
``<module cache>/plans/<sha256>-<translator digest>``: a header, the
sha-256 of the payload and the pickled Plan (several times faster to load
than the JSON form; the directory is trusted as much as the compiled-module
cache beside it, which holds native code). The translator digest covers the
plan format and the sources of the reader, the type
model, the validator and the translator (read once, then remembered by the
sources' ``stat``, see :func:`translator_digest`), so a changed translator
never reuses an older plan. An unreadable or damaged
entry is ignored and rewritten. Only successful translations are cached.

A command line that runs a file also remembers the file's digest by its
path and ``stat`` (:func:`known_digest`), so a second run of an unchanged
file does not hash it again: the record holds the size, inode, device and
the modification and change times (the change time cannot be set back),
and it is written only for a file that did not change while it was read and
whose times are at least :data:`SETTLED_NS` in the past (a later write in
the same clock tick would otherwise go unseen).

The signatures of large valid core modules (their imports and exports with
types, see :func:`polyengine.validate.read_module_signature`) are kept the same way under
``<module cache>/signatures/``: components built by one toolchain share
their runtime's modules, so a new component often finds them there.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import marshal
import os
import pickle
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from polyengine.translate.plan import PLAN_FORMAT_VERSION, Plan

if TYPE_CHECKING:
    import mmap

    from polyengine.types.subtype import CoreModuleT

__all__ = [
    "DISK_CACHE_MIN_SIZE",
    "MEMORY_CACHE_LIMIT",
    "cached_plan",
    "cached_signature",
    "clear_plan_cache",
    "known_digest",
    "plan_cache_path",
    "remember_digest",
    "store_plan",
    "store_signature",
]

MEMORY_CACHE_LIMIT = 16
DISK_CACHE_MIN_SIZE = 256 * 1024
"""Smaller components translate about as fast as a cached plan is read."""

_MAGIC = b"polyengine-plan\x00v1\x00"
_SOURCE_FORMAT = "polyengine-source/1"
SETTLED_NS = 2_000_000_000
"""A file's digest is remembered once its times are this old (nanoseconds)."""

_memory: OrderedDict[str, Plan] = OrderedDict()
_lock = threading.Lock()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold the cyclic garbage collector off for the body.

    Translating and loading a plan allocate many small objects that reference
    counting frees; the collector would only add pauses (tens of milliseconds
    for a large component when a full collection falls inside).
    """
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


#: The translator's sources, relative to the package: the folders whole, and single modules.
_TRANSLATOR_FOLDERS = ("binary", "types", "validate", "translate")
_TRANSLATOR_MODULES = ("engine/_validate.py",)


def _translator_sources() -> tuple[Path, list[Path]]:
    root = Path(__file__).resolve().parent.parent  # the polyengine package
    paths = [root / rel for rel in _TRANSLATOR_MODULES]
    for sub in _TRANSLATOR_FOLDERS:
        with contextlib.suppress(OSError):
            paths.extend(sorted(_sources(root / sub)))
    return root, paths


def _content_digest(root: Path, paths: list[Path]) -> str:
    digest = hashlib.sha256(f"plan-format {PLAN_FORMAT_VERSION}".encode())
    for path in paths:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        with contextlib.suppress(OSError):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _stat_digest(root: Path, paths: list[Path]) -> str:
    digest = hashlib.sha256(f"plan-format {PLAN_FORMAT_VERSION}".encode())
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            stamp = b"missing"
        else:
            stamp = f"{st.st_size} {st.st_mtime_ns} {st.st_ino}".encode()
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + stamp + b"\0")
    return digest.hexdigest()


@functools.cache
def translator_digest(base: Path | None = None) -> str:
    """A digest of the translator's sources and plan format: a cached plan is reused only by it.

    It covers the contents of the sources, so installs of the same sources
    share plans and an edited translator never meets a plan of its older
    self. Reading every source in every process would cost ~10 ms, so the
    digest is remembered in ``base/translator/`` under a digest of the
    sources' names, sizes, modification times and inodes (a ``stat`` each):
    a process with a cached plan reads no source file.
    """
    root, paths = _translator_sources()
    if base is None:
        return _content_digest(root, paths)
    record = base / "translator" / _stat_digest(root, paths)[:40]
    with contextlib.suppress(OSError, UnicodeDecodeError):
        known = record.read_text(encoding="ascii")
        if len(known) == 16 and all(c in "0123456789abcdef" for c in known):
            return known
    digest = _content_digest(root, paths)
    with contextlib.suppress(OSError):
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_name(f".{record.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(digest, encoding="ascii")
        os.replace(tmp, record)
    return digest


def _sources(folder: Path) -> Iterator[Path]:
    """The ``.py`` files under ``folder`` (``os.scandir``: cheaper than ``Path.rglob``)."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    yield from _sources(Path(entry.path))
            elif entry.name.endswith(".py"):
                yield Path(entry.path)


def _cache_path(kind: str, sha256: str) -> Path | None:
    from polyengine.engine import get_engine, module_cache_dir

    try:
        base = module_cache_dir(get_engine())
    except Exception:  # an unusable default engine only turns the cache off
        return None
    if base is None:
        return None
    return base / kind / f"{sha256}-{translator_digest(base)}"


def plan_cache_path(sha256: str) -> Path | None:
    """Where the plan of the component with hex digest ``sha256`` is cached, or ``None`` if off."""
    return _cache_path("plans", sha256)


def clear_plan_cache() -> None:
    """Forget the plans remembered in this process (the disk cache is kept)."""
    with _lock:
        _memory.clear()


def _remember(sha256: str, plan: Plan) -> None:
    with _lock:
        _memory[sha256] = plan
        _memory.move_to_end(sha256)
        while len(_memory) > MEMORY_CACHE_LIMIT:
            _memory.popitem(last=False)


def _load(path: Path | None) -> object:
    """The object pickled at ``path``, or ``None`` for a missing or damaged entry."""
    if path is None:
        return None
    try:
        blob = path.read_bytes()
        head = len(_MAGIC)
        payload = blob[head + 32 :]
        if (
            not blob.startswith(_MAGIC)
            or hashlib.sha256(payload).digest() != blob[head : head + 32]
        ):
            return None
        with gc_paused():
            return pickle.loads(payload)
    except Exception:  # a missing or damaged entry is a miss
        return None


def _store(path: Path | None, sha256: str, value: object) -> None:
    """Pickle ``value`` to ``path`` (atomically), replacing older translators' entries."""
    if path is None:
        return
    try:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # e.g. a type nested too deeply to pickle: keep it in memory only
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(_MAGIC + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
        # entries for the same bytes by an older translator are of no more use
        for stale in path.parent.glob(f"{sha256}-*"):
            if stale.name != path.name:
                stale.unlink(missing_ok=True)
    except OSError:
        # the cache is an optimization; failing to fill it is not an error
        with contextlib.suppress(OSError):
            tmp.unlink()


def cached_plan(sha256: str, size: int, *, disk_any_size: bool = False) -> Plan | None:
    """The cached plan of the ``size``-byte component with hex digest ``sha256``, if any.

    The disk is looked at for components of at least :data:`DISK_CACHE_MIN_SIZE`
    bytes, or of any size with ``disk_any_size``.
    """
    plan = _memory.get(sha256)
    if plan is not None:
        return plan
    if size < DISK_CACHE_MIN_SIZE and not disk_any_size:
        return None
    loaded = _load(plan_cache_path(sha256))
    if not isinstance(loaded, Plan) or any(m.offset + m.length > size for m in loaded.modules):
        return None
    _remember(sha256, loaded)
    return loaded


def store_plan(sha256: str, size: int, plan: Plan, *, disk_any_size: bool = False) -> None:
    """Remember ``plan`` as the translation of the ``size``-byte component ``sha256``."""
    _remember(sha256, plan)
    if size >= DISK_CACHE_MIN_SIZE or disk_any_size:
        _store(plan_cache_path(sha256), sha256, plan)


def cached_signature(sha256: str) -> CoreModuleT | None:
    """The on-disk signature of the (valid) core module with hex digest ``sha256``, if any."""
    from polyengine.types.subtype import CoreModuleT

    loaded = _load(_cache_path("signatures", sha256))
    return loaded if isinstance(loaded, CoreModuleT) else None


def store_signature(sha256: str, sig: CoreModuleT) -> None:
    """Keep the signature of a valid core module on disk (see :func:`cached_signature`)."""
    _store(_cache_path("signatures", sha256), sha256, sig)


def _stamp(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_size, st.st_ino, st.st_dev, st.st_mtime_ns, st.st_ctime_ns)


def _source_record(path: str) -> Path | None:
    """``<module cache>/sources/<digest of the file's real path>``, or ``None`` if off."""
    probe = _cache_path("sources", "")
    if probe is None:
        return None
    key = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()
    return probe.parent / key[:40]


def known_digest(path: str, before: os.stat_result, data: bytes | mmap.mmap) -> str | None:
    """The remembered sha-256 of the file ``path`` read as ``data``, if it still holds.

    ``before`` is the file's ``stat`` taken before it was read; the digest is
    used only if the file is unchanged since (its ``stat`` now is the same)
    and the record was made for that very ``stat``.
    """
    if len(data) != before.st_size:
        return None
    try:
        record_path = _source_record(path)
        if record_path is None:
            return None
        record = marshal.loads(record_path.read_bytes())
        now = os.stat(path)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if (
        not isinstance(record, tuple)
        or len(record) != 3
        or record[0] != _SOURCE_FORMAT
        or record[1] != _stamp(before)
        or _stamp(now) != _stamp(before)
        or not isinstance(record[2], str)
    ):
        return None
    return record[2]


def remember_digest(path: str, before: os.stat_result, sha256: str) -> None:
    """Remember ``sha256`` for the file ``path`` whose ``stat`` before reading was ``before``."""
    try:
        now = os.stat(path)
        if _stamp(now) != _stamp(before):
            return  # changed while it was read
        if time.time_ns() - max(now.st_mtime_ns, now.st_ctime_ns) < SETTLED_NS:
            return  # too fresh: another write in the same tick would keep these times
        record_path = _source_record(path)
        if record_path is None:
            return
        record_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = record_path.with_name(f".{record_path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps((_SOURCE_FORMAT, _stamp(before), sha256)))
        os.replace(tmp, record_path)
    except OSError:
        return  # the record is an optimization
