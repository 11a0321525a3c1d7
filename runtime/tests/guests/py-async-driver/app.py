"""Drives every export of ``pipes`` and prints what came back, one line each."""

import asyncio

import wit_world
from componentize_py_async_support.streams import ByteStreamReader, ByteStreamWriter
from wit_world import exports
from wit_world.imports import pipes


async def _feed(writer: ByteStreamWriter, data: bytes) -> None:
    with writer:
        await writer.write_all(data)


async def _drain(reader: ByteStreamReader) -> bytes:
    chunks = []
    with reader:
        while not reader.writer_dropped:
            chunks.append(await reader.read(65536))
    return b"".join(chunks)


class Run(exports.Run):
    async def run(self) -> None:
        print("greet:", await pipes.greet("driver"))

        writer, reader = wit_world.byte_stream()
        count, _ = await asyncio.gather(
            pipes.count_bytes(reader), _feed(writer, b"x" * 100_000)
        )
        print("count-bytes:", count)

        generated = await _drain(await pipes.generate(10_000))
        expected = bytes(i % 256 for i in range(10_000))
        print("generate:", len(generated), "bytes, pattern ok:", generated == expected)

        writer, reader = wit_world.byte_stream()
        upper_reader = await pipes.upper_stream(reader)
        upper, _ = await asyncio.gather(
            _drain(upper_reader), _feed(writer, b"hello, streams! " * 1000)
        )
        print("upper-stream:", upper[:16].decode(), len(upper))

        later = await pipes.later("soon")
        with later:
            print("later:", await later.read())

        future_writer, future_reader = wit_world.string_future(lambda: "")

        async def resolve() -> None:
            with future_writer:
                await future_writer.write("stressed")

        reversed_text, _ = await asyncio.gather(pipes.await_reversed(future_reader), resolve())
        print("await-reversed:", reversed_text)
