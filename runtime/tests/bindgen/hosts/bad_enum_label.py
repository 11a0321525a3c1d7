"""Negative: an enum label that is not in the WIT enum."""

from __future__ import annotations

from values_bindings import World


async def main(world: World) -> None:
    await world.api.mix("red", "purple")  # expect-error
