"""Host code for the C guest ``c-abi`` (clang, canonical ABI by hand) through its bindings."""

from __future__ import annotations

from c_abi_bindings import instantiate


async def run(data: bytes) -> list[object]:
    with await instantiate(data, {}) as world:
        ex = world.exports
        return [
            await ex.add(2, 3),
            await ex.reverse("héllo ☃!"),
            await ex.sum([4294967295, 1, 2]),
            await ex.count_calls(),
        ]
