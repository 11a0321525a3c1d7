"""Host code against the ``values`` world: providers, narrowing, exhaustiveness."""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from values_bindings import (
    Color,
    Imports,
    Perms,
    Point,
    Profile,
    Shape,
    World,
    instantiate,
    perms,
)

from polyengine_protocol import ComponentException


def area_of(s: Shape) -> float:
    if s["kind"] == "circle":
        return 3.14 * s["value"] ** 2
    if s["kind"] == "rect":
        return float(s["value"]["x"] * s["value"]["y"])
    if s["kind"] == "empty":
        return 0.0
    assert_never(s)


def name_of(c: Color) -> str:
    match c:
        case "red":
            return "R"
        case "dark-green":
            return "G"
        case "blue":
            return "B"
        case _:
            assert_never(c)


class Host:
    def lookup(self, name: str) -> Profile | None:
        return {
            "name": name,
            "nick": None,
            "deep": {"kind": "some", "value": 1},
            "deeper": {"kind": "none"},
            "tags": [],
            "raw": b"",
            "pair": (1, "a", 2.0),
            "counts": [("a", 1)],
            "rgb": b"\x01\x02\x03",
            "corners": [],
            "outcome": {"kind": "ok", "value": {"x": 1, "y": 2}},
            "maybe_ok": {"kind": "ok"},
            "maybe_err": {"kind": "err"},
            "bare": {"kind": "ok"},
        }

    def paint(self, s: Shape, c: Color) -> int:
        if c == "blue":
            raise ComponentException("no blue paint")
        return int(area_of(s))

    def check(self, p: Perms) -> None:
        if not p["read"]:
            raise ComponentException(None)

    def store(self, points: list[Point], blob: bytes, m: list[tuple[int, Point]]) -> None:
        pass

    def pairs(self) -> Sequence[tuple[int, str, bool]]:
        return [(1, "x", True)]


async def main(data: bytes) -> None:
    imports: Imports = {"demo:values/host@1.2.3": Host(), "tick": lambda n: n + 1}
    world: World = await instantiate(data, imports)
    api = world.api
    color: Color = await api.mix("red", "blue")
    granted: Perms = await api.grant(perms("read", "exec_all"))
    boxed = await api.nested({"kind": "some", "value": {"x": 1, "y": 2}})
    if boxed is not None and boxed["kind"] == "some":
        p: Point = boxed["value"]
        print(p["x"])
    try:
        a: float = await api.area({"kind": "circle", "value": 1.0})
        print(a)
    except ComponentException as e:
        print(e.payload)
    major, minor, patch = await world.exports.version()
    print(name_of(color), granted["exec_all"], major + minor + patch)
