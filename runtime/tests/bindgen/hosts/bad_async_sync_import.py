"""Negative: an async implementation of a sync import (the guest cannot await it)."""

from __future__ import annotations

from values_bindings import Imports, Profile
from values_host import Host


class AsyncHost(Host):
    async def lookup(self, name: str) -> Profile | None:  # expect-error
        return None


imports: Imports = {"demo:values/host@1.2.3": AsyncHost(), "tick": lambda n: n}  # expect-error
