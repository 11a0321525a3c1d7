"""WIT value syntax on the command line: parse and print component values.

The text form is the one ``wasmtime run --invoke`` reads and prints (the
WAVE encoding of the wasm-wave project): ``42``, ``-1.5``, ``nan``,
``'x'``, ``"text\\n"``, ``[1, 2]``, ``(1, "a")``, ``{x: 1, y: 2}``,
``case(payload)``, ``some(x)``/``none``, ``ok(x)``/``err(e)``, ``{a, b}``
for flags and ``{:}`` for a record whose fields are all absent options.
Labels that collide with a keyword (``ok``, ``none``, ...) take a ``%``
prefix.

Parsing is typed: :func:`parse_value` and :func:`parse_args` read text
against a component value type (``polyengine.types.model``) and return the
Python value shapes of python-mapping.md §2 (records and flags are dicts
with snake_case keys, variants ``{"kind": ..., "value": ...}``, options
``None``/payload with nested options boxed, ``list<u8>`` as ``bytes``).
:func:`format_value` and :func:`format_results` print such values back.
"""

from __future__ import annotations

import math
import re
import struct
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

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
    Char,
    Enum,
    Flags,
    List,
    Map,
    Option,
    Record,
    Result,
    String,
    Tuple,
    ValType,
    Variant,
)

__all__ = [
    "WaveError",
    "FuncCall",
    "format_results",
    "format_type",
    "format_value",
    "parse_args",
    "parse_call",
    "parse_value",
]

KEYWORDS = frozenset(("true", "false", "some", "none", "ok", "err", "inf", "nan"))
MAX_DEPTH = 100

_INT_RANGES: dict[type[ValType], tuple[int, int]] = {
    U8: (0, 0xFF),
    U16: (0, 0xFFFF),
    U32: (0, 0xFFFF_FFFF),
    U64: (0, 0xFFFF_FFFF_FFFF_FFFF),
    S8: (-0x80, 0x7F),
    S16: (-0x8000, 0x7FFF),
    S32: (-0x8000_0000, 0x7FFF_FFFF),
    S64: (-0x8000_0000_0000_0000, 0x7FFF_FFFF_FFFF_FFFF),
}


class WaveError(ValueError):
    """Text that is not a valid value of the expected type; names where (``at 3..5``)."""

    def __init__(self, message: str, span: tuple[int, int] | None = None) -> None:
        self.reason = message
        self.span = span
        where = "" if span is None else f" at {span[0]}..{span[1]}"
        super().__init__(f"{message}{where}")


# --------------------------------------------------------------------------- lexing

_ESCAPE = r"""\\(?:['"tnr\\]|u\{[0-9a-fA-F]{1,6}\})"""
_WORD0 = r"(?:[a-z][a-z0-9]*|[A-Z][A-Z0-9]*)"
_WORD = r"(?:[a-z0-9]+|[A-Z0-9]+)"
_LABEL = rf"{_WORD0}(?:-{_WORD})*"

_TOKEN = re.compile(
    rf"""
    (?P<ws>[ \t\n\r]+|//[^\n]*)
  | (?P<punct>[{{}}()\[\]:,])
  | (?P<mstring>\"\"\"(?s:.*?)\"\"\")
  | (?P<number>-inf|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)
  | (?P<label>%?{_LABEL})
  | (?P<char>'(?:{_ESCAPE}|[^\\'\n])')
  | (?P<string>"(?:[^\\"\n]|{_ESCAPE})*")
    """,
    re.VERBOSE,
)

_FUNC_NAME = re.compile(
    rf"(?:{_LABEL}:{_LABEL}/)?{_LABEL}(?:\.{_LABEL})?"
    r"(?:@(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)"
    r"(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)?"
)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "punct" | "number" | "label" | "char" | "string" | "mstring"
    text: str
    start: int
    end: int


def _tokenize(src: str, pos: int = 0) -> list[_Token]:
    out: list[_Token] = []
    n = len(src)
    while pos < n:
        m = _TOKEN.match(src, pos)
        if m is None or m.end() == pos:
            raise WaveError("invalid token", (pos, pos + 1))
        kind = m.lastgroup
        assert kind is not None
        if kind != "ws":
            out.append(_Token(kind, m.group(), pos, m.end()))
        pos = m.end()
    return out


# --------------------------------------------------------------------------- syntax tree


@dataclass(slots=True)
class Node:
    """One untyped value: ``kind`` is one of ``number char string mstring label
    true false tuple list record flags variant some none ok err``."""

    kind: str
    start: int
    end: int
    text: str = ""
    children: list[Node] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    @property
    def span(self) -> tuple[int, int]:
        return (self.start, self.end)


class _Parser:
    def __init__(self, src: str, tokens: list[_Token]) -> None:
        self.src = src
        self.tokens = tokens
        self.i = 0
        self.depth = 0

    def _end_span(self) -> tuple[int, int]:
        n = len(self.src)
        return (n, n)

    def peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def next(self) -> _Token:
        tok = self.peek()
        if tok is None:
            raise WaveError("unexpected end of input", self._end_span())
        self.i += 1
        return tok

    def is_punct(self, text: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "punct" and tok.text == text

    def expect(self, text: str) -> _Token:
        tok = self.next()
        if tok.kind != "punct" or tok.text != text:
            raise WaveError(
                f"unexpected token {tok.text!r}, expected {text!r}", (tok.start, tok.end)
            )
        return tok

    def finish(self) -> None:
        tok = self.peek()
        if tok is not None:
            raise WaveError("trailing characters after value", (tok.start, tok.end))

    def value(self) -> Node:
        if self.depth >= MAX_DEPTH:
            tok = self.peek()
            raise WaveError(
                "value nesting too deep", (tok.start, tok.end) if tok else self._end_span()
            )
        self.depth += 1
        try:
            return self._value()
        finally:
            self.depth -= 1

    def _value(self) -> Node:
        tok = self.next()
        if tok.kind in ("number", "char", "string", "mstring"):
            return Node(tok.kind, tok.start, tok.end, tok.text)
        if tok.kind == "punct":
            if tok.text == "(":
                children = self.sequence(")")
                if not children:
                    raise WaveError("empty tuple", (tok.start, self.tokens[self.i - 1].end))
                return Node("tuple", tok.start, self.tokens[self.i - 1].end, children=children)
            if tok.text == "[":
                children = self.sequence("]")
                return Node("list", tok.start, self.tokens[self.i - 1].end, children=children)
            if tok.text == "{":
                return self.braces(tok)
            raise WaveError(f"unexpected token {tok.text!r}", (tok.start, tok.end))
        # a label or keyword
        word = tok.text
        if word in ("true", "false"):
            return Node(word, tok.start, tok.end, word)
        if word in ("inf", "nan"):
            return Node("number", tok.start, tok.end, word)
        if word == "none":
            return Node("none", tok.start, tok.end)
        if word == "some":
            self.expect("(")
            payload = self.value()
            close = self.expect(")")
            return Node("some", tok.start, close.end, children=[payload])
        if word in ("ok", "err"):
            if self.is_punct("("):
                self.next()
                payload = self.value()
                close = self.expect(")")
                return Node(word, tok.start, close.end, children=[payload])
            return Node(word, tok.start, tok.end)
        label = word[1:] if word.startswith("%") else word
        if self.is_punct("("):
            self.next()
            payload = self.value()
            close = self.expect(")")
            return Node("variant", tok.start, close.end, label, children=[payload])
        return Node("label", tok.start, tok.end, label)

    def sequence(self, close: str) -> list[Node]:
        out: list[Node] = []
        if self.is_punct(close):
            self.next()
            return out
        while True:
            out.append(self.value())
            tok = self.next()
            if tok.kind == "punct" and tok.text == ",":
                if self.is_punct(close):
                    self.next()
                    return out
                continue
            if tok.kind == "punct" and tok.text == close:
                return out
            raise WaveError(
                f"unexpected token {tok.text!r}, expected ',' or {close!r}", (tok.start, tok.end)
            )

    def _label(self) -> tuple[str, _Token]:
        tok = self.next()
        if tok.kind != "label":
            raise WaveError(f"expected a label, got {tok.text!r}", (tok.start, tok.end))
        return (tok.text[1:] if tok.text.startswith("%") else tok.text), tok

    def braces(self, open_tok: _Token) -> Node:
        if self.is_punct(":"):
            self.next()
            close = self.expect("}")
            return Node("record", open_tok.start, close.end)
        if self.is_punct("}"):
            close = self.next()
            return Node("flags", open_tok.start, close.end)
        is_record = (
            self.i + 1 < len(self.tokens)
            and self.tokens[self.i + 1].kind == "punct"
            and self.tokens[self.i + 1].text == ":"
        )
        node = Node("record" if is_record else "flags", open_tok.start, open_tok.end)
        seen: set[str] = set()
        while True:
            label, tok = self._label()
            if label in seen:
                what = "field" if is_record else "flag"
                raise WaveError(f"duplicate {what} {label!r}", (tok.start, tok.end))
            seen.add(label)
            node.labels.append(label)
            if is_record:
                self.expect(":")
                node.children.append(self.value())
            tok = self.next()
            if tok.kind == "punct" and tok.text == ",":
                if self.is_punct("}"):
                    tok = self.next()
                    break
                continue
            if tok.kind == "punct" and tok.text == "}":
                break
            raise WaveError(
                f"unexpected token {tok.text!r}, expected ',' or '}}'", (tok.start, tok.end)
            )
        node.end = tok.end
        return node


def parse_node(text: str) -> Node:
    """Parse ``text`` as one untyped value."""
    parser = _Parser(text, _tokenize(text))
    node = parser.value()
    parser.finish()
    return node


@dataclass(frozen=True, slots=True)
class FuncCall:
    """``name(args...)``: ``name`` as written, ``args`` the untyped argument nodes."""

    name: str
    args: list[Node]
    source: str

    @property
    def item(self) -> tuple[str | None, str]:
        """``(instance name or None, function name)``: ``ns:pkg/iface.f@1.0.0`` names
        instance ``ns:pkg/iface@1.0.0`` and function ``f``; ``iface.f`` instance ``iface``."""
        name, _, version = self.name.partition("@")
        head, slash, tail = name.rpartition("/")
        iface, dot, func = tail.rpartition(".")
        if not dot:
            return (None, tail) if not slash else (None, self.name)
        instance = f"{head}{slash}{iface}" + (f"@{version}" if version else "")
        return instance, func


def parse_call(text: str) -> FuncCall:
    """Parse ``f(a, b)`` (a WAVE function call); raises :class:`WaveError`."""
    m = _FUNC_NAME.match(text)
    if m is None or m.end() == 0:
        raise WaveError("expected a function name", (0, 1 if text else 0))
    name = m.group()
    if "/" in name and ":" not in name.split("/", 1)[0]:
        raise WaveError("invalid function name", (0, m.end()))
    if "@" in name and "/" not in name:
        raise WaveError(
            "a version needs a package-qualified name (ns:pkg/iface.f@1.0.0)", (0, m.end())
        )
    parser = _Parser(text, _tokenize(text, m.end()))
    parser.expect("(")
    args = parser.sequence(")")
    parser.finish()
    return FuncCall(name, args, text)


# --------------------------------------------------------------------------- typed conversion


def _unescape(body: str, offset: int) -> str:
    """Decode the escapes of a char or string body (``offset`` locates errors)."""
    out: list[str] = []
    i = 0
    n = len(body)
    while i < n:
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < n else ""
        simple = {"\\": "\\", "'": "'", '"': '"', "t": "\t", "n": "\n", "r": "\r"}.get(nxt)
        if simple is not None:
            out.append(simple)
            i += 2
            continue
        m = re.match(r"u\{([0-9a-fA-F]{1,6})\}", body[i + 1 :])
        if m is None:
            raise WaveError("invalid character escape", (offset + i, offset + i + 1))
        code = int(m.group(1), 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise WaveError(
                f"invalid character escape: U+{code:X} is not a Unicode scalar value",
                (offset + i, offset + i + 1 + m.end()),
            )
        out.append(chr(code))
        i += 1 + m.end()
    return "".join(out)


def _multiline(node: Node) -> str:
    body = node.text[3:-3]
    offset = node.start + 3
    if body.startswith("\r"):
        body = body[1:]
        offset += 1
    lines = body.split("\n")
    indent = lines.pop()
    if indent.strip(" "):
        raise WaveError(
            'closing """ must be on a line preceded only by spaces', (node.end - 3, node.end)
        )
    if not lines or lines[0] != "":
        raise WaveError('opening """ must be followed immediately by a newline', node.span)
    out: list[str] = []
    for line in lines[1:]:
        if not line.startswith(indent):
            raise WaveError('lines must be indented at least as much as the closing """', node.span)
        text = line[len(indent) :]
        if text.endswith("\r"):
            text = text[:-1]
        out.append(_unescape(text, offset))
    return "\n".join(out)


def _type_error(node: Node, t: ValType) -> WaveError:
    shown = node.text if node.kind in ("number", "label", "true", "false") else node.kind
    return WaveError(f"invalid value type: expected {format_type(t)}, got {shown}", node.span)


def _is_flattenable(t: ValType) -> bool:
    """Whether ``some(x)``/``ok(x)`` may be written as a bare ``x``: the payload is no option
    or result."""
    return not isinstance(t, Option | Result)


def to_value(node: Node, t: ValType, *, boxed: bool = False) -> Any:
    """Convert an untyped node into the Python value of type ``t`` (python-mapping.md §2)."""
    if isinstance(t, Bool):
        if node.kind == "true":
            return True
        if node.kind == "false":
            return False
        raise _type_error(node, t)
    rng = _INT_RANGES.get(type(t))
    if rng is not None:
        if node.kind != "number":
            raise _type_error(node, t)
        if not re.fullmatch(r"-?[0-9]+", node.text) or (rng[0] == 0 and node.text.startswith("-")):
            raise WaveError(f"invalid value: {node.text} is not a {format_type(t)}", node.span)
        value = int(node.text)
        if not rng[0] <= value <= rng[1]:
            raise WaveError(
                f"invalid value: {node.text} is out of range for {format_type(t)}", node.span
            )
        return value
    if isinstance(t, F32 | F64):
        if node.kind != "number":
            raise _type_error(node, t)
        x = float(node.text)
        if isinstance(t, F32) and math.isfinite(x):
            try:
                x = struct.unpack("<f", struct.pack("<f", x))[0]
            except OverflowError:
                x = math.copysign(math.inf, x)
        return x
    if isinstance(t, Char):
        if node.kind != "char":
            raise _type_error(node, t)
        text = _unescape(node.text[1:-1], node.start + 1)
        if len(text) != 1:
            raise WaveError("multiple characters in char value", node.span)
        return text
    if isinstance(t, String):
        if node.kind == "string":
            return _unescape(node.text[1:-1], node.start + 1)
        if node.kind == "mstring":
            return _multiline(node)
        raise _type_error(node, t)
    if isinstance(t, List):
        if node.kind != "list":
            raise _type_error(node, t)
        if t.l is not None and len(node.children) != t.l:
            raise WaveError(
                f"invalid value: expected {t.l} elements, got {len(node.children)}", node.span
            )
        if isinstance(t.t, U8):
            return bytes(to_value(c, t.t) for c in node.children)
        return [to_value(c, t.t) for c in node.children]
    if isinstance(t, Map):
        if node.kind != "list":
            raise _type_error(node, t)
        pair = Tuple((t.k, t.v))
        return [to_value(c, pair) for c in node.children]
    if isinstance(t, Tuple):
        if node.kind != "tuple":
            raise _type_error(node, t)
        if len(node.children) != len(t.ts):
            raise WaveError(
                f"invalid value: expected {len(t.ts)} tuple values, got {len(node.children)}",
                node.span,
            )
        return tuple(to_value(c, et) for c, et in zip(node.children, t.ts, strict=True))
    if isinstance(t, Record):
        if node.kind != "record":
            raise _type_error(node, t)
        given = dict(zip(node.labels, node.children, strict=True))
        known = {f.label for f in t.fields}
        for label in node.labels:
            if label not in known:
                raise WaveError(f"invalid value: unknown field {label!r}", node.span)
        out: dict[str, Any] = {}
        for f in t.fields:
            child = given.get(f.label)
            key = f.label.replace("-", "_")
            if child is None:
                if not isinstance(f.t, Option):
                    raise WaveError(f"invalid value: missing field {f.label!r}", node.span)
                out[key] = None
            else:
                out[key] = to_value(child, f.t)
        return out
    if isinstance(t, Flags):
        if node.kind != "flags":
            raise _type_error(node, t)
        for label in node.labels:
            if label not in t.labels:
                raise WaveError(f"invalid value: unknown flag {label!r}", node.span)
        return {label.replace("-", "_"): label in node.labels for label in t.labels}
    if isinstance(t, Enum):
        if node.kind != "label":
            raise _type_error(node, t)
        if node.text not in t.labels:
            raise WaveError(f"invalid value: unknown enum case {node.text!r}", node.span)
        return node.text
    if isinstance(t, Variant):
        if node.kind not in ("label", "variant"):
            raise _type_error(node, t)
        for case in t.cases:
            if case.label == node.text:
                payload = _payload(
                    node, node.text, case.t, node.children[0] if node.children else None
                )
                return _tagged(node.text, case.t, payload)
        raise WaveError(f"invalid value: unknown variant case {node.text!r}", node.span)
    if isinstance(t, Option):
        if node.kind == "none":
            return {"kind": "none"} if boxed else None
        if node.kind == "some":
            value = to_value(node.children[0], t.t, boxed=True)
        elif _is_flattenable(t.t):
            value = to_value(node, t.t, boxed=True)
        else:
            raise _type_error(node, t)
        return {"kind": "some", "value": value} if boxed else value
    if isinstance(t, Result):
        if node.kind in ("ok", "err"):
            payload_type = t.ok if node.kind == "ok" else t.error
            child = node.children[0] if node.children else None
            return _tagged(node.kind, payload_type, _payload(node, node.kind, payload_type, child))
        if t.ok is not None and _is_flattenable(t.ok):
            return {"kind": "ok", "value": to_value(node, t.ok)}
        raise _type_error(node, t)
    raise WaveError(f"values of type {format_type(t)} have no WIT value syntax", node.span)


def _payload(node: Node, case: str, t: ValType | None, child: Node | None) -> Any:
    if t is None and child is None:
        return None
    if t is None:
        raise WaveError(f"invalid value: unexpected payload for case {case!r}", node.span)
    if child is None:
        raise WaveError(f"invalid value: missing payload for case {case!r}", node.span)
    return to_value(child, t)


def _tagged(kind: str, t: ValType | None, payload: Any) -> dict[str, Any]:
    return {"kind": kind} if t is None else {"kind": kind, "value": payload}


def parse_value(text: str, t: ValType) -> Any:
    """Parse ``text`` as a value of type ``t``; raises :class:`WaveError`."""
    return to_value(parse_node(text), t)


def parse_args(call: FuncCall, params: Sequence[tuple[str, ValType]]) -> list[Any]:
    """The Python arguments of ``call`` for ``params``; trailing options may be left out."""
    if not call.args and params:
        raise WaveError(
            f"invalid params: no arguments given, but {call.name} takes {len(params)}",
            (0, len(call.name)),
        )
    if len(call.args) > len(params):
        extra = call.args[len(params)]
        raise WaveError(
            f"invalid params: {call.name} takes {len(params)} argument(s), got {len(call.args)}",
            extra.span,
        )
    out = [to_value(node, t) for node, (_, t) in zip(call.args, params, strict=False)]
    for name, t in params[len(call.args) :]:
        if not isinstance(t, Option):
            end = len(call.source)
            raise WaveError(f"invalid params: missing required param {name!r}", (end - 1, end))
        out.append(None)
    return out


# --------------------------------------------------------------------------- printing


def _escape_char(ch: str) -> str:
    """One character of a printed char or string literal.

    Quotes, backslash, tab, newline and carriage return get their short
    escapes; control characters, combining marks and characters that are not
    printable get ``\\u{hex}``. The printable test is Python's (its Unicode
    version); it can differ from wasmtime's for unassigned code points and a
    few spacing marks, which only changes how such a character is spelled.
    """
    if ch in "\\\"'":
        return "\\" + ch
    if ch == "\t":
        return "\\t"
    if ch == "\n":
        return "\\n"
    if ch == "\r":
        return "\\r"
    category = unicodedata.category(ch)
    if category in ("Cc", "Mn", "Me") or (ch != " " and not ch.isprintable()):
        return f"\\u{{{ord(ch):x}}}"
    return ch


def _format_float(x: float, single: bool) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if single:
        digits = repr(x)
        for precision in range(1, 10):
            candidate = f"{x:.{precision}g}"
            if struct.unpack("<f", struct.pack("<f", float(candidate)))[0] == x:
                digits = candidate
                break
    else:
        digits = repr(x)
    text = format(Decimal(digits), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _label(label: str) -> str:
    return f"%{label}" if label in KEYWORDS else label


def format_value(value: Any, t: ValType, *, boxed: bool = False) -> str:
    """The WIT value syntax of ``value``, a Python value of type ``t``."""
    if isinstance(t, Bool):
        return "true" if value else "false"
    if type(t) in _INT_RANGES:
        return str(int(value))
    if isinstance(t, F32 | F64):
        return _format_float(float(value), isinstance(t, F32))
    if isinstance(t, Char):
        return "'" + "".join(_escape_char(c) for c in value) + "'"
    if isinstance(t, String):
        return '"' + "".join(_escape_char(c) for c in value) + '"'
    if isinstance(t, List):
        return "[" + ", ".join(format_value(v, t.t) for v in value) + "]"
    if isinstance(t, Map):
        pair = Tuple((t.k, t.v))
        return "[" + ", ".join(format_value(v, pair) for v in value) + "]"
    if isinstance(t, Tuple):
        return "(" + ", ".join(format_value(v, et) for v, et in zip(value, t.ts, strict=True)) + ")"
    if isinstance(t, Record):
        parts = []
        for f in t.fields:
            v = _field(value, f.label)
            if isinstance(f.t, Option) and v is None:
                continue
            parts.append(f"{f.label}: {format_value(v, f.t)}")
        return "{" + ", ".join(parts) + "}" if parts else "{:}"
    if isinstance(t, Flags):
        return "{" + ", ".join(lb for lb in t.labels if _field(value, lb)) + "}"
    if isinstance(t, Enum):
        return _label(str(value))
    if isinstance(t, Variant):
        kind = value["kind"]
        for case in t.cases:
            if case.label == kind:
                if case.t is None:
                    return _label(kind)
                return f"{_label(kind)}({format_value(value.get('value'), case.t)})"
        raise ValueError(f"unknown variant case {kind!r}")
    if isinstance(t, Option):
        if boxed:
            if value["kind"] == "none":
                return "none"
            return f"some({format_value(value.get('value'), t.t, boxed=True)})"
        if value is None:
            return "none"
        return f"some({format_value(value, t.t, boxed=True)})"
    if isinstance(t, Result):
        kind = str(value["kind"])
        payload_type = t.ok if kind == "ok" else t.error
        if payload_type is None:
            return kind
        return f"{kind}({format_value(value.get('value'), payload_type)})"
    raise ValueError(f"values of type {format_type(t)} have no WIT value syntax")


def _field(value: Mapping[str, Any], label: str) -> Any:
    return value.get(label.replace("-", "_"))


def format_results(value: Any, result: ValType | None) -> str:
    """How ``wasmtime run --invoke`` prints a function's results: the value, or ``()``."""
    if result is None:
        return "()"
    return format_value(value, result)


def format_type(t: ValType) -> str:
    """A short WIT spelling of ``t`` for error messages."""
    simple = {
        Bool: "bool",
        U8: "u8",
        U16: "u16",
        U32: "u32",
        U64: "u64",
        S8: "s8",
        S16: "s16",
        S32: "s32",
        S64: "s64",
        F32: "f32",
        F64: "f64",
        Char: "char",
        String: "string",
    }.get(type(t))
    if simple is not None:
        return simple
    if isinstance(t, List):
        return f"list<{format_type(t.t)}>" if t.l is None else f"list<{format_type(t.t)}, {t.l}>"
    if isinstance(t, Map):
        return f"map<{format_type(t.k)}, {format_type(t.v)}>"
    if isinstance(t, Tuple):
        return "tuple<" + ", ".join(format_type(x) for x in t.ts) + ">"
    if isinstance(t, Option):
        return f"option<{format_type(t.t)}>"
    if isinstance(t, Result):
        ok = "_" if t.ok is None else format_type(t.ok)
        if t.error is None:
            return "result" if t.ok is None else f"result<{ok}>"
        return f"result<{ok}, {format_type(t.error)}>"
    if isinstance(t, Record):
        return "record { " + ", ".join(f"{f.label}: {format_type(f.t)}" for f in t.fields) + " }"
    if isinstance(t, Variant):
        cases = ", ".join(
            c.label if c.t is None else f"{c.label}({format_type(c.t)})" for c in t.cases
        )
        return "variant { " + cases + " }"
    if isinstance(t, Enum):
        return "enum { " + ", ".join(t.labels) + " }"
    if isinstance(t, Flags):
        return "flags { " + ", ".join(t.labels) + " }"
    return type(t).__name__.lower()
