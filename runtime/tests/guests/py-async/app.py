"""Async exports: plain values, ``stream<u8>`` in and out, ``future<string>`` in and out."""

import wit_world
from componentize_py_async_support import spawn
from componentize_py_async_support.futures import FutureReader, FutureWriter
from componentize_py_async_support.streams import ByteStreamReader, ByteStreamWriter
from wit_world import exports

CHUNK = 4096


async def _fill(writer: ByteStreamWriter, n: int) -> None:
    with writer:
        sent = 0
        while sent < n:
            size = min(CHUNK, n - sent)
            await writer.write_all(bytes((sent + i) % 256 for i in range(size)))
            sent += size


async def _upper(reader: ByteStreamReader, writer: ByteStreamWriter) -> None:
    with reader, writer:
        while not reader.writer_dropped:
            chunk = await reader.read(CHUNK)
            if chunk:
                await writer.write_all(chunk.upper())


async def _resolve(writer: FutureWriter[str], msg: str) -> None:
    with writer:
        await writer.write("later: " + msg)


class Pipes(exports.Pipes):
    async def greet(self, name: str) -> str:
        return f"hello, {name}"

    async def count_bytes(self, data: ByteStreamReader) -> int:
        total = 0
        with data:
            while not data.writer_dropped:
                total += len(await data.read(CHUNK))
        return total

    async def generate(self, n: int) -> ByteStreamReader:
        writer, reader = wit_world.byte_stream()
        spawn(_fill(writer, n))
        return reader

    async def upper_stream(self, data: ByteStreamReader) -> ByteStreamReader:
        writer, reader = wit_world.byte_stream()
        spawn(_upper(data, writer))
        return reader

    async def later(self, msg: str) -> FutureReader[str]:
        writer, reader = wit_world.string_future(lambda: "")
        spawn(_resolve(writer, msg))
        return reader

    async def await_reversed(self, f: FutureReader[str]) -> str:
        with f:
            value = await f.read()
        return value[::-1]
