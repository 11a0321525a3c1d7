"""``wasi:filesystem/types`` and ``wasi:filesystem/preopens`` (WASI 0.2).

Confinement (architecture.md §7): a guest reaches files only through
descriptors, and every path is resolved relative to a directory descriptor
by walking it one component at a time with ``openat``-style calls
(``_walk``). The walk never opens anything through a symbolic link: a link
met on the way is read and its (relative) target spliced into the remaining
path, so it is followed only while it stays inside the descriptor's
directory. Refused with ``not-permitted``: absolute paths, absolute link
targets, and any ``..`` that would climb above the descriptor. Hard links
and renames resolve both ends the same way, so neither can reach out.

A read-only preopen (and every descriptor opened beneath it) refuses every
mutation with ``read-only``.

Values follow python-mapping.md §2: flags are ``dict[str, bool]`` with
snake_case keys, records are dicts, enums are kebab-case strings, and an
error is ``ComponentException(error_code)``.
"""

from __future__ import annotations

import contextlib
import errno as _errno
import hashlib
import os
import stat as _stat
import weakref
from collections import deque
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

from polyengine_protocol import ComponentException, define_realm_local

from ._bytes import PreadSource, PwriteSink
from ._streams import READ_LIMIT, InputStream, IoError, OutputStream

__all__ = ["Descriptor", "DirectoryEntryStream", "Preopen", "types_provider",
           "preopens_provider", "ERRNO_CODES"]

ERRNO_CODES: dict[int, str] = {
    _errno.EACCES: "access",
    _errno.EAGAIN: "would-block",
    _errno.EALREADY: "already",
    _errno.EBADF: "bad-descriptor",
    _errno.EBUSY: "busy",
    _errno.EDEADLK: "deadlock",
    _errno.EDQUOT: "quota",
    _errno.EEXIST: "exist",
    _errno.EFBIG: "file-too-large",
    _errno.EILSEQ: "illegal-byte-sequence",
    _errno.EINPROGRESS: "in-progress",
    _errno.EINTR: "interrupted",
    _errno.EINVAL: "invalid",
    _errno.EIO: "io",
    _errno.EISDIR: "is-directory",
    _errno.ELOOP: "loop",
    _errno.EMLINK: "too-many-links",
    _errno.EMSGSIZE: "message-size",
    _errno.ENAMETOOLONG: "name-too-long",
    _errno.ENODEV: "no-device",
    _errno.ENOENT: "no-entry",
    _errno.ENOLCK: "no-lock",
    _errno.ENOMEM: "insufficient-memory",
    _errno.ENOSPC: "insufficient-space",
    _errno.ENOTDIR: "not-directory",
    _errno.ENOTEMPTY: "not-empty",
    _errno.ENOTRECOVERABLE: "not-recoverable",
    _errno.ENOTSUP: "unsupported",
    _errno.EOPNOTSUPP: "unsupported",
    _errno.ENOTTY: "no-tty",
    _errno.ENXIO: "no-such-device",
    _errno.EOVERFLOW: "overflow",
    _errno.EPERM: "not-permitted",
    _errno.EPIPE: "pipe",
    _errno.EROFS: "read-only",
    _errno.ESPIPE: "invalid-seek",
    _errno.ETXTBSY: "text-file-busy",
    _errno.EXDEV: "cross-device",
}

#: How many symbolic links one path resolution may expand.
MAX_SYMLINKS = 40
_NS = 1_000_000_000
_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_HASH_KEY = os.urandom(16)
_FLAG_NAMES = ("read", "write", "file_integrity_sync", "data_integrity_sync",
               "requested_write_sync", "mutate_directory")


def _fail(code: str, message: str) -> ComponentException[str]:
    return ComponentException(code, message)


def _from_os(op: str, exc: OSError) -> ComponentException[str]:
    code = ERRNO_CODES.get(exc.errno or 0, "io")
    return ComponentException(code, f"{op}: {exc.strerror or exc}")


@contextlib.contextmanager
def _os_errors(op: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise _from_os(op, exc) from exc
    except OverflowError as exc:  # an offset or size beyond what the host takes
        raise _fail("invalid", f"{op}: {exc}") from exc


def _flag(flags: Mapping[str, object] | None, name: str) -> bool:
    if flags is None:
        return False
    if not isinstance(flags, Mapping):
        raise TypeError(f"flags must be a dict of bool, got {type(flags).__name__}")
    return bool(flags.get(name, False))


def _descriptor_type(mode: int) -> str:
    if _stat.S_ISREG(mode):
        return "regular-file"
    if _stat.S_ISDIR(mode):
        return "directory"
    if _stat.S_ISLNK(mode):
        return "symbolic-link"
    if _stat.S_ISCHR(mode):
        return "character-device"
    if _stat.S_ISBLK(mode):
        return "block-device"
    if _stat.S_ISFIFO(mode):
        return "fifo"
    if _stat.S_ISSOCK(mode):
        return "socket"
    return "unknown"


def _datetime(ns: int) -> dict[str, int] | None:
    if ns < 0:
        return None
    return {"seconds": ns // _NS, "nanoseconds": ns % _NS}


def _stat_record(st: os.stat_result) -> dict[str, Any]:
    """The ``descriptor-stat`` record of a host ``stat`` result."""
    return {
        "type": _descriptor_type(st.st_mode),
        "link_count": st.st_nlink,
        "size": st.st_size,
        "data_access_timestamp": _datetime(st.st_atime_ns),
        "data_modification_timestamp": _datetime(st.st_mtime_ns),
        "status_change_timestamp": _datetime(st.st_ctime_ns),
    }


def _metadata_hash(st: os.stat_result) -> dict[str, int]:
    digest = hashlib.blake2b(
        f"{st.st_dev}:{st.st_ino}".encode(), key=_HASH_KEY, digest_size=16
    ).digest()
    return {"lower": int.from_bytes(digest[:8], "little"),
            "upper": int.from_bytes(digest[8:], "little")}


def _timestamp(value: Mapping[str, Any], current_ns: int) -> int:
    """Nanoseconds for a ``new-timestamp`` variant value."""
    kind = value.get("kind") if isinstance(value, Mapping) else None
    if kind == "no-change":
        return current_ns
    if kind == "now":
        return _now_ns()
    if kind == "timestamp":
        dt = value.get("value")
        if isinstance(dt, Mapping):
            seconds, nanos = dt.get("seconds"), dt.get("nanoseconds")
            if isinstance(seconds, int) and isinstance(nanos, int) and 0 <= nanos < _NS:
                return seconds * _NS + nanos
            raise _fail("invalid", f"bad datetime {dt!r}")
    raise TypeError(f"expected a new-timestamp variant, got {value!r}")


def _now_ns() -> int:
    import time

    return time.time_ns()


class _Walk:
    """One path resolution: the directory fds it opened, closed afterwards."""

    def __init__(self, base_fd: int) -> None:
        self.stack = [base_fd]

    def close(self) -> None:
        for fd in self.stack[1:]:
            os.close(fd)
        del self.stack[1:]

    def resolve(self, path: str, follow: bool) -> tuple[int, str]:
        """Walk ``path`` below the base directory; return (dir fd, last name).

        The last name is ``"."`` when the path names a directory on the
        walk itself (``""`` components, ``a/..``). With ``follow`` a final
        symbolic link is expanded too; without it the link itself is named.
        """
        if not isinstance(path, str):
            raise TypeError(f"path must be str, got {type(path).__name__}")
        if "\0" in path:
            raise _fail("invalid", "the path contains a NUL character")
        if path == "":
            raise _fail("no-entry", "the path is empty")
        if path.startswith("/"):
            raise _fail("not-permitted", f"absolute path {path!r} is outside the descriptor")
        parts = deque(p for p in path.split("/") if p not in ("", "."))
        expanded = 0
        while parts:
            part = parts.popleft()
            if part == "..":
                if len(self.stack) == 1:
                    raise _fail("not-permitted", f"path {path!r} escapes its directory")
                os.close(self.stack.pop())
                continue
            last = not parts
            if last and not follow:
                return self.stack[-1], part
            try:
                st = os.stat(part, dir_fd=self.stack[-1], follow_symlinks=False)
            except FileNotFoundError:
                if last:
                    return self.stack[-1], part
                raise
            if _stat.S_ISLNK(st.st_mode):
                expanded += 1
                if expanded > MAX_SYMLINKS:
                    raise _fail("loop", f"too many symbolic links in {path!r}")
                target = os.readlink(part, dir_fd=self.stack[-1])
                if target.startswith("/"):
                    raise _fail(
                        "not-permitted", f"symbolic link {part!r} points outside the directory"
                    )
                parts.extendleft(reversed([p for p in target.split("/") if p not in ("", ".")]))
                continue
            if last:
                return self.stack[-1], part
            self.stack.append(os.open(part, _DIR_OPEN, dir_fd=self.stack[-1]))
        return self.stack[-1], "."


@define_realm_local
class Descriptor:
    """``wasi:filesystem/types.descriptor``: an open file or directory.

    ``mutable`` says whether the tree this descriptor belongs to may be
    changed (false under a read-only preopen).
    """

    def __init__(
        self, fd: int, *, readable: bool, writable: bool, mutable: bool, name: str = ""
    ) -> None:
        self._fd = fd
        self._is_dir = _stat.S_ISDIR(os.fstat(fd).st_mode)
        self._readable = readable
        self._writable = writable and not self._is_dir
        self._mutable = mutable
        self._name = name
        self._finalizer = weakref.finalize(self, os.close, fd)

    def __repr__(self) -> str:
        kind = "directory" if self._is_dir else "file"
        return f"<Descriptor {kind} {self._name!r} fd={self._fd}>"

    # -- helpers -----------------------------------------------------------------

    def _live_fd(self) -> int:
        if not self._finalizer.alive:
            raise _fail("bad-descriptor", "the descriptor is closed")
        return self._fd

    @contextlib.contextmanager
    def _at(self, op: str, path: str, *, follow: bool = False,
            mutate: bool = False) -> Iterator[tuple[int, str]]:
        fd = self._live_fd()
        if not self._is_dir:
            raise _fail("not-directory", f"{op}: the descriptor is not a directory")
        if mutate and not self._mutable:
            raise _fail("read-only", f"{op}: the directory is read-only")
        walk = _Walk(fd)
        try:
            with _os_errors(op):
                yield walk.resolve(path, follow)
        finally:
            walk.close()

    def _file_fd(self, op: str, *, write: bool, on_directory: str = "bad-descriptor") -> int:
        """The fd of a file descriptor open for ``op``.

        A directory is refused with ``on_directory``: ``bad-descriptor`` for
        the file-only operations (as the reference host answers them), and
        ``is-directory`` for ``read-via-stream`` (POSIX ``EISDIR``).
        """
        fd = self._live_fd()
        if self._is_dir:
            raise _fail(on_directory, f"{op}: the descriptor is a directory")
        if write and not self._writable:
            raise _fail("read-only" if not self._mutable else "bad-descriptor",
                        f"{op}: the descriptor is not open for writing")
        if not write and not self._readable:
            raise _fail("bad-descriptor", f"{op}: the descriptor is not open for reading")
        return fd

    def _other(self, other: object, op: str) -> Descriptor:
        if not isinstance(other, Descriptor):
            raise TypeError(f"{op}: expected a Descriptor, got {type(other).__name__}")
        return other

    # -- streams -----------------------------------------------------------------

    def read_via_stream(self, offset: int) -> InputStream:
        fd = self._file_fd("read-via-stream", write=False, on_directory="is-directory")
        return InputStream(PreadSource(fd, offset))

    def write_via_stream(self, offset: int) -> OutputStream:
        return OutputStream(PwriteSink(self._file_fd("write-via-stream", write=True), offset))

    def append_via_stream(self) -> OutputStream:
        return OutputStream(PwriteSink(self._file_fd("append-via-stream", write=True), None))

    # -- the descriptor itself ---------------------------------------------------------

    def advise(self, offset: int, length: int, advice: str) -> None:
        self._live_fd()
        if self._is_dir:
            raise _fail("bad-descriptor", "advise: the descriptor is a directory")

    def sync_data(self) -> None:
        with _os_errors("sync-data"):
            os.fdatasync(self._live_fd())

    def sync(self) -> None:
        with _os_errors("sync"):
            os.fsync(self._live_fd())

    def get_flags(self) -> dict[str, bool]:
        self._live_fd()
        flags = dict.fromkeys(_FLAG_NAMES, False)
        flags["read"] = self._readable
        flags["write"] = self._writable
        flags["mutate_directory"] = self._is_dir and self._mutable
        return flags

    def get_type(self) -> str:
        with _os_errors("get-type"):
            return _descriptor_type(os.fstat(self._live_fd()).st_mode)

    def set_size(self, size: int) -> None:
        fd = self._file_fd("set-size", write=True)
        with _os_errors("set-size"):
            os.ftruncate(fd, size)

    def set_times(self, data_access_timestamp: Mapping[str, Any],
                  data_modification_timestamp: Mapping[str, Any]) -> None:
        fd = self._live_fd()
        if not self._mutable:
            raise _fail("read-only", "set-times: the descriptor is read-only")
        with _os_errors("set-times"):
            st = os.fstat(fd)
            os.utime(fd, ns=(_timestamp(data_access_timestamp, st.st_atime_ns),
                             _timestamp(data_modification_timestamp, st.st_mtime_ns)))

    def read(self, length: int, offset: int) -> tuple[bytes, bool]:
        fd = self._file_fd("read", write=False)
        with _os_errors("read"):
            data = os.pread(fd, min(length, READ_LIMIT), offset)
        # End of file is reported by the read that finds nothing left, as
        # wasmtime does, not by the read that reaches the last byte.
        return data, not data and length > 0

    def write(self, buffer: bytes, offset: int) -> int:
        fd = self._file_fd("write", write=True)
        with _os_errors("write"):
            return os.pwrite(fd, bytes(buffer), offset)

    def read_directory(self) -> DirectoryEntryStream:
        fd = self._live_fd()
        if not self._is_dir:
            raise _fail("not-directory", "read-directory: the descriptor is not a directory")
        with _os_errors("read-directory"):
            return DirectoryEntryStream(os.dup(fd))

    def stat(self) -> dict[str, Any]:
        with _os_errors("stat"):
            return _stat_record(os.fstat(self._live_fd()))

    def is_same_object(self, other: Descriptor) -> bool:
        peer = self._other(other, "is-same-object")
        with _os_errors("is-same-object"):
            a, b = os.fstat(self._live_fd()), os.fstat(peer._live_fd())
        return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)

    def metadata_hash(self) -> dict[str, int]:
        with _os_errors("metadata-hash"):
            return _metadata_hash(os.fstat(self._live_fd()))

    # -- paths below a directory --------------------------------------------------

    def stat_at(self, path_flags: Mapping[str, bool], path: str) -> dict[str, Any]:
        with self._at("stat-at", path, follow=_flag(path_flags, "symlink_follow")) as (d, n):
            return _stat_record(os.stat(n, dir_fd=d, follow_symlinks=False))

    def metadata_hash_at(self, path_flags: Mapping[str, bool], path: str) -> dict[str, int]:
        follow = _flag(path_flags, "symlink_follow")
        with self._at("metadata-hash-at", path, follow=follow) as (d, n):
            return _metadata_hash(os.stat(n, dir_fd=d, follow_symlinks=False))

    def set_times_at(self, path_flags: Mapping[str, bool], path: str,
                     data_access_timestamp: Mapping[str, Any],
                     data_modification_timestamp: Mapping[str, Any]) -> None:
        follow = _flag(path_flags, "symlink_follow")
        with self._at("set-times-at", path, follow=follow, mutate=True) as (d, n):
            st = os.stat(n, dir_fd=d, follow_symlinks=False)
            os.utime(n, dir_fd=d, follow_symlinks=False,
                     ns=(_timestamp(data_access_timestamp, st.st_atime_ns),
                         _timestamp(data_modification_timestamp, st.st_mtime_ns)))

    def create_directory_at(self, path: str) -> None:
        with self._at("create-directory-at", path, mutate=True) as (d, n):
            os.mkdir(n, dir_fd=d)

    def open_at(self, path_flags: Mapping[str, bool], path: str,
                open_flags: Mapping[str, bool], flags: Mapping[str, bool]) -> Descriptor:
        want_read = _flag(flags, "read")
        want_write = _flag(flags, "write")
        create = _flag(open_flags, "create")
        truncate = _flag(open_flags, "truncate")
        changes = want_write or create or truncate or _flag(flags, "mutate_directory")
        if changes and not self._mutable:
            self._live_fd()
            raise _fail("read-only", f"open-at {path!r}: the directory is read-only")
        mode = os.O_RDWR if want_read and want_write else os.O_WRONLY if want_write else os.O_RDONLY
        # O_NONBLOCK: opening a FIFO must not hang the host; cleared below.
        oflags = mode | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        if create:
            oflags |= os.O_CREAT
        if _flag(open_flags, "exclusive"):
            oflags |= os.O_EXCL
        if truncate:
            oflags |= os.O_TRUNC
        if _flag(open_flags, "directory") or path.endswith("/"):
            oflags |= os.O_DIRECTORY
        follow = _flag(path_flags, "symlink_follow")
        with self._at("open-at", path, follow=follow) as (d, n):
            fd = os.open(n, oflags, 0o666, dir_fd=d)
            if _stat.S_ISREG(os.fstat(fd).st_mode) or _stat.S_ISDIR(os.fstat(fd).st_mode):
                os.set_blocking(fd, True)
        return Descriptor(fd, readable=want_read or not want_write, writable=want_write,
                          mutable=self._mutable, name=path)

    def readlink_at(self, path: str) -> str:
        with self._at("readlink-at", path) as (d, n):
            target = os.readlink(n, dir_fd=d)
        if os.path.isabs(target):
            # an absolute target names a host path outside every preopen (as wasmtime refuses)
            raise _fail("not-permitted", f"readlink-at {path!r}: the link's target is absolute")
        return target

    def remove_directory_at(self, path: str) -> None:
        with self._at("remove-directory-at", path, mutate=True) as (d, n):
            os.rmdir(n, dir_fd=d)

    def unlink_file_at(self, path: str) -> None:
        with self._at("unlink-file-at", path, mutate=True) as (d, n):
            if path.endswith("/"):
                raise _fail("not-directory", f"unlink-file-at {path!r}: trailing slash")
            os.unlink(n, dir_fd=d)

    def symlink_at(self, old_path: str, new_path: str) -> None:
        if not isinstance(old_path, str) or old_path.startswith("/") or "\0" in old_path:
            self._live_fd()
            raise _fail("not-permitted", f"symlink-at: target {old_path!r} is not a relative path")
        with self._at("symlink-at", new_path, mutate=True) as (d, n):
            os.symlink(old_path, n, dir_fd=d)

    def link_at(self, old_path_flags: Mapping[str, bool], old_path: str,
                new_descriptor: Descriptor, new_path: str) -> None:
        target = self._other(new_descriptor, "link-at")
        follow = _flag(old_path_flags, "symlink_follow")
        with self._at("link-at", old_path, follow=follow, mutate=True) as (od, on), \
                target._at("link-at", new_path, mutate=True) as (nd, nn):
            os.link(on, nn, src_dir_fd=od, dst_dir_fd=nd, follow_symlinks=False)

    def rename_at(self, old_path: str, new_descriptor: Descriptor, new_path: str) -> None:
        target = self._other(new_descriptor, "rename-at")
        with self._at("rename-at", old_path, mutate=True) as (od, on), \
                target._at("rename-at", new_path, mutate=True) as (nd, nn):
            os.rename(on, nn, src_dir_fd=od, dst_dir_fd=nd)

    def close(self) -> None:
        """The resource destructor (idempotent)."""
        self._finalizer()


@define_realm_local
class DirectoryEntryStream:
    """``wasi:filesystem/types.directory-entry-stream`` over a directory fd."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._finalizer = weakref.finalize(self, os.close, fd)
        self._names: deque[str] = deque(sorted(os.listdir(fd)))

    def read_directory_entry(self) -> dict[str, str] | None:
        """The next entry, or ``None`` at the end."""
        while self._names:
            name = self._names.popleft()
            try:
                st = os.stat(name, dir_fd=self._fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed since the listing
            except OSError as exc:
                raise _from_os("read-directory-entry", exc) from exc
            return {"type": _descriptor_type(st.st_mode), "name": name}
        return None

    def close(self) -> None:
        self._finalizer()


class Preopen:
    """A host directory offered to the guest under ``guest_path``."""

    def __init__(self, host_dir: str | os.PathLike[str], guest_path: str,
                 readonly: bool = False) -> None:
        if not isinstance(guest_path, str) or not guest_path:
            raise ValueError(f"a preopen's guest path must be a non-empty str, got {guest_path!r}")
        try:
            self._fd = os.open(host_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise ValueError(f"cannot preopen {os.fspath(host_dir)!r}: {exc.strerror}") from exc
        self.host_dir = os.fspath(host_dir)
        self.guest_path = guest_path
        self.readonly = bool(readonly)
        self._finalizer = weakref.finalize(self, os.close, self._fd)

    def descriptor(self) -> Descriptor:
        """A fresh descriptor for the guest (its own fd, closed on drop)."""
        return Descriptor(os.dup(self._fd), readable=True, writable=False,
                          mutable=not self.readonly, name=self.guest_path)

    def close(self) -> None:
        self._finalizer()


def filesystem_error_code(err: IoError) -> str | None:
    """``filesystem-error-code``: the code behind a stream error, if any."""
    number = getattr(err, "errno", None)
    if isinstance(number, int):
        return ERRNO_CODES.get(number, "io")
    return None


def types_provider() -> SimpleNamespace:
    """``wasi:filesystem/types@0.2``."""
    return SimpleNamespace(
        Descriptor=Descriptor,
        DirectoryEntryStream=DirectoryEntryStream,
        filesystem_error_code=filesystem_error_code,
    )


def preopens_provider(preopens: list[Preopen]) -> SimpleNamespace:
    """``wasi:filesystem/preopens@0.2``."""

    def get_directories() -> list[tuple[Descriptor, str]]:
        return [(p.descriptor(), p.guest_path) for p in preopens]

    return SimpleNamespace(get_directories=get_directories)
