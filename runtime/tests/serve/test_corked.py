"""The serve CLI's connection transport: writes of one event-loop turn leave as one send."""

from __future__ import annotations

import asyncio
from typing import Any

from polyengine.cli._serve import _CorkedTransport


class _Recorder:
    """A transport that records what reaches it."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        assert not self.closed, "a write after close"
        self.sent.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return sum(len(b) for b in self.sent)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5000)}.get(name, default)


def test_writes_of_one_turn_are_joined_in_order() -> None:
    async def scenario() -> list[bytes]:
        inner = _Recorder()
        corked = _CorkedTransport(inner, asyncio.get_running_loop())
        corked.write(b"HTTP/1.1 200 OK\r\n\r\n")
        corked.write(b"")
        corked.write(b"body")
        corked.writelines([b"-", b"end"])
        assert inner.sent == []  # nothing left yet
        assert corked.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\n\r\nbody-end")
        await asyncio.sleep(0)
        corked.write(b"next")
        await asyncio.sleep(0)
        return inner.sent

    assert asyncio.run(scenario()) == [b"HTTP/1.1 200 OK\r\n\r\nbody-end", b"next"]


def test_close_sends_what_is_pending_and_abort_drops_it() -> None:
    async def scenario() -> tuple[_Recorder, _Recorder]:
        loop = asyncio.get_running_loop()
        closing, aborting = _Recorder(), _Recorder()
        a = _CorkedTransport(closing, loop)
        a.write(b"last")
        a.close()
        b = _CorkedTransport(aborting, loop)
        b.write(b"dropped")
        b.abort()
        await asyncio.sleep(0)
        return closing, aborting

    closing, aborting = asyncio.run(scenario())
    assert closing.sent == [b"last"] and closing.closed
    assert aborting.sent == [] and aborting.aborted


def test_other_members_are_the_transport_s_own() -> None:
    async def scenario() -> Any:
        corked = _CorkedTransport(_Recorder(), asyncio.get_running_loop())
        return corked.get_extra_info("peername"), corked.is_closing()

    assert asyncio.run(scenario()) == (("127.0.0.1", 5000), False)
