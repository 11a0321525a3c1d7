"""The shape of the imports mapping (python-mapping.md §1, §4, §7).

Interface keys verbatim with versions and tracks, world-level bare imports
as snake_case top-level keys, providers as a module, a class instance, a
``SimpleNamespace`` and a ``Mapping`` of callables, and the errors a wrong
mapping gets.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import polyengine

from . import probe_host
from .components import Func, Interface, forwarder
from .probe_host import MODULE_TRANSCRIPT, Shapes, Transcript, describe
from .scenario import attempt, attempt_sync, method, run_scenario

Wat = Callable[[str], bytes]

SHAPES = Interface(
    "probe:conv/shapes@0.1.0",
    funcs=[
        Func("area", [("w", "u32"), ("h", "u32")], "u32", export="shapes-area"),
        Func("from", [("text", "string")], "string", export="shapes-from"),
    ],
)
PLAIN = Interface(
    "probe:conv/plain@0.2.5", funcs=[Func("twice", [("x", "u32")], "u32", export="plain-twice")]
)
UNVERSIONED = Interface(
    "probe:conv/unversioned",
    funcs=[Func("plain-twice", [("x", "u32")], "u32", export="unversioned-twice")],
)
BARE = [Func("get-answer", [("question", "string")], "u32")]


def component_text() -> str:
    return forwarder([SHAPES, PLAIN, UNVERSIONED], bare=BARE)


async def _drive(t: Transcript, inst: Any) -> None:
    await attempt(t, "shapes-area", inst.exports.shapes_area(6, 7))
    await attempt(t, "shapes-from", inst.exports.shapes_from("keyword"))
    await attempt(t, "plain-twice", inst.exports.plain_twice(21))
    await attempt(t, "unversioned-twice", inst.exports.unversioned_twice(4))
    await attempt(t, "get-answer", inst.exports.get_answer("why?"))


def test_imports_mapping_shape(wat: Wat) -> None:
    component = wat(component_text())

    async def body(t: Transcript) -> None:
        MODULE_TRANSCRIPT.entries = t.entries  # the module provider records here too
        leaves = polyengine.required_imports(component)
        t.record(
            "required-imports", leaves=[{"name": leaf.name, "kind": leaf.kind} for leaf in leaves]
        )
        base: dict[str, object] = {
            "probe:conv/shapes@0.1.0": Shapes(t),
            "probe:conv/plain@0.2.5": probe_host,  # a module is a provider
            "probe:conv/unversioned": {"plain_twice": probe_host.plain_twice},
            "get_answer": probe_host.get_answer,
        }
        t.record("providers", forms={k: describe(v) for k, v in base.items()})
        inst = await attempt(
            t, "instantiate: every provider form", polyengine.instantiate(component, base)
        )
        await _drive(t, inst)

        namespace = types.SimpleNamespace(area=lambda w, h: w + h, from_=str.lower)
        variants: list[tuple[str, dict[str, object]]] = [
            ("shapes as SimpleNamespace", {"probe:conv/shapes@0.1.0": namespace}),
            ("plain under its track key 0.2", {"probe:conv/plain@0.2": probe_host}),
            ("plain under a newer patch 0.2.9", {"probe:conv/plain@0.2.9": probe_host}),
            ("plain under an older patch 0.2.1", {"probe:conv/plain@0.2.1": probe_host}),
            ("plain under another minor 0.3", {"probe:conv/plain@0.3": probe_host}),
            ("plain unversioned", {"probe:conv/plain": probe_host}),
            ("bare import under its kebab name", {"get-answer": probe_host.get_answer}),
            ("an extra key nobody imports", {"probe:conv/never@1.0.0": {}}),
        ]
        for label, change in variants:
            imports = {k: v for k, v in base.items() if not _replaced(k, change)}
            imports.update(change)
            inst = await attempt(
                t, f"instantiate: {label}", polyengine.instantiate(component, imports)
            )
            if isinstance(inst, polyengine.Instance):
                await _drive(t, inst)

        missing_member = dict(base)
        missing_member["probe:conv/shapes@0.1.0"] = {"area": lambda w, h: 0}
        await attempt(
            t,
            "instantiate: provider lacks a member",
            polyengine.instantiate(component, missing_member),
        )
        not_callable = dict(base)
        not_callable["get_answer"] = 42
        await attempt(
            t,
            "instantiate: a member that is not callable",
            polyengine.instantiate(component, not_callable),
        )
        await attempt(t, "instantiate: no imports", polyengine.instantiate(component, {}))
        attempt_sync(
            t, "instantiate: bytes that are no component", lambda: polyengine.translate(b"\0asm")
        )

    run_scenario("imports_shape", body)


def _replaced(key: str, change: dict[str, object]) -> bool:
    """Whether ``change`` provides what ``key`` provides (same package and name)."""

    def stem(k: str) -> str:
        return k.split("@", maxsplit=1)[0].replace("-", "_")

    return any(stem(k) == stem(key) for k in change)


KEYWORDS = Interface(
    "probe:conv/keywords@0.1.0",
    funcs=[Func("import", [("from", "u32"), ("class", "string")], "string", export="lambda")],
)


def test_keyword_names(wat: Wat) -> None:
    """Python keywords among WIT names: members and exports take a trailing underscore."""
    component = wat(
        forwarder([KEYWORDS], bare=[Func("class", [("x", "u32")], "u32", export="pass")])
    )

    def import_(from_: int, class_: str) -> str:
        return f"{class_}:{from_}"

    async def body(t: Transcript) -> None:
        for label, imports in [
            (
                "member import_, bare key class_",
                {KEYWORDS.key: {"import_": import_}, "class_": abs},
            ),
            ("member import, bare key class", {KEYWORDS.key: {"import": import_}, "class": abs}),
        ]:
            inst = await attempt(
                t, f"instantiate: {label}", polyengine.instantiate(component, imports)
            )
            if isinstance(inst, polyengine.Instance):
                t.record(
                    "exports", names=sorted(n for n in dir(inst.exports) if not n.startswith("_"))
                )
                await attempt(t, "exports.lambda_", method(inst.exports, "lambda_", 3, "c"))
                await attempt(t, "exports.pass_", method(inst.exports, "pass_", 4))

    run_scenario("keyword_names", body)
