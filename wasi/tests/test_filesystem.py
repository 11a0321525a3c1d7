"""wasi:filesystem over a real temporary directory, including confinement."""

from __future__ import annotations

import asyncio
import inspect
import os
from pathlib import Path
from typing import Any

import pytest

from polyengine_protocol import ComponentException
from polyengine_wasi import Descriptor, wasi
from polyengine_wasi._p3_filesystem import Descriptor3

NOFOLLOW: dict[str, bool] = {}
FOLLOW = {"symlink_follow": True}
READ = {"read": True}
WRITE = {"write": True}
RW = {"read": True, "write": True}
CREATE = {"create": True}


def code(exc: pytest.ExceptionInfo[ComponentException]) -> object:
    return exc.value.payload


@pytest.fixture(name="tree")
def tree_fixture(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "hello.txt").write_bytes(b"hello, world")
    (root / "sub" / "inner.txt").write_bytes(b"inner")
    (tmp_path / "outside.txt").write_bytes(b"secret")
    return root


def _preopen(tree: Path, readonly: bool = False) -> tuple[dict[str, Any], Descriptor]:
    imports = wasi(preopens=[(tree, "/data", readonly)])
    dirs = imports["wasi:filesystem/preopens@0.2"].get_directories()
    assert len(dirs) == 1
    descriptor, guest_path = dirs[0]
    assert guest_path == "/data"
    return imports, descriptor


@pytest.fixture(name="root")
def root_fixture(tree: Path) -> Descriptor:
    return _preopen(tree)[1]


class _Drained:
    """A 0.3 byte stream read to its end, offered as 0.2's ``blocking_read``."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def blocking_read(self, length: int) -> bytes:
        return self._data[:length]


def _as_p2(value: Any) -> Any:
    if isinstance(value, Descriptor3):
        return Sync3(value)
    if isinstance(value, dict) and isinstance(value.get("type"), dict):
        return {**value, "type": value["type"]["kind"]}
    if isinstance(value, dict) and set(value) == {"kind"}:
        return value["kind"]
    return value


class Sync3:
    """A 0.3 descriptor driven the way the 0.2 tests drive theirs.

    Each ``async func`` runs to completion, a variant error comes back as
    the 0.2 enum string, and the stream-shaped calls are awaited whole, so
    the same confinement tests hold the 0.3 provider to the same rules.
    """

    def __init__(self, inner: Descriptor3) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)

        def call(*args: Any) -> Any:
            args = tuple(a._inner if isinstance(a, Sync3) else a for a in args)

            async def run() -> Any:
                result = method(*args)
                return await result if inspect.isawaitable(result) else result

            try:
                return _as_p2(asyncio.run(run()))
            except ComponentException as exc:
                raise ComponentException(exc.payload["kind"], str(exc)) from exc

        return call

    def read_via_stream(self, offset: int) -> _Drained:
        async def run() -> bytes:
            data, done = self._inner.read_via_stream(offset)
            chunks = [chunk async for chunk in data]
            outcome = await done
            if outcome["kind"] == "err":
                raise ComponentException(outcome["value"]["kind"])
            return b"".join(chunks)

        return _Drained(asyncio.run(run()))

    def _write(self, data: bytes, offset: int | None) -> int:
        async def run() -> int:
            if offset is None:
                outcome = await self._inner.append_via_stream(_chunks(data))
            else:
                outcome = await self._inner.write_via_stream(_chunks(data), offset)
            if outcome["kind"] == "err":
                raise ComponentException(outcome["value"]["kind"])
            return len(data)

        return asyncio.run(run())

    def write(self, buffer: bytes, offset: int) -> int:
        return self._write(buffer, offset)

    def write_via_stream(self, offset: int) -> int:
        return self._write(b"", offset)


async def _chunks(data: bytes) -> Any:
    if data:
        yield data


def _preopen_on(track: str, tree: Path, readonly: bool = False) -> Any:
    """The preopened root on ``track``: the 0.2 descriptor or a driven 0.3 one."""
    imports = wasi(preopens=[(tree, "/data", readonly)])
    [(descriptor, guest_path)] = imports[f"wasi:filesystem/preopens{track}"].get_directories()
    assert guest_path == "/data"
    return Sync3(descriptor) if track == "@0.3" else descriptor


@pytest.fixture(name="confined", params=["@0.2", "@0.3"])
def confined_fixture(request: pytest.FixtureRequest, tree: Path) -> Any:
    """The root on both tracks: every confinement rule holds on each."""
    return _preopen_on(request.param, tree)


def test_preopen_is_a_directory(root: Descriptor) -> None:
    assert root.get_type() == "directory"
    assert root.stat()["type"] == "directory"
    flags = root.get_flags()
    assert flags["read"] and flags["mutate_directory"] and not flags["write"]


def test_read_file_via_stream(root: Descriptor, settle: Any) -> None:
    f = root.open_at(NOFOLLOW, "hello.txt", {}, READ)
    assert f.get_type() == "regular-file"
    stream = f.read_via_stream(7)
    assert settle(stream.blocking_read(100)) == b"world"
    with pytest.raises(ComponentException):
        stream.read(1)
    assert f.read(5, 0) == (b"hello", False)
    assert f.read(100, 7) == (b"world", False)
    assert f.read(100, 12) == (b"", True)
    stream.close()
    f.close()


def test_write_file_via_stream_and_direct(root: Descriptor, tree: Path) -> None:
    f = root.open_at(NOFOLLOW, "new.txt", CREATE, RW)
    out = f.write_via_stream(0)
    assert out.check_write() > 0
    out.write(b"abc")
    out.blocking_write_and_flush(b"def")
    assert (tree / "new.txt").read_bytes() == b"abcdef"
    assert f.write(b"XY", 1) == 2
    app = f.append_via_stream()
    app.blocking_write_and_flush(b"!")
    assert (tree / "new.txt").read_bytes() == b"aXYdef!"
    f.set_size(3)
    assert f.stat()["size"] == 3
    out.close()
    app.close()
    f.close()


def test_stat_and_stat_at(root: Descriptor) -> None:
    st = root.stat_at(NOFOLLOW, "hello.txt")
    assert st["type"] == "regular-file"
    assert st["size"] == len(b"hello, world")
    assert st["link_count"] == 1
    mtime = st["data_modification_timestamp"]
    assert set(mtime) == {"seconds", "nanoseconds"} and mtime["seconds"] > 0
    with pytest.raises(ComponentException) as missing:
        root.stat_at(NOFOLLOW, "nope")
    assert code(missing) == "no-entry"


def test_readdir(root: Descriptor) -> None:
    entries = root.read_directory()
    seen = []
    while (entry := entries.read_directory_entry()) is not None:
        seen.append(entry)
    assert seen == [
        {"type": "regular-file", "name": "hello.txt"},
        {"type": "directory", "name": "sub"},
    ]
    assert entries.read_directory_entry() is None
    entries.close()


def test_open_subdirectory_and_relative_paths(root: Descriptor) -> None:
    sub = root.open_at(NOFOLLOW, "sub", {"directory": True}, READ)
    assert sub.get_type() == "directory"
    assert sub.stat_at(NOFOLLOW, "inner.txt")["size"] == 5
    assert root.stat_at(NOFOLLOW, "sub/../hello.txt")["size"] == 12
    assert root.stat_at(NOFOLLOW, "./sub//inner.txt")["size"] == 5
    assert sub.is_same_object(root.open_at(NOFOLLOW, "sub/", {}, READ))
    assert not sub.is_same_object(root)
    assert root.metadata_hash() == root.metadata_hash_at(NOFOLLOW, ".")
    assert root.metadata_hash() != root.metadata_hash_at(NOFOLLOW, "sub")


def test_create_rename_link_remove(root: Descriptor, tree: Path) -> None:
    root.create_directory_at("made")
    assert (tree / "made").is_dir()
    with pytest.raises(ComponentException) as exists:
        root.create_directory_at("made")
    assert code(exists) == "exist"
    root.rename_at("hello.txt", root, "made/moved.txt")
    assert (tree / "made" / "moved.txt").read_bytes() == b"hello, world"
    root.link_at(NOFOLLOW, "made/moved.txt", root, "hard.txt")
    assert root.stat_at(NOFOLLOW, "hard.txt")["link_count"] == 2
    root.symlink_at("made/moved.txt", "soft")
    assert root.readlink_at("soft") == "made/moved.txt"
    assert root.stat_at(NOFOLLOW, "soft")["type"] == "symbolic-link"
    assert root.stat_at(FOLLOW, "soft")["type"] == "regular-file"
    root.unlink_file_at("soft")
    root.unlink_file_at("hard.txt")
    root.unlink_file_at("made/moved.txt")
    root.remove_directory_at("made")
    assert sorted(p.name for p in tree.iterdir()) == ["sub"]
    with pytest.raises(ComponentException) as not_empty:
        root.remove_directory_at("sub")
    assert code(not_empty) == "not-empty"


def test_open_flags(root: Descriptor) -> None:
    with pytest.raises(ComponentException) as exists:
        root.open_at(NOFOLLOW, "hello.txt", {"create": True, "exclusive": True}, WRITE)
    assert code(exists) == "exist"
    f = root.open_at(NOFOLLOW, "hello.txt", {"truncate": True}, WRITE)
    assert f.stat()["size"] == 0
    with pytest.raises(ComponentException) as not_dir:
        root.open_at(NOFOLLOW, "sub/inner.txt", {"directory": True}, READ)
    assert code(not_dir) == "not-directory"
    with pytest.raises(ComponentException) as is_dir:
        root.read_via_stream(0)
    assert code(is_dir) == "is-directory"


def test_file_operations_on_a_directory(root: Descriptor) -> None:
    # Only read-via-stream says is-directory; the other file-only operations
    # refuse a directory with bad-descriptor, as the wasmtime host does.
    opened = root.open_at(NOFOLLOW, "sub", {}, READ)
    for directory in (root, opened):
        for call in (
            lambda d: d.read(10, 0),
            lambda d: d.write(b"x", 0),
            lambda d: d.set_size(0),
            lambda d: d.advise(0, 0, "normal"),
            lambda d: d.write_via_stream(0),
            lambda d: d.append_via_stream(),
        ):
            with pytest.raises(ComponentException) as refused:
                call(directory)
            assert code(refused) == "bad-descriptor"
        with pytest.raises(ComponentException) as is_dir:
            directory.read_via_stream(0)
        assert code(is_dir) == "is-directory"
    with pytest.raises(ComponentException) as no_write:
        root.open_at(NOFOLLOW, "sub/inner.txt", {}, READ).write(b"x", 0)
    assert code(no_write) == "bad-descriptor"


def test_set_times(root: Descriptor) -> None:
    stamp = {"kind": "timestamp", "value": {"seconds": 1_000_000, "nanoseconds": 5}}
    root.set_times_at(NOFOLLOW, "hello.txt", {"kind": "no-change"}, stamp)
    st = root.stat_at(NOFOLLOW, "hello.txt")
    assert st["data_modification_timestamp"] == {"seconds": 1_000_000, "nanoseconds": 5}


# --- confinement ---------------------------------------------------------------


def test_dotdot_escape_is_refused(confined: Any) -> None:
    for path in ("..", "../outside.txt", "sub/../../outside.txt", "sub/../.."):
        with pytest.raises(ComponentException) as refused:
            confined.stat_at(NOFOLLOW, path)
        assert code(refused) == "not-permitted", path
    with pytest.raises(ComponentException) as refused:
        confined.open_at(NOFOLLOW, "../outside.txt", {}, READ)
    assert code(refused) == "not-permitted"


def test_subdirectory_descriptor_cannot_climb_out(confined: Any) -> None:
    sub = confined.open_at(NOFOLLOW, "sub", {"directory": True}, READ)
    with pytest.raises(ComponentException) as refused:
        sub.stat_at(NOFOLLOW, "../hello.txt")
    assert code(refused) == "not-permitted"


def test_absolute_paths_are_refused(confined: Any, tmp_path: Path) -> None:
    for path in ("/", "/etc/passwd", str(tmp_path / "outside.txt")):
        with pytest.raises(ComponentException) as refused:
            confined.open_at(NOFOLLOW, path, {}, READ)
        assert code(refused) == "not-permitted"


def test_symlink_inside_is_followed(confined: Any, tree: Path, settle: Any) -> None:
    os.symlink("sub/inner.txt", tree / "link")
    os.symlink("../hello.txt", tree / "sub" / "up")
    os.symlink("sub", tree / "dirlink")
    f = confined.open_at(FOLLOW, "link", {}, READ)
    assert settle(f.read_via_stream(0).blocking_read(100)) == b"inner"
    assert confined.stat_at(FOLLOW, "sub/up")["size"] == 12
    assert confined.stat_at(NOFOLLOW, "dirlink/inner.txt")["size"] == 5
    with pytest.raises(ComponentException) as loop:
        confined.open_at(NOFOLLOW, "link", {}, READ)  # the final link is not followed
    assert code(loop) == "loop"


def test_symlink_pointing_out_is_refused(confined: Any, tree: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "outside.txt", tree / "abs")
    os.symlink("../outside.txt", tree / "rel")
    os.symlink("..", tree / "parent")
    for path in ("abs", "rel", "parent/outside.txt"):
        with pytest.raises(ComponentException) as refused:
            confined.open_at(FOLLOW, path, {}, READ)
        assert code(refused) == "not-permitted", path
    with pytest.raises(ComponentException) as refused:
        confined.stat_at(FOLLOW, "rel")
    assert code(refused) == "not-permitted"
    # writing through an escaping link is refused too
    with pytest.raises(ComponentException) as refused:
        confined.open_at(FOLLOW, "rel", {"truncate": True}, WRITE)
    assert code(refused) == "not-permitted"
    assert (tmp_path / "outside.txt").read_bytes() == b"secret"


def test_readlink_of_an_absolute_target_is_refused(
    confined: Any, tree: Path, tmp_path: Path
) -> None:
    os.symlink(tmp_path / "outside.txt", tree / "abs")
    os.symlink("sub/inner.txt", tree / "rel")
    with pytest.raises(ComponentException) as refused:
        confined.readlink_at("abs")
    assert code(refused) == "not-permitted"
    assert str(tmp_path) not in str(refused.value)
    assert confined.readlink_at("rel") == "sub/inner.txt"


def test_symlink_loop_is_reported(confined: Any, tree: Path) -> None:
    os.symlink("b", tree / "a")
    os.symlink("a", tree / "b")
    with pytest.raises(ComponentException) as loop:
        confined.stat_at(FOLLOW, "a")
    assert code(loop) == "loop"


def test_guest_cannot_create_an_absolute_symlink(confined: Any) -> None:
    with pytest.raises(ComponentException) as refused:
        confined.symlink_at("/etc/passwd", "evil")
    assert code(refused) == "not-permitted"


def test_hard_link_out_is_refused(confined: Any, tree: Path, tmp_path: Path) -> None:
    with pytest.raises(ComponentException) as refused:
        confined.link_at(NOFOLLOW, "../outside.txt", confined, "stolen")
    assert code(refused) == "not-permitted"
    with pytest.raises(ComponentException) as refused:
        confined.link_at(NOFOLLOW, "hello.txt", confined, "../leaked")
    assert code(refused) == "not-permitted"
    os.symlink("../outside.txt", tree / "rel")
    with pytest.raises(ComponentException) as refused:
        confined.link_at(FOLLOW, "rel", confined, "stolen")
    assert code(refused) == "not-permitted"
    assert not (tree / "stolen").exists() and not (tmp_path / "leaked").exists()


def test_rename_out_is_refused(confined: Any, tree: Path, tmp_path: Path) -> None:
    with pytest.raises(ComponentException) as refused:
        confined.rename_at("hello.txt", confined, "../moved.txt")
    assert code(refused) == "not-permitted"
    with pytest.raises(ComponentException) as refused:
        confined.rename_at("../outside.txt", confined, "in.txt")
    assert code(refused) == "not-permitted"
    os.symlink("..", tree / "parent")
    with pytest.raises(ComponentException) as refused:
        confined.rename_at("hello.txt", confined, "parent/moved.txt")
    assert code(refused) == "not-permitted"
    assert (tree / "hello.txt").exists() and not (tmp_path / "moved.txt").exists()


@pytest.mark.parametrize("track", ["@0.2", "@0.3"])
def test_read_only_preopen_refuses_writes(tree: Path, settle: Any, track: str) -> None:
    root = _preopen_on(track, tree, readonly=True)
    assert not root.get_flags()["mutate_directory"]
    f = root.open_at(NOFOLLOW, "hello.txt", {}, READ)
    assert settle(f.read_via_stream(0).blocking_read(5)) == b"hello"
    attempts = [
        lambda: root.open_at(NOFOLLOW, "hello.txt", {}, WRITE),
        lambda: root.open_at(NOFOLLOW, "new.txt", CREATE, READ),
        lambda: root.open_at(NOFOLLOW, "hello.txt", {"truncate": True}, READ),
        lambda: root.create_directory_at("d"),
        lambda: root.unlink_file_at("hello.txt"),
        lambda: root.remove_directory_at("sub"),
        lambda: root.rename_at("hello.txt", root, "x.txt"),
        lambda: root.link_at(NOFOLLOW, "hello.txt", root, "x.txt"),
        lambda: root.symlink_at("hello.txt", "x"),
        lambda: root.set_times_at(NOFOLLOW, "hello.txt", {"kind": "now"}, {"kind": "now"}),
        lambda: f.write(b"x", 0),
        lambda: f.write_via_stream(0),
        lambda: f.set_size(0),
    ]
    for attempt in attempts:
        with pytest.raises(ComponentException) as refused:
            attempt()
        assert code(refused) in ("read-only", "not-permitted")
    sub = root.open_at(NOFOLLOW, "sub", {"directory": True}, READ)
    with pytest.raises(ComponentException) as refused:
        sub.create_directory_at("deeper")
    assert code(refused) == "read-only"
    assert (tree / "hello.txt").read_bytes() == b"hello, world"
    assert sorted(p.name for p in tree.iterdir()) == ["hello.txt", "sub"]


def test_closed_descriptor_is_bad(root: Descriptor) -> None:
    root.close()
    root.close()
    with pytest.raises(ComponentException) as bad:
        root.stat()
    assert code(bad) == "bad-descriptor"


def test_bad_preopen_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot preopen"):
        wasi(preopens=[(tmp_path / "missing", "/x")])
    with pytest.raises(TypeError, match="preopen"):
        wasi(preopens=["just-a-path"])  # type: ignore[list-item]


def test_filesystem_error_code(tree: Path) -> None:
    imports, _ = _preopen(tree)
    types = imports["wasi:filesystem/types@0.2"]
    assert types.Descriptor is Descriptor
    err = imports["wasi:io/error@0.2"].Error("disk on fire", 5)
    assert types.filesystem_error_code(err) == "io"
    assert types.filesystem_error_code(imports["wasi:io/error@0.2"].Error("?")) is None


def test_opening_a_fifo_does_not_hang(root: Descriptor, tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    f = root.open_at(NOFOLLOW, "pipe", {}, READ)
    assert f.get_type() == "fifo"
    f.close()


def test_huge_offsets_are_invalid_not_a_crash(root: Descriptor) -> None:
    f = root.open_at(NOFOLLOW, "hello.txt", {}, READ)
    with pytest.raises(ComponentException) as bad:
        f.read(10, (1 << 64) - 1)
    assert code(bad) == "invalid"
    data, at_end = f.read((1 << 64) - 1, 0)
    assert data == b"hello, world" and not at_end
    assert f.read((1 << 64) - 1, len(data)) == (b"", True)
