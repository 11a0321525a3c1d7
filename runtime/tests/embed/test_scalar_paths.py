"""The compiled scalar paths (exports and host imports) behave exactly as the general ones.

Each case runs on two fresh instances, one taking the compiled path and one
forced onto the general path, and compares the outcome (value or exception
chain) and whether the instance was poisoned.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import polyengine
import polyengine.embed._host as host_module
from polyengine.instance import ExportCall
from polyengine.translate import plan as pln
from polyengine_protocol import Trap

Wat = Callable[[str], bytes]

_CORE = """
  (import "host" "f" (func $f (param i32) (result i32)))
  (import "host" "g" (func $g (param i32 f32 i32 i64 f64) (result f64)))
  (func (export "id32") (param i32) (result i32) local.get 0)
  (func (export "id64") (param i64) (result i64) local.get 0)
  (func (export "idf32") (param f32) (result f32) local.get 0)
  (func (export "idf64") (param f64) (result f64) local.get 0)
  (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
  (func (export "boom") (result i32) unreachable)
  (func (export "nothing"))
  (func (export "callf") (param i32) (result i32) (call $f (local.get 0)))
  (func (export "callg") (param i32 f32 i32 i64 f64) (result f64)
    (call $g (local.get 0) (local.get 1) (local.get 2) (local.get 3) (local.get 4)))
"""

_IDS = {
    "u8": "id32", "s8": "id32", "u16": "id32", "s16": "id32", "u32": "id32", "s32": "id32",
    "u64": "id64", "s64": "id64", "bool": "id32", "f32": "idf32", "f64": "idf64", "char": "id32",
}  # fmt: skip

_G = '(param "a" s8) (param "b" f32) (param "c" bool) (param "d" u64) (param "e" f64)'


def _component() -> str:
    lifts = [
        f'(func (export "id-{t}") (param "x" {t}) (result {t}) (canon lift (core func $i "{c}")))'
        for t, c in _IDS.items()
    ]
    lifts += [
        '(func (export "add") (param "a" u32) (param "b" u32) (result u32)'
        ' (canon lift (core func $i "add")))',
        '(func (export "boom") (result u32) (canon lift (core func $i "boom")))',
        '(func (export "nothing") (canon lift (core func $i "nothing")))',
        '(func (export "callf") (param "x" u32) (result u32) (canon lift (core func $i "callf")))',
        f'(func (export "callg") {_G} (result f64) (canon lift (core func $i "callg")))',
    ]
    body = "\n  ".join(lifts)
    return f"""(component
  (import "f" (func $f (param "x" u16) (result s16)))
  (import "g" (func $g {_G} (result f64)))
  (core func $f (canon lower (func $f)))
  (core func $g (canon lower (func $g)))
  (core module $m {_CORE})
  (core instance $i (instantiate $m
    (with "host" (instance (export "f" (func $f)) (export "g" (func $g))))))
  {body}
)"""


class _Raise:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


async def _coroutine() -> int:
    return 1


def _host(behaviour: list[object], seen: list[tuple[object, ...]]) -> dict[str, Any]:
    def respond(*args: object) -> object:
        seen.append(args)
        value = behaviour[0]
        if isinstance(value, _Raise):
            raise value.exc
        if value == "coroutine":
            return _coroutine()
        return value

    return {"f": respond, "g": respond}


def _calls(wasm: bytes, imports: dict[str, Any], *, compiled: bool) -> dict[str, ExportCall]:
    async def make() -> Any:
        return await polyengine.instantiate(wasm, imports)

    inst = asyncio.run(make())
    rt = inst._runtime
    if not compiled:
        # a trampoline's body is built on its first call: build it without the compiled path
        build = rt._host_trampolines

        def general_only(*args: Any) -> Any:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(host_module, "_scalar_host_call", lambda *a: None)
                return build(*args)

        rt._host_trampolines = general_only
    calls = {}
    for e in rt.plan.exports:
        if isinstance(e.item, pln.Lift):
            call = ExportCall(rt, e.item, e.name)
            run = call._prepare()
            if not compiled:
                assert call._options is not None and call._lifted is not None
                assert call._callee is not None
                run = call._general(call._options, call._lifted, call._callee, None)
                ExportCall.__dict__["__call__"].__set__(call, run)
            calls[e.name] = call
    return calls


def _outcome(call: Callable[[Sequence[object]], Any], args: Sequence[object]) -> tuple[Any, ...]:
    try:
        value = call(args)
    except BaseException as exc:  # every outcome is compared
        chain: list[tuple[str, str]] = []
        cur: BaseException | None = exc
        while cur is not None:
            chain.append((type(cur).__name__, str(cur)))
            cur = cur.__cause__
        return ("raised", tuple(chain))
    return ("returned", repr(value), type(value).__name__)


class _Pair:
    """A compiled and a general instance of the component, rebuilt after a poisoning."""

    def __init__(self, wat: Wat, behaviour: object = 0) -> None:
        self.wasm = wat(_component())
        self.behaviour = [behaviour]
        self.seen: tuple[list[tuple[object, ...]], list[tuple[object, ...]]] = ([], [])
        self.calls: list[dict[str, ExportCall]] = []
        self._build()

    def _build(self) -> None:
        self.calls = [
            _calls(self.wasm, _host(self.behaviour, seen), compiled=compiled)
            for seen, compiled in zip(self.seen, (True, False), strict=True)
        ]

    def compare(self, name: str, args: Sequence[object]) -> tuple[Any, ...]:
        results = []
        for calls, seen in zip(self.calls, self.seen, strict=True):
            seen.clear()
            first = _outcome(calls[name], args)
            after = _outcome(calls["add"], (1, 2))  # poisoned or not
            results.append((first, after, [tuple(map(repr, s)) for s in seen]))
        assert results[0] == results[1]
        if results[0][1][0] == "raised":
            self._build()
        return results[0]


def _compare(wat: Wat, name: str, args: Sequence[object], behaviour: object = 0) -> tuple[Any, ...]:
    return _Pair(wat, behaviour).compare(name, args)


F32_MAX = 3.4028234663852886e38
VALUES: list[object] = [
    0, 1, -1, 127, -129, 255, 256, -(2**15), 2**16, 2**31, -(2**31), 2**32 - 1, 2**32,
    2**63, 2**64 - 1, 2**64, True, 2.5, math.nan, math.inf, F32_MAX, F32_MAX * 1.0000001,
    1e300, "a", None,
]  # fmt: skip


@pytest.mark.parametrize("t", list(_IDS))
def test_export_arguments_and_results(wat: Wat, t: str) -> None:
    pair = _Pair(wat)
    for value in VALUES:
        pair.compare(f"id-{t}", (value,))
    assert pair.compare(f"id-{t}", ())[0][0] == "raised"
    assert pair.compare(f"id-{t}", [1, 2])[0][0] == "raised"


def test_export_arity_traps_and_no_result(wat: Wat) -> None:
    assert _compare(wat, "add", (7, 8))[0] == ("returned", "15", "int")
    assert _compare(wat, "add", [2**32 - 1, 1])[0] == ("returned", "0", "int")
    assert _compare(wat, "add", (True, 1))[0][0] == "raised"
    boom = _compare(wat, "boom", ())
    assert boom[0][0] == "raised" and boom[1][0] == "raised"  # the instance is poisoned
    assert _compare(wat, "nothing", ())[0] == ("returned", "None", "NoneType")
    assert _compare(wat, "nothing", (1,))[0][0] == "raised"


@pytest.mark.parametrize(
    "behaviour",
    [
        5, -5, 40000, -40000, True, 1.5, None, "x", "coroutine",
        _Raise(ValueError("unhappy")), _Raise(Trap("mine", code="mine")),
        _Raise(KeyboardInterrupt()),
    ],
)  # fmt: skip
def test_host_import_results_and_errors(wat: Wat, behaviour: object) -> None:
    f = _compare(wat, "callf", (65535,), behaviour)
    assert f[2] == [("65535",)]
    g = _compare(wat, "callg", (-3, 1.25, True, 2**64 - 1, -0.0), behaviour)
    assert g[2] == [("-3", "1.25", "True", "18446744073709551615", "-0.0")]


def _scalar_call(call: Any) -> bool:
    """Whether ``call`` runs the scalar path: generated, or the engine's compiled form of it."""
    run = call.__call__
    return getattr(run, "__name__", None) == "export_call" or type(run).__name__ == "Export"


def test_the_compiled_paths_are_taken(wat: Wat) -> None:
    wasm = wat(_component())
    built: list[object] = []
    real = host_module._scalar_host_call

    def spy(*args: Any) -> Any:
        built.append(real(*args))
        return built[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(host_module, "_scalar_host_call", spy)
        calls = _calls(wasm, _host([7], []), compiled=True)
        assert calls["add"]((1, 2)) == 3
        assert _scalar_call(calls["add"])
        assert _scalar_call(calls["id-f32"])
        assert not _scalar_call(calls["id-char"])  # char: the general path
        assert built == []  # an import's trampoline is built on its first call
        calls["callf"]((65535,))
        calls["callg"]((-3, 1.25, True, 2**64 - 1, -0.0))
    assert [getattr(b, "__name__", None) for b in built] == ["host_call", "host_call"]


def _drive(coro: Any) -> Any:
    """Run a sync-path export's coroutine to completion; it never suspends."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise AssertionError("a sync-path export suspended")


def _awaited_outcome(fn: Callable[..., Any], args: Sequence[object]) -> tuple[Any, ...]:
    return _outcome(lambda a: _drive(fn(*a)), args)


class _FacadePair:
    """The facade's generated coroutines of one instance against the general path of another."""

    def __init__(self, wat: Wat, behaviour: object = 0) -> None:
        self.wasm = wat(_component())
        self.behaviour = [behaviour]
        self.seen: tuple[list[tuple[object, ...]], list[tuple[object, ...]]] = ([], [])
        self._build()

    def _build(self) -> None:
        async def make() -> Any:
            return await polyengine.instantiate(self.wasm, _host(self.behaviour, self.seen[0]))

        self.exports = asyncio.run(make()).exports
        self.general = _calls(self.wasm, _host(self.behaviour, self.seen[1]), compiled=False)

    def compare(self, name: str, args: Sequence[object]) -> tuple[Any, ...]:
        fn = getattr(self.exports, name.replace("-", "_"))
        add = self.exports.add
        results = []
        for seen, outcome in zip(
            self.seen,
            (
                lambda a: _awaited_outcome(fn, a),
                lambda a: _outcome(self.general[name], a),
            ),
            strict=True,
        ):
            seen.clear()
            first = outcome(args)
            results.append((first, [tuple(map(repr, s)) for s in seen]))
        after = (_awaited_outcome(add, (1, 2)), _outcome(self.general["add"], (1, 2)))
        assert results[0] == results[1]
        assert after[0] == after[1]  # poisoned or not, alike
        if results[0][0][0] == "raised":
            self._build()
        return results[0]


@pytest.mark.parametrize("t", list(_IDS))
def test_facade_coroutines_match_the_general_path(wat: Wat, t: str) -> None:
    pair = _FacadePair(wat)
    valid = {"bool": True, "char": "a"}.get(t, 0)
    assert pair.compare(f"id-{t}", (valid,))[0][0] == "returned"  # compiles the facade's code
    names = getattr(pair.exports, f"id_{t}").__code__.co_names
    inline = "core" in names or "kernel" in names  # generated, or the engine's compiled form
    assert inline == (t != "char")  # char takes the general path
    for value in VALUES:
        pair.compare(f"id-{t}", (value,))


@pytest.mark.parametrize(
    "behaviour", [5, -40000, True, None, "coroutine", _Raise(ValueError("unhappy"))]
)
def test_facade_coroutines_match_the_general_path_through_imports(
    wat: Wat, behaviour: object
) -> None:
    pair = _FacadePair(wat, behaviour)
    assert pair.compare("add", (7, 8))[0] == ("returned", "15", "int")
    assert pair.compare("boom", ())[0][0] == "raised"
    assert pair.compare("nothing", ())[0] == ("returned", "None", "NoneType")
    f = pair.compare("callf", (65535,))
    assert f[1] == [("65535",)]
    g = pair.compare("callg", (-3, 1.25, True, 2**64 - 1, -0.0))
    assert g[1] == [("-3", "1.25", "True", "18446744073709551615", "-0.0")]
