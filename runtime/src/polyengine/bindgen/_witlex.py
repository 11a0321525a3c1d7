"""WIT text to tokens (WIT.md §"Lexical structure").

:func:`tokenize` drops whitespace and comments (``//`` lines, nested
``/* */`` blocks, doc comments alike) and yields identifiers (a
``%``-escaped keyword is an identifier without its ``%``), keywords,
operators, numbers and versions, string literals and ``@`` attributes, each
with the :class:`Span` it starts at. Every error is a :class:`WitError`
naming ``file:line:col``.
"""

from __future__ import annotations

from dataclasses import dataclass

KEYWORDS = frozenset(
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
        "from",
        "func",
        "future",
        "import",
        "include",
        "interface",
        "list",
        "map",
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
    ]
)
PRIMITIVES = frozenset(
    [
        "bool",
        "s8",
        "s16",
        "s32",
        "s64",
        "u8",
        "u16",
        "u32",
        "u64",
        "f32",
        "f64",
        "char",
        "string",
        "error-context",
    ]
)
_PUNCT = set("=,:;(){}<>*/.@_")


class WitError(ValueError):
    """Malformed or unresolvable WIT: the message starts with ``file:line:col:``."""


@dataclass(frozen=True, slots=True)
class Span:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def fail(span: Span, message: str) -> WitError:
    return WitError(f"{span}: {message}")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "id", "kw", "punct", "num", "str", "attr", "eof"
    text: str
    span: Span
    escaped: bool = False


def _is_id_start(ch: str) -> bool:
    return ch.isascii() and ch.isalpha()


def _is_id_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "-")


def tokenize(text: str, file: str) -> list[Token]:
    """The tokens of ``text``, comments and whitespace dropped, ending with an ``eof`` token."""
    out: list[Token] = []
    i, line, col = 0, 1, 1
    n = len(text)

    def advance(k: int) -> None:
        nonlocal i, line, col
        for _ in range(k):
            if text[i] == "\n":
                line, col = line + 1, 1
            else:
                col += 1
            i += 1

    while i < n:
        ch = text[i]
        span = Span(file, line, col)
        if ch in " \t\r\n":
            advance(1)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                advance(1)
        elif text.startswith("/*", i):
            depth = 0
            while True:
                if i >= n:
                    raise fail(span, "unterminated block comment")
                if text.startswith("/*", i):
                    depth += 1
                    advance(2)
                elif text.startswith("*/", i):
                    depth -= 1
                    advance(2)
                    if depth == 0:
                        break
                else:
                    advance(1)
        elif text.startswith("->", i):
            out.append(Token("punct", "->", span))
            advance(2)
        elif ch == "@" and i + 1 < n and _is_id_start(text[i + 1]):
            j = i + 1
            while j < n and _is_id_char(text[j]):
                j += 1
            out.append(Token("attr", text[i:j], span))
            advance(j - i)
        elif ch in _PUNCT:
            out.append(Token("punct", ch, span))
            advance(1)
        elif ch.isdigit():
            # A number, or a version: digits, letters, '.', '+' and '-' (a '.' only
            # when more version text follows, so ``@1.0.0.{a}`` ends before ``.{``).
            j = i
            while j < n and (
                (text[j].isascii() and (text[j].isalnum() or text[j] in "+-"))
                or (
                    text[j] == "." and j + 1 < n and text[j + 1].isascii() and text[j + 1].isalnum()
                )
            ):
                j += 1
            out.append(Token("num", text[i:j], span))
            advance(j - i)
        elif ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\n":
                    break
                j += 2 if text[j] == "\\" else 1
            if j >= n or text[j] != '"':
                raise fail(span, "unterminated string literal")
            out.append(Token("str", text[i + 1 : j], span))
            advance(j + 1 - i)
        elif ch == "%" or _is_id_start(ch):
            escaped = ch == "%"
            j = i + 1 if escaped else i
            if j >= n or not _is_id_start(text[j]):
                raise fail(span, "expected an identifier after '%'")
            while j < n and _is_id_char(text[j]):
                j += 1
            word = text[i + 1 if escaped else i : j]
            _check_kebab(word, span)
            if not escaped and word in KEYWORDS:
                out.append(Token("kw", word, span))
            else:
                out.append(Token("id", word, span, escaped))
            advance(j - i)
        else:
            raise fail(span, f"unexpected character {ch!r}")
    out.append(Token("eof", "", Span(file, line, col)))
    return out


def _check_kebab(word: str, span: Span) -> None:
    """A WIT identifier: kebab-case words, each all lower- or uppercase (WIT.md §Identifiers)."""
    for part in word.split("-"):
        if not part or not part[0].isalpha() or not (part.islower() or part.isupper()):
            raise fail(span, f"{word!r} is not a valid identifier (kebab-case words expected)")
