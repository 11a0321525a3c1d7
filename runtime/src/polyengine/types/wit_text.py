"""WIT spelling of component value and function types (WIT.md §"Types").

Records, variants, enums, flags and resources have names only where they
are exported; :class:`WitNames` maps such types (structurally) and resource
indices to the names the caller knows, and everything else is spelled
structurally.
"""

from __future__ import annotations

from polyengine.types.model import (
    PRIMITIVES,
    Borrow,
    Enum,
    Flags,
    FuncType,
    Future,
    List,
    Map,
    Option,
    Own,
    Record,
    Result,
    Stream,
    Tuple,
    ValType,
    Variant,
)

_PRIM_NAMES = {cls: name for name, cls in PRIMITIVES.items()}

WIT_KEYWORDS = frozenset(
    [
        "as",
        "async",
        "bool",
        "borrow",
        "char",
        "constructor",
        "enum",
        "export",
        "f32",
        "f64",
        "flags",
        "float32",
        "float64",
        "from",
        "func",
        "future",
        "import",
        "include",
        "interface",
        "list",
        "option",
        "own",
        "package",
        "record",
        "resource",
        "result",
        "s16",
        "s32",
        "s64",
        "s8",
        "static",
        "stream",
        "string",
        "tuple",
        "type",
        "u16",
        "u32",
        "u64",
        "u8",
        "use",
        "variant",
        "with",
        "world",
        "error-context",
    ]
)


def ident(name: str) -> str:
    """``name`` as a WIT identifier, ``%``-escaped when it is a keyword."""
    return f"%{name}" if name in WIT_KEYWORDS else name


class WitNames:
    """Names for named value types and for resources (by resource table index)."""

    __slots__ = ("resources", "types")

    def __init__(self) -> None:
        self.types: dict[ValType, str] = {}
        self.resources: dict[int, str] = {}

    def copy(self) -> WitNames:
        out = WitNames()
        out.types = dict(self.types)
        out.resources = dict(self.resources)
        return out


def valtype_to_wit(t: ValType, names: WitNames, *, top: bool = False) -> str:
    """WIT text for ``t``; ``top`` spells the definition itself rather than its name."""
    prim = _PRIM_NAMES.get(type(t))
    if prim is not None:
        return prim
    if not top:
        name = names.types.get(t)
        if name is not None:
            return ident(name)
    match t:
        case List(et, n):
            inner = valtype_to_wit(et, names)
            return f"list<{inner}>" if n is None else f"list<{inner}, {n}>"
        case Tuple(ts):
            return f"tuple<{', '.join(valtype_to_wit(x, names) for x in ts)}>"
        case Option(ot):
            return f"option<{valtype_to_wit(ot, names)}>"
        case Result(ok, err):
            if ok is None and err is None:
                return "result"
            if err is None:
                assert ok is not None
                return f"result<{valtype_to_wit(ok, names)}>"
            oks = "_" if ok is None else valtype_to_wit(ok, names)
            return f"result<{oks}, {valtype_to_wit(err, names)}>"
        case Own(rt):
            return ident(names.resources.get(rt, f"resource{rt}"))
        case Borrow(rt):
            return f"borrow<{ident(names.resources.get(rt, f'resource{rt}'))}>"
        case Stream(et):
            return "stream" if et is None else f"stream<{valtype_to_wit(et, names)}>"
        case Future(et):
            return "future" if et is None else f"future<{valtype_to_wit(et, names)}>"
        case Map(k, v):
            return f"map<{valtype_to_wit(k, names)}, {valtype_to_wit(v, names)}>"
        case Record(fields):
            body = ", ".join(f"{ident(f.label)}: {valtype_to_wit(f.t, names)}" for f in fields)
            return f"record {{ {body} }}"
        case Variant(cases):
            body = ", ".join(
                c.label if c.t is None else f"{c.label}({valtype_to_wit(c.t, names)})"
                for c in cases
            )
            return f"variant {{ {body} }}"
        case Enum(labels):
            return f"enum {{ {', '.join(labels)} }}"
        case Flags(labels):
            return f"flags {{ {', '.join(labels)} }}"
    raise AssertionError(f"unknown value type {t!r}")


def functype_to_wit(ft: FuncType, names: WitNames, *, skip_self: bool = False) -> str:
    """``func(a: T, ...) -> R`` (``async func`` for async types)."""
    params = ft.params[1:] if skip_self and ft.params else ft.params
    ps = ", ".join(f"{ident(n)}: {valtype_to_wit(t, names)}" for n, t in params)
    head = "async func" if ft.is_async else "func"
    if ft.result is None:
        return f"{head}({ps})"
    return f"{head}({ps}) -> {valtype_to_wit(ft.result, names)}"


def typedef_to_wit(name: str, t: ValType, names: WitNames, indent: str) -> str:
    """A WIT type definition ``record``/``variant``/``enum``/``flags`` or ``type`` alias."""
    inner = indent + "  "
    match t:
        case Record(fields):
            body = "".join(
                f"{inner}{ident(f.label)}: {valtype_to_wit(f.t, names)},\n" for f in fields
            )
            return f"{indent}record {ident(name)} {{\n{body}{indent}}}\n"
        case Variant(cases):
            body = "".join(
                f"{inner}{ident(c.label)},\n"
                if c.t is None
                else f"{inner}{ident(c.label)}({valtype_to_wit(c.t, names)}),\n"
                for c in cases
            )
            return f"{indent}variant {ident(name)} {{\n{body}{indent}}}\n"
        case Enum(labels):
            body = "".join(f"{inner}{ident(x)},\n" for x in labels)
            return f"{indent}enum {ident(name)} {{\n{body}{indent}}}\n"
        case Flags(labels):
            body = "".join(f"{inner}{ident(x)},\n" for x in labels)
            return f"{indent}flags {ident(name)} {{\n{body}{indent}}}\n"
    return f"{indent}type {ident(name)} = {valtype_to_wit(t, names, top=True)};\n"
