"""Negative: a provider whose method takes the wrong parameter type."""

from __future__ import annotations

from shop_bindings import Imports, Item
from shop_host import MyLogger, f


class Host:
    Logger = MyLogger

    def lookup(self, name: int) -> Item | None:
        return None


imports: Imports = {"demo:shop/host@0.1.0": Host(), "f": f}  # expect-error
