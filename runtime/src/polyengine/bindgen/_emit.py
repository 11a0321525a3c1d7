"""The generated bindings module (bindgen.md §1-§2, seed A17).

:func:`generate` turns a Plan's world into Python source: the value types,
a ``Protocol`` per provider and per resource, ``Imports`` keyed by
verbatim interface id, ``Exports`` with item-access overloads, the world
class, ``WORLD_DIGEST``/``_LEAVES``, ``verify``, ``bind`` and the typed
``instantiate`` that verifies before instantiating. The output is
deterministic (same world → byte-identical text), never uses ``Any``, and
is ``ruff`` clean as written.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field

from polyengine.bindgen._names import Namespace, pascal, snake
from polyengine.bindgen._types import LINE, TypeSpeller, q, qualified
from polyengine.bindgen._world import Func, Interface, Resource, World, read_world
from polyengine.bindings import world_digest, world_leaves
from polyengine.errors import NameCollisionError
from polyengine.translate import Plan
from polyengine.types.model import FuncType, Result, ValType

FORMAT = 1

# Where each name the generated code may use comes from.
_SOURCES: dict[str, str] = {
    **{n: "typing" for n in ("Final", "Literal", "NotRequired", "Protocol", "Self")},
    **{n: "typing" for n in ("TypeAlias", "TypedDict", "overload")},
    **{n: "collections.abc" for n in ("Awaitable", "Callable", "Mapping", "Sequence")},
    **{
        n: "polyengine.bindings"
        for n in (
            "ByteSource",
            "ByteStream",
            "ComponentException",
            "Err",
            "ErrEmpty",
            "ErrorContext",
            "Future",
            "FutureSource",
            "NoneCase",
            "Ok",
            "OkEmpty",
            "SomeCase",
            "Stream",
            "StreamSource",
            "WorldInstance",
            "resolve_artifacts",
            "verify_world",
        )
    },
    "Artifacts": "polyengine",
    "Instance": "polyengine",
    "Plan": "polyengine.translate",
}
_RESERVED = (
    *_SOURCES,
    "annotations",
    "importlib",
    "polyengine",
    "WORLD_DIGEST",
    "_LEAVES",
    "_WITH",
    "Imports",
    "Exports",
    "verify",
    "bind",
    "instantiate",
)


@dataclass(frozen=True, slots=True)
class Options:
    """What to generate: ``source`` names the input in the header (with ``sha256``);
    ``with_`` maps interface ids to provider modules reused for them; ``world``
    names the world class."""

    source: str
    sha256: str
    with_: tuple[tuple[str, str], ...] = ()
    world: str | None = None


@dataclass
class _Out:
    used: set[str] = field(default_factory=set)


_AVOID = frozenset({"self", "cls", "l", "O", "I"})


def _params(ft: FuncType, skip_self: bool) -> list[tuple[str, ValType]]:
    params = list(ft.params[1:] if skip_self else ft.params)
    seen: set[str] = set()
    out: list[tuple[str, ValType]] = []
    for wit, t in params:
        # Parameters are positional-only, so their names are the bindings' own: the
        # same on every Python version: hard keywords are mangled, soft ones
        # (``match``, ``case``, ``type``) are identifiers and stay (python-mapping.md §1).
        py = wit.replace("-", "_")
        if keyword.iskeyword(py) or py in _AVOID:
            py += "_"
        if py in seen:
            raise NameCollisionError(f"two parameters become the Python name {py!r}")
        seen.add(py)
        out.append((py, t))
    return out


def _def(indent: str, head: str, params: list[str], ret: str, body: str | None) -> str:
    """A ``def`` (``head`` is ``def name``/``async def name``) formatted as ``ruff format`` does."""
    tail = f" -> {ret}:" + (" ..." if body is None else "")
    one = f"{indent}{head}({', '.join(params)}){tail}"
    if len(one) > LINE:
        inner = indent + "    "
        hug = f"{inner}{', '.join(params)}"
        if len(hug) <= LINE:
            one = f"{indent}{head}(\n{hug}\n{indent}){tail}"
        else:
            lines = "".join(f"{inner}{p},\n" for p in params)
            one = f"{indent}{head}(\n{lines}{indent}){tail}"
    if body is None:
        return one + "\n"
    return f"{one}\n{body}"


class _Generator:
    def __init__(self, plan: Plan, opts: Options) -> None:
        self.plan = plan
        self.opts = opts
        self.world: World = read_world(plan)
        self.out = _Out()
        self.ns = Namespace("the bindings module", _RESERVED)
        self.types = TypeSpeller(self.world, self.ns, self.use)
        self.with_ = dict(opts.with_)
        self.stub = False
        self.res_class: dict[int, str] = {}
        self.res_owner: dict[int, tuple[Interface, Resource]] = {}
        for iface in self.world.all():
            for res in iface.resources:
                if res.rt in self.res_owner:
                    if res.funcs and not self.res_owner[res.rt][1].funcs:
                        self.res_owner[res.rt] = (iface, res)
                    continue
                self.res_owner[res.rt] = (iface, res)
                base = pascal(res.wit_name)
                cls = self.ns.claim(
                    qualified(iface, base),
                    ("res", res.rt),
                    f"resource {res.wit_name!r}",
                )
                self.res_class[res.rt] = cls
                self.types.resources[res.rt] = self.ns.claim(
                    [f"_{cls}"], ("res-alias", res.rt), f"resource {res.wit_name!r}"
                )

    def use(self, name: str) -> str:
        assert name in _SOURCES, name
        self.out.used.add(name)
        return name

    # -- signatures -------------------------------------------------------------------

    def _result(self, ft: FuncType, *, wide: bool, self_rt: int | None) -> tuple[str, str | None]:
        """The Python return type and, for a ``result``, the ``Raises`` docstring."""
        r = ft.result
        if r is None:
            return "None", None
        if isinstance(r, Result):
            ok = "None" if r.ok is None else self.types.spell(r.ok, wide=wide, self_rt=self_rt)
            err = "None" if r.error is None else self.types.spell(r.error, self_rt=self_rt)
            doc = f"Raises ``ComponentException[{err}]`` for an err result."
            return ok, doc
        return self.types.spell(r, wide=wide, self_rt=self_rt), None

    def _member(
        self,
        fn: Func,
        *,
        guest: bool,
        first: str | None,
        self_rt: int | None,
        indent: str = "    ",
    ) -> str:
        """A protocol member for ``fn``: ``first`` is ``self``/``cls``/``None``."""
        kind = fn.name.kind
        params = _params(fn.type, skip_self=kind == "method")
        # Host code receives the lifted shapes of an import's parameters and returns
        # what lowering accepts; for an export it is the other way round.
        ps = [f"{n}: {self.types.spell(t, wide=guest, self_rt=self_rt)}" for n, t in params]
        ps = [*([first] if first else []), *ps, *(["/"] if ps else [])]
        ret, raises = self._result(fn.type, wide=not guest, self_rt=self_rt)
        if not guest and fn.type.is_async:
            ret = f"{self.use('Awaitable')}[{ret}] | {ret}"
        doc = "" if raises is None else f'{indent}    """{raises}"""\n'
        if self.stub:
            body: str | None = f"{doc}{indent}    raise NotImplementedError\n"
        else:
            body = None if raises is None else f"{doc}{indent}    ...\n"
        if kind == "constructor":
            return _def(indent, "def __init__", ps, "None", body)
        head = ("async def " if guest else "def ") + snake(fn.name.name)
        deco = ""
        if kind == "static":
            deco = f"{indent}@staticmethod\n" if guest else f"{indent}@classmethod\n"
        return deco + _def(indent, head, ps, ret, body)

    def _callable(self, fn: Func) -> str:
        params = _params(fn.type, skip_self=False)
        ps = ", ".join(self.types.spell(t) for _, t in params)
        ret, _ = self._result(fn.type, wide=True, self_rt=None)
        if fn.type.is_async:
            ret = f"{self.use('Awaitable')}[{ret}] | {ret}"
        return f"{self.use('Callable')}[[{ps}], {ret}]"

    # -- resources --------------------------------------------------------------------

    def _resource_protocol(self, iface: Interface, res: Resource) -> str:
        cls = self.res_class[res.rt]
        guest = iface.direction == "export"
        where = iface.key or "the world"
        who = "the component implements it" if guest else "the host implements it"
        members: list[str] = []
        for fn in res.funcs:
            first = None
            if fn.name.kind in ("method", "constructor"):
                first = "self"
            elif not guest:
                first = "cls"
            members.append(
                self._member(fn, guest=guest, first=first, self_rt=None if guest else res.rt)
            )
        if guest:
            members.append("    def drop(self) -> None: ...\n")
            members.append(f"    def __enter__(self) -> {self.use('Self')}: ...\n")
            members.append("    def __exit__(self, *exc: object) -> None: ...\n")
        doc = f'    """Resource ``{res.wit_name}`` of ``{where}`` ({who})."""\n'
        body = "\n".join(members)
        text = f"class {cls}({self.use('Protocol')}):\n{doc}" + (f"\n{body}" if body else "")
        alias = self.types.resources[res.rt]
        return f"{text}\n\n{alias}: {self.use('TypeAlias')} = {cls}\n"

    # -- providers and exports --------------------------------------------------------

    def _resource_property(self, res: Resource) -> str:
        """The provider (or exports) member holding a resource's class, by PascalCase name."""
        rtype = self.types.resource(res.rt)
        return (
            "    @property\n"
            f"    def {pascal(res.wit_name)}(self) -> type[{rtype}]: ...  # noqa: N802\n"
        )

    def _interface_protocol(self, iface: Interface, name: str) -> str:
        guest = iface.direction == "export"
        members: list[str] = []
        for res in iface.resources:
            if not guest:
                rtype = self.plan.resources[res.rt] if res.rt < len(self.plan.resources) else None
                if rtype is not None and rtype.import_path != (iface.key, res.wit_name):
                    continue
            members.append(self._resource_property(res))
        for fn in iface.funcs:
            members.append(self._member(fn, guest=guest, first="self", self_rt=None))
        role = "Exports of" if guest else "Provider of"
        doc = f'    """{role} ``{iface.key}``."""\n'
        body = "\n".join(members)
        return f"class {name}({self.use('Protocol')}):\n{doc}" + (f"\n{body}" if body else "")

    def _imports(self, providers: list[tuple[Interface, str]]) -> str:
        entries: list[str] = []
        for iface, name in providers:
            assert iface.key is not None
            entries.append(f"        {q(iface.key)}: {name},\n")
        for key in sorted(self.with_):
            entries.append(f"        {q(key)}: {self.use('NotRequired')}[object],\n")
        top = self.world.world_import
        for res in top.resources:
            entries.append(
                f"        {q(pascal(res.wit_name))}: type[{self.types.resource(res.rt)}],\n"
            )
        for fn in top.funcs:
            entries.append(f"        {q(snake(fn.name.name))}: {self._callable(fn)},\n")
        td = self.use("TypedDict")
        if not entries:
            return f'Imports = {td}("Imports", {{}})\n'
        return f'Imports = {td}(\n    "Imports",\n    {{\n{"".join(entries)}    }},\n)\n'

    def _exports(self, exported: list[tuple[Interface, str]]) -> str:
        top = self.world.world_export
        members: list[str] = []
        for res in top.resources:
            members.append(self._resource_property(res))
        for fn in top.funcs:
            members.append(self._member(fn, guest=True, first="self", self_rt=None))
        if exported:
            ov = self.use("overload")
            for iface, name in exported:
                assert iface.key is not None
                lit = f"{self.use('Literal')}[{q(iface.key)}]"
                members.append(
                    f"    @{ov}\n"
                    + _def("    ", "def __getitem__", ["self", f"key: {lit}", "/"], name, None)
                )
            members.append(f"    @{ov}\n    def __getitem__(self, key: str, /) -> object: ...\n")
            members.append("    def __getitem__(self, key: str, /) -> object: ...\n")
        doc = '    """The component\'s exports (``instance.exports``)."""\n'
        body = "\n".join(members)
        return f"class Exports({self.use('Protocol')}):\n{doc}" + (f"\n{body}" if body else "")

    def _world_class(self, cls: str, exported: list[tuple[Interface, str]]) -> str:
        members = Namespace(f"class {cls}", ("close", "exports", "instance"))
        props: list[str] = []
        for iface, name in exported:
            assert iface.key is not None
            try:
                prop = members.claim([snake(iface.short)], iface.key, iface.key)
            except NameCollisionError:
                continue
            props.append(
                f"    @property\n    def {prop}(self) -> {name}:\n"
                f"        return self.exports[{q(iface.key)}]\n"
            )
        doc = (
            '    """An instance of this world: ``exports`` typed, '
            '``close()`` and ``with`` release it."""\n'
        )
        body = "\n".join(props)
        return f"class {cls}({self.use('WorldInstance')}[Exports]):\n{doc}" + (
            f"\n{body}" if body else ""
        )

    # -- the module -------------------------------------------------------------------

    def generate(self) -> str:
        world = self.world
        resources: list[str] = []
        for rt in sorted(self.res_owner):
            iface, res = self.res_owner[rt]
            resources.append(self._resource_protocol(iface, res))
        providers: list[tuple[Interface, str]] = []
        provider_text: list[str] = []
        for iface in world.imports:
            if iface.key in self.with_ or not iface.has_leaves():
                continue
            name = self.ns.claim(
                [
                    pascal(iface.short) + "Provider",
                    pascal(iface.short) + "ImportProvider",
                    *qualified(iface, "Provider")[2:],
                ],
                ("provider", iface.key),
                f"the provider of {iface.key}",
            )
            providers.append((iface, name))
            provider_text.append(self._interface_protocol(iface, name))
        exported: list[tuple[Interface, str]] = []
        export_text: list[str] = []
        for iface in world.exports:
            name = self.ns.claim(
                [pascal(iface.short) + "Exports", pascal(iface.short) + "InterfaceExports"],
                ("exports", iface.key),
                f"the exports of {iface.key}",
            )
            exported.append((iface, name))
            export_text.append(self._interface_protocol(iface, name))
        for iface in world.all():
            for _, t in iface.types:
                if isinstance(t, ValType) and t in self.types.names:
                    self.types.named(t)
        imports = self._imports(providers)
        exports = self._exports(exported)
        world_cls = self.ns.claim(
            [pascal(self.opts.world or "world"), "World", "WorldBindings"],
            ("world",),
            "the world class",
        )
        world_text = self._world_class(world_cls, exported)
        tail = self._functions(world_cls)
        blocks = [
            *resources,
            *self.types.definitions,
            *provider_text,
            imports,
            *export_text,
            exports,
            world_text,
            *tail,
        ]
        body = "\n\n".join(b.rstrip("\n") + "\n" for b in blocks)
        # isort's rule: two blank lines after the imports before a class or def, else one.
        gap = "\n\n" if body.startswith(("class ", "def ", "async def ")) else "\n"
        return self._header() + gap + body

    def _functions(self, world_cls: str) -> list[str]:
        leaves = world_leaves(self.plan)
        digest = world_digest(leaves)
        fin = self.use("Final")
        line = f"WORLD_DIGEST: {fin} = {q(digest)}"
        digest_text = line if len(line) <= LINE else f"WORLD_DIGEST: {fin} = (\n    {q(digest)}\n)"
        if leaves:
            items = "".join(
                f"    (\n        {q(d)},\n        {q(k)},\n        {q(h)},\n    ),\n"
                for d, k, h in leaves
            )
            leaves_text = f"_LEAVES: {fin} = (\n{items})"
        else:
            leaves_text = f"_LEAVES: {fin}[tuple[tuple[str, str, str], ...]] = ()"
        consts = f"{digest_text}\n{leaves_text}\n"
        plan = self.use("Plan")
        verify = (
            f"def verify(plan: {plan}, /, *, strict: bool = False) -> None:\n"
            '    """Raise ``WorldMismatchError`` unless ``plan`` is this world (seed A17).\n\n'
            "    By default a component importing fewer interfaces, or exporting more,\n"
            "    than the bindings still matches; ``strict=True`` demands the same world.\n"
            '    """\n'
            f"    {self.use('verify_world')}(plan, WORLD_DIGEST, _LEAVES, strict=strict)\n"
        )
        inst = self.use("Instance")
        bind = (
            f"def bind(instance: {inst}, /) -> {world_cls}:\n"
            '    """View an instance through these bindings, UNCHECKED '
            '(call ``verify`` first)."""\n'
            f"    return {world_cls}(instance)\n"
        )
        no_imports = not self.world.world_import.has_leaves() and not any(
            i.has_leaves() for i in self.world.imports
        )
        imp = "imports: Imports | None = None" if no_imports else "imports: Imports"
        arts = self.use("Artifacts")
        merge = "    provided: dict[str, object] = {}\n" if no_imports else ""
        if self.with_:
            merge = (
                "    provided: dict[str, object] = {\n"
                "        key: importlib.import_module(name) for key, name in _WITH.items()\n"
                "    }\n"
            )
        if merge:
            merge += (
                "    provided.update(imports or {})\n"
                if no_imports
                else ("    provided.update(imports)\n")
            )
            call_imports = "provided"
        else:
            call_imports = "imports"
        instantiate = (
            "async def instantiate(\n"
            f"    artifacts: {arts} | bytes,\n"
            f"    {imp},\n"
            "    /,\n"
            "    *,\n"
            "    suspend: bool | None = None,\n"
            f") -> {world_cls}:\n"
            '    """Translate, verify the world, and only then instantiate (seed A17).\n\n'
            "    Raises ``WorldMismatchError`` before any guest code (a start function\n"
            "    included) has run when the component is not this world.\n"
            '    """\n'
            f"    arts = {self.use('resolve_artifacts')}(artifacts)\n"
            "    verify(arts.plan)\n"
            f"{merge}"
            f"    instance = await polyengine.instantiate(arts, {call_imports}, suspend=suspend)\n"
            f"    return {world_cls}(instance)\n"
        )
        out = [consts]
        if self.with_:
            items = "".join(f"    {q(k)}: {q(v)},\n" for k, v in sorted(self.with_.items()))
            out.append(f"_WITH: {fin} = {{\n{items}}}\n")
        return [*out, verify, bind, instantiate]

    def _header(self) -> str:
        lines = [
            f"# Generated by `polyengine bindgen` (format {FORMAT}); do not edit.",
            f"# Source: {self.opts.source}",
            f"# sha256:{self.opts.sha256}",
            f'"""Typed bindings for the world of {self.opts.source} (seed A17)."""',
            "",
            "from __future__ import annotations",
            "",
        ]
        stdlib: dict[str, list[str]] = {}
        first: dict[str, list[str]] = {}
        for name in sorted(self.out.used, key=lambda n: (n.lower(), n)):
            src = _SOURCES[name]
            (first if src.startswith("polyengine") else stdlib).setdefault(src, []).append(name)
        if self.with_:
            lines.append("import importlib")
        for src in sorted(stdlib):
            lines.append(_from_import(src, stdlib[src]))
        lines.append("")
        lines.append("import polyengine")
        for src in sorted(first):
            lines.append(_from_import(src, first[src]))
        return "\n".join(lines) + "\n"


class _Stubs(_Generator):
    """A provider skeleton: a class per import interface and host resource, typed by
    the bindings module (imported as ``_b``), every body ``raise NotImplementedError``."""

    def __init__(self, plan: Plan, opts: Options, module: str) -> None:
        super().__init__(plan, opts)
        self.module = module
        self.stub = True
        sp = self.types
        sp.reference_only = True
        for iface in self.world.all():
            for _, t in iface.types:
                if t in sp.names:
                    sp.named(t)
        sp.names = {t: f"_b.{n}" for t, n in sp.names.items()}
        sp.resources = {rt: f"_b.{cls}" for rt, cls in self.res_class.items()}
        self.local = Namespace("the skeleton", ("annotations", "_b", "imports", *_SOURCES))

    def skeleton(self) -> str:
        blocks: list[str] = []
        impl: dict[int, str] = {}
        for rt in sorted(self.res_owner):
            iface, res = self.res_owner[rt]
            if iface.direction != "import":
                continue
            name = self.local.claim(
                qualified(iface, pascal(res.wit_name))[1:], ("res", rt), res.wit_name
            )
            impl[rt] = name
            members = [
                self._member(
                    fn,
                    guest=False,
                    first="self" if fn.name.kind in ("method", "constructor") else "cls",
                    self_rt=rt,
                )
                for fn in res.funcs
            ]
            doc = f'    """Resource ``{res.wit_name}`` of ``{iface.key or "the world"}``."""\n'
            body = "\n".join(members)
            blocks.append(f"class {name}:\n{doc}" + (f"\n{body}" if body else ""))
        entries: list[str] = []
        for iface in self.world.imports:
            if iface.key in self.with_ or not iface.has_leaves():
                continue
            assert iface.key is not None
            name = self.local.claim(
                [
                    pascal(iface.short) + "Provider",
                    pascal(iface.short) + "ImportProvider",
                    *qualified(iface, "Provider")[2:],
                ],
                ("provider", iface.key),
                iface.key,
            )
            members = []
            for res in iface.resources:
                cls = impl.get(res.rt)
                rtype = self.plan.resources[res.rt] if res.rt < len(self.plan.resources) else None
                if (
                    cls is not None
                    and rtype is not None
                    and rtype.import_path
                    == (
                        iface.key,
                        res.wit_name,
                    )
                ):
                    members.append(f"    {pascal(res.wit_name)} = {cls}\n")
            for fn in iface.funcs:
                members.append(self._member(fn, guest=False, first="self", self_rt=None))
            doc = f'    """Provider of ``{iface.key}``."""\n'
            blocks.append(f"class {name}:\n{doc}\n" + "\n".join(members))
            entries.append(f"        {q(iface.key)}: {name}(),\n")
        top = self.world.world_import
        for res in top.resources:
            cls = impl.get(res.rt)
            if cls is not None:
                entries.append(f"        {q(pascal(res.wit_name))}: {cls},\n")
        for fn in top.funcs:
            py = self.local.claim([snake(fn.name.name)], ("func", fn.wit_name), fn.wit_name)
            blocks.append(self._member(fn, guest=False, first=None, self_rt=None, indent=""))
            entries.append(f"        {q(snake(fn.name.name))}: {py},\n")
        doc = '    """The imports mapping for ``instantiate``."""\n'
        ret = "    return {}\n" if not entries else f"    return {{\n{''.join(entries)}    }}\n"
        blocks.append(f"def imports() -> _b.Imports:\n{doc}{ret}")
        head = [
            f"# Provider skeleton by `polyengine bindgen --stubs` (format {FORMAT}).",
            f"# Source: {self.opts.source}",
            f'"""Providers for the imports of {self.opts.source}: fill in the bodies."""',
            "",
            "from __future__ import annotations",
            "",
        ]
        stdlib: dict[str, list[str]] = {}
        first: dict[str, list[str]] = {}
        for name in sorted(self.out.used):
            src = _SOURCES[name]
            (first if src.startswith("polyengine") else stdlib).setdefault(src, []).append(name)
        for src in sorted(stdlib):
            head.append(_from_import(src, stdlib[src]))
        if stdlib:
            head.append("")
        tail = [_from_import(src, first[src]) for src in sorted(first)]
        head.extend(sorted([f"import {self.module} as _b", *tail], key=_isort_key))
        body = "\n\n".join(b.rstrip("\n") + "\n" for b in blocks)
        return "\n".join(head) + "\n\n\n" + body


def _isort_key(line: str) -> tuple[str, str]:
    words = line.split()
    return (words[1].lower(), line)


def generate_stubs(plan: Plan, opts: Options, module: str) -> str:
    """A provider skeleton for ``plan``'s imports, typed by the bindings module ``module``."""
    return _Stubs(plan, opts, module).skeleton()


def _from_import(src: str, names: list[str]) -> str:
    # isort's order within a from-import: constants, classes, then functions (case-sensitive).
    def key(n: str) -> tuple[int, str]:
        if n.isupper() and len(n) > 1:
            return (0, n)
        return (1, n) if n[:1].isupper() else (2, n)

    ordered = sorted(names, key=key)
    one = f"from {src} import {', '.join(ordered)}"
    if len(one) <= LINE:
        return one
    body = "".join(f"    {n},\n" for n in ordered)
    return f"from {src} import (\n{body})"


def generate(plan: Plan, opts: Options) -> str:
    """The bindings module for ``plan``'s world (see the module docstring)."""
    return _Generator(plan, opts).generate()
