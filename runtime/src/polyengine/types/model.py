"""The component value and function type model (Explainer.md §"Type definitions").

Frozen dataclasses, named as in CanonicalABI.md / definitions.py. Every type is
hashable and compares structurally. Resource types are referred to by their
index in the Plan's resource table (``Own.rt``/``Borrow.rt``), so a value type
is plain data that serializes to JSON with :func:`valtype_to_json` and back with
:func:`valtype_from_json` byte-for-byte deterministically.

``Tuple``, ``Enum``, ``Option`` and ``Result`` are the specialized forms; see
:mod:`polyengine.types.despecialize` for their despecialization to ``Record``
and ``Variant`` (CanonicalABI.md §"Despecialization").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from dataclasses import dataclass
else:  # the same classes, made without compiling generated methods (start-up)
    from polyengine.types.record import frozen_dataclass as dataclass


@dataclass(frozen=True, slots=True)
class ValType:
    """Base of every component value type."""


@dataclass(frozen=True, slots=True)
class Bool(ValType):
    pass


@dataclass(frozen=True, slots=True)
class S8(ValType):
    pass


@dataclass(frozen=True, slots=True)
class U8(ValType):
    pass


@dataclass(frozen=True, slots=True)
class S16(ValType):
    pass


@dataclass(frozen=True, slots=True)
class U16(ValType):
    pass


@dataclass(frozen=True, slots=True)
class S32(ValType):
    pass


@dataclass(frozen=True, slots=True)
class U32(ValType):
    pass


@dataclass(frozen=True, slots=True)
class S64(ValType):
    pass


@dataclass(frozen=True, slots=True)
class U64(ValType):
    pass


@dataclass(frozen=True, slots=True)
class F32(ValType):
    pass


@dataclass(frozen=True, slots=True)
class F64(ValType):
    pass


@dataclass(frozen=True, slots=True)
class Char(ValType):
    pass


@dataclass(frozen=True, slots=True)
class String(ValType):
    pass


@dataclass(frozen=True, slots=True)
class ErrorContext(ValType):
    pass


@dataclass(frozen=True, slots=True)
class List(ValType):
    """``list<t>``, or the fixed-length ``list<t, l>`` when ``l`` is not ``None``."""

    t: ValType
    l: int | None = None  # noqa: E741 - the spec's name


@dataclass(frozen=True, slots=True)
class Field:
    label: str
    t: ValType


@dataclass(frozen=True, slots=True)
class Record(ValType):
    fields: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class Tuple(ValType):
    ts: tuple[ValType, ...]


@dataclass(frozen=True, slots=True)
class Case:
    label: str
    t: ValType | None


@dataclass(frozen=True, slots=True)
class Variant(ValType):
    cases: tuple[Case, ...]


@dataclass(frozen=True, slots=True)
class Enum(ValType):
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Option(ValType):
    t: ValType


@dataclass(frozen=True, slots=True)
class Result(ValType):
    ok: ValType | None
    error: ValType | None


@dataclass(frozen=True, slots=True)
class Flags(ValType):
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Map(ValType):
    """``map<k, v>``; despecializes to ``list<tuple<k, v>>``."""

    k: ValType
    v: ValType


@dataclass(frozen=True, slots=True)
class Own(ValType):
    """``own<rt>``; ``rt`` indexes the Plan's resource table."""

    rt: int


@dataclass(frozen=True, slots=True)
class Borrow(ValType):
    """``borrow<rt>``; ``rt`` indexes the Plan's resource table."""

    rt: int


@dataclass(frozen=True, slots=True)
class Stream(ValType):
    """``stream<t>``; ``t is None`` for the element-less ``stream``."""

    t: ValType | None


@dataclass(frozen=True, slots=True)
class Future(ValType):
    """``future<t>``; ``t is None`` for the value-less ``future``."""

    t: ValType | None


@dataclass(frozen=True, slots=True)
class FuncType:
    """A component function type: named params, an optional result, async or not."""

    params: tuple[tuple[str, ValType], ...]
    result: ValType | None
    is_async: bool = False

    def param_types(self) -> list[ValType]:
        return [t for _, t in self.params]

    def result_types(self) -> list[ValType]:
        return [] if self.result is None else [self.result]


PRIMITIVES: dict[str, type[ValType]] = {
    "bool": Bool,
    "s8": S8,
    "u8": U8,
    "s16": S16,
    "u16": U16,
    "s32": S32,
    "u32": U32,
    "s64": S64,
    "u64": U64,
    "f32": F32,
    "f64": F64,
    "char": Char,
    "string": String,
    "error-context": ErrorContext,
}
_PRIMITIVE_NAMES: dict[type[ValType], str] = {cls: name for name, cls in PRIMITIVES.items()}

Json: TypeAlias = Any


def valtype_to_json(t: ValType) -> Json:
    """A JSON-shaped form of ``t``: a string for primitives, else a one-key dict."""
    name = _PRIMITIVE_NAMES.get(type(t))
    if name is not None:
        return name
    match t:
        case List(et, l):
            return {"list": valtype_to_json(et)} if l is None else {
                "list": valtype_to_json(et),
                "len": l,
            }
        case Record(fields):
            return {"record": [[f.label, valtype_to_json(f.t)] for f in fields]}
        case Tuple(ts):
            return {"tuple": [valtype_to_json(x) for x in ts]}
        case Variant(cases):
            return {
                "variant": [
                    [c.label, None if c.t is None else valtype_to_json(c.t)] for c in cases
                ]
            }
        case Enum(labels):
            return {"enum": list(labels)}
        case Option(ot):
            return {"option": valtype_to_json(ot)}
        case Result(ok, error):
            return {
                "result": [
                    None if ok is None else valtype_to_json(ok),
                    None if error is None else valtype_to_json(error),
                ]
            }
        case Flags(labels):
            return {"flags": list(labels)}
        case Map(k, v):
            return {"map": [valtype_to_json(k), valtype_to_json(v)]}
        case Own(rt):
            return {"own": rt}
        case Borrow(rt):
            return {"borrow": rt}
        case Stream(st):
            return {"stream": None if st is None else valtype_to_json(st)}
        case Future(ft):
            return {"future": None if ft is None else valtype_to_json(ft)}
    raise AssertionError(f"unknown value type {t!r}")


def _opt(j: Json) -> ValType | None:
    return None if j is None else valtype_from_json(j)


def valtype_from_json(j: Json) -> ValType:
    """Inverse of :func:`valtype_to_json`."""
    if isinstance(j, str):
        return PRIMITIVES[j]()
    assert isinstance(j, dict) and j, j
    key = next(iter(j))
    v = j[key]
    match key:
        case "list":
            return List(valtype_from_json(v), j.get("len"))
        case "record":
            return Record(tuple(Field(label, valtype_from_json(ft)) for label, ft in v))
        case "tuple":
            return Tuple(tuple(valtype_from_json(x) for x in v))
        case "variant":
            return Variant(tuple(Case(label, _opt(ct)) for label, ct in v))
        case "enum":
            return Enum(tuple(v))
        case "option":
            return Option(valtype_from_json(v))
        case "result":
            return Result(_opt(v[0]), _opt(v[1]))
        case "flags":
            return Flags(tuple(v))
        case "map":
            return Map(valtype_from_json(v[0]), valtype_from_json(v[1]))
        case "own":
            return Own(int(v))
        case "borrow":
            return Borrow(int(v))
        case "stream":
            return Stream(_opt(v))
        case "future":
            return Future(_opt(v))
    raise AssertionError(f"unknown value type JSON {j!r}")


def functype_to_json(ft: FuncType) -> Json:
    return {
        "params": [[name, valtype_to_json(t)] for name, t in ft.params],
        "result": None if ft.result is None else valtype_to_json(ft.result),
        "async": ft.is_async,
    }


def functype_from_json(j: Json) -> FuncType:
    return FuncType(
        tuple((name, valtype_from_json(t)) for name, t in j["params"]),
        _opt(j["result"]),
        bool(j["async"]),
    )
