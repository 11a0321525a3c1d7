"""A WASI 0.3 command working on files in its preopened ``/data`` directory.

``app`` (no arguments) reads ``input.txt``, writes ``output.txt`` through
``write-via-stream`` and ``append-via-stream``, stats, lists, renames and
removes, and prints one line per step. ``app count NAME`` reads ``NAME``
through ``read-via-stream`` and prints its length (the read benchmark).
``app fail`` ends with an ``err`` result after its first line.
"""

import wit_world
from componentize_py_types import Err, Ok
from wit_world import exports
from wit_world.imports import environment, preopens, stderr, stdout
from wit_world.imports import wasi_filesystem_types as fs

NOFOLLOW = fs.PathFlags(0)
NO_OPEN_FLAGS = fs.OpenFlags(0)
READ = fs.DescriptorFlags.READ
WRITE = fs.DescriptorFlags.WRITE
CHUNK = 1 << 20


def kind(value: object) -> str:
    """``DescriptorType_RegularFile`` / ``ErrorCode_NoEntry`` -> ``regular-file`` / ``no-entry``."""
    name = type(value).__name__.split("_", 1)[1]
    return "".join("-" + c.lower() if c.isupper() else c for c in name).lstrip("-")


async def emit(target: object, text: str) -> None:
    writer, reader = wit_world.byte_stream()
    done = target.write_via_stream(reader)  # type: ignore[attr-defined]
    with writer:
        await writer.write_all(text.encode())
    with done:
        status = await done.read()
    if not isinstance(status, Ok):
        raise Err(None)


async def finish(done: object, what: str) -> None:
    with done:  # type: ignore[attr-defined]
        status = await done.read()  # type: ignore[attr-defined]
    if not isinstance(status, Ok):
        raise RuntimeError(f"{what}: {kind(status.value)}")


async def read_all(file: fs.Descriptor, offset: int = 0) -> bytes:
    data, done = file.read_via_stream(offset)
    chunks = []
    with data:
        while not data.writer_dropped:
            chunks.append(await data.read(CHUNK))
    await finish(done, "read-via-stream")
    return b"".join(chunks)


async def count(file: fs.Descriptor) -> int:
    data, done = file.read_via_stream(0)
    total = 0
    with data:
        while not data.writer_dropped:
            total += len(await data.read(CHUNK))
    await finish(done, "read-via-stream")
    return total


async def write_stream(file: fs.Descriptor, payload: bytes, offset: int | None) -> None:
    writer, reader = wit_world.byte_stream()
    if offset is None:
        done = file.append_via_stream(reader)
    else:
        done = file.write_via_stream(reader, offset)
    with writer:
        await writer.write_all(payload)
    await finish(done, "write-via-stream")


async def listing(directory: fs.Descriptor) -> list[str]:
    entries, done = directory.read_directory()
    seen = []
    with entries:
        while not entries.writer_dropped:
            for entry in await entries.read(16):
                seen.append(f"{entry.name}:{kind(entry.type)}")
    await finish(done, "read-directory")
    return sorted(seen)


async def error_of(call: object) -> str:
    try:
        await call  # type: ignore[misc]
    except Err as err:
        return kind(err.value)
    return "ok"


async def demo(root: fs.Descriptor, lines: list[str]) -> None:
    source = await root.open_at(NOFOLLOW, "input.txt", NO_OPEN_FLAGS, READ)
    text = await read_all(source)
    lines.append(f"read: {text.decode().strip()}")
    lines.append(f"read from 5: {(await read_all(source, 5)).decode().strip()}")
    lines.append(f"input type: {kind(await source.get_type())}")

    flags = fs.OpenFlags.CREATE | fs.OpenFlags.TRUNCATE
    out = await root.open_at(NOFOLLOW, "output.txt", flags, READ | WRITE)
    await write_stream(out, text.upper(), 0)
    await write_stream(out, b"appended line\n", None)
    await write_stream(out, b"S", 0)
    stat = await root.stat_at(NOFOLLOW, "output.txt")
    lines.append(f"output: {kind(stat.type)} size {stat.size} links {stat.link_count}")
    lines.append(f"output reads: {(await read_all(out)).decode()!r}")

    await root.create_directory_at("made")
    await root.create_directory_at("scratch")
    scratch = await root.open_at(NOFOLLOW, "scratch/tmp.txt", fs.OpenFlags.CREATE, WRITE)
    await write_stream(scratch, b"temporary", 0)
    lines.append("listing: " + " ".join(await listing(root)))

    await root.rename_at("output.txt", root, "made/renamed.txt")
    made = await root.open_at(NOFOLLOW, "made", fs.OpenFlags.DIRECTORY, READ)
    lines.append("made: " + " ".join(await listing(made)))
    lines.append(f"renamed size: {(await made.stat_at(NOFOLLOW, 'renamed.txt')).size}")

    await root.unlink_file_at("scratch/tmp.txt")
    await root.remove_directory_at("scratch")
    lines.append("after remove: " + " ".join(await listing(root)))

    lines.append(f"stat missing: {await error_of(root.stat_at(NOFOLLOW, 'missing.txt'))}")
    lines.append(f"escape: {await error_of(root.stat_at(NOFOLLOW, '../outside'))}")
    lines.append(f"absolute: {await error_of(root.open_at(NOFOLLOW, '/etc', NO_OPEN_FLAGS, READ))}")
    lines.append(f"rmdir non-empty: {await error_of(root.remove_directory_at('made'))}")
    lines.append(f"mkdir exists: {await error_of(root.create_directory_at('made'))}")


class Run(exports.Run):
    async def run(self) -> None:
        args = environment.get_arguments()[1:]
        root = next(d for d, path in preopens.get_directories() if path == "/data")
        lines = ["hello from py-p3-files"]
        if args[:1] == ["count"]:
            file = await root.open_at(NOFOLLOW, args[1], NO_OPEN_FLAGS, READ)
            lines.append(f"count: {await count(file)}")
        elif args[:1] == ["fail"]:
            await emit(stdout, lines[0] + "\n")
            await emit(stderr, "py-p3-files: failing on request\n")
            raise Err(None)
        else:
            await demo(root, lines)
        await emit(stdout, "\n".join(lines) + "\n")
        await emit(stderr, "py-p3-files: done\n")
