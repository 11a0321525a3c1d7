"""``polyengine wit``: a component's world as WIT text (WIT.md).

The text parses back with ``wasm-tools`` (``component embed``) to the same
world: the same ``pe-world/1`` digest.
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
    p.add_argument("component", type=Path, help="the component binary (.wasm)")
    p.add_argument(
        "-o", "--output", type=Path, default=None, help="where to write (default: stdout)"
    )
    p.set_defaults(func=run_wit)


def run_wit(args: argparse.Namespace) -> int:
    from polyengine.bindgen import render_wit
    from polyengine.translate import translate

    try:
        data = args.component.read_bytes()
        text = render_wit(translate(data).plan)
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
    return 0
