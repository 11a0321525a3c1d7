"""Runtime behaviours ``polyengine run`` relies on, reduced to the embedding API.

A known gap is a strict xfail naming where it lives; when the runtime is
fixed the test passes and the marker goes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

import polyengine

Build = Callable[[str, str], Path]

#: A sync import whose result is ``future<u32>``: the host's awaitable is the future's value.
FUTURE_RESULT = """
(component
  (type $ft (future u32))
  (import "get-future" (func $get-future (result $ft)))
  (core func $get-future-core (canon lower (func $get-future)))
  (core func $drop (canon future.drop-readable $ft))
  (core module $M
    (import "host" "get-future" (func $get-future (result i32)))
    (import "host" "drop" (func $drop (param i32)))
    (func (export "probe") (result i32)
      (local $h i32)
      (local.set $h (call $get-future))
      (call $drop (local.get $h))
      (i32.ne (local.get $h) (i32.const 0))))
  (core instance $m (instantiate $M
    (with "host" (instance
      (export "get-future" (func $get-future-core))
      (export "drop" (func $drop))))))
  (func (export "probe") (result bool) (canon lift (core func $m "probe")))
)
"""


def test_sync_import_returning_future(build: Build) -> None:
    # What wasi:cli/stdout@0.3.0#write-via-stream does: the awaitable is the future's value.
    data = build("future-result", FUTURE_RESULT).read_bytes()

    async def main() -> bool:
        async def value() -> int:
            return 5

        inst = await polyengine.instantiate(data, {"get_future": value})
        try:
            result: bool = await inst.exports.probe()
            return result
        finally:
            inst.close()

    assert asyncio.run(main()) is True


def test_wasi_exit_reaches_the_embedder_unchanged(build: Build) -> None:
    import polyengine_wasi

    from . import components as c

    data = build("exit-3", c.exit_with(3)).read_bytes()
    out = bytearray()
    err = bytearray()

    async def main() -> None:
        imports = polyengine_wasi.wasi(args=["exit"], stdout=out, stderr=err)
        inst = await polyengine.instantiate(data, imports)
        try:
            await inst.exports["wasi:cli/run@0.2.0"].run()
        finally:
            inst.close()

    with pytest.raises(polyengine_wasi.ExitError) as info:
        asyncio.run(main())
    assert info.value.code == 3
    assert (bytes(out), bytes(err)) == (b"before exit\n", b"exiting\n")
