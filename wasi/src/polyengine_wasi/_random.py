"""``wasi:random`` providers for 0.2 and 0.3.

``random`` draws from the operating system's CSPRNG. ``insecure`` and
``insecure-seed`` come from a ``random.Random`` that is seeded once per
``wasi()`` call; pass ``seed=`` there for a deterministic run.
"""

from __future__ import annotations

import os
import random as _random
from types import SimpleNamespace

__all__ = ["random_provider", "insecure_provider", "insecure_seed_provider", "RandomState"]

U64_MAX = (1 << 64) - 1
#: Refuse requests larger than this rather than exhausting host memory.
MAX_RANDOM_BYTES = 1 << 26


def _length(name: str, n: int) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= U64_MAX:
        raise TypeError(f"{name}: expected a u64 length, got {n!r}")
    if n > MAX_RANDOM_BYTES:
        raise ValueError(f"{name}: {n} bytes is more than this host hands out at once")
    return n


class RandomState:
    """The per-instance state behind the insecure generators."""

    def __init__(self, seed: int | None) -> None:
        self.rng = _random.Random(seed if seed is not None else int.from_bytes(os.urandom(16)))
        self.seed = (self.rng.getrandbits(64), self.rng.getrandbits(64))


def random_provider() -> SimpleNamespace:
    """``wasi:random/random`` (``len`` in 0.2, ``max-len`` in 0.3: positional)."""

    def get_random_bytes(len: int) -> bytes:
        return os.urandom(_length("get-random-bytes", len))

    def get_random_u64() -> int:
        return int.from_bytes(os.urandom(8), "little")

    return SimpleNamespace(get_random_bytes=get_random_bytes, get_random_u64=get_random_u64)


def insecure_provider(state: RandomState) -> SimpleNamespace:
    """``wasi:random/insecure``."""

    def get_insecure_random_bytes(len: int) -> bytes:
        return state.rng.randbytes(_length("get-insecure-random-bytes", len))

    def get_insecure_random_u64() -> int:
        return state.rng.getrandbits(64)

    return SimpleNamespace(
        get_insecure_random_bytes=get_insecure_random_bytes,
        get_insecure_random_u64=get_insecure_random_u64,
    )


def insecure_seed_provider(state: RandomState) -> SimpleNamespace:
    """``wasi:random/insecure-seed`` (0.2 ``insecure-seed``, 0.3 ``get-insecure-seed``)."""

    def insecure_seed() -> tuple[int, int]:
        return state.seed

    return SimpleNamespace(insecure_seed=insecure_seed, get_insecure_seed=insecure_seed)
