"""Embedding a component in Python: translate once, instantiate, call exports.

    examples/build.sh && .venv/bin/python examples/embed/embed.py [examples/build/calc.wasm]
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import polyengine
from polyengine.sync import instantiate_sync

DEFAULT = Path(__file__).resolve().parents[1] / "build" / "calc.wasm"


def blocking(artifacts: polyengine.Artifacts) -> None:
    """The blocking facade: exports are plain calls (scripts, REPLs)."""
    with instantiate_sync(artifacts) as instance:
        print("add(2, 40) =", instance.exports.add(2, 40))
        print("fib(90) =", instance.exports.fib(90))
        print("motto() =", repr(instance.exports.motto()))


async def with_asyncio(artifacts: polyengine.Artifacts) -> None:
    """The native facade: exports are coroutine functions."""
    with await polyengine.instantiate(artifacts) as instance:
        total = await instance.exports.add(4294967295, 2)
        print("add(4294967295, 2) =", total, "(u32 arithmetic wraps)")


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    artifacts = polyengine.translate(path.read_bytes())  # validate + translate once
    blocking(artifacts)
    asyncio.run(with_asyncio(artifacts))


if __name__ == "__main__":
    main()
