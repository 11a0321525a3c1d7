"""Host code for the QuickJS guest ``js-qjs`` (componentize-qjs) through its bindings."""

from __future__ import annotations

from qjs_bindings import Point, instantiate

from polyengine_protocol import ComponentException


async def run(data: bytes) -> list[object]:
    out: list[object] = []
    with await instantiate(data, {}) as world:
        ex = world.exports
        out.append(await ex.greet("x"))
        p: Point = await ex.add_points({"x": 1, "y": 2}, {"x": 3, "y": 4})
        out.append(p)
        out.append(await ex.sum([1, 2, 3]))
        out.append(await ex.maybe_len("abc"))
        try:
            await ex.parse_u32("q")
        except ComponentException as e:
            out.append(e.payload)
    return out
