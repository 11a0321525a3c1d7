"""Host code against the ``res`` world: host resources and guest resources."""

from __future__ import annotations

from typing import Self

import resources_bindings as rb
from resources_bindings import Imports, World, instantiate


class HostLogger:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def log(self, msg: str) -> None:
        print(self.prefix + msg)

    def child(self, suffix: str) -> Self:
        return type(self)(self.prefix + suffix)

    @classmethod
    def combine(cls, a: Self, b: Self) -> Self:
        return cls(a.prefix + b.prefix)

    @classmethod
    def level(cls) -> int:
        return 3


class HostCounter:
    def __init__(self) -> None:
        self.n = 0

    def bump(self, by: int) -> int:
        self.n += by
        return self.n


class Host:
    Logger = HostLogger
    Counter = HostCounter

    def make_logger(self, prefix: str) -> HostLogger:
        return HostLogger(prefix)

    # A parameter of a function (not a method of the same resource) takes the
    # protocol type: any host class of that resource may arrive (bindgen.md §1.6).
    def describe(self, l_: rb.Logger, c: rb.Counter) -> str:
        l_.log("describe")
        return str(c.bump(0))


async def main(data: bytes) -> None:
    imports: Imports = {"demo:res/host@0.2.0": Host()}
    await with_world(await instantiate(data, imports))


async def with_world(world: World) -> None:
    with world:
        store = world.store
        with store.Cart("ann") as cart:
            added: int = await cart.add("apple", 2)
            merged = await store.Cart.merge(cart, store.Cart("bob"))
            total: int = await merged.total()
            await merged.attach(HostLogger("log: "))
            peeked: int | None = await store.peek(merged)
            print(added, total, peeked, await store.checkout(merged))
