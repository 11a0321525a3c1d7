"""Host code for the componentize-py guest ``py-stub-values`` through its bindings."""

from __future__ import annotations

from stub_values_bindings import Permissions, Point, Shape, instantiate

from polyengine_protocol import ComponentException


async def run(data: bytes) -> list[object]:
    out: list[object] = []
    with await instantiate(data, {}) as world:
        api = world.api
        out.append(await api.upper("abc"))
        p: Point = await api.add_points({"x": 1, "y": 2}, {"x": 3, "y": 4})
        out.append(p)
        shape: Shape = {"kind": "rect", "value": {"x": 2, "y": 3}}
        out.append(await api.area(shape))
        perms: Permissions = await api.toggle_exec({"read": True, "write": False, "exec": True})
        out.append(perms)
        try:
            await api.parse_u32("x")
        except ComponentException as e:
            out.append(e.payload)
        with api.Counter(3) as c:
            out.append(await c.increment_by(2))
            out.append(await c.get())
    return out
