"""The pooling allocator under ``polyengine.asgi.App`` and ``polyengine serve -O``."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from asgi_client import asgi_call, scope_of

from polyengine.asgi import App
from polyengine.asgi._pool import (
    DEFAULT_CONCURRENCY,
    KEEP_RESIDENT_MAX,
    POOL_INSTANCES_MAX,
    pooling_for,
)
from polyengine.engine import PoolLimitError
from polyengine.translate import translate

Guest = Callable[[str], bytes]


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def _stores_pooled(app: App) -> list[bool]:
    pool = app._pool
    assert pool is not None
    return [slot.instance._runtime.store.engine.pooled for slot in pool._idle]


@pytest.mark.parametrize("pooled", [True, False])
def test_pooled_and_on_demand_apps_answer_alike(guest: Guest, pooled: bool) -> None:
    app = App(guest("echo"), log=lambda _: None, pooling_allocator=pooled, reuse=3)
    chunks = [b"alpha", b"beta" * 3000, b"gamma"]

    async def main() -> list[Any]:
        await app.startup()
        assert _stores_pooled(app) == [pooled]
        answers = [await asgi_call(app, scope_of("POST"), chunks) for _ in range(7)]
        await app.shutdown()
        return answers

    for ex in run(main()):
        assert ex.status == 200
        assert ex.header(b"x-echo") == b"1"
        assert ex.body == b"".join(chunks)


def test_the_pool_is_sized_from_the_policy(guest: Guest) -> None:
    arts = translate(guest("hello"))
    p2 = pooling_for(arts, concurrency=50, concurrent_reuse=None, prewarm=2).pooling
    assert p2 is not None
    # a 0.2 proxy serves one request per instance: 50 answering, 2 prewarmed, 8 spare,
    # 16 closed and not yet deleted; two core instances and one memory each
    assert p2.total_memories == 76
    assert p2.total_core_instances == 2 * 76
    assert p2.total_stacks == 2 * 50 + 64
    # a freed memory slot stays mapped for twice the guest's memory (one page), in
    # whole MiB; a stack slot not at all
    assert p2.linear_memory_keep_resident == 1 << 20
    assert p2.async_stack_keep_resident == 0
    kept = pooling_for(arts, concurrency=1, concurrent_reuse=1, prewarm=0, keep_resident=5).pooling
    assert kept is not None and kept.linear_memory_keep_resident == 5
    unbounded = pooling_for(arts, concurrency=None, concurrent_reuse=None, prewarm=0).pooling
    assert unbounded is not None
    # any number of requests: the pool holds at most POOL_INSTANCES_MAX answering
    assert unbounded.total_memories == POOL_INSTANCES_MAX + 8 + 16
    assert unbounded.total_stacks == 2 * DEFAULT_CONCURRENCY + 64


def test_the_kept_memory_follows_the_guests_memory_up_to_a_bound(
    wat: Callable[[str], bytes],
) -> None:
    def kept(pages: int) -> int:
        arts = translate(
            wat(f"""(component
  (core module $m (memory {pages}) (func (export "ok") (result i32) (i32.const 1)))
  (core instance $i (instantiate $m))
  (func (export "ok") (result u32) (canon lift (core func $i "ok"))))""")
        )
        config = pooling_for(arts, concurrency=4, concurrent_reuse=None, prewarm=0).pooling
        assert config is not None
        return config.linear_memory_keep_resident

    assert kept(0) == 1 << 20
    assert kept(250) == 32 << 20  # 15.6 MiB: twice that, rounded up to whole MiB
    assert kept(5000) == KEEP_RESIDENT_MAX


def test_a_full_pool_makes_the_next_instance_on_demand(
    guest: Guest, monkeypatch: pytest.MonkeyPatch
) -> None:
    import polyengine.asgi._pool as pool_module

    real = pool_module.pooling_for

    def one_slot(*args: Any, **kw: Any) -> Any:
        from dataclasses import replace

        config = real(*args, **kw)
        return replace(config, pooling=replace(config.pooling, total_memories=1))

    monkeypatch.setattr(pool_module, "pooling_for", one_slot)
    app = App(guest("echo"), log=lambda _: None, prewarm=3, reuse=5)

    async def main() -> list[Any]:
        await app.startup()
        assert _stores_pooled(app) == [True, False, False]
        assert app._pool is not None and app._pool.overflowed == 2
        answers = [await asgi_call(app, scope_of("POST"), [b"x" * n]) for n in range(1, 12)]
        await app.shutdown()
        return answers

    for n, ex in enumerate(run(main()), 1):
        assert ex.status == 200 and ex.body == b"x" * n


def test_a_guest_over_the_pools_limits_fails_with_the_limit_named(
    guest: Guest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pool whose memory slots are smaller than the guest's memory: starting the
    app fails, naming the limit, before any request."""
    import polyengine.asgi._pool as pool_module

    real = pool_module.pooling_for

    def no_room(*args: Any, **kw: Any) -> Any:
        from dataclasses import replace

        config = real(*args, **kw)
        return replace(config, pooling=replace(config.pooling, max_memory_size=0))

    monkeypatch.setattr(pool_module, "pooling_for", no_room)
    app = App(guest("hello"), log=lambda _: None)
    with pytest.raises(PoolLimitError, match=r"PoolingConfig\.max_memory_size"):
        run(app.startup())


def test_serve_takes_wasmtimes_pooling_allocator_option() -> None:
    from polyengine.cli._serve import _options, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())

    def pooled(*flags: str) -> bool:
        value: bool = _options(parser.parse_args(["serve", *flags, "x.wasm"]))["pooling_allocator"]
        return value

    assert pooled() is True
    assert pooled("-O", "pooling-allocator=n") is False
    assert pooled("-O", "pooling-allocator=no") is False
    assert pooled("-O", "pooling-allocator=n", "-O", "pooling-allocator") is True
    assert pooled("-O", "pooling-allocator=y") is True
    with pytest.raises(ValueError, match="unknown optimization option -O 'inlining=y'"):
        pooled("-O", "inlining=y")
    with pytest.raises(ValueError, match="pooling-allocator=y or =n"):
        pooled("-O", "pooling-allocator=maybe")
