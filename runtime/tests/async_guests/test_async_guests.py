"""Real async guests driven from Python: componentize-py (``py-async``) and
QuickJS (``js-qjs-async``), both implementing the same ``pipes`` interface.

Its exports are async functions over ``stream<u8>`` and ``future<string>``
(runtime/tests/guests/py-async); the guests run on their toolchains' async
support (callback-lifted exports, ``waitable-set`` polling, stream and future
built-ins), so this exercises the task model end to end.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import polyengine
from polyengine_protocol import is_future, is_stream

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]

PIPES = "polyengine:async-guests/pipes"


def _builder() -> ModuleType:
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).parent.parent / "guests" / "_build.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=["py-async", "js-qjs-async"])
def guest(request: pytest.FixtureRequest) -> bytes:
    path: Path = _builder().build_guest(request.param)
    return path.read_bytes()


async def _drive(data: bytes) -> dict[str, Any]:
    inst = await polyengine.instantiate(data)
    out: dict[str, Any] = {}
    with inst:
        pipes = inst.exports[PIPES]
        out["greet"] = await pipes.greet("bob")
        out["count"] = await pipes.count_bytes(b"x" * 10_000)

        async def chunks() -> AsyncIterator[bytes]:
            for i in range(4):
                await asyncio.sleep(0)
                yield bytes([i]) * 1000

        out["count-async"] = await pipes.count_bytes(chunks())
        stream = await pipes.generate(5000)
        assert is_stream(stream)
        out["generate"] = b"".join([chunk async for chunk in stream])
        upper = await pipes.upper_stream(b"hello, streams")
        out["upper"] = b"".join([chunk async for chunk in upper])
        fut = await pipes.later("hi")
        assert is_future(fut)
        out["later"] = await fut

        async def value() -> str:
            await asyncio.sleep(0.001)
            return "abc"

        out["reversed"] = await pipes.await_reversed(value())
        out["concurrent"] = await asyncio.gather(*(pipes.greet(str(i)) for i in range(10)))
    return out


def test_async_guest(guest: bytes) -> None:
    out = asyncio.run(_drive(guest))
    assert out["greet"] == "hello, bob"
    assert out["count"] == 10_000
    assert out["count-async"] == 4000
    assert out["generate"] == bytes(i % 256 for i in range(5000))
    assert out["upper"] == b"HELLO, STREAMS"
    assert out["later"] == "later: hi"
    assert out["reversed"] == "cba"
    assert out["concurrent"] == [f"hello, {i}" for i in range(10)]
