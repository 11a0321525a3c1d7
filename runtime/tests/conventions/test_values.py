"""Value shapes both ways, for every type of python-mapping.md §2.

Each case sends a value from the embedder into a forwarder export; the
probe host records what it received, echoes it, and the transcript records
what came back out (or the refusal, with its message naming the path).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any

import polyengine

from .components import Func, Interface, forwarder
from .probe_host import Transcript, echo_provider
from .scenario import attempt, run_scenario

Wat = Callable[[str], bytes]

KEY = "probe:conv/values@0.1.0"

TYPES = [
    (
        "rec",
        '(record (field "count" u32) (field "tag-name" string) (field "note" (option string))'
        ' (field "data" (list u8)))',
    ),
    ("color", '(enum "red" "dark-green" "blue")'),
    (
        "shape",
        '(variant (case "empty") (case "circle" f64) (case "label" string)'
        ' (case "pair" (tuple u8 u8)))',
    ),
    ("perms", '(flags "read" "write" "exec-all")'),
    (
        "holder",
        '(record (field "inner" (option (option u32))) (field "r" (result u8 (error string))))',
    ),
]

SIMPLE = {
    "bool": "bool",
    "s8": "s8",
    "u8": "u8",
    "s16": "s16",
    "u16": "u16",
    "s32": "s32",
    "u32": "u32",
    "s64": "s64",
    "u64": "u64",
    "f32": "f32",
    "f64": "f64",
    "char": "char",
    "string": "string",
    "bytes": "(list u8)",
    "list-u32": "(list u32)",
    "list-string": "(list string)",
    "tuple": "(tuple u8 string f64)",
    "rec": "$rec",
    "color": "$color",
    "shape": "$shape",
    "perms": "$perms",
    "holder": "$holder",
    "opt": "(option u32)",
    "opt2": "(option (option u32))",
    "opt3": "(option (option (option string)))",
    "res-list": "(list (result u32 (error string)))",
    "res-unit-list": "(list (result))",
    "map": "(map string u32)",
}
FALLIBLE = {
    "res": "(result u32 (error string))",
    "res-unit": "(result)",
    "res-err-only": "(result (error string))",
    "res-ok-only": "(result u32)",
}

FUNCS = [Func(f"echo-{n}", [("x", t)], t) for n, t in SIMPLE.items()]
FUNCS += [Func(f"echo-{n}", [("x", t)], t) for n, t in FALLIBLE.items()]
FUNCS.append(Func("many", [(f"p{i}", "u32") for i in range(17)], "(list u32)"))
FUNCS.append(
    Func(
        "mixed",
        [("a", "u8"), ("b", "f32"), ("c", "s64"), ("d", "string")],
        "(tuple u8 f32 s64 string)",
    )
)
VALUES = Interface(KEY, types=TYPES, funcs=FUNCS)
NAMES = [f.name for f in FUNCS]
FALLIBLE_NAMES = frozenset(f"echo-{n}" for n in FALLIBLE)


def _nan(bits: int) -> float:
    value: float = struct.unpack("<d", struct.pack("<Q", bits))[0]
    return value


def _gen() -> Iterator[int]:
    yield from (7, 8)


REC = {"count": 3, "tag_name": "t", "note": "n", "data": b"\x01\x02"}

# (function, argument, what the case probes)
CASES: list[tuple[str, Any, str]] = [
    ("bool", True, "bool"),
    ("bool", False, "bool"),
    ("bool", 1, "int is not bool"),
    ("bool", None, "None is not bool"),
    ("s8", -128, "min"),
    ("s8", 127, "max"),
    ("s8", 128, "over"),
    ("s8", -129, "under"),
    ("u8", 0, "min"),
    ("u8", 255, "max"),
    ("u8", 256, "over"),
    ("u8", -1, "negative"),
    ("u8", True, "bool is refused"),
    ("u8", 1.0, "float is refused"),
    ("s16", -32768, "min"),
    ("s16", 32768, "over"),
    ("u16", 65535, "max"),
    ("u16", 65536, "over"),
    ("s32", -(2**31), "min"),
    ("s32", 2**31, "over"),
    ("u32", 2**32 - 1, "max"),
    ("u32", 2**32, "over"),
    ("s64", -(2**63), "min"),
    ("s64", 2**63 - 1, "max"),
    ("s64", 2**63, "over"),
    ("u64", 2**64 - 1, "max"),
    ("u64", 2**64, "over"),
    ("u64", -1, "negative"),
    ("f32", 1.5, "exact"),
    ("f32", 0.1, "rounds to f32"),
    ("f32", -0.0, "negative zero"),
    ("f32", float("inf"), "infinity"),
    ("f32", 1e40, "beyond f32 range"),
    ("f32", 3, "int accepted"),
    ("f32", _nan(0x7FF8000000000001), "NaN with payload"),
    ("f32", _nan(0xFFF8000000000000), "negative NaN"),
    ("f32", "1.0", "str refused"),
    ("f32", True, "bool"),
    ("f64", 0.1, "exact"),
    ("f64", 7, "int accepted"),
    ("f64", 2**60 + 1, "big int"),
    ("f64", float("-inf"), "infinity"),
    ("f64", _nan(0x7FF0000000000001), "signalling NaN"),
    ("f64", _nan(0xFFFFFFFFFFFFFFFF), "NaN all ones"),
    ("f64", 10**400, "int too large"),
    ("char", "a", "ascii"),
    ("char", "\u2603", "bmp"),
    ("char", "\U0001d11e", "astral"),
    ("char", "ab", "two code points"),
    ("char", "", "empty"),
    ("char", "\ud800", "surrogate"),
    ("char", 97, "int refused"),
    ("string", "", "empty"),
    ("string", "h\u00e9llo \u2603 \U0001d11e", "unicode"),
    ("string", "a\ud800b", "lone high surrogate"),
    ("string", "\udc00", "lone low surrogate"),
    ("string", "\ud83d\ude00", "surrogate pair as two code points"),
    ("string", b"bytes", "bytes refused"),
    ("string", None, "None refused"),
    ("bytes", b"", "empty"),
    ("bytes", b"\x00\xff", "bytes"),
    ("bytes", bytearray(b"ab"), "bytearray"),
    ("bytes", memoryview(b"xyz"), "memoryview"),
    ("bytes", [1, 2, 3], "list of ints"),
    ("bytes", "str", "str refused"),
    ("bytes", [256], "element out of range"),
    ("list-u32", [], "empty"),
    ("list-u32", [1, 2, 3], "list"),
    ("list-u32", (4, 5), "tuple"),
    ("list-u32", range(3), "range"),
    ("list-u32", _gen(), "generator"),
    ("list-u32", [1, "x"], "bad element"),
    ("list-u32", 5, "int refused"),
    ("list-string", ["a", "b\ud800"], "strings"),
    ("tuple", (1, "x", 2.5), "tuple"),
    ("tuple", [1, "x", 2.5], "list as tuple"),
    ("tuple", (1, "x"), "too short"),
    ("tuple", (1, "x", 2.5, 4), "too long"),
    ("rec", REC, "full"),
    ("rec", {**REC, "note": None}, "option field None"),
    ("rec", {k: v for k, v in REC.items() if k != "note"}, "option field absent"),
    ("rec", {**REC, "data": bytearray(b"z")}, "bytearray field"),
    ("rec", {k: v for k, v in REC.items() if k != "count"}, "required field absent"),
    ("rec", {**REC, "extra": 1}, "extra key"),
    ("rec", {**{k: v for k, v in REC.items() if k != "tag_name"}, "tag-name": "t"}, "kebab key"),
    ("rec", {**REC, "count": -1}, "field out of range"),
    ("color", "red", "case"),
    ("color", "dark-green", "kebab case"),
    ("color", "dark_green", "snake spelling"),
    ("color", "purple", "unknown"),
    ("color", 0, "int"),
    ("shape", {"kind": "empty"}, "payloadless"),
    ("shape", {"kind": "circle", "value": 1.5}, "f64"),
    ("shape", {"kind": "label", "value": "x"}, "string"),
    ("shape", {"kind": "pair", "value": (1, 2)}, "tuple payload"),
    ("shape", {"kind": "empty", "value": None}, "payloadless with value None"),
    ("shape", {"kind": "circle"}, "missing value"),
    ("shape", {"kind": "nope"}, "unknown kind"),
    ("shape", "empty", "bare str"),
    ("perms", {"read": True, "write": False, "exec_all": True}, "all present"),
    ("perms", {}, "absent are False"),
    ("perms", {"write": True}, "one"),
    ("perms", {"exec-all": True}, "kebab key"),
    ("perms", {"bogus": True}, "unknown flag"),
    ("perms", {"read": 1}, "int for bool"),
    ("holder", {"inner": None, "r": {"kind": "ok", "value": 1}}, "outer none"),
    ("holder", {"inner": {"kind": "none"}, "r": {"kind": "err", "value": "e"}}, "inner none"),
    ("holder", {"inner": {"kind": "some", "value": 4}, "r": {"kind": "ok", "value": 2}}, "some"),
    ("opt", None, "none"),
    ("opt", 5, "some"),
    ("opt", {"kind": "some", "value": 5}, "boxed"),
    ("opt2", None, "outer none"),
    ("opt2", {"kind": "none"}, "inner none"),
    ("opt2", {"kind": "some", "value": 5}, "some some"),
    ("opt2", 5, "unboxed"),
    ("opt3", {"kind": "some", "value": {"kind": "none"}}, "some none"),
    ("opt3", {"kind": "some", "value": {"kind": "some", "value": "deep"}}, "deep"),
    ("res-list", [{"kind": "ok", "value": 1}, {"kind": "err", "value": "x"}], "as values"),
    ("res-list", [{"kind": "ok"}], "missing ok value"),
    ("res-unit-list", [{"kind": "ok"}, {"kind": "err"}], "empty sides"),
    ("res-unit-list", [{"kind": "ok", "value": None}], "empty side with None"),
    ("map", [("a", 1), ("b", 2)], "pairs"),
    ("map", {"a": 1}, "dict"),
    ("res", {"kind": "ok", "value": 3}, "ok"),
    ("res", {"kind": "err", "value": "bad"}, "err"),
    ("res-unit", {"kind": "ok"}, "ok"),
    ("res-unit", {"kind": "err"}, "err"),
    ("res-err-only", {"kind": "ok"}, "ok"),
    ("res-err-only", {"kind": "err", "value": "e"}, "err"),
    ("res-ok-only", {"kind": "ok", "value": 9}, "ok"),
    ("res-ok-only", {"kind": "err"}, "err"),
]


def test_values_round_trip(wat: Wat) -> None:
    """Embedder → guest → host → guest → embedder, every §2 type."""
    component = wat(forwarder([VALUES]))

    async def body(t: Transcript) -> None:
        provider = echo_provider(t, NAMES, fallible=FALLIBLE_NAMES)
        inst = await polyengine.instantiate(component, {KEY: provider})
        t.record("exports", names=sorted(n for n in dir(inst.exports) if not n.startswith("_")))
        for fn, value, label in CASES:
            export = getattr(inst.exports, f"echo_{fn.replace('-', '_')}")
            await attempt(t, f"echo-{fn}: {label}", export(value))
        await attempt(t, "many: 17 params through memory", inst.exports.many(*range(17)))
        await attempt(t, "mixed", inst.exports.mixed(1, 0.1, -5, "s"))
        await attempt(t, "arity", inst.exports.mixed(1))

    run_scenario("values", body)


# What the host returns that the engine must lower back into the guest.
HOST_REPLIES: list[tuple[str, Any, Any, str]] = [
    ("u8", 1, 256, "over"),
    ("u32", 1, True, "bool"),
    ("bool", True, 1, "int for bool"),
    ("f32", 1.0, 0.1, "rounds"),
    ("f64", 1.0, 3, "int"),
    ("char", "a", "ab", "two code points"),
    ("string", "a", "x\udfffy", "lone surrogate"),
    ("string", "a", None, "None"),
    ("bytes", b"a", bytearray(b"ba"), "bytearray"),
    ("bytes", b"a", "no", "str"),
    ("list-u32", [1], (9, 8), "tuple"),
    ("rec", REC, {"count": 1, "tag_name": "x", "data": b""}, "option field absent"),
    ("shape", {"kind": "empty"}, {"kind": "bogus"}, "unknown kind"),
    ("perms", {}, {"write": True}, "absent flags"),
    ("opt2", None, {"kind": "some", "value": None}, "some none"),
    ("res", {"kind": "ok", "value": 1}, "x", "wrong ok type"),
]


def test_values_from_host(wat: Wat) -> None:
    """What the engine makes of values a host function returns (fresh instance each)."""
    artifacts = polyengine.translate(wat(forwarder([VALUES])))

    async def body(t: Transcript) -> None:
        for fn, sent, reply, label in HOST_REPLIES:
            replies: dict[str, list[object]] = {f"echo-{fn}": [reply]}
            provider = echo_provider(t, NAMES, fallible=FALLIBLE_NAMES, replies=replies)
            inst = await polyengine.instantiate(artifacts, {KEY: provider})
            export = getattr(inst.exports, f"echo_{fn.replace('-', '_')}")
            await attempt(t, f"host returns for echo-{fn}: {label}", export(sent))

    run_scenario("values_from_host", body)


ASYNC_VALUES = Interface(
    "probe:conv/values@0.1.0",
    types=TYPES,
    funcs=[Func(f.name, f.params, f.result, is_async=True) for f in FUNCS],
)


def test_values_round_trip_on_the_task_model(wat: Wat) -> None:
    """The same cases with every function ``async``: the task model's lifting and lowering."""
    component = wat(forwarder([ASYNC_VALUES]))

    async def body(t: Transcript) -> None:
        provider = echo_provider(t, NAMES, fallible=FALLIBLE_NAMES)
        inst = await polyengine.instantiate(component, {KEY: provider})
        for fn, value, label in CASES:
            export = getattr(inst.exports, f"echo_{fn.replace('-', '_')}")
            await attempt(t, f"echo-{fn}: {label}", export(value))
        await attempt(t, "many: 17 params through memory", inst.exports.many(*range(17)))
        await attempt(t, "mixed", inst.exports.mixed(1, 0.1, -5, "s"))

    run_scenario("values_task_model", body)
