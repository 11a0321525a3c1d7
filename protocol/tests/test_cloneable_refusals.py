"""Every refusal of to_cloneable and from_cloneable, and the path each names."""

from __future__ import annotations

import enum
import re
from typing import Any

import pytest

import polyengine_protocol as pp

TAG = "polyengine.cloneable/1"


def handle(key: str, name: str = "Handle") -> object:
    return type(name, (pp.RealmLocal,), {"__polyengine_brand__": key})()


class Pilled(pp.RealmLocal):
    """A realm-local value with no handle brand (a guest-resource wrapper, say)."""


class Color(enum.Enum):
    RED = "red"


class Opaque:
    pass


# to_cloneable: realm-local leaves.


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        (pp.STREAM, "stream"),
        (pp.STREAM_WRITER, "stream writer"),
        (pp.FUTURE, "future"),
        (pp.POLLABLE, "pollable"),
        (pp.RESOURCE_STATE, "resource wrapper"),
    ],
)
def test_branded_realm_local_leaves_are_refused_naming_the_path(key: str, kind: str) -> None:
    value = pp.ComponentException({"attempts": [1, 2, {"handle": handle(key)}]})
    with pytest.raises(pp.InvalidHandleError) as info:
        pp.to_cloneable(value)
    message = str(info.value)
    assert f"cannot clone a {kind} (Handle) at payload.attempts[2].handle" in message
    assert "realm-local" in message and "replace=" in message
    assert pp.is_invalid_handle_error(info.value)
    assert isinstance(info.value, ValueError)


def test_a_brand_without_the_pill_is_still_refused() -> None:
    unpilled = type("ForeignStream", (), {"__polyengine_brand__": pp.STREAM})()
    with pytest.raises(pp.InvalidHandleError, match=r"stream \(ForeignStream\) at x"):
        pp.to_cloneable({"x": unpilled})


def test_a_pilled_value_is_refused() -> None:
    with pytest.raises(pp.InvalidHandleError, match=r"realm-local value \(Pilled\) at \[0\]"):
        pp.to_cloneable([Pilled()])
    one = pp.define_realm_local(Opaque())
    with pytest.raises(pp.InvalidHandleError, match="at the top level"):
        pp.to_cloneable(one)


def test_replace_substitutes_and_sees_each_path() -> None:
    seen: list[tuple[object, str]] = []
    s, f = handle(pp.STREAM), handle(pp.FUTURE)

    def replace(leaf: object, path: str) -> object:
        seen.append((leaf, path))
        return {"kind": "proxied", "value": path}

    value = {"body": s, "done": [f], "error": pp.ComponentException({"h": s})}
    out: Any = pp.to_cloneable(value, replace=replace)
    assert out["body"] == {"kind": "proxied", "value": "body"}
    assert out["done"] == [{"kind": "proxied", "value": "done[0]"}]
    assert out["error"]["payload"] == {"h": {"kind": "proxied", "value": "error.payload.h"}}
    assert seen == [(s, "body"), (f, "done[0]"), (s, "error.payload.h")]
    assert pp.to_cloneable(s, replace=lambda leaf, path: path) == ""


def test_replace_results_are_walked() -> None:
    with pytest.raises(TypeError, match="cannot clone a function at body"):
        pp.to_cloneable({"body": handle(pp.STREAM)}, replace=lambda leaf, path: print)
    nested = pp.to_cloneable(
        {"body": handle(pp.STREAM)},
        replace=lambda leaf, path: {"inner": handle(pp.FUTURE)} if path == "body" else 0,
    )
    assert nested == {"body": {"inner": 0}}


@pytest.mark.parametrize("answer", ["none", "leaf"])
def test_replace_declining_falls_back_to_the_refusal(answer: str) -> None:
    def replace(leaf: object, path: str) -> object:
        return None if answer == "none" else leaf

    with pytest.raises(pp.InvalidHandleError, match=r"cannot clone a future \(Handle\) at f"):
        pp.to_cloneable({"f": handle(pp.FUTURE)}, replace=replace)


def test_replace_returning_another_realm_local_value_is_refused() -> None:
    with pytest.raises(pp.InvalidHandleError, match="replace returned a realm-local Pilled"):
        pp.to_cloneable({"s": handle(pp.STREAM)}, replace=lambda leaf, path: Pilled())


def test_replace_is_not_consulted_for_plain_data() -> None:
    def replace(leaf: object, path: str) -> object:
        raise AssertionError("called")

    assert pp.to_cloneable({"a": [1]}, replace=replace) == {"a": [1]}
    with pytest.raises(TypeError, match="an object of type Opaque at a"):
        pp.to_cloneable({"a": Opaque()}, replace=replace)


# to_cloneable: everything that is not plain data.


@pytest.mark.parametrize(
    ("value", "path", "what"),
    [
        ({"callback": lambda: None}, "callback", "a function"),
        (
            {"payload": {"attempts": [0, 1, {"handle": len}]}},
            r"payload\.attempts\[2\]\.handle",
            "a function",
        ),
        ([Opaque()], r"\[0\]", "an object of type Opaque"),
        ({"s": {1, 2}}, "s", "an object of type set"),
        ({"f": frozenset()}, "f", "an object of type frozenset"),
        ({"c": 1j}, "c", "an object of type complex"),
        ({"e": Color.RED}, "e", "an object of type Color"),
        ({"content-type": [object()]}, r"\['content-type'\]\[0\]", "an object of type object"),
        (Opaque, "the top level", "the class Opaque"),
        ({"m": pp.suspending(print)}, "m", "a function"),
    ],
)
def test_non_plain_leaves_are_refused_naming_the_path(value: Any, path: str, what: str) -> None:
    where = path if path == "the top level" else f"at {path}"
    with pytest.raises(TypeError, match=rf"to_cloneable: cannot clone {what} (at )?{where}"):
        pp.to_cloneable(value)


def test_the_refusal_lists_what_may_cross() -> None:
    with pytest.raises(TypeError, match=re.escape("(dict, list, tuple, str, int, float, bool")):
        pp.to_cloneable(Opaque())


@pytest.mark.parametrize("key", [1, None, ("t",), b"k"])
def test_non_str_keys_are_refused(key: Any) -> None:
    with pytest.raises(TypeError, match=rf"the dict at a has a key of type {type(key).__name__}"):
        pp.to_cloneable({"a": {key: 1}})


def test_a_dict_carrying_the_envelope_key_is_refused() -> None:
    forged = {TAG: "polyengine.trap/1", "message": "not really a trap"}
    with pytest.raises(ValueError, match=r"the dict at payload\[0\] already carries"):
        pp.to_cloneable(pp.ComponentException([forged]))
    with pytest.raises(ValueError, match="at the top level already carries the envelope key"):
        pp.to_cloneable(forged)


def test_cyclic_values_are_refused() -> None:
    loop: list[object] = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match=r"cyclic value at \[1\]: it contains itself"):
        pp.to_cloneable(loop)
    record: dict[str, object] = {}
    record["inner"] = {"back": record}
    with pytest.raises(ValueError, match=r"cyclic value at inner\.back"):
        pp.to_cloneable(record)
    e = pp.ComponentException(None)
    e.__cause__ = pp.Trap("t")
    e.__cause__.__cause__ = e
    with pytest.raises(ValueError, match=r"cyclic value at cause\.cause"):
        pp.to_cloneable(e)
    payload_loop: list[object] = []
    own = pp.ComponentException(payload_loop)
    payload_loop.append(own)
    with pytest.raises(ValueError, match=r"cyclic value at payload\[0\]"):
        pp.to_cloneable(own)


def test_deep_nesting_is_a_clear_error() -> None:
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(ValueError, match="nests deeper than the interpreter's recursion limit"):
        pp.to_cloneable(deep)


def test_an_error_context_without_a_message_is_refused() -> None:
    mute = type("Mute", (), {"__polyengine_brand__": pp.ERROR_CONTEXT})()
    with pytest.raises(TypeError, match=r"the error-context at \[0\] carries no str message"):
        pp.to_cloneable([mute])


def test_a_wasi_exit_needs_ok_or_a_code() -> None:
    exit_class = type("Exit", (Exception,), {"__polyengine_brand__": pp.WASI_EXIT})
    with pytest.raises(TypeError, match="the wasi exit at the top level carries neither"):
        pp.to_cloneable(exit_class("no fields"))
    bad = exit_class("bad code")
    bad.code = "3"
    with pytest.raises(TypeError, match="has a non-int code"):
        pp.to_cloneable(bad)
    from_code = exit_class("derived")
    from_code.code = 0
    assert pp.to_cloneable(from_code) == {
        TAG: pp.WASI_EXIT,
        "message": "derived",
        "ok": True,
        "code": 0,
    }


# from_cloneable.


def test_an_unknown_tag_is_refused() -> None:
    data = {"list": [{TAG: "polyengine.trap/2", "message": "m"}]}
    with pytest.raises(TypeError, match=r"unknown envelope tag 'polyengine.trap/2' at list\[0\]"):
        pp.from_cloneable(data)
    with pytest.raises(TypeError, match="unknown envelope tag 7 at the top level"):
        pp.from_cloneable({TAG: 7})


@pytest.mark.parametrize(
    ("envelope", "problem"),
    [
        ({TAG: pp.TRAP}, r"missing \['message'\]"),
        ({TAG: pp.COMPONENT_EXCEPTION, "message": "m"}, r"missing \['payload'\]"),
        ({TAG: pp.PEER_TRAPPED, "message": "m"}, r"missing \['cause'\]"),
        ({TAG: pp.TRAP, "message": "m", "payload": 1}, r"unexpected \['payload'\]"),
        ({TAG: pp.ERROR_CONTEXT, "message": "m", "cause": None}, r"unexpected \['cause'\]"),
        ({TAG: "error", "message": "m"}, r"missing \['name'\]"),
    ],
)
def test_malformed_envelopes_are_refused(envelope: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=rf"malformed .* envelope at x: {problem}"):
        pp.from_cloneable({"x": envelope})


@pytest.mark.parametrize(
    ("envelope", "message"),
    [
        ({TAG: pp.TRAP, "message": 3}, "the field at x.message is of type int, not str"),
        ({TAG: pp.TRAP, "message": "m", "code": 3}, "the trap code at x is not a str"),
        ({TAG: pp.TRAP, "message": "m", "code": ""}, "the trap code at x is not a str"),
        (
            {TAG: pp.PEER_TRAPPED, "message": "m", "cause": None, "progress": -1},
            "the progress at x is not a non-negative int",
        ),
        (
            {TAG: pp.PEER_TRAPPED, "message": "m", "cause": None, "progress": True},
            "the progress at x is not a non-negative int",
        ),
        ({TAG: pp.DROPPED, "message": "m", "cause": 5}, "the cause at x.cause is not an encoded"),
        ({TAG: pp.DROPPED, "message": "m", "notes": "n"}, "the notes at x.notes are not a list"),
        ({TAG: pp.DROPPED, "message": "m", "notes": [1]}, "the notes at x.notes are not a list"),
        ({TAG: pp.DROPPED, "message": "m", "stack": 1}, "the stack at x.stack is not a str"),
        (
            {TAG: pp.WASI_EXIT, "message": "m", "ok": 1},
            "the field at x.ok is of type int, not bool",
        ),
        (
            {TAG: pp.WASI_EXIT, "message": "m", "ok": True, "code": "0"},
            "the exit code at x is not an int",
        ),
        ({TAG: "error", "name": None, "message": "m"}, "the field at x.name is of type NoneType"),
    ],
)
def test_ill_typed_envelope_fields_are_refused(envelope: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        pp.from_cloneable({"x": envelope})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"a": Opaque()}, "unexpected object of type Opaque at a"),
        ([{1, 2}], r"unexpected object of type set at \[0\]"),
        (pp.Trap("live"), "unexpected object of type Trap at the top level"),
        ({"a": {1: 2}}, "the dict at a has a key of type int"),
    ],
)
def test_non_plain_input_is_refused(data: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        pp.from_cloneable(data)


def test_cyclic_data_is_refused() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match=r"cyclic data at \[0\]"):
        pp.from_cloneable(loop)
    record: dict[str, object] = {}
    record["x"] = record
    with pytest.raises(ValueError, match="cyclic data at x"):
        pp.from_cloneable(record)


def test_deep_data_is_a_clear_error() -> None:
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(ValueError, match="nests deeper than the interpreter's recursion limit"):
        pp.from_cloneable(deep)
