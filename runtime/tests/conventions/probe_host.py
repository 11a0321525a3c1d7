"""The probe host module of the conventions suite (python-mapping.md §9, the seed's A22).

Written the way host-module authors write theirs: it imports the standard
library and :mod:`polyengine_protocol`, never the runtime (a test scans this
file's imports). It provides interfaces in every provider form the mapping
allows (module attributes, a class instance, a ``Mapping`` of callables),
a host resource class, async functions, ``suspending``-marked functions,
functions raising branded, hand-rolled and unbranded exceptions, and
producers of streams and futures. Every call it receives is recorded in a
:class:`Transcript` with the arguments as Python sees them, types included,
so the suite can commit what the engine hands a host as a golden.
"""

from __future__ import annotations

import asyncio
import math
import re
import struct
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, ClassVar

from polyengine_protocol import (
    COMPONENT_EXCEPTION,
    ERROR_CONTEXT,
    ComponentException,
    Trap,
    abortable,
    brands_of,
    defer_cancel,
    is_component_exception,
    is_error_context,
    is_future,
    is_resource_wrapper,
    is_stream,
    is_stream_writer,
    is_trap,
    suspending,
)

__all__ = [
    "MODULE_TRANSCRIPT",
    "Cell",
    "Cancellable",
    "Cells",
    "ErrorContexts",
    "Failures",
    "HandRolledErrorContext",
    "HandMarkedNap",
    "HandRolledException",
    "HandRolledTrap",
    "Marks",
    "Producers",
    "Shapes",
    "SlowCell",
    "Transcript",
    "describe",
    "describe_exception",
    "echo_provider",
    "get_answer",
    "normalize_message",
    "plain_twice",
    "suspending_function",
    "twice",
]

# --------------------------------------------------------------------------
# Normalized descriptions of values and exceptions

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_PATH = re.compile(r"(?:/[\w.+-]+)+/([\w.+-]+)")
_BACKTRACE = re.compile(r"\n\s*(?:wasm backtrace|stack backtrace|Caused by)\b.*", re.S | re.I)


def normalize_message(text: str) -> str:
    """A message with its unstable parts removed.

    Drops wasm backtraces, replaces memory addresses with ``0x?`` and keeps
    only the base name of absolute file paths, so a transcript does not
    depend on the machine or the run.
    """
    text = _BACKTRACE.sub("", text)
    text = _ADDRESS.sub("0x?", text)
    text = _PATH.sub(r"\1", text)
    return text.strip()


def _float_text(value: float) -> str:
    if math.isnan(value):
        (bits,) = struct.unpack("<Q", struct.pack("<d", value))
        return f"float nan bits={bits:#018x}"
    return f"float {value!r}"


def describe(value: object, depth: int = 0) -> object:
    """A JSON-shaped description of ``value`` that keeps its Python types visible.

    Scalars become ``"<type> <repr>"`` strings (``ascii`` for text, so lone
    surrogates stay visible); containers keep their kind (``list``,
    ``tuple``, ``dict``); handles and resources are described by brand.
    """
    if depth > 12:
        return "..."
    if value is None:
        return "None"
    if isinstance(value, bool):
        return f"bool {value}"
    if isinstance(value, int):
        return f"{type(value).__name__} {value}"
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, str):
        return f"str {value!a}"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"{type(value).__name__} {bytes(value)!r}"
    if isinstance(value, BaseException):
        return describe_exception(value)
    if isinstance(value, list):
        return {"list": [describe(v, depth + 1) for v in value]}
    if isinstance(value, tuple):
        return {"tuple": [describe(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"dict": {str(k): describe(v, depth + 1) for k, v in value.items()}}
    if is_error_context(value):
        return {"error-context": describe(getattr(value, "message", None), depth + 1)}
    if is_stream(value):
        return {"handle": "Stream", "brands": sorted(brands_of(value))}
    if is_stream_writer(value):
        return {"handle": "StreamWriter", "brands": sorted(brands_of(value))}
    if is_future(value):
        return {"handle": "Future", "brands": sorted(brands_of(value))}
    if is_resource_wrapper(value):
        return {"guest-resource": type(value).__name__}
    if isinstance(value, Cell):
        return {"host-resource": "Cell", "label": value.label}
    return {"object": type(value).__name__}


def describe_exception(exc: BaseException, depth: int = 0) -> dict[str, object]:
    """Type, brands, normalized message, payload or code, and the cause chain."""
    out: dict[str, object] = {"raised": type(exc).__name__}
    builtin = [c.__name__ for c in type(exc).__mro__[1:] if c.__module__ == "builtins"]
    if builtin and type(exc).__module__ != "builtins":
        out["builtin_bases"] = (
            builtin[: builtin.index("Exception") + 1] if ("Exception" in builtin) else builtin
        )
    brands = sorted(brands_of(exc))
    if brands:
        out["brands"] = brands
    out["message"] = normalize_message(str(exc))
    if is_component_exception(exc):
        out["payload"] = describe(getattr(exc, "payload", None), depth + 1)
    if is_trap(exc):
        out["code"] = str(getattr(exc, "code", None))
    cause = exc.__cause__
    if cause is not None and depth < 4:
        out["cause"] = describe_exception(cause, depth + 1)
    return out


class Transcript:
    """What the host saw and what the embedder got, in order."""

    def __init__(self) -> None:
        self.entries: list[dict[str, object]] = []

    def record(self, event: str, **fields: object) -> None:
        entry: dict[str, object] = {"event": event}
        entry.update(fields)
        self.entries.append(entry)

    def host_call(self, name: str, *args: object) -> None:
        """Record a call the probe host received, with its arguments as seen."""
        self.record("host-call", name=name, args=[describe(a) for a in args])


#: The transcript of the module-level functions (the module-as-provider form).
MODULE_TRANSCRIPT = Transcript()


# --------------------------------------------------------------------------
# Module-level functions: world-level bare imports and a module provider


def get_answer(question: str) -> int:
    """World-level ``get-answer``: the length of the question plus 40."""
    MODULE_TRANSCRIPT.host_call("get-answer", question)
    return len(question) + 40


def plain_twice(x: int) -> int:
    """``twice`` of an interface whose provider is this module (as ``plain_twice``)."""
    MODULE_TRANSCRIPT.host_call("plain-twice", x)
    return 2 * x


def twice(x: int) -> int:
    """``twice`` provided by this module itself as an interface provider."""
    MODULE_TRANSCRIPT.host_call("module.twice", x)
    return 2 * x


# --------------------------------------------------------------------------
# The echo family: a Mapping provider


def echo_provider(
    transcript: Transcript,
    names: list[str],
    *,
    fallible: frozenset[str] = frozenset(),
    replies: dict[str, list[object]] | None = None,
) -> Mapping[str, Callable[..., object]]:
    """A ``Mapping`` provider whose functions echo their first argument.

    A function in ``fallible`` has a ``result`` as its WIT result: it gets a
    result value and answers it as a function result (return the ok value,
    raise ``ComponentException`` with the err value). ``replies[name]``
    queues values returned instead of the echo (to probe host-side lowering).
    """
    pending = replies if replies is not None else {}

    def make(name: str) -> Callable[..., object]:
        key = name.replace("-", "_")

        def echo(*args: object) -> object:
            transcript.host_call(name, *args)
            queued = pending.get(name)
            if queued:
                return queued.pop(0)
            if name in fallible:
                value = args[0]
                if not isinstance(value, dict):
                    raise TypeError("expected a result value")
                if value["kind"] == "err":
                    raise ComponentException(value.get("value"))
                return value.get("value")
            if len(args) == 1:
                return args[0]
            return list(args)

        echo.__name__ = key
        return echo

    return {name.replace("-", "_"): make(name) for name in names}


# --------------------------------------------------------------------------
# An object provider with a keyword-named member


class Shapes:
    """A class-instance provider: members are looked up as attributes."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.calls = 0

    def area(self, w: int, h: int) -> int:
        self.calls += 1
        self.transcript.host_call("shapes.area", w, h)
        return w * h

    def from_(self, text: str) -> str:
        """WIT ``from``: a Python keyword, so the member is ``from_``."""
        self.calls += 1
        self.transcript.host_call("shapes.from", text)
        return text.upper()


# --------------------------------------------------------------------------
# A host-implemented resource


class Cell:
    """A host resource: ``__init__`` is the WIT constructor, ``close`` its destructor."""

    transcript: ClassVar[Transcript] = Transcript()
    made: ClassVar[int] = 0

    def __init__(self, init: str) -> None:
        Cell.made += 1
        self.label = f"{init}#{Cell.made}"
        self.closed = False
        Cell.transcript.host_call("Cell.__init__", init)

    def get(self) -> str:
        Cell.transcript.host_call("Cell.get", self)
        return self.label

    @staticmethod
    def kind() -> int:
        Cell.transcript.host_call("Cell.kind")
        return 7

    def close(self) -> None:
        self.closed = True
        Cell.transcript.host_call("Cell.close", self)


class SlowCell(Cell):
    """A host resource whose method parks: the class is the authority for the mark (A2)."""

    @suspending
    def get(self) -> Any:
        Cell.transcript.host_call("SlowCell.get", self)
        return self._later()

    async def _later(self) -> str:
        await asyncio.sleep(0)
        return f"slow {self.label}"

    def close(self) -> None:
        super().close()


_HostCell = Cell


class Cells:
    """The interface that carries :class:`Cell` and functions over it."""

    Cell: ClassVar[type[Cell]] = Cell

    def __init__(self, transcript: Transcript) -> None:
        Cell.transcript = transcript
        Cell.made = 0
        self.transcript = transcript
        self.kept: list[object] = []

    def take(self, c: object) -> str:
        """Receives ``own<cell>``."""
        self.transcript.host_call("cells.take", c)
        self.kept.append(c)
        return c.label if isinstance(c, Cell) else "?"

    def inspect(self, c: object) -> str:
        """Receives ``borrow<cell>``."""
        self.transcript.host_call("cells.inspect", c)
        return c.label if isinstance(c, Cell) else "?"

    def give(self, init: str) -> _HostCell:
        """Passes ``own<cell>`` to the guest: a new instance, registered."""
        self.transcript.host_call("cells.give", init)
        return Cell(init)


# --------------------------------------------------------------------------
# Errors


class HandRolledException(Exception):
    """A zero-import component exception: the brand attribute and a payload."""

    __polyengine_brand__ = (COMPONENT_EXCEPTION,)

    def __init__(self, payload: object) -> None:
        super().__init__(f"hand-rolled: {payload!r}")
        self.payload = payload


class HandRolledTrap(Exception):
    """A zero-import trap: the brand attribute alone."""

    __polyengine_brand__ = ("polyengine.trap/1",)


class Failures:
    """Functions raising each kind of exception (the error model, python-mapping.md §3)."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript

    def check(self, x: int) -> int:
        """``result<u32, string>``: raise the canonical class for 0, hand-rolled for 1."""
        self.transcript.host_call("failures.check", x)
        if x == 0:
            raise ComponentException("zero is refused")
        if x == 1:
            raise HandRolledException("one is refused")
        if x == 2:
            raise ValueError("two is not a value this host likes")
        if x == 3:
            raise Trap("the host asked for a trap")
        if x == 4:
            raise HandRolledTrap("a hand-rolled trap")
        return x * 10

    def plain(self, x: int) -> int:
        """No result type: any exception traps."""
        self.transcript.host_call("failures.plain", x)
        if x == 0:
            raise ComponentException("nowhere to deliver this")
        if x == 1:
            raise KeyError("missing")
        return x


# --------------------------------------------------------------------------
# Marks and async


class Marks:
    """Sync-typed imports that return awaitables, marked and unmarked, and async imports."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript

    async def _later(self, value: int) -> int:
        await asyncio.sleep(0)
        await asyncio.sleep(0.001)
        return value

    @suspending
    def nap(self, x: int) -> Any:
        """Marked with the decorator form: parks its caller."""
        self.transcript.host_call("marks.nap", x)
        return self._later(x + 100)

    def nap_unmarked(self, x: int) -> Any:
        """Unmarked: returning an awaitable traps, naming the import."""
        self.transcript.host_call("marks.nap-unmarked", x)
        return self._later(x)

    async def get(self, x: int) -> int:
        """An ``async func`` import as a coroutine function."""
        self.transcript.host_call("marks.get", x)
        return await self._later(x + 1)

    def get_plain(self, x: int) -> int:
        """An ``async func`` import as a plain function."""
        self.transcript.host_call("marks.get-plain", x)
        return x + 2


class Cancellable:
    """Async imports the guest cancels: discarded, ``defer_cancel`` and ``abortable`` (A23, A24)."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.release: asyncio.Future[int] | None = None

    async def _wait(self, name: str, x: int) -> int:
        self.transcript.host_call(name, x)
        self.release = asyncio.get_running_loop().create_future()
        try:
            value = await self.release
        except asyncio.CancelledError:
            self.transcript.record("host-cancelled", name=name)
            raise
        self.transcript.record("host-finished", name=name, value=value)
        return value

    async def get(self, x: int) -> int:
        """Unmarked: a guest cancellation discards the call."""
        return await self._wait("cancellable.get", x)

    @defer_cancel
    async def get_deferred(self, x: int) -> int:
        """Runs to completion: the guest's cancel waits for the result."""
        self.transcript.host_call("cancellable.get-deferred", x)
        await asyncio.sleep(0)
        await asyncio.sleep(0.001)
        return x + 1

    @abortable
    async def get_abortable(self, x: int) -> int:
        """Cancelled through asyncio when the guest's cancellation discards it."""
        return await self._wait("cancellable.get-abortable", x)


class HandMarkedNap:
    """A zero-import ``suspending`` mark: the key string as the brand attribute."""

    __polyengine_brand__ = "polyengine.suspending/1"

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript

    def __call__(self, x: int) -> Any:
        self.transcript.host_call("hand-marked-nap", x)
        return self._later(x)

    async def _later(self, x: int) -> int:
        await asyncio.sleep(0)
        return x + 300


def suspending_function(transcript: Transcript) -> Callable[[int], Any]:
    """The function form of the mark, on a closure."""

    async def later(x: int) -> int:
        await asyncio.sleep(0)
        return x + 200

    def nap(x: int) -> Any:
        transcript.host_call("nap-fn", x)
        return later(x)

    return suspending(nap)


# --------------------------------------------------------------------------
# Producers of streams and futures


class Producers:
    """Imports whose results are streams and futures, produced the natural Python way."""

    def __init__(self, transcript: Transcript, kind: str) -> None:
        self.transcript = transcript
        self.kind = kind
        self.closed: list[str] = []

    def bytes_source(self) -> object:
        """``func() -> stream<u8>``: a source chosen by ``kind``."""
        self.transcript.host_call("producers.bytes-source", self.kind)
        if self.kind == "bytes":
            return b"from bytes"
        if self.kind == "bytearray":
            return bytearray(b"from bytearray")
        if self.kind == "list":
            return [104, 105]
        if self.kind == "generator":
            return self._gen()
        if self.kind == "async-generator":
            return self._agen()
        if self.kind == "empty":
            return b""
        return 42  # not a stream source

    def _gen(self) -> Iterator[bytes]:
        yield b"gen-"
        yield b"erated"

    async def _agen(self) -> AsyncIterator[bytes]:
        try:
            for part in (b"async-", b"gen"):
                await asyncio.sleep(0)
                yield part
        finally:
            self.closed.append("async-generator")

    def future_source(self) -> object:
        """``func() -> future<string>``: a source chosen by ``kind``."""
        self.transcript.host_call("producers.future-source", self.kind)
        if self.kind == "coroutine":
            return self._value("from a coroutine")
        if self.kind == "asyncio-future":
            fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            fut.set_result("from an asyncio future")
            return fut
        if self.kind == "task":
            return asyncio.ensure_future(self._value("from a task"))
        return "not awaitable"

    async def _value(self, text: str) -> str:
        await asyncio.sleep(0)
        return text


# --------------------------------------------------------------------------
# Error-contexts


class HandRolledErrorContext:
    """A zero-import error-context carrier: the brand and a string message (A20)."""

    __polyengine_brand__ = (ERROR_CONTEXT,)

    def __init__(self, message: str) -> None:
        self.message = message


class ErrorContexts:
    """Imports that receive and return error-contexts."""

    def __init__(self, transcript: Transcript, made: object = None) -> None:
        self.transcript = transcript
        self.made = made if made is not None else HandRolledErrorContext("made by the host")

    def report(self, e: object) -> str:
        self.transcript.host_call("errors.report", e)
        return f"host saw: {getattr(e, 'message', '?')}"

    def make(self) -> object:
        self.transcript.host_call("errors.make")
        return self.made
