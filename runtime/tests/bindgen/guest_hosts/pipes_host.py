"""Host code for the async guests exporting ``pipes`` (componentize-py and QuickJS)."""

from __future__ import annotations

import asyncio

from pipes_bindings import instantiate


async def soon() -> str:
    await asyncio.sleep(0)
    return "stressed"


async def run(data: bytes) -> list[object]:
    out: list[object] = []
    with await instantiate(data, {}) as world:
        pipes = world.pipes
        out.append(await pipes.greet("bob"))
        out.append(await pipes.count_bytes([b"ab", b"cde"]))
        generated = b"".join([bytes(chunk) async for chunk in await pipes.generate(5)])
        out.append(generated)
        upper = await pipes.upper_stream(b"shout")
        out.append(b"".join([bytes(chunk) async for chunk in upper]))
        out.append(await (await pipes.later("soon")))
        out.append(await pipes.await_reversed(soon()))
    return out
