"""Streams and futures exchanged with Python host code in both directions."""

import wit_world
from componentize_py_async_support import spawn
from componentize_py_async_support.futures import FutureReader, FutureWriter
from componentize_py_async_support.streams import (
    ByteStreamReader,
    ByteStreamWriter,
    StreamReader,
    StreamWriter,
)
from wit_world import exports
from wit_world.imports import host

CHUNK = 4096
_given = [0]


async def _fill(writer: ByteStreamWriter, n: int) -> None:
    _given[0] = 0
    with writer:
        sent = 0
        while n == 0 or sent < n:
            size = CHUNK if n == 0 else min(CHUNK, n - sent)
            data = bytes((sent + i) % 256 for i in range(size))
            await writer.write_all(data)
            if writer.reader_dropped:
                break
            sent += size
            _given[0] = sent


async def _words(writer: StreamWriter[str], words: list[str]) -> None:
    with writer:
        for word in words:
            await writer.write_all([word])


async def _resolve(writer: FutureWriter[str], msg: str) -> None:
    with writer:
        await writer.write(msg.upper())


async def _push(writer: ByteStreamWriter, n: int) -> None:
    with writer:
        await writer.write_all(bytes(i % 256 for i in range(n)))


class Run(exports.Run):
    async def pull(self, n: int) -> int:
        data = await host.fetch(n)
        total = 0
        with data:
            while not data.writer_dropped:
                total += len(await data.read(CHUNK))
        return total

    async def pull_some(self, n: int) -> int:
        data = await host.fetch(0)
        total = 0
        with data:
            while total < n and not data.writer_dropped:
                total += len(await data.read(min(CHUNK, n - total)))
        return total

    async def push(self, n: int) -> int:
        writer, reader = wit_world.byte_stream()
        spawn(_push(writer, n))
        return await host.sink(reader)

    async def join_words(self) -> str:
        words = await host.words()
        out: list[str] = []
        with words:
            while not words.writer_dropped:
                out.extend(await words.read(16))
        return " ".join(out)

    async def await_later(self, msg: str) -> str:
        fut = await host.later(msg)
        with fut:
            return await fut.read()

    async def give_bytes(self, n: int) -> ByteStreamReader:
        writer, reader = wit_world.byte_stream()
        spawn(_fill(writer, n))
        return reader

    async def give_words(self, words: list[str]) -> StreamReader[str]:
        writer, reader = wit_world.string_stream()
        spawn(_words(writer, words))
        return reader

    async def give_later(self, msg: str) -> FutureReader[str]:
        writer, reader = wit_world.string_future(lambda: "")
        spawn(_resolve(writer, msg))
        return reader

    async def given(self) -> int:
        return _given[0]
