"""Several copies of the runtime in one process (embedder-api A9, python-mapping.md §3).

The runtime registers itself in the protocol's process-global copy registry
when it is imported. A stateful handle (stream, future, error-context without
a message) that carries a brand but was minted by another copy is refused
loudly at lowering, naming the cross-copy case, instead of being adapted as a
producer; and an unbranded exception escaping a host import, in a process
with several copies, carries the copy census in its trap message.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import Any

import pytest

import polyengine
from polyengine_protocol import (
    ERROR_CONTEXT,
    FUTURE,
    RUNTIME_COPIES,
    STREAM,
    Trap,
    copy_census,
    register_runtime_copy,
    runtime_copies,
)

from . import async_components as ac
from .test_async import aio

Wat = Callable[[str], bytes]

OTHER_COPY = "/elsewhere/site-packages/polyengine/__init__.py"

IMPORTING = """(component
  (import "f" (func $f (param "x" u32) (result u32)))
  (core func $fl (canon lower (func $f)))
  (core module $m
    (import "" "f" (func $f (param i32) (result i32)))
    (func (export "call-f") (param i32) (result i32) (call $f (local.get 0))))
  (core instance $i (instantiate $m (with "" (instance (export "f" (func $fl))))))
  (func (export "call-f") (param "x" u32) (result u32) (canon lift (core func $i "call-f"))))
"""


class ForeignStream:
    """A stream handle of another runtime copy: the brand, and another class."""

    __polyengine_brand__ = STREAM

    def __init__(self) -> None:
        self.iterated = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        self.iterated = True
        yield b"not to be pumped"


class ForeignFuture:
    """A future handle of another copy: branded and awaitable."""

    __polyengine_brand__ = FUTURE

    def __await__(self) -> Generator[Any, None, str]:
        yield from asyncio.sleep(0).__await__()
        return "not to be awaited"


class ForeignErrorContext:
    """A branded error-context with no string message: a stateful foreign handle."""

    __polyengine_brand__ = ERROR_CONTEXT
    message = None


@pytest.fixture
def second_copy() -> Iterator[None]:
    """Another runtime copy registered for the test, removed after it."""
    registry = sys.__dict__[RUNTIME_COPIES]
    entry = register_runtime_copy("9.9.9", module=OTHER_COPY)
    try:
        yield
    finally:
        registry.remove(entry)


def test_importing_the_runtime_registers_its_copy() -> None:
    mine = [c for c in runtime_copies() if c["module"] == polyengine.__file__]
    assert mine == [
        {
            "module": polyengine.__file__,
            "runtime_version": polyengine.__version__,
            "protocol_generation": 1,
        }
    ]
    assert copy_census() is None  # one copy: nothing to diagnose


@aio
async def test_a_foreign_stream_is_refused_not_pumped(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        foreign = ForeignStream()
        with pytest.raises(TypeError, match=r"parameter `s`: the stream was made by another copy"):
            await inst.exports.consume(foreign)
        assert not foreign.iterated


@aio
async def test_a_foreign_future_is_refused_not_awaited(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    expected = r"parameter `f`: the future was made by another copy"
    with inst, pytest.raises(TypeError, match=expected):
        await inst.exports.read_fut(ForeignFuture())


@aio
async def test_a_branded_error_context_without_message_is_refused(wat: Wat) -> None:
    inst = await polyengine.instantiate(wat(ac.ERRORS))
    with inst, pytest.raises(TypeError, match=r"the error-context was made by another copy"):
        await inst.exports.err_message(ForeignErrorContext())


@aio
async def test_the_refusal_lists_the_copies(wat: Wat, second_copy: None) -> None:
    inst = await polyengine.instantiate(wat(ac.STREAMS))
    with inst:
        with pytest.raises(TypeError) as info:
            await inst.exports.consume(ForeignStream())
        assert "2 polyengine runtime copies are registered" in str(info.value)
        assert OTHER_COPY in str(info.value)


@aio
async def test_an_unbranded_host_exception_carries_the_census(
    wat: Wat, second_copy: None
) -> None:
    def f(x: int) -> int:
        raise ValueError("plain")

    inst = await polyengine.instantiate(wat(IMPORTING), {"f": f})
    with inst, pytest.raises(Trap) as info:
        await inst.exports.call_f(1)
    message = str(info.value)
    assert message.startswith("host import f raised ValueError: plain\n")
    assert OTHER_COPY in message and polyengine.__file__ in message


@aio
async def test_one_copy_keeps_the_plain_message(wat: Wat) -> None:
    def f(x: int) -> int:
        raise ValueError("plain")

    inst = await polyengine.instantiate(wat(IMPORTING), {"f": f})
    with inst, pytest.raises(Trap) as info:
        await inst.exports.call_f(1)
    assert str(info.value) == "host import f raised ValueError: plain"
