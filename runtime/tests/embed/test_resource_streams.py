"""Streams of resources (embedder-api A13): elements holding ``own<R>`` lower as
live handles, for guest-implemented and host-implemented ``R``, at the top of
the element or nested in it; elements the reader never takes are destroyed
(a host object's ``close()`` runs, a guest resource's destructor runs)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import polyengine

from . import stream_components as sc
from .test_async import aio

Wat = Callable[[str], bytes]

COMPLETED = 0
ONE = (1 << 4) | COMPLETED


async def settle(turns: int = 10) -> None:
    for _ in range(turns):
        await asyncio.sleep(0)


class Conn:
    def __init__(self, name: str, closed: list[str]) -> None:
        self.name = name
        self.closed = closed

    def close(self) -> None:
        self.closed.append(self.name)


async def shapes(wat: Wat, closed: list[str]) -> Any:
    def make(name: str) -> Conn:
        return Conn(name, closed)

    return await polyengine.instantiate(
        wat(sc.RESOURCE_SHAPES), {"test:demo/conns": {"Conn": Conn, "make": make}}
    )


@pytest.mark.parametrize(
    ("export", "shape"),
    [
        ("take_g_own", lambda c, k: c),
        ("take_g_pair", lambda c, k: (c, k)),
        ("take_g_opt", lambda c, k: c),
    ],
)
@aio
async def test_untaken_guest_resources_run_their_destructor(
    wat: Wat, export: str, shape: Callable[[Any, int], Any]
) -> None:
    inst = await shapes(wat, [])
    with inst:
        x = inst.exports
        counters = [x.Counter(k) for k in range(3)]
        code = await getattr(x, export)([shape(c, k) for k, c in enumerate(counters)])
        assert code == ONE
        await settle()
        # one taken (the guest dropped it), two never taken: all three destructors ran
        assert await x.drops() == 3


@pytest.mark.parametrize(
    ("export", "values"),
    [
        ("take_h_own", lambda c: [c("a"), c("b"), c("c")]),
        ("take_h_pair", lambda c: [(c("a"), 1), (c("b"), 2), (c("c"), 3)]),
        ("take_h_opt", lambda c: [c("a"), None, c("c")]),
    ],
)
@aio
async def test_untaken_host_resources_are_closed_for_every_shape(
    wat: Wat, export: str, values: Callable[[Callable[[str], Conn]], list[Any]]
) -> None:
    closed: list[str] = []
    inst = await shapes(wat, closed)
    with inst:
        elements = values(lambda name: Conn(name, closed))
        expect = sorted(c.name for c in _conns(elements))
        assert await getattr(inst.exports, export)(elements) == ONE
        await settle()
        assert sorted(closed) == expect


def _conns(values: list[Any]) -> list[Conn]:
    out = []
    for v in values:
        conn = v[0] if isinstance(v, tuple) else v
        if isinstance(conn, Conn):
            out.append(conn)
    return out


@aio
async def test_an_element_a_cancelled_source_still_produced_is_destroyed(wat: Wat) -> None:
    class Listener:
        def __init__(self, first: Any, straggler: Any) -> None:
            self.first = first
            self.straggler = straggler
            self.wake: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self.sent = False

        def __aiter__(self) -> Listener:
            return self

        async def __anext__(self) -> Any:
            if not self.sent:
                self.sent = True
                return self.first
            return await self.wake

        def cancel(self) -> None:
            self.wake.set_result(self.straggler)

    inst = await shapes(wat, [])
    with inst:
        x = inst.exports
        taken, straggler = x.Counter(1), x.Counter(2)
        listener = Listener((taken, 1), (straggler, 2))
        assert await x.take_g_pair(listener) == ONE
        await asyncio.wait_for(_until_drops(x, 2), 5)


async def _until_drops(x: Any, n: int) -> None:
    while await x.drops() < n:
        await asyncio.sleep(0)


@aio
async def test_an_async_source_of_nested_owns_is_pumped(wat: Wat) -> None:
    closed: list[str] = []

    async def source() -> AsyncIterator[tuple[Conn, int]]:
        for k in range(3):
            yield Conn(f"c{k}", closed), k

    inst = await shapes(wat, closed)
    with inst:
        assert await inst.exports.take_h_pair(source()) == ONE
        await settle()
        assert "c0" in closed  # taken and dropped by the guest


@aio
async def test_guest_resources_read_from_a_stream_are_live_handles(wat: Wat) -> None:
    inst = await shapes(wat, [])
    with inst:
        x = inst.exports
        stream = await x.give_counters(3)
        got: list[Any] = []
        async for chunk in stream:
            got.extend(chunk)
        assert [type(c).__name__ for c in got] == ["Counter"] * 3
        assert await x.drops() == 0  # owned by the host now
        for c in got:
            c.drop()
        assert await x.drops() == 3


class FakeTable:
    """A host resource table that numbers what it registers and records what it destroys."""

    def __init__(self) -> None:
        self.objects: dict[int, object] = {}
        self.closed: list[object] = []

    def lower_own(self, rt: object, v: object) -> int:
        rep = len(self.objects) + len(self.closed) + 1
        self.objects[rep] = v
        return rep

    def lift_own(self, rt: object, rep: int) -> object:
        return self.objects.pop(rep)

    def host_dtor(self, rep: int) -> None:
        self.closed.append(self.objects.pop(rep))


class HostRt:
    impl = None


def test_element_lowering_reaches_owns_in_every_nested_shape() -> None:
    from polyengine.instance._elements import ElementLowering, element_lifting
    from polyengine.types import model as m

    own = m.Own(0)
    table = FakeTable()
    shapes: list[tuple[m.ValType, Any, Any]] = [
        (m.Map(m.String(), own), [("a", "A")], [("a", 1)]),
        (m.Variant((m.Case("x", own), m.Case("y", None))), {"kind": "x", "value": "B"}, None),
        (m.Option(m.Option(own)), {"kind": "some", "value": "C"}, None),
        (
            m.Record((m.Field("my-conn", own), m.Field("n", m.U32()))),
            {"my_conn": "D", "n": 1},
            None,
        ),
        (m.Result(own, m.String()), {"kind": "ok", "value": "E"}, None),
        (m.List(m.Tuple((own, m.U32()))), [("F", 7)], None),
    ]
    for t, value, expect in shapes:
        lowering = ElementLowering.of(t, lambda _: HostRt(), table)
        assert lowering is not None, t
        raw, held = lowering.lower(value)
        assert len(held) == 1, t
        if expect is not None:
            assert raw == expect
        lift = element_lifting(t, lambda _: HostRt(), table)
        assert lift is not None and lift(raw) == value  # a round trip through the reps
    lowering = ElementLowering.of(m.Tuple((own, own)), lambda _: HostRt(), table)
    assert lowering is not None
    _, held = lowering.lower(("G", "H"))
    lowering.release(held)  # never taken: both destroyed
    assert table.closed == ["G", "H"]
    assert ElementLowering.of(m.Tuple((m.U32(), m.String())), lambda _: HostRt(), table) is None
