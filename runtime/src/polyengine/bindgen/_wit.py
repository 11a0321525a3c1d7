"""A component's world as WIT text that ``wasm-tools`` parses back to the same world (WIT.md).

The layout is ``wasm-tools component wit``'s: ``package root:component;``
and ``world root`` listing the imports and exports, then one nested
``package`` block per interface package. Types are structural in the
component model, so a type an interface shares with an earlier one (the
same structure under the same name, or the same resource) is written as a
``use`` of the earlier interface, as the WIT it came from most likely said;
either spelling is the same world (the same ``pe-world/1`` digest).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from polyengine.bindgen._names import parse_func_name
from polyengine.translate import Plan
from polyengine.translate.plan import ExternDesc, FuncDesc, InstanceDesc, TypeDesc
from polyengine.types.model import Enum, Flags, Record, Result, ValType, Variant
from polyengine.types.wit_text import WitNames, functype_to_wit, ident, typedef_to_wit

_IFACE = re.compile(r"^(?P<ns>[^:/@]+):(?P<pkg>[^/@]+)/(?P<name>[^@]+)(?:@(?P<ver>.+))?$")
_NOMINAL = (Record, Variant, Enum, Flags)


@dataclass
class _Defined:
    """What earlier interfaces define: structures and resources, by where and under what name."""

    types: dict[tuple[ValType, str], str] = field(default_factory=dict)
    resources: dict[int, tuple[str, str]] = field(default_factory=dict)


def _package_of(key: str) -> str | None:
    m = _IFACE.match(key)
    if m is None:
        return None
    return f"{m['ns']}:{m['pkg']}" + (f"@{m['ver']}" if m["ver"] else "")


def _qualified(key: str) -> str:
    """An interface id as WIT spells it (``%``-escaping a keyword interface name)."""
    m = _IFACE.match(key)
    if m is None:
        return ident(key)
    return f"{m['ns']}:{m['pkg']}/{ident(m['name'])}" + (f"@{m['ver']}" if m["ver"] else "")


def _ref(source: str, here: str | None) -> str:
    """How interface ``here`` names interface ``source`` in a ``use``."""
    m = _IFACE.match(source)
    if m is not None and here is not None and _package_of(source) == _package_of(here):
        return ident(m["name"])
    return _qualified(source)


def _body(key: str | None, desc: InstanceDesc, defined: _Defined, indent: str) -> str:
    """The items of an interface (``key`` is ``None`` for an inline one)."""
    names = WitNames()
    uses: dict[str, list[str]] = {}
    typedefs: list[str] = []
    resources: dict[str, list[str]] = {}
    res_order: list[str] = []
    inner = indent + "  "
    for n, d in desc.exports:
        if not isinstance(d, TypeDesc):
            continue
        if d.resource is not None:
            names.resources.setdefault(d.resource, n)
            found = defined.resources.get(d.resource)
            if found is not None and found[0] != key:
                src, orig = found
                item = ident(orig) if orig == n else f"{ident(orig)} as {ident(n)}"
                uses.setdefault(src, []).append(item)
            else:
                if key is not None:
                    defined.resources.setdefault(d.resource, (key, n))
                resources[n] = []
                res_order.append(n)
        elif d.type is not None:
            t = d.type
            found_src = defined.types.get((t, n)) if isinstance(t, _NOMINAL) else None
            names.types.setdefault(t, n)
            if found_src is not None and found_src != key:
                uses.setdefault(found_src, []).append(ident(n))
                continue
            if key is not None and isinstance(t, _NOMINAL):
                defined.types.setdefault((t, n), key)
            own = names.copy()
            if own.types.get(t) == n:
                own.types.pop(t)
            typedefs.append(typedef_to_wit(n, t, own, inner))
    funcs: list[str] = []
    for n, d in desc.exports:
        if not isinstance(d, FuncDesc):
            continue
        fn = parse_func_name(n)
        ft = d.type
        if fn.kind == "func" or fn.resource not in resources:
            funcs.append(f"{inner}{ident(fn.name)}: {functype_to_wit(ft, names)};\n")
            continue
        members = resources[fn.resource]
        if fn.kind == "constructor":
            sig = functype_to_wit(ft, names)
            params = sig[sig.index("(") : _close(sig, sig.index("(")) + 1]
            suffix = ""
            if isinstance(ft.result, Result):
                suffix = sig[_close(sig, sig.index("(")) + 1 :]
            members.append(f"{inner}  constructor{params}{suffix};\n")
        elif fn.kind == "method":
            members.append(
                f"{inner}  {ident(fn.name)}: {functype_to_wit(ft, names, skip_self=True)};\n"
            )
        else:
            members.append(f"{inner}  {ident(fn.name)}: static {functype_to_wit(ft, names)};\n")
    out: list[str] = []
    if uses:
        out.append(
            "".join(
                f"{inner}use {_ref(src, key)}.{{{', '.join(items)}}};\n"
                for src, items in uses.items()
            )
        )
    out.extend(typedefs)
    for r in res_order:
        body = "".join(resources[r])
        out.append(f"{inner}resource {ident(r)}" + (f" {{\n{body}{inner}}}\n" if body else ";\n"))
    if funcs:
        out.append("".join(funcs))
    return "\n".join(out)


def _close(text: str, start: int) -> int:
    """The index of the parenthesis closing the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise AssertionError(text)


def render_wit(plan: Plan) -> str:
    """The WIT text of ``plan``'s world (see the module docstring)."""
    defined = _Defined()
    world: list[str] = []
    interfaces: dict[str, str] = {}
    sections: tuple[tuple[str, list[tuple[str, ExternDesc]]], ...] = (
        ("import", [(i.name, i.desc) for i in plan.imports]),
        ("export", [(e.name, e.desc) for e in plan.exports]),
    )
    world_names = WitNames()
    for direction, items in sections:
        lines: list[str] = []
        for name, desc in items:
            if isinstance(desc, InstanceDesc):
                if _IFACE.match(name) is not None:
                    if name not in interfaces:
                        interfaces[name] = _body(name, desc, defined, "  ")
                    lines.append(f"  {direction} {_qualified(name)};\n")
                else:
                    body = _body(None, desc, defined, "  ")
                    lines.append(f"  {direction} {ident(name)}: interface {{\n{body}  }}\n")
            elif isinstance(desc, TypeDesc) and desc.type is not None:
                world_names.types.setdefault(desc.type, name)
                src = defined.types.get((desc.type, name))
                if src is not None:
                    lines.append(f"  use {_qualified(src)}.{{{ident(name)}}};\n")
                else:
                    own = world_names.copy()
                    own.types.pop(desc.type, None)
                    lines.append(typedef_to_wit(name, desc.type, own, "  "))
            elif isinstance(desc, TypeDesc) and desc.resource is not None:
                world_names.resources.setdefault(desc.resource, name)
                found = defined.resources.get(desc.resource)
                if found is not None:
                    lines.append(f"  use {_qualified(found[0])}.{{{ident(found[1])}}};\n")
            elif isinstance(desc, FuncDesc):
                sig = functype_to_wit(desc.type, world_names)
                lines.append(f"  {direction} {ident(parse_func_name(name).name)}: {sig};\n")
        world.extend(lines)
    out = ["package root:component;\n\n", "world root {\n", *world, "}\n"]
    packages: dict[str, list[tuple[str, str]]] = {}
    for key, body in interfaces.items():
        m = _IFACE.match(key)
        assert m is not None
        pkg = _package_of(key)
        assert pkg is not None
        packages.setdefault(pkg, []).append((m["name"], body))
    for pkg in sorted(packages):
        chunks = [f"  interface {ident(name)} {{\n{body}  }}\n" for name, body in packages[pkg]]
        out.append(f"package {pkg} {{\n" + "\n".join(chunks) + "}\n")
    return "".join(out)


__all__ = ["render_wit"]
