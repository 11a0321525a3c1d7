"""Calls the imported ``api`` interface and prints one line per check."""

from collections.abc import Callable

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import api
from wit_world.imports.api import Color, Permissions, Person, Point


def _show_err(call: Callable[[], object]) -> str:
    try:
        return f"ok({call()!r})"
    except Err as err:
        return f"err({err.value!r})"


class Run(exports.Run):
    def run(self) -> None:
        print("upper:", api.upper("snow ☃"))
        print("reverse-bytes:", list(api.reverse_bytes(bytes([1, 2, 3]))))
        print("join-strings:", api.join_strings(["a", "b", "c"], "+"))
        print("split-words:", api.split_words(" one  two three "))
        print("sum-u32:", api.sum_u32([0xFFFFFFFF, 1]))
        print("double-u32:", api.double_u32([1, 2, 0x80000000]))
        print("add-points:", api.add_points(Point(1, 2), Point(3, -4)))
        print("describe-person:", api.describe_person(Person("ann", 7, ["x", "y"])))
        print("make-person:", api.make_person("bob", 9))
        print("area:", api.area(api.Shape_Rect(Point(2, 3))), api.area(api.Shape_Empty()))
        print("maybe-double:", api.maybe_double(21), api.maybe_double(None))
        good = _show_err(lambda: api.parse_u32("12"))
        bad = _show_err(lambda: api.parse_u32("x"))
        print("parse-u32:", good, bad)
        print("check-positive:", _show_err(lambda: api.check_positive(-1)))
        print("toggle-exec:", api.toggle_exec(Permissions.READ))
        print("next-color:", api.next_color(Color.BLUE))
        print("swap:", api.swap(("a", 7)))
        print("scalars:", api.scalars(True, -3, 7, -9, 1.5, "x"))

        with api.Counter(5) as a, api.Counter(10) as b:
            print("counter:", a.get(), a.increment_by(3), b.get())
            with api.Counter.merge(a, b) as merged:
                print("merge:", merged.get())
                print("counter-total:", api.counter_total([a, b, merged]))
