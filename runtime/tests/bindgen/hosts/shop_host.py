from __future__ import annotations

from typing import Self

from shop_bindings import Color, Imports, Item, Perms, World, instantiate, perms


class MyLogger:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def log(self, msg: str) -> None:
        print(self.prefix, msg)

    @classmethod
    def pick(cls, a: Self, b: Self) -> Self:
        return a


class Host:
    Logger = MyLogger

    def lookup(self, name: str) -> Item | None:
        return {"name": name, "qty": 1, "note": None}


def f(x: list[tuple[int, str]]) -> None:
    pass


async def main(data: bytes) -> None:
    imports: Imports = {"demo:shop/host@0.1.0": Host(), "f": f}
    world: World = await instantiate(data, imports)
    with world:
        store = world.store
        cart = store.Cart("bob")
        c: Color = "dark-green"
        n: int = await cart.add({"name": "x", "qty": 2, "note": None}, c)
        p: Perms = await store.grant(perms("read"))
        ok: bool = p["class"]
        fut = await store.checkout(cart, b"body")
        s: str = await fut
        print(n, ok, s)
