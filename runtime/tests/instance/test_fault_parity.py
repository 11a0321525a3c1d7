"""One door for faults: a synchronous and a task-model instance fail alike.

For every fault of the matrix below (a host import raising or returning the
wrong shape, a guest trap, a bad ``realloc`` result, an out-of-bounds string,
handle misuse, reentrance), the same component runs three ways: on the plain
synchronous path, on the task model (an extra ``suspending()``-marked import
that the guest never calls moves the whole instance there), and on the task
model with the faulting import itself marked, so it runs as a host function
of the driver. The outcome (what the embedder receives: its class, trap code
and message, its cause chain) and the poisoning (whether a later call is
refused, and with which message) must be the same for all three
(python-mapping.md §3, architecture.md §5 "Traps poison the instance they
escape from").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import ComponentException, Trap, suspending

Wat = Callable[[str], bytes]

COMPONENT = """(component
  (core module $libc
    (memory (export "mem") 1)
    (global $bad (mut i32) (i32.const 0))
    (func (export "set-bad") (param i32) (global.set $bad (local.get 0)))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (if (global.get $bad) (then (return (i32.const 0x7ffffff0))))
      (i32.const 1024)))
  (core instance $libc (instantiate $libc))
  (type $r (resource (rep i32)))
  (core func $drop (canon resource.drop $r))
  (import "f" (func $f (param "x" u32) (result u32)))
  (import "park" (func $park))
  (core func $fl (canon lower (func $f)))
  (core func $pl (canon lower (func $park)))
  (core module $m
    (import "libc" "mem" (memory 1))
    (import "libc" "set-bad" (func $set-bad (param i32)))
    (import "h" "f" (func $f (param i32) (result i32)))
    (import "h" "park" (func $park))
    (import "h" "drop" (func $drop (param i32)))
    (func (export "call-f") (param i32) (result i32) (call $f (local.get 0)))
    (func (export "unreachable") unreachable)
    (func (export "bad-string") (result i32)
      (i32.store (i32.const 0) (i32.const 0x7fff0000))
      (i32.store (i32.const 4) (i32.const 16))
      (i32.const 0))
    (func (export "bad-realloc") (result i32)
      (call $set-bad (i32.const 1))
      (i32.const 0))
    (func (export "take") (param i32 i32))
    (func (export "bad-drop") (call $drop (i32.const 99)))
    (func (export "ok") (result i32) (i32.const 7)))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "h" (instance
      (export "f" (func $fl)) (export "park" (func $pl)) (export "drop" (func $drop))))))
  (func (export "call-f") (param "x" u32) (result u32) (canon lift (core func $i "call-f")))
  (func (export "unreachable") (canon lift (core func $i "unreachable")))
  (func (export "bad-string") (result string)
    (canon lift (core func $i "bad-string") (memory (core memory $libc "mem"))))
  (func (export "bad-realloc") (result u32) (canon lift (core func $i "bad-realloc")))
  (func (export "take") (param "s" string)
    (canon lift (core func $i "take")
      (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
  (func (export "bad-drop") (canon lift (core func $i "bad-drop")))
  (func (export "ok") (result u32) (canon lift (core func $i "ok"))))
"""


class BrandedTrap(Exception):
    """A trap of another copy of the protocol: only the brand and a code."""

    __polyengine_brand__ = "polyengine.trap/1"
    code = "branded-code"


class CustomBase(BaseException):
    """A ``BaseException`` that is neither ``KeyboardInterrupt`` nor ``SystemExit``."""


def raising(exc: BaseException) -> Callable[[int], int]:
    def f(x: int) -> int:
        raise exc

    return f


#: host-import faults: (case id, the host's ``f``)
HOST_FAULTS: list[tuple[str, Callable[[], Callable[[int], Any]]]] = [
    ("ValueError", lambda: raising(ValueError("bad value"))),
    ("Trap", lambda: raising(Trap("host says no", code="host-said-no"))),
    ("branded", lambda: raising(BrandedTrap("branded says no"))),
    ("ComponentException", lambda: raising(ComponentException(5))),
    ("KeyboardInterrupt", lambda: raising(KeyboardInterrupt("stop"))),
    ("SystemExit", lambda: raising(SystemExit(3))),
    ("CustomBase", lambda: raising(CustomBase("custom"))),
    ("wrong-shape", lambda: lambda x: "not a u32"),
    ("internal-error", lambda: raising(IndexError("list index out of range"))),
]

#: the trap code the embedder sees, for the faults that become a trap naming the import
CODES = {
    "ValueError": "host-import",
    "Trap": "host-said-no",
    "branded": "branded-code",
    "ComponentException": "host-import",
    "internal-error": "host-import",
}

#: guest faults: (case id, the export that faults, its arguments)
GUEST_FAULTS: list[tuple[str, str, tuple[Any, ...]]] = [
    ("unreachable", "unreachable", ()),
    ("out-of-bounds-string", "bad_string", ()),
    ("bad-realloc", "take", ("hello",)),
    ("handle-misuse", "bad_drop", ()),
]

KINDS = ["sync", "task", "task-marked"]


def describe(exc: BaseException | None) -> list[tuple[str, str | None, str]]:
    """The cause chain of ``exc``: (class name, trap code, message) per link."""
    out: list[tuple[str, str | None, str]] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        code = getattr(exc, "code", None)
        out.append((type(exc).__name__, code if isinstance(code, str) else None, str(exc)))
        exc = exc.__cause__
    return out


def outcome(wat: Wat, kind: str, f: Callable[[int], Any], export: str, args: Any) -> Any:
    """What the embedder sees for one call of ``export``, then for a call of ``ok``."""
    bad_first = export == "take"

    async def main() -> tuple[Any, Any, Any]:
        park: Callable[[], None] = lambda: None  # noqa: E731
        host_f: Any = f
        if kind != "sync":
            park = suspending(park)
        if kind == "task-marked":
            host_f = suspending(f)
        inst = await polyengine.instantiate(wat(COMPONENT), {"f": host_f, "park": park})
        if bad_first:
            # the realloc answers out of bounds once the guest asked it to
            await inst.exports.bad_realloc()
        first: Any
        try:
            first = ("returned", await getattr(inst.exports, export)(*args))
        except BaseException as exc:
            first = ("raised", describe(exc))
        try:
            later: Any = ("returned", await inst.exports.ok())
        except BaseException as exc:
            later = ("raised", describe(exc))
        return first, later, None

    try:
        first, later, _ = asyncio.run(main())
    except BaseException as exc:
        return ("escaped the loop", describe(exc))
    return first, later


@pytest.mark.parametrize(("case", "make_f"), HOST_FAULTS, ids=[c for c, _ in HOST_FAULTS])
def test_host_import_faults_agree(wat: Wat, case: str, make_f: Any) -> None:
    results = {kind: outcome(wat, kind, make_f(), "call_f", (1,)) for kind in KINDS}
    assert results["task"] == results["sync"]
    assert results["task-marked"] == results["sync"]
    first = results["sync"][0]
    assert first[0] == "raised", first
    expected_code = CODES.get(case)
    if expected_code is not None:
        # a trap naming the import with the one code table's code
        name, code, message = first[1][0]
        assert name in ("Trap", "HostImportError")
        assert code == expected_code
        assert message.startswith("host import f "), message
    # every fault poisons the instance it escaped from
    later = results["sync"][1]
    assert later[0] == "raised" and later[1][0][1] == "instance-poisoned", later


@pytest.mark.parametrize(
    ("case", "export", "args"), GUEST_FAULTS, ids=[c for c, _, _ in GUEST_FAULTS]
)
def test_guest_faults_agree(wat: Wat, case: str, export: str, args: Any) -> None:
    ok = raising(AssertionError("f is not called"))
    results = {kind: outcome(wat, kind, ok, export, args) for kind in KINDS}
    assert results["task"] == results["sync"]
    assert results["task-marked"] == results["sync"]
    first, later = results["sync"]
    assert first[0] == "raised" and first[1][0][0] == "Trap", first
    assert later[0] == "raised" and later[1][0][1] == "instance-poisoned", later


REENTRANT = [
    (
        "host import f trapped: cannot enter component instance #0 to call ok: "
        "it is already entered",
        "cannot-enter",
    ),
]


@pytest.mark.parametrize("kind", ["sync", "task"])
def test_reentrance_is_refused(wat: Wat, kind: str) -> None:
    """A host import calling back into its own instance is refused with ``cannot-enter``."""
    holder: list[Any] = []

    def f(x: int) -> int:
        coro = holder[0].exports.ok()
        try:
            coro.send(None)
        except StopIteration as stop:
            return int(stop.value)
        finally:
            coro.close()
        raise AssertionError("the reentrant call suspended")

    async def main() -> Any:
        park: Any = (lambda: None) if kind == "sync" else suspending(lambda: None)
        inst = await polyengine.instantiate(wat(COMPONENT), {"f": f, "park": park})
        holder.append(inst)
        try:
            return ("returned", await inst.exports.call_f(1))
        except BaseException as exc:
            return ("raised", describe(exc))

    got = asyncio.run(main())
    assert got[0] == "raised", got
    (name, code, message) = got[1][0]
    assert (message, code) == REENTRANT[0]
    assert name == "Trap"


#: embedder misuse: (case id, the export, its bad arguments); refused before the guest runs
MISUSE: list[tuple[str, str, tuple[Any, ...]]] = [
    ("wrong-type", "call_f", ("one",)),
    ("out-of-range", "call_f", (-1,)),
    ("not-a-string", "take", (b"bytes",)),
    ("too-many-arguments", "ok", (1,)),
]


@pytest.mark.parametrize(("case", "export", "args"), MISUSE, ids=[c for c, _, _ in MISUSE])
def test_argument_misuse_agrees_and_never_poisons(
    wat: Wat, case: str, export: str, args: Any
) -> None:
    """Bad arguments raise the same error on every kind of instance, and the instance
    stays usable: the lowering of the host's arguments is one step of the one lift."""
    ok = raising(AssertionError("f is not called"))
    results = {kind: outcome(wat, kind, ok, export, args) for kind in KINDS}
    assert results["task"] == results["sync"]
    assert results["task-marked"] == results["sync"]
    first, later = results["sync"]
    assert first[0] == "raised", first
    assert first[1][0][0] != "Trap", first
    assert later == ("returned", 7)
