"""Probe components of the conventions suite, in the component text format.

Most probes are *forwarders* built by :func:`forwarder`: the component
imports an interface and exports, at the world level, functions of the same
types whose core code only passes its flat arguments on to the lowered
import and hands the result back. A call from the embedder therefore crosses
the boundary four times (embedder → guest lowering, guest → host lifting,
host → guest lowering, guest → embedder lifting), and the probe host sees
what the engine made of each value on the way in.

The flat core signatures come from a small reading of the type expressions
(CanonicalABI.md §Flattening): the forwarder must declare exactly the core
types the canonical ABI assigns, or the component does not validate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..wat_probes import LIBC, OPTS

RETAREA = 1024
MAX_FLAT_PARAMS = 16
MAX_FLAT_RESULTS = 1

# --------------------------------------------------------------------------
# Type expressions and their flattening

SExpr = str | list["SExpr"]


def parse_sexpr(text: str) -> SExpr:
    """Read one s-expression of the text format (atoms keep their quotes)."""
    tokens: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "()":
            tokens.append(ch)
            i += 1
        elif ch == '"':
            j = text.index('"', i + 1)
            tokens.append(text[i : j + 1])
            i = j + 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in "()":
                j += 1
            tokens.append(text[i:j])
            i = j
    pos = 0

    def read() -> SExpr:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok != "(":
            return tok
        items: list[SExpr] = []
        while tokens[pos] != ")":
            items.append(read())
        pos += 1
        return items

    return read()


_I32_PRIMS = {"bool", "s8", "u8", "s16", "u16", "s32", "u32", "char", "error-context"}


def _join(a: str, b: str) -> str:
    if a == b:
        return a
    if {a, b} == {"i32", "f32"}:
        return "i32"
    return "i64"


def _flatten_variant(cases: list[SExpr | None], types: dict[str, SExpr]) -> list[str]:
    flat: list[str] = []
    for case in cases:
        if case is None:
            continue
        for i, ft in enumerate(flatten(case, types)):
            if i < len(flat):
                flat[i] = _join(flat[i], ft)
            else:
                flat.append(ft)
    return ["i32", *flat]


def flatten(t: SExpr, types: dict[str, SExpr]) -> list[str]:
    """The flat core types of a value type (CanonicalABI.md §Flattening)."""
    if isinstance(t, str):
        if t.startswith("$"):
            return flatten(types[t], types)
        if t in _I32_PRIMS:
            return ["i32"]
        if t in ("s64", "u64"):
            return ["i64"]
        if t in ("f32", "f64"):
            return [t]
        if t == "string":
            return ["i32", "i32"]
        raise ValueError(f"unknown type {t}")
    head, args = t[0], t[1:]
    if head in ("list", "map"):
        return ["i32", "i32"]
    if head == "record":
        out: list[str] = []
        for f in args:
            assert isinstance(f, list)
            out += flatten(f[2], types)
        return out
    if head == "tuple":
        return [ft for a in args for ft in flatten(a, types)]
    if head in ("enum", "own", "borrow", "stream", "future"):
        return ["i32"]
    if head == "flags":
        assert len(args) <= 32
        return ["i32"]
    if head == "option":
        return _flatten_variant([None, args[0]], types)
    if head == "result":
        ok: SExpr | None = None
        err: SExpr | None = None
        for a in args:
            if isinstance(a, list) and a[0] == "error":
                err = a[1]
            else:
                ok = a
        return _flatten_variant([ok, err], types)
    if head == "variant":
        cases: list[SExpr | None] = []
        for c in args:
            assert isinstance(c, list)
            cases.append(c[2] if len(c) > 2 else None)
        return _flatten_variant(cases, types)
    raise ValueError(f"unknown type {head}")


# --------------------------------------------------------------------------
# The forwarder builder


@dataclass
class Func:
    """One forwarded function: ``export`` calls the import ``name`` of the interface."""

    name: str
    params: list[tuple[str, str]]
    result: str | None = None
    export: str = ""
    is_async: bool = False

    def signature(self) -> str:
        ps = " ".join(f'(param "{n}" {t})' for n, t in self.params)
        rs = f" (result {self.result})" if self.result else ""
        return f"{'async ' if self.is_async else ''}{ps}{rs}".strip()


@dataclass
class Interface:
    """An imported interface: named types (``(name, definition)``) and functions."""

    key: str
    types: list[tuple[str, str]] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    funcs: list[Func] = field(default_factory=list)


def _core_sig(func: Func, types: dict[str, SExpr], lower: bool) -> tuple[list[str], list[str]]:
    params = [ft for _, t in func.params for ft in flatten(parse_sexpr(t), types)]
    if len(params) > MAX_FLAT_PARAMS:
        params = ["i32"]
    results = flatten(parse_sexpr(func.result), types) if func.result else []
    if len(results) > MAX_FLAT_RESULTS:
        if lower:
            return [*params, "i32"], []
        return params, ["i32"]
    return params, results


def _wat_sig(params: list[str], results: list[str]) -> str:
    ps = f"(param {' '.join(params)})" if params else ""
    rs = f"(result {' '.join(results)})" if results else ""
    return f"{ps} {rs}".strip()


def forwarder(
    interfaces: list[Interface],
    extra: str = "",
    bare: list[Func] | None = None,
    bare_resources: tuple[str, ...] = (),
) -> str:
    """A component re-exporting every function of ``interfaces`` through core code.

    Named types are exported by the import's instance type and aliased out,
    so the world-level exports name the same types. A function whose
    ``export`` is set is exported under that name (a resource constructor,
    method or static forwarded as a plain function).
    """
    parts: list[str] = [LIBC]
    core_imports: list[str] = []
    core_funcs: list[str] = []
    with_items: list[str] = []
    exports: list[str] = []
    sections = {
        "core_imports": core_imports,
        "core_funcs": core_funcs,
        "with_items": with_items,
        "exports": exports,
    }
    for rname in bare_resources:
        parts.append(f'(import "{rname}" (type ${rname} (sub resource)))')
        _resource_drop(rname, parts, **sections)
    for func in bare or []:
        ident = "w." + _ident(func.name)
        parts.append(f'(import "{func.name}" (func ${ident} {func.signature()}))')
        parts.append(f"(core func ${ident} (canon lower (func ${ident}) {OPTS}))")
        _forward(func, ident, {}, **sections)
    for n, iface in enumerate(interfaces, start=1):
        inst = f"$if{n}"
        types: dict[str, SExpr] = {}
        decls: list[str] = []
        for rname in iface.resources:
            decls.append(f'(export "{rname}" (type ${rname} (sub resource)))')
        for tname, tdef in iface.types:
            types[f"${tname}"] = parse_sexpr(tdef)
            decls.append(f"(type ${tname}-def {tdef})")
            decls.append(f'(export "{tname}" (type ${tname} (eq ${tname}-def)))')
        for func in iface.funcs:
            decls.append(f'(export "{func.name}" (func {func.signature()}))')
        parts.append(f'(import "{iface.key}" (instance {inst} {" ".join(decls)}))')
        for rname in iface.resources:
            parts.append(f'(alias export {inst} "{rname}" (type ${rname}))')
            _resource_drop(rname, parts, **sections)
        for tname, _ in iface.types:
            parts.append(f'(alias export {inst} "{tname}" (type ${tname}))')
        for func in iface.funcs:
            ident = f"f{n}." + _ident(func.name)
            parts.append(f'(alias export {inst} "{func.name}" (func ${ident}))')
            parts.append(f"(core func ${ident} (canon lower (func ${ident}) {OPTS}))")
            _forward(func, ident, types, **sections)
    parts.append("(core module $m\n" + "\n".join(core_imports) + "\n" + "\n".join(core_funcs) + ")")
    parts.append(
        f'(core instance $core (instantiate $m (with "h" (instance {" ".join(with_items)}))))'
    )
    parts.append(extra)
    parts.extend(exports)
    return "(component\n" + "\n".join(parts) + "\n)"


def _forward(
    func: Func,
    ident: str,
    types: dict[str, SExpr],
    *,
    core_imports: list[str],
    core_funcs: list[str],
    with_items: list[str],
    exports: list[str],
) -> None:
    """The core import, forwarding body and lifted export of one function."""
    lp, lr = _core_sig(func, types, lower=True)
    core_imports.append(f'(import "h" "{ident}" (func ${ident} {_wat_sig(lp, lr)}))')
    with_items.append(f'(export "{ident}" (func ${ident}))')
    xp, xr = _core_sig(func, types, lower=False)
    args = " ".join(f"(local.get {i})" for i in range(len(xp)))
    tail = ""
    if len(lp) > len(xp):
        args += f" (i32.const {RETAREA})"
        tail = f"(i32.const {RETAREA})"
    # A borrow of a resource this component does not define arrives as a
    # handle the callee must drop before it returns (CanonicalABI.md §lift_borrow).
    drops = ""
    if len(xp) == len([ft for _, t in func.params for ft in flatten(parse_sexpr(t), types)]):
        for i, (_, t) in enumerate(func.params):
            m = re.fullmatch(r"\(borrow \$([\w-]+)\)", t)
            if m:
                drops += f" (call $drop.{m[1]} (local.get {_flat_index(func, i, types)}))"
    export = func.export or func.name
    core_funcs.append(
        f'(func (export "{export}") {_wat_sig(xp, xr)} (call ${ident} {args}){drops} {tail})'
    )
    exports.append(
        f'(func (export "{export}") {func.signature()}'
        f' (canon lift (core func $core "{export}") {OPTS}))'
    )


def _flat_index(func: Func, param: int, types: dict[str, SExpr]) -> int:
    """The index of a parameter's first flat value."""
    return sum(len(flatten(parse_sexpr(t), types)) for _, t in func.params[:param])


def _ident(name: str) -> str:
    """A text-format identifier for an import name such as ``[method]cell.get``."""
    return re.sub(r"[^a-z0-9-]+", ".", name).strip(".")


def _resource_drop(
    rname: str,
    parts: list[str],
    *,
    core_imports: list[str],
    core_funcs: list[str],
    with_items: list[str],
    exports: list[str],
) -> None:
    """``resource.drop`` for an imported resource, exported as ``drop-<name>``."""
    parts.append(f"(core func $drop.{rname} (canon resource.drop ${rname}))")
    core_imports.append(f'(import "h" "drop.{rname}" (func $drop.{rname} (param i32)))')
    with_items.append(f'(export "drop.{rname}" (func $drop.{rname}))')
    exports.append(
        f'(func (export "drop-{rname}") (param "h" (own ${rname}))'
        f" (canon lift (core func $drop.{rname})))"
    )
