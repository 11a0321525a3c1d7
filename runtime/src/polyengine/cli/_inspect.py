"""``polyengine inspect``: the world a component imports and exports, as WIT-like text.

The layout follows ``wasm-tools component wit``: a ``world root`` listing
the imports and exports, then one ``package`` block per interface package
holding the interfaces with their types, resources and functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from polyengine.translate.plan import (
    Builtin,
    ExternDesc,
    FuncDesc,
    InstanceDesc,
    Plan,
    TypeDesc,
)
from polyengine.types.model import Result
from polyengine.types.wit_text import WitNames, functype_to_wit, ident, typedef_to_wit

_IFACE = re.compile(r"^(?P<ns>[^:]+):(?P<pkg>[^/]+)/(?P<name>[^@]+)(?:@(?P<ver>.+))?$")


@dataclass
class _Interface:
    full: str
    package: str
    name: str
    desc: InstanceDesc
    directions: set[str] = field(default_factory=set)


def _collect_names(desc: InstanceDesc, names: WitNames) -> None:
    for n, d in desc.exports:
        if isinstance(d, TypeDesc):
            if d.resource is not None:
                names.resources.setdefault(d.resource, n)
            elif d.type is not None:
                names.types.setdefault(d.type, n)


def _render_interface(desc: InstanceDesc, global_names: WitNames, indent: str) -> str:
    names = global_names.copy()
    local = WitNames()
    _collect_names(desc, local)
    names.types.update(local.types)
    names.resources.update(local.resources)
    out: list[str] = []
    methods: dict[str, list[str]] = {}
    funcs: list[str] = []
    inner = indent + "  "
    for n, d in desc.exports:
        if not isinstance(d, FuncDesc):
            continue
        ft = d.type
        if n.startswith("[constructor]"):
            res = n[len("[constructor]") :]
            ps = functype_to_wit(ft, names).split("(", 1)[1].split(")", 1)[0]
            suffix = ""
            if isinstance(ft.result, Result):
                suffix = " -> " + functype_to_wit(ft, names).rsplit(" -> ", 1)[1]
            methods.setdefault(res, []).append(f"{inner}  constructor({ps}){suffix};\n")
        elif n.startswith("[method]"):
            res, _, m = n[len("[method]") :].partition(".")
            sig = functype_to_wit(ft, names, skip_self=True)
            methods.setdefault(res, []).append(f"{inner}  {ident(m)}: {sig};\n")
        elif n.startswith("[static]"):
            res, _, m = n[len("[static]") :].partition(".")
            methods.setdefault(res, []).append(
                f"{inner}  {ident(m)}: static {functype_to_wit(ft, names)};\n"
            )
        else:
            funcs.append(f"{inner}{ident(n)}: {functype_to_wit(ft, names)};\n")
    for n, d in desc.exports:
        if not isinstance(d, TypeDesc):
            continue
        if d.resource is not None and local.resources.get(d.resource) == n:
            members = "".join(methods.pop(n, []))
            out.append(
                f"{inner}resource {ident(n)}" + (f" {{\n{members}{inner}}}\n" if members else ";\n")
            )
        elif d.type is not None:
            own = local.types.get(d.type)
            defn_names = names.copy()
            if own == n:
                defn_names.types.pop(d.type, None)
            out.append(typedef_to_wit(n, d.type, defn_names, inner))
        elif d.resource is not None:
            out.append(f"{inner}type {n} = {names.resources.get(d.resource, n)};\n")
    for res, body in methods.items():
        out.append(f"{inner}resource {res} {{\n{''.join(body)}{inner}}}\n")
    text = "\n".join(out)
    if funcs:
        text += ("\n" if text else "") + "".join(funcs)
    return text


def render_world(plan: Plan) -> str:
    """The WIT-like text of ``plan``'s imports and exports."""
    global_names = WitNames()
    interfaces: dict[str, _Interface] = {}
    world: list[str] = []
    sections: list[tuple[str, list[tuple[str, ExternDesc]]]] = [
        ("import", [(i.name, i.desc) for i in plan.imports]),
        ("export", [(e.name, e.desc) for e in plan.exports]),
    ]
    for _, items in sections:
        for name, desc in items:
            if isinstance(desc, InstanceDesc):
                _collect_names(desc, global_names)
            elif isinstance(desc, TypeDesc):
                _collect_names(InstanceDesc(((name, desc),)), global_names)
    for direction, items in sections:
        for name, desc in items:
            m = _IFACE.match(name)
            if isinstance(desc, InstanceDesc):
                if m is not None:
                    pkg = f"{m['ns']}:{m['pkg']}" + (f"@{m['ver']}" if m["ver"] else "")
                    iface = interfaces.setdefault(name, _Interface(name, pkg, m["name"], desc))
                    iface.directions.add(direction)
                    world.append(f"  {direction} {name};\n")
                else:
                    body = _render_interface(desc, global_names, "  ")
                    world.append(f"  {direction} {name}: interface {{\n{body}  }}\n")
            elif isinstance(desc, FuncDesc):
                world.append(f"  {direction} {name}: {functype_to_wit(desc.type, global_names)};\n")
            elif isinstance(desc, TypeDesc):
                if desc.resource is not None:
                    world.append(
                        f"  {direction} resource {name};\n"
                        if direction == "import"
                        else f"  resource {name};\n"
                    )
                elif desc.type is not None:
                    own = global_names.copy()
                    own.types.pop(desc.type, None)
                    world.append(typedef_to_wit(name, desc.type, own, "  "))
            else:
                world.append(f"  // {direction} {name}: {type(desc).__name__}\n")
    out = ["package root:component;\n\n", "world root {\n", *world, "}\n"]
    packages: dict[str, list[_Interface]] = {}
    for iface in interfaces.values():
        packages.setdefault(iface.package, []).append(iface)
    for pkg in sorted(packages):
        out.append(f"package {pkg} {{\n")
        chunks = []
        for iface in packages[pkg]:
            body = _render_interface(iface.desc, global_names, "  ")
            chunks.append(f"  interface {iface.name} {{\n{body}  }}\n")
        out.append("\n".join(chunks))
        out.append("}\n")
    return "".join(out)


_MODULES_LISTED = 8


def render_plan_summary(plan: Plan, component_size: int) -> str:
    """Counts and sizes of what the plan holds (``inspect --plan``)."""
    lines = ["", "// plan"]
    total = sum(m.length for m in plan.modules)
    lines.append(
        f"// component: {component_size} bytes; core modules: {len(plan.modules)} ({total} bytes)"
    )
    largest = sorted(range(len(plan.modules)), key=lambda i: (-plan.modules[i].length, i))
    for i in largest[:_MODULES_LISTED]:
        m = plan.modules[i]
        lines.append(f"//   module {i}: {m.length} bytes at {m.offset:#x}, sha256 {m.sha256[:16]}")
    if len(largest) > _MODULES_LISTED:
        lines.append(f"//   ... and {len(largest) - _MODULES_LISTED} smaller modules")
    lines.append(f"// core instances: {len(plan.core_instances)}")
    lines.append(f"// component instances: {len(plan.component_instances)}")
    kinds: dict[str, int] = {}
    for t in plan.trampolines:
        k = t.kind if isinstance(t, Builtin) else type(t).__name__
        kinds[k] = kinds.get(k, 0) + 1
    detail = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    lines.append(f"// trampolines: {len(plan.trampolines)}" + (f" ({detail})" if detail else ""))
    lines.append(f"// resources: {len(plan.resources)}")
    for i, r in enumerate(plan.resources):
        where = "imported" if r.imported else f"defined by instance {r.instance}"
        lines.append(f"//   resource {i}: {r.name or '(unnamed)'} ({where})")
    lines.append(f"// async: {'yes' if plan.uses_async() else 'no'}")
    return "\n".join(lines) + "\n"


__all__ = ["render_plan_summary", "render_world"]
