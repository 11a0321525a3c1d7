"""Exports of the ``api`` interface over strings, lists, records, variants and more."""

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import api
from wit_world.exports.api import Color, Permissions, Person, Point


class Api(exports.Api):
    def echo_string(self, s: str) -> str:
        return s

    def upper(self, s: str) -> str:
        return s.upper()

    def reverse_bytes(self, b: bytes) -> bytes:
        return bytes(reversed(b))

    def join_strings(self, xs: list[str], sep: str) -> str:
        return sep.join(xs)

    def split_words(self, s: str) -> list[str]:
        return s.split()

    def sum_u32(self, xs: list[int]) -> int:
        return sum(xs)

    def double_u32(self, xs: list[int]) -> list[int]:
        return [(x * 2) & 0xFFFFFFFF for x in xs]

    def add_points(self, a: Point, b: Point) -> Point:
        return Point(x=a.x + b.x, y=a.y + b.y)

    def describe_person(self, p: Person) -> str:
        return f"{p.name} ({p.age}) [{', '.join(p.tags)}]"

    def make_person(self, name: str, age: int) -> Person:
        return Person(name=name, age=age, tags=["new"])

    def area(self, s: api.Shape) -> float:
        if isinstance(s, api.Shape_Circle):
            return 3.0 * s.value * s.value
        if isinstance(s, api.Shape_Rect):
            return float(abs(s.value.x * s.value.y))
        return 0.0

    def maybe_double(self, x: int | None) -> int | None:
        return None if x is None else x * 2

    def parse_u32(self, s: str) -> int:
        try:
            value = int(s)
        except ValueError:
            raise Err(f"not a number: {s}") from None
        if not 0 <= value <= 0xFFFFFFFF:
            raise Err(f"out of range: {s}")
        return value

    def check_positive(self, x: int) -> None:
        if x <= 0:
            raise Err(f"{x} is not positive")

    def toggle_exec(self, p: Permissions) -> Permissions:
        return p ^ Permissions.EXEC

    def next_color(self, c: Color) -> Color:
        order = [Color.RED, Color.GREEN, Color.BLUE]
        return order[(order.index(c) + 1) % len(order)]

    def swap(self, t: tuple[str, int]) -> tuple[int, str]:
        return (t[1], t[0])

    def scalars(  # noqa: PLR0917 (the WIT signature)
        self, a: bool, b: int, c: int, d: int, e: float, f: str
    ) -> tuple[bool, int, int, int, float, str]:
        return (a, b, c, d, e, f)

    def counter_total(self, cs: list[api.Counter]) -> int:
        total = 0
        for c in cs:
            total += c.get()
        return total & 0xFFFFFFFF
