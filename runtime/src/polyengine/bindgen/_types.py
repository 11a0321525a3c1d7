"""Python type expressions for component value types (python-mapping.md §2, bindgen.md §1).

:class:`TypeSpeller` names the world's records, variants, enums and flags
once (a structure named in several interfaces is one Python type), emits
their definitions in dependency order, and spells every other type
structurally. ``wide`` spells what lowering accepts (top-level parameters
of exports, results of imports); otherwise the lifted shape.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable

from polyengine.bindgen._names import Namespace, field_key, pascal
from polyengine.bindgen._world import Interface, World
from polyengine.types.model import (
    F32,
    F64,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    Borrow,
    Char,
    Enum,
    ErrorContext,
    Flags,
    Future,
    List,
    Map,
    Option,
    Own,
    Record,
    Result,
    Stream,
    String,
    Tuple,
    ValType,
    Variant,
)

LINE = 100
_INTS = (S8, S16, S32, S64, U8, U16, U32, U64)
_NAMED = (Record, Variant, Enum, Flags)


def _is_class_key(key: str) -> bool:
    return key.isidentifier() and not keyword.iskeyword(key)


def q(text: str) -> str:
    """A double-quoted Python string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def wrap_items(head: str, items: list[str], tail: str, indent: str = "") -> str:
    """``head item, item tail`` on one line, or one item per line with a trailing comma."""
    one = f"{indent}{head}{', '.join(items)}{tail}"
    if len(one) <= LINE or not items:
        return one
    inner = indent + "    "
    body = "".join(f"{inner}{it},\n" for it in items)
    return f"{indent}{head}\n{body}{indent}{tail}"


def wrap_union(lhs: str, parts: list[str]) -> str:
    """``lhs = A | B`` on one line, or parenthesized one alternative per line."""
    one = f"{lhs}{' | '.join(parts)}"
    if len(one) <= LINE:
        return one
    body = "\n    | ".join(parts)
    return f"{lhs}(\n    {body}\n)"


def qualified(iface: Interface, base: str) -> list[str]:
    """Candidate Python names of an item: bare, then interface-, then package-qualified.

    Two interfaces of one world may both define ``error-code``; the later one
    (in world order) takes the first free candidate, so the choice is deterministic.
    """
    short = pascal(iface.short) + base
    if not iface.package:
        return [base, short]
    return [base, short, pascal(iface.package) + short]


class TypeSpeller:
    """Names, definitions and spellings of the world's value types."""

    def __init__(self, world: World, ns: Namespace, use: Callable[[str], str]) -> None:
        self.ns = ns
        self.use = use
        self.names: dict[ValType, str] = {}
        self.resources: dict[int, str] = {}
        self.definitions: list[str] = []
        self._done: set[ValType] = set()
        #: Only spell names, define nothing (a provider skeleton imports the definitions).
        self.reference_only = False
        self._anon = 0
        for iface in world.all():
            for wit_name, t in iface.types:
                if isinstance(t, _NAMED) and t not in self.names:
                    base = pascal(wit_name)
                    self.names[t] = ns.claim(
                        qualified(iface, base), ("type", t), f"type {wit_name!r}"
                    )

    # -- spelling ---------------------------------------------------------------------

    def spell(self, t: ValType, *, wide: bool = False, self_rt: int | None = None) -> str:
        """The Python type of ``t`` (see the module docstring for ``wide``)."""
        return self._spell(t, wide, False, self_rt)

    def _spell(self, t: ValType, wide: bool, boxed: bool, self_rt: int | None) -> str:
        sp = self._spell
        if isinstance(t, Bool):
            return "bool"
        if isinstance(t, _INTS):
            return "int"
        if isinstance(t, F32 | F64):
            return "float"
        if isinstance(t, Char | String):
            return "str"
        match t:
            case ErrorContext():
                return self.use("ErrorContext")
            case List(et, _) if isinstance(et, U8):
                return "bytes | bytearray | memoryview" if wide else "bytes"
            case List(et, _):
                inner = sp(et, False, False, self_rt)
                return f"{self.use('Sequence')}[{inner}]" if wide else f"list[{inner}]"
            case Tuple(ts):
                if not ts:
                    return "tuple[()]"
                return f"tuple[{', '.join(sp(x, False, False, self_rt) for x in ts)}]"
            case Record() | Variant() | Enum() | Flags():
                return self.named(t)
            case Option(ot):
                inner = sp(ot, wide, isinstance(ot, Option), self_rt)
                if boxed:
                    return f"{self.use('SomeCase')}[{inner}] | {self.use('NoneCase')}"
                return f"{inner} | None"
            case Result(ok, err):
                oks = (
                    self.use("OkEmpty")
                    if ok is None
                    else f"{self.use('Ok')}[{sp(ok, False, False, self_rt)}]"
                )
                errs = (
                    self.use("ErrEmpty")
                    if err is None
                    else f"{self.use('Err')}[{sp(err, False, False, self_rt)}]"
                )
                return f"{oks} | {errs}"
            case Map(k, v):
                ks, vs = sp(k, False, False, self_rt), sp(v, False, False, self_rt)
                if wide:
                    return (
                        f"{self.use('Sequence')}[tuple[{ks}, {vs}]] | "
                        f"{self.use('Mapping')}[{ks}, {vs}]"
                    )
                return f"list[tuple[{ks}, {vs}]]"
            case Own(rt) | Borrow(rt):
                if rt == self_rt:
                    return self.use("Self")
                return self.resource(rt)
            case Stream(et):
                if isinstance(et, U8):
                    return self.use("ByteSource" if wide else "ByteStream")
                inner = "None" if et is None else sp(et, False, False, self_rt)
                return f"{self.use('StreamSource' if wide else 'Stream')}[{inner}]"
            case Future(et):
                inner = "None" if et is None else sp(et, False, False, self_rt)
                return f"{self.use('FutureSource' if wide else 'Future')}[{inner}]"
        raise AssertionError(f"unknown value type {t!r}")

    def resource(self, rt: int) -> str:
        """The alias (``_Cart``) of resource table entry ``rt``."""
        name = self.resources.get(rt)
        if name is None:
            # A resource the world mentions but no interface names (never in valid
            # components): the protocol type of any resource.
            return "object"
        return name

    # -- definitions ------------------------------------------------------------------

    def named(self, t: ValType) -> str:
        """The name of a record/variant/enum/flags type, emitting its definition once."""
        name = self.names.get(t)
        if name is None:
            self._anon += 1
            name = self.ns.claim([f"Anonymous{self._anon}"], ("type", t), "an unnamed type")
            self.names[t] = name
        if t not in self._done and not self.reference_only:
            self._done.add(t)
            self.definitions.append(self._define(name, t))
        return name

    def _define(self, name: str, t: ValType) -> str:
        match t:
            case Record(fields):
                return self._typed_dict(
                    name, [(field_key(f.label), self.spell(f.t)) for f in fields]
                )
            case Flags(labels):
                return self._flags(name, labels)
            case Enum(labels):
                lit = self.use("Literal")
                return (
                    wrap_items(
                        f"{name}: {self.use('TypeAlias')} = {lit}[", [q(x) for x in labels], "]"
                    )
                    + "\n"
                )
            case Variant(cases):
                lit = self.use("Literal")
                blocks: list[str] = []
                parts: list[str] = []
                for c in cases:
                    cname = self.ns.claim(
                        [name + pascal(c.label)], ("case", t, c.label), f"case {c.label!r}"
                    )
                    members = [("kind", f"{lit}[{q(c.label)}]")]
                    if c.t is not None:
                        members.append(("value", self.spell(c.t)))
                    blocks.append(self._typed_dict(cname, members))
                    parts.append(cname)
                alias = wrap_union(f"{name}: {self.use('TypeAlias')} = ", parts) + "\n"
                return "\n\n".join([*blocks, alias])
        raise AssertionError(t)

    def _typed_dict(self, name: str, fields: list[tuple[str, str]]) -> str:
        td = self.use("TypedDict")
        if all(_is_class_key(k) for k, _ in fields):
            body = "".join(f"    {k}: {v}\n" for k, v in fields) or "    pass\n"
            return f"class {name}({td}):\n{body}"
        items = "".join(f"        {q(k)}: {v},\n" for k, v in fields)
        return f"{name} = {td}(\n    {q(name)},\n    {{\n{items}    }},\n)\n"

    def _flags(self, name: str, labels: tuple[str, ...]) -> str:
        keys = [field_key(x) for x in labels]
        out = self._typed_dict(name, [(k, "bool") for k in keys])
        fname = self.ns.claim(
            [_snake_of(name), _snake_of(name) + "_flags"],
            ("flags-ctor", name),
            f"the constructor of flags {name}",
        )
        if not keys:
            return out + f"\n\ndef {fname}() -> {name}:\n    return {{}}\n"
        lit = self.use("Literal")
        head = f"def {fname}(*on: {lit}["
        sig = wrap_items(head, [q(k) for k in keys], f"]) -> {name}:")
        body = "".join(f"        {q(k)}: {q(k)} in on,\n" for k in keys)
        doc = f'    """A ``{name}`` with the flags ``on`` set and the others clear."""\n'
        return f"{out}\n\n{sig}\n{doc}    return {{\n{body}    }}\n"


def _snake_of(pascal_name: str) -> str:
    out: list[str] = []
    for i, ch in enumerate(pascal_name):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    text = "".join(out)
    return text + "_" if keyword.iskeyword(text) else text
