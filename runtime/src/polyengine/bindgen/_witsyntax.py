"""WIT tokens to syntax trees: the parser (WIT.md §"Top-level items" and the items' sections).

:func:`parse_file` turns one ``.wit`` file into a :class:`File`: its package
declaration, its top-level ``use``s, interfaces and worlds, and its nested
``package a:b { ... }`` blocks. Names are kept as written (a ``%``-escaped
keyword loses its ``%``). Feature gates (``@since``, ``@deprecated``) and
``@external-id`` are read and accepted; an item gated ``@unstable`` is left
out, as tools do when no feature is enabled. Every node carries the
:class:`Span` it starts at, so a later error names ``file:line:col``; any
malformed input raises :class:`WitError` naming where and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from polyengine.bindgen._witlex import PRIMITIVES, Span, Token, WitError, fail, tokenize

__all__ = ["Span", "WitError", "fail", "parse_file"]

# -- syntax trees ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Name:
    text: str
    span: Span


@dataclass(frozen=True, slots=True)
class PackageName:
    namespace: str
    name: str
    version: str | None
    span: Span

    @property
    def key(self) -> str:
        return f"{self.namespace}:{self.name}" + (f"@{self.version}" if self.version else "")


@dataclass(frozen=True, slots=True)
class UsePath:
    """``iface`` alone (local) or ``ns:pkg/iface@ver`` (``package`` set)."""

    package: PackageName | None
    name: Name


@dataclass(frozen=True, slots=True)
class TyNamed:
    name: Name


@dataclass(frozen=True, slots=True)
class TyPrim:
    name: str


@dataclass(frozen=True, slots=True)
class TyApp:
    """A type constructor: ``list``, ``option``, ``result``, ``tuple``, ``map``, ``own``,
    ``borrow``, ``future``, ``stream``; ``args`` may hold ``None`` (``result<_, e>``)."""

    ctor: str
    args: tuple[Ty | None, ...]
    size: int | None
    span: Span


Ty: TypeAlias = TyNamed | TyPrim | TyApp


@dataclass(frozen=True, slots=True)
class FuncSig:
    params: tuple[tuple[Name, Ty], ...]
    result: Ty | None
    is_async: bool


@dataclass(frozen=True, slots=True)
class FuncItem:
    name: Name
    sig: FuncSig
    kind: str = "func"  # "func", "method", "static", "constructor"


@dataclass(frozen=True, slots=True)
class UseItem:
    path: UsePath
    names: tuple[tuple[Name, Name | None], ...]
    span: Span


@dataclass(frozen=True, slots=True)
class TypeItem:
    """A named type: ``kind`` is record/variant/enum/flags/resource/alias."""

    name: Name
    kind: str
    fields: tuple[tuple[Name, Ty], ...] = ()
    cases: tuple[tuple[Name, Ty | None], ...] = ()
    target: Ty | None = None
    funcs: tuple[FuncItem, ...] = ()


InterfaceMember: TypeAlias = UseItem | TypeItem | FuncItem


@dataclass(frozen=True, slots=True)
class InterfaceDecl:
    name: Name
    items: tuple[InterfaceMember, ...]


@dataclass(frozen=True, slots=True)
class ExternItem:
    """A world ``import``/``export``: of an interface by path (``name`` is ``None``), or
    named: a function, an inline interface, or an interface by path (``implements``)."""

    direction: str
    span: Span
    name: Name | None = None
    path: UsePath | None = None
    func: FuncSig | None = None
    inline: tuple[InterfaceMember, ...] | None = None


@dataclass(frozen=True, slots=True)
class IncludeItem:
    path: UsePath
    renames: tuple[tuple[Name, Name], ...]
    span: Span


WorldMember: TypeAlias = ExternItem | UseItem | TypeItem | IncludeItem


@dataclass(frozen=True, slots=True)
class WorldDecl:
    name: Name
    items: tuple[WorldMember, ...]


@dataclass(frozen=True, slots=True)
class TopUse:
    path: UsePath
    alias: Name | None
    span: Span


@dataclass
class PackageBody:
    """The items of one package in one file (the file's own, or a nested block's)."""

    name: PackageName | None
    uses: list[TopUse] = field(default_factory=list)
    interfaces: list[InterfaceDecl] = field(default_factory=list)
    worlds: list[WorldDecl] = field(default_factory=list)


@dataclass
class File:
    path: str
    body: PackageBody
    nested: list[PackageBody] = field(default_factory=list)


# -- the parser --------------------------------------------------------------------------


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.toks = tokens
        self.pos = 0

    # -- token access

    def peek(self, k: int = 0) -> Token:
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def next(self) -> Token:
        tok = self.peek()
        self.pos += 1
        return tok

    def at(self, text: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind in ("punct", "kw") and tok.text == text

    def eat(self, text: str) -> bool:
        if self.at(text):
            self.pos += 1
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> Token:
        tok = self.peek()
        if not self.at(text):
            raise fail(tok.span, f"expected {what or repr(text)}, found {_describe(tok)}")
        return self.next()

    def ident(self, what: str = "an identifier") -> Name:
        tok = self.peek()
        if tok.kind != "id":
            hint = (
                " (write %" + tok.text + " to use a keyword as a name)" if tok.kind == "kw" else ""
            )
            raise fail(tok.span, f"expected {what}, found {_describe(tok)}{hint}")
        self.pos += 1
        return Name(tok.text, tok.span)

    # -- gates and attributes

    def attributes(self) -> bool:
        """Read ``@since``, ``@unstable``, ``@deprecated`` and ``@external-id``: whether the item
        is ``@unstable`` (WIT.md §"Feature gates": left out unless its feature is enabled, and
        no feature is)."""
        unstable = False
        while self.peek().kind == "attr":
            tok = self.next()
            if tok.text not in ("@since", "@unstable", "@deprecated", "@external-id"):
                raise fail(tok.span, f"unknown attribute {tok.text}")
            self.expect("(")
            if tok.text == "@external-id":
                if self.peek().kind != "str":
                    raise fail(self.peek().span, "expected a string literal")
                self.next()
            else:
                key = self.peek()
                expected = "feature" if tok.text == "@unstable" else "version"
                if key.kind != "id" or key.text != expected:
                    raise fail(key.span, f"expected '{expected} = ...' in {tok.text}")
                self.next()
                self.expect("=")
                val = self.next()
                if val.kind not in ("id", "num"):
                    raise fail(val.span, f"expected a {expected}, found {_describe(val)}")
                unstable = unstable or tok.text == "@unstable"
            self.expect(")")
        return unstable

    # -- files and packages

    def file(self, path: str) -> File:
        body = PackageBody(None)
        out = File(path, body)
        self.attributes()
        if self.at("package"):
            start = self.pos
            self.next()
            name = self.package_name()
            if self.at("{"):
                self.pos = start
            else:
                self.expect(";", "';' after the package declaration")
                body.name = name
        while self.peek().kind != "eof":
            if self.peek().kind == "attr":
                self.package_item(body, self.attributes())
                continue
            if self.at("package"):
                self.next()
                name = self.package_name()
                self.expect("{", "'{' opening the package block")
                nested = PackageBody(name)
                while not self.eat("}"):
                    if self.peek().kind == "eof":
                        raise fail(self.peek().span, "expected '}' closing the package block")
                    self.package_item(nested, self.attributes())
                out.nested.append(nested)
            else:
                self.package_item(body, False)
        return out

    def package_name(self) -> PackageName:
        first = self.ident("a package namespace")
        self.expect(":", "':' in the package name")
        name = self.ident("a package name")
        while self.at(":") and self.peek(1).kind == "id":
            self.next()
            name = Name(f"{name.text}:{self.next().text}", name.span)
        version = self.version() if self.eat("@") else None
        return PackageName(first.text, name.text, version, first.span)

    def version(self) -> str:
        tok = self.peek()
        if tok.kind != "num":
            raise fail(tok.span, f"expected a version, found {_describe(tok)}")
        self.next()
        parts = tok.text.split("+", 1)[0].split("-", 1)[0].split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise fail(tok.span, f"{tok.text!r} is not a semantic version (major.minor.patch)")
        return tok.text

    def package_item(self, body: PackageBody, gated: bool) -> None:
        tok = self.peek()
        counts = (len(body.interfaces), len(body.worlds))
        if self.eat("interface"):
            name = self.ident("an interface name")
            body.interfaces.append(InterfaceDecl(name, self.interface_body()))
        elif self.eat("world"):
            name = self.ident("a world name")
            body.worlds.append(WorldDecl(name, self.world_body()))
        elif self.eat("use"):
            path = self.use_path()
            alias = self.ident() if self.eat("as") else None
            self.expect(";")
            body.uses.append(TopUse(path, alias, tok.span))
        else:
            raise fail(
                tok.span,
                f"expected 'interface', 'world', 'use' or 'package', found {_describe(tok)}",
            )
        if gated:
            del body.interfaces[counts[0] :]
            del body.worlds[counts[1] :]

    def use_path(self) -> UsePath:
        first = self.ident("an interface name or package path")
        if not self.at(":"):
            return UsePath(None, first)
        self.next()
        pkg = self.ident("a package name")
        while self.at(":") and self.peek(1).kind == "id":
            self.next()
            pkg = Name(f"{pkg.text}:{self.next().text}", pkg.span)
        self.expect("/", "'/' and an interface name")
        iface = self.ident("an interface name")
        version = self.version() if self.eat("@") else None
        return UsePath(PackageName(first.text, pkg.text, version, first.span), iface)

    # -- interfaces

    def interface_body(self) -> tuple[InterfaceMember, ...]:
        self.expect("{", "'{'")
        items: list[InterfaceMember] = []
        while not self.eat("}"):
            gated, count = self.attributes(), len(items)
            tok = self.peek()
            if tok.kind == "eof":
                raise fail(tok.span, "expected '}' closing the interface")
            if tok.kind == "kw" and self.at(":", 1):
                self.ident("a name")
            if self.at("use"):
                items.append(self.use_item())
            elif tok.kind == "kw" and tok.text in (
                "record",
                "variant",
                "enum",
                "flags",
                "resource",
                "type",
            ):
                items.append(self.type_item())
            elif tok.kind == "id":
                name = self.ident()
                self.expect(":", "':' after the function name")
                items.append(FuncItem(name, self.func_sig()))
                self.expect(";")
            else:
                raise fail(tok.span, f"expected a type, function or 'use', found {_describe(tok)}")
            if gated:
                del items[count:]
        return tuple(items)

    def use_item(self) -> UseItem:
        start = self.expect("use")
        path = self.use_path()
        self.expect(".", "'.' and the names to use")
        self.expect("{")
        names: list[tuple[Name, Name | None]] = []
        while True:
            name = self.ident("a type name")
            alias = self.ident() if self.eat("as") else None
            names.append((name, alias))
            if not self.eat(","):
                break
            if self.at("}"):
                break
        self.expect("}")
        self.expect(";")
        return UseItem(path, tuple(names), start.span)

    def type_item(self) -> TypeItem:
        kw = self.next().text
        name = self.ident("a type name")
        if kw == "type":
            self.expect("=")
            target = self.ty()
            self.expect(";")
            return TypeItem(name, "alias", target=target)
        if kw == "resource":
            if self.eat(";"):
                return TypeItem(name, "resource")
            self.expect("{", "'{' or ';'")
            funcs: list[FuncItem] = []
            while not self.eat("}"):
                gated, count = self.attributes(), len(funcs)
                tok = self.peek()
                if self.eat("constructor"):
                    params = self.params()
                    result = self.ty() if self.eat("->") else None
                    funcs.append(
                        FuncItem(
                            Name("constructor", tok.span),
                            FuncSig(params, result, False),
                            "constructor",
                        )
                    )
                elif tok.kind == "id":
                    fname = self.ident()
                    self.expect(":")
                    kind = "static" if self.eat("static") else "method"
                    funcs.append(FuncItem(fname, self.func_sig(), kind))
                else:
                    raise fail(
                        tok.span,
                        f"expected a method, 'constructor' or '}}', found {_describe(tok)}",
                    )
                self.expect(";")
                if gated:
                    del funcs[count:]
            return TypeItem(name, "resource", funcs=tuple(funcs))
        self.expect("{")
        if kw == "record":
            fields: list[tuple[Name, Ty]] = []
            while not self.at("}"):
                fname = self.ident("a field name")
                self.expect(":")
                fields.append((fname, self.ty()))
                if not self.eat(","):
                    break
            self.expect("}", "',' or '}'")
            return TypeItem(name, kw, fields=tuple(fields))
        cases: list[tuple[Name, Ty | None]] = []
        while not self.at("}"):
            label = self.ident("a case name")
            payload: Ty | None = None
            if kw == "variant" and self.eat("("):
                payload = self.ty()
                self.expect(")")
            cases.append((label, payload))
            if not self.eat(","):
                break
        end = self.expect("}", "',' or '}'")
        if not cases and kw in ("variant", "enum"):
            raise fail(end.span, f"{kw} {name.text!r} needs at least one case")
        return TypeItem(name, kw, cases=tuple(cases))

    def func_sig(self) -> FuncSig:
        is_async = self.eat("async")
        self.expect("func", "'func'")
        params = self.params()
        result = self.ty() if self.eat("->") else None
        return FuncSig(params, result, is_async)

    def params(self) -> tuple[tuple[Name, Ty], ...]:
        self.expect("(")
        out: list[tuple[Name, Ty]] = []
        while not self.at(")"):
            name = self.ident("a parameter name")
            self.expect(":")
            out.append((name, self.ty()))
            if not self.eat(","):
                break
        self.expect(")", "',' or ')'")
        return tuple(out)

    def ty(self) -> Ty:
        tok = self.peek()
        if tok.kind == "id":
            self.next()
            if tok.text == "error-context" and not tok.escaped:
                return TyPrim("error-context")
            return TyNamed(Name(tok.text, tok.span))
        if tok.kind != "kw":
            raise fail(tok.span, f"expected a type, found {_describe(tok)}")
        self.next()
        word = tok.text
        if word in PRIMITIVES:
            return TyPrim(word)
        if word in ("list", "option", "tuple", "map", "own", "borrow"):
            self.expect("<", f"'<' after {word}")
            args: list[Ty | None] = []
            size: int | None = None
            if word in ("own", "borrow"):
                args.append(TyNamed(self.ident("a resource name")))
            else:
                args.append(self.ty())
                while self.eat(","):
                    if word == "tuple" and self.at(">"):
                        break
                    if word == "list":
                        num = self.peek()
                        if num.kind != "num" or not num.text.isdigit() or int(num.text) == 0:
                            raise fail(
                                num.span,
                                "expected the length of the fixed-size list (a positive integer)",
                            )
                        self.next()
                        size = int(num.text)
                        break
                    args.append(self.ty())
            self.expect(">", "'>'")
            want = {"list": 1, "option": 1, "map": 2, "own": 1, "borrow": 1}.get(word)
            if want is not None and len(args) != want:
                raise fail(tok.span, f"{word} takes {want} type argument{'s' if want > 1 else ''}")
            return TyApp(word, tuple(args), size, tok.span)
        if word == "result":
            if not self.eat("<"):
                return TyApp("result", (None, None), None, tok.span)
            ok: Ty | None = None if self.eat("_") else self.ty()
            err: Ty | None = None
            if self.eat(","):
                err = self.ty()
            elif ok is None:
                raise fail(self.peek().span, "expected ',' and the error type after '_'")
            self.expect(">", "'>'")
            return TyApp("result", (ok, err), None, tok.span)
        if word in ("future", "stream"):
            if not self.eat("<"):
                return TyApp(word, (None,), None, tok.span)
            inner = self.ty()
            self.expect(">", "'>'")
            return TyApp(word, (inner,), None, tok.span)
        raise fail(tok.span, f"expected a type, found keyword {word!r}")

    # -- worlds

    def world_body(self) -> tuple[WorldMember, ...]:
        self.expect("{", "'{'")
        items: list[WorldMember] = []
        while not self.eat("}"):
            gated, count = self.attributes(), len(items)
            tok = self.peek()
            if tok.kind == "eof":
                raise fail(tok.span, "expected '}' closing the world")
            if self.at("import") or self.at("export"):
                items.append(self.extern_item())
            elif self.at("use"):
                items.append(self.use_item())
            elif self.eat("include"):
                path = self.use_path()
                renames: list[tuple[Name, Name]] = []
                if self.eat("with"):
                    self.expect("{")
                    while not self.at("}"):
                        old = self.ident()
                        self.expect("as")
                        renames.append((old, self.ident()))
                        if not self.eat(","):
                            break
                    self.expect("}")
                else:
                    self.expect(";", "';' or 'with'")
                items.append(IncludeItem(path, tuple(renames), tok.span))
            elif tok.kind == "kw" and tok.text in (
                "record",
                "variant",
                "enum",
                "flags",
                "resource",
                "type",
            ):
                items.append(self.type_item())
            else:
                raise fail(
                    tok.span,
                    "expected 'import', 'export', 'use', 'include' or a type, "
                    f"found {_describe(tok)}",
                )
            if gated:
                del items[count:]
        return tuple(items)

    def extern_item(self) -> ExternItem:
        tok = self.next()
        direction = tok.text
        first = self.peek()
        # ``import a:b/c;`` names a package path; ``import a: ...`` a plain name.
        if (
            first.kind == "id"
            and self.at(":", 1)
            and self.peek(2).kind == "id"
            and (self.at("/", 3) or self.at(":", 3))
        ):
            path = self.use_path()
            self.expect(";")
            return ExternItem(direction, tok.span, path=path)
        name = self.ident("an interface path or a name")
        if not self.eat(":"):
            self.expect(";", "';' or ':'")
            return ExternItem(direction, tok.span, path=UsePath(None, name))
        if self.at("func") or self.at("async"):
            sig = self.func_sig()
            self.expect(";")
            return ExternItem(direction, tok.span, name=name, func=sig)
        if self.eat("interface"):
            return ExternItem(direction, tok.span, name=name, inline=self.interface_body())
        path = self.use_path()
        self.expect(";")
        return ExternItem(direction, tok.span, name=name, path=path)


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "the end of the file"
    if tok.kind == "kw":
        return f"keyword {tok.text!r}"
    if tok.kind == "id":
        return f"identifier {tok.text!r}"
    return repr(tok.text)


def parse_file(text: str, path: str) -> File:
    """The syntax tree of the WIT file ``path`` with contents ``text``."""
    return _Parser(tokenize(text, path)).file(path)
