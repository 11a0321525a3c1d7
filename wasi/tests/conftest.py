"""Shared helpers: calling providers the way a runtime would."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import TypeVar, cast

T = TypeVar("T")


def settle(value: T | Awaitable[T]) -> T:
    """Run a ``suspending`` import's result to completion outside any loop."""
    if inspect.isawaitable(value):
        awaitable = cast(Awaitable[T], value)

        async def wait() -> T:
            return await awaitable

        return asyncio.run(wait())
    return cast(T, value)


async def asettle(value: T | Awaitable[T]) -> T:
    """The same inside a running loop."""
    if inspect.isawaitable(value):
        return await cast(Awaitable[T], value)
    return cast(T, value)


import pytest  # noqa: E402


@pytest.fixture(name="settle")
def settle_fixture() -> object:
    return settle
