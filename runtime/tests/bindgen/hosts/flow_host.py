"""Host code against the ``flow`` world: async imports, streams, futures, error-contexts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from flow_bindings import Chunk, Imports, World, instantiate

from polyengine.bindings import ByteStream, ErrorContext


async def body() -> AsyncIterator[bytes]:
    yield b"hello"


class Source:
    async def fetch(self, url: str) -> AsyncIterator[bytes]:
        return body()

    def records(self) -> list[Chunk]:
        return [{"seq": 1, "data": b"x"}]

    def later(self) -> asyncio.Future[int]:
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        fut.set_result(7)
        return fut

    async def report(self, e: ErrorContext) -> None:
        print(e.message)

    def sink(self, s: ByteStream) -> asyncio.Future[None]:
        return asyncio.get_running_loop().create_future()


async def wait(ms: int) -> None:
    await asyncio.sleep(ms / 1000)


async def main(data: bytes) -> None:
    imports: Imports = {"demo:flow/source@0.3.0-rc.1": Source(), "wait": wait}
    world: World = await instantiate(data, imports, suspend=True)
    pipe = world.pipeline
    out = await pipe.run([b"abc", b"def"])
    async for chunk in out:
        for c in chunk:
            print(c["seq"], len(c["data"]))
    total: int = await (await pipe.count(out))
    settled: int = await pipe.settle(asyncio.sleep(0, "done"))
    err: ErrorContext = await pipe.fail()
    pong: str = await world.exports.ping()
    print(total, settled, err.debug_message(), pong)
