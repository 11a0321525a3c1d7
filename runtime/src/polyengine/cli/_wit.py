"""``polyengine wit``: a component's world as WIT text (WIT.md).

The text parses back with ``wasm-tools`` (``component embed``) to the same
world: the same ``pe-world/1`` digest. ``polyengine wit --wit PATH
[--world NAME]`` prints a world of a WIT package instead, normalized: as
the world of the component built from it (its implied imports made
explicit, ``use``s and ``include``s resolved).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from polyengine.errors import TranslationError


def register(subparsers: Any) -> None:
    """Add the ``wit`` verb to the top-level parser."""
    p = subparsers.add_parser(
        "wit",
        help="print the world of a component as WIT",
        description="Print the world a component imports and exports as WIT text.",
    )
    p.add_argument(
        "component", type=Path, nargs="?", default=None, help="the component binary (.wasm)"
    )
    p.add_argument(
        "--wit",
        type=Path,
        default=None,
        metavar="PATH",
        help="normalize a world of WIT instead: a .wit file or a directory with deps/",
    )
    p.add_argument(
        "--world", default=None, metavar="NAME", help="the world of the WIT package (with --wit)"
    )
    p.add_argument(
        "-o", "--output", type=Path, default=None, help="where to write (default: stdout)"
    )
    p.set_defaults(func=run_wit)


def run_wit(args: argparse.Namespace) -> int:
    from polyengine.bindgen import WitError, load_wit, render_wit
    from polyengine.translate import translate

    try:
        if (args.component is None) == (args.wit is None):
            print("polyengine wit: error: give a component (.wasm) or --wit PATH", file=sys.stderr)
            return 1
        if args.wit is not None:
            plan = load_wit(args.wit, args.world).plan
        else:
            plan = translate(args.component.read_bytes()).plan
        text = render_wit(plan)
        if args.output is None:
            sys.stdout.write(text)
        else:
            args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"polyengine wit: error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except TranslationError as exc:
        print(f"polyengine wit: error: {args.component}: {exc}", file=sys.stderr)
        return 1
    except WitError as exc:
        print(f"polyengine wit: error: {exc}", file=sys.stderr)
        return 1
    return 0
