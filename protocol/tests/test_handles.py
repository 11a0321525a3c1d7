"""The realm-local pill and the handle protocols."""

from __future__ import annotations

import copy
import multiprocessing.reduction
import pickle
import textwrap
from pathlib import Path

import pytest

import polyengine_protocol as pp


class RuntimeStream(pp.RealmLocal):
    """What the runtime's concrete stream class looks like to this package."""

    __polyengine_brand__ = pp.STREAM

    def __init__(self) -> None:
        self.state = "open"


class RuntimeErrorContext(pp.RealmLocal):
    __polyengine_brand__ = pp.ERROR_CONTEXT

    def __init__(self, message: str) -> None:
        self.message = message

    def debug_message(self) -> str:
        return self.message


class SlottedHandle(pp.RealmLocal):
    __slots__ = ("rep",)
    __polyengine_brand__ = pp.FUTURE

    def __init__(self) -> None:
        self.rep = 1


def test_inheriting_realm_local_pills_every_instance() -> None:
    s = RuntimeStream()
    assert pp.is_realm_local(s)
    assert pp.is_stream(s)
    assert not pp.is_realm_local(RuntimeStream), "the class itself is no value"
    assert pp.is_realm_local(SlottedHandle())


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickling_a_pilled_value_fails_at_the_sender(protocol: int) -> None:
    with pytest.raises(TypeError) as info:
        pickle.dumps(RuntimeStream(), protocol=protocol)
    message = str(info.value)
    assert "cannot pickle RuntimeStream" in message
    assert "realm-local" in message
    assert "to_cloneable(value, replace=...)" in message


def test_a_pilled_value_buried_in_a_record_fails_too() -> None:
    record = {"name": "x", "body": [1, 2, {"stream": RuntimeStream()}]}
    with pytest.raises(TypeError, match="cannot pickle RuntimeStream"):
        pickle.dumps(record)
    with pytest.raises(TypeError, match="cannot pickle SlottedHandle"):
        pickle.dumps((SlottedHandle(),))


def test_a_process_queue_pickler_refuses_too() -> None:
    with pytest.raises(TypeError, match="cannot pickle RuntimeStream"):
        multiprocessing.reduction.ForkingPickler.dumps([RuntimeStream()])


def test_copies_of_a_handle_are_the_handle() -> None:
    s = RuntimeStream()
    assert copy.copy(s) is s
    record = {"body": s, "n": [1]}
    duplicate = copy.deepcopy(record)
    assert duplicate["body"] is s
    assert duplicate["n"] == [1] and duplicate["n"] is not record["n"]


def test_define_realm_local_on_a_class() -> None:
    class Pollable:
        __polyengine_brand__ = pp.POLLABLE

    assert pp.define_realm_local(Pollable) is Pollable
    p = Pollable()
    assert pp.is_realm_local(p) and pp.is_pollable(p)
    with pytest.raises(TypeError, match=r"cannot pickle .*Pollable: it is realm-local"):
        pickle.dumps(p)
    assert copy.deepcopy(p) is p


class Wrapper:
    pass


def test_define_realm_local_on_one_object() -> None:
    pilled, plain = Wrapper(), Wrapper()
    assert pp.define_realm_local(pilled) is pilled
    assert pp.is_realm_local(pilled) and not pp.is_realm_local(plain)
    with pytest.raises(TypeError, match=r"cannot pickle .*Wrapper: it is realm-local"):
        pickle.dumps(pilled)
    pickle.dumps(plain)
    assert copy.deepcopy(pilled) is pilled


def test_define_realm_local_refuses_an_object_without_a_dict() -> None:
    with pytest.raises(TypeError, match="cannot pill an object of type int: it has no __dict__"):
        pp.define_realm_local(3)


def test_hand_rolled_pill_is_recognized() -> None:
    class HandRolled:
        __polyengine_realm_local__ = "polyengine.realmLocal/1"

    assert pp.is_realm_local(HandRolled())
    assert pp.REALM_LOCAL_ATTRIBUTE == "__polyengine_realm_local__"


def test_unpilled_values() -> None:
    class WrongValue:
        __polyengine_realm_local__ = True

    for value in [None, 1, "polyengine.realmLocal/1", {"__polyengine_realm_local__": 1}]:
        assert not pp.is_realm_local(value)
    assert not pp.is_realm_local(WrongValue())
    assert not pp.is_realm_local(pp.Trap("x"))


# The handle protocols are structural types: a conforming class type-checks
# where the protocol is expected and a non-conforming one does not. This is
# checked by running mypy over a small module.

CONFORMANCE = '''
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Generator
from types import TracebackType
from typing import Any, Self

from polyengine_protocol import (
    ByteStreamSource, Chunk, DirectDestination, DirectSource, DirectVerdict, ErrorContext,
    Future, FutureSource, Stream, StreamSource, StreamWriter,
)


class ByteStream:
    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        raise StopAsyncIteration

    async def read(self, max: int, /) -> bytes:
        return b""

    async def read_direct(self, consume: Callable[[DirectSource], DirectVerdict], /) -> int:
        return 0

    def cancel_read(self) -> None: ...

    def drop(self) -> None: ...

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class Writer:
    async def write(self, chunk: Chunk[str], /) -> int:
        return len(chunk)

    async def write_all(self, chunk: Chunk[str], /) -> int:
        return len(chunk)

    async def write_direct(
        self, produce: Callable[[DirectDestination], DirectVerdict], /
    ) -> int:
        return 0

    def cancel_write(self) -> None: ...

    def close(self) -> None: ...

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None: ...


class IntFuture:
    def __await__(self) -> Generator[Any, Any, int]:
        return asyncio.sleep(0, 7).__await__()

    def drop(self) -> None: ...

    def cancel(self) -> None: ...


class Context:
    message = "boom"

    def debug_message(self) -> str:
        return self.message


async def coro() -> int:
    return 1


stream: Stream[int] = ByteStream()
writer: StreamWriter[str] = Writer()
future: Future[int] = IntFuture()
context: ErrorContext = Context()
source_a: StreamSource[int] = ByteStream()
source_b: StreamSource[int] = [1, 2, 3]
source_c: ByteStreamSource = b"abc"
source_d: ByteStreamSource = [b"ab", b"c"]
future_a: FutureSource[int] = IntFuture()
future_b: FutureSource[int] = coro()


async def use(s: Stream[int], f: Future[int]) -> int:
    async with s:
        async for chunk in s:
            return len(chunk)
        data = await s.read(10)
    return len(data) + await f
'''

NON_CONFORMANCE = '''
from polyengine_protocol import Future, Stream, StreamWriter


class NoDrop:
    def __await__(self):  # type: ignore[no-untyped-def]
        yield


class StrStream:
    def __aiter__(self) -> "StrStream":
        return self

    async def __anext__(self) -> list[str]:
        return []

    async def read(self, max: int, /) -> list[str]:
        return []


future: Future[int] = NoDrop()
stream: Stream[int] = StrStream()
writer: StreamWriter[int] = StrStream()
'''


def _mypy(tmp_path: Path, source: str) -> tuple[str, int]:
    api = pytest.importorskip("mypy.api")
    module = tmp_path / "conformance.py"
    module.write_text(textwrap.dedent(source))
    root = Path(__file__).resolve().parents[2]
    cache = root / ".mypy_cache"
    stdout, stderr, status = api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(cache if cache.is_dir() else tmp_path / "cache"),
            "--config-file",
            str(root / "pyproject.toml"),
            str(module),
        ]
    )
    return stdout + stderr, status


def test_protocols_accept_conforming_implementations(tmp_path: Path) -> None:
    output, status = _mypy(tmp_path, CONFORMANCE)
    assert status == 0, output


def test_protocols_reject_non_conforming_implementations(tmp_path: Path) -> None:
    output, status = _mypy(tmp_path, NON_CONFORMANCE)
    assert status == 1, output
    assert 'variable has type "Future[int]"' in output
    assert 'variable has type "Stream[int]"' in output
    assert 'variable has type "StreamWriter[int]"' in output
    assert output.count("error:") == 3, output
