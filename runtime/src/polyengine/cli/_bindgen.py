"""``polyengine bindgen``: typed Python bindings for a component's world (bindgen.md, seed A17).

``polyengine bindgen app.wasm -o app_bindings.py`` writes the module;
``polyengine bindgen --wit DIR --world NAME`` writes it for a world of a WIT
package instead (a ``.wit`` file, or a directory with a ``deps/`` folder):
the same module ``bindgen`` writes for a component built from that world,
except for the header, which names the WIT source and the sha-256 of its
files instead of the binary's; ``--check`` compares instead of writing
(exit 1 when the file on disk differs: drift detection in CI); ``--stubs``
writes a provider skeleton for the imports; ``--with ID=MODULE`` reuses
the provider module ``MODULE`` for interface ``ID`` (no protocol is generated for it and the typed
``instantiate`` supplies it when the host does not).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyengine.errors import NameCollisionError, TranslationError

if TYPE_CHECKING:
    from polyengine.translate import Plan


class _CliError(Exception):
    pass


def register(subparsers: Any) -> None:
    """Add the ``bindgen`` verb to the top-level parser."""
    p = subparsers.add_parser(
        "bindgen",
        help="generate typed Python bindings for a component's world",
        description=(
            "Generate a Python module typing the imports a host provides and the exports it "
            "calls, with WORLD_DIGEST, verify(plan), bind() and a typed instantiate that "
            "verifies the world before any guest code runs."
        ),
    )
    p.add_argument(
        "component", type=Path, nargs="?", default=None, help="the component binary (.wasm)"
    )
    p.add_argument(
        "--wit",
        type=Path,
        default=None,
        metavar="PATH",
        help="read the world from WIT instead: a .wit file or a directory with deps/",
    )
    p.add_argument(
        "--world",
        default=None,
        metavar="NAME",
        help="the world of the WIT package (a name, or ns:pkg/name); needed when it has several",
    )
    p.add_argument(
        "-o", "--output", type=Path, default=None, help="where to write (default: stdout)"
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="compare with --output instead of writing it; exit 1 when they differ",
    )
    p.add_argument(
        "--stubs",
        action="store_true",
        help="generate a provider skeleton for the imports instead of the bindings",
    )
    p.add_argument(
        "--bindings-module",
        default=None,
        metavar="NAME",
        help="the module name the skeleton imports the bindings from (with --stubs)",
    )
    p.add_argument(
        "--with",
        dest="with_",
        action="append",
        default=[],
        metavar="ID=MODULE",
        help="reuse the provider module MODULE for interface ID (repeatable)",
    )
    p.add_argument("--world-name", default=None, metavar="NAME", help="the name of the world class")
    p.set_defaults(func=run_bindgen)


def _parse_with(items: list[str]) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, module = item.partition("=")
        if (
            not sep
            or not key
            or not module
            or not all(part.isidentifier() for part in module.split("."))
        ):
            raise _CliError(
                f"--with {item!r}: expected ID=MODULE, such as wasi:cli/stdout@0.2.0=my_stdout"
            )
        out[key] = module
    return tuple(sorted(out.items()))


def source_plan(args: argparse.Namespace, verb: str) -> tuple[Plan, str, str, str]:
    """The Plan ``args`` name (``component`` or ``--wit``/``--world``), with the source's
    name, sha-256 and stem."""
    from polyengine.bindgen import load_wit
    from polyengine.translate import translate

    if (args.component is None) == (args.wit is None):
        raise _CliError(f"{verb} needs a component (.wasm) or --wit PATH, not both")
    if args.wit is not None:
        wit = load_wit(args.wit, args.world)
        return wit.plan, wit.source, wit.sha256, args.wit.stem
    if args.world is not None:
        raise _CliError("--world selects a world of --wit PATH")
    try:
        data = args.component.read_bytes()
    except OSError as exc:
        raise _CliError(f"cannot read {args.component}: {exc.strerror or exc}") from None
    plan = translate(data).plan
    return plan, args.component.name, hashlib.sha256(data).hexdigest(), args.component.stem


def render(args: argparse.Namespace) -> str:
    """The text ``bindgen`` writes for ``args`` (bindings, or the skeleton with ``--stubs``)."""
    from polyengine.bindgen import Options, generate, generate_stubs

    plan, source, sha256, stem = source_plan(args, "bindgen")
    opts = Options(
        source=source,
        sha256=sha256,
        with_=_parse_with(args.with_),
        world=args.world_name,
    )
    if args.stubs:
        module = args.bindings_module
        if module is None:
            module = stem.replace("-", "_") + "_bindings"
        return generate_stubs(plan, opts, module)
    return generate(plan, opts)


def run_bindgen(args: argparse.Namespace) -> int:
    from polyengine.bindgen import WitError

    try:
        if args.check and args.output is None:
            raise _CliError("--check needs --output, the file to compare with")
        text = render(args)
        if args.check:
            try:
                current = args.output.read_text(encoding="utf-8")
            except OSError as exc:
                raise _CliError(f"cannot read {args.output}: {exc.strerror or exc}") from None
            if current != text:
                print(
                    f"polyengine bindgen: {args.output} is out of date with "
                    f"{args.component or args.wit}; "
                    "regenerate it without --check",
                    file=sys.stderr,
                )
                return 1
            return 0
        if args.output is None:
            sys.stdout.write(text)
        else:
            try:
                args.output.write_text(text, encoding="utf-8")
            except OSError as exc:
                raise _CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    except (TranslationError, NameCollisionError, WitError, _CliError) as exc:
        print(f"polyengine bindgen: error: {exc}", file=sys.stderr)
        return 1
    return 0
