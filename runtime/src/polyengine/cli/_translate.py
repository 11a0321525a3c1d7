"""``polyengine translate`` and ``polyengine inspect`` (python-mapping.md §7)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from polyengine.errors import TranslationError


def register(subparsers: Any) -> None:
    """Add the ``translate`` and ``inspect`` verbs to the top-level parser."""
    p = subparsers.add_parser(
        "translate",
        help="translate a component into its translation envelope (JSON)",
        description="Translate a component binary and write its translation envelope.",
    )
    p.add_argument("component", type=Path, help="the component binary (.wasm)")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="where to write the envelope (default: stdout)",
    )
    p.set_defaults(func=run_translate)

    q = subparsers.add_parser(
        "inspect",
        help="print the world a component imports and exports",
        description="Print the imports and exports of a component as WIT-like text.",
    )
    q.add_argument("component", type=Path, help="the component binary (.wasm)")
    q.add_argument("--plan", action="store_true", help="also summarize core modules and instances")
    q.set_defaults(func=run_inspect)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _CliError(f"cannot read {path}: {exc.strerror or exc}") from None


class _CliError(Exception):
    pass


def run_translate(args: argparse.Namespace) -> int:
    from polyengine.translate import translate

    try:
        data = _read(args.component)
        artifacts = translate(data)
        text = json.dumps(artifacts.to_envelope(), sort_keys=True, separators=(",", ":"))
        if args.output is None:
            sys.stdout.write(text + "\n")
        else:
            try:
                args.output.write_text(text + "\n", encoding="utf-8")
            except OSError as exc:
                raise _CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    except (TranslationError, _CliError) as exc:
        print(f"polyengine translate: error: {args.component}: {exc}", file=sys.stderr)
        return 1
    return 0


def run_inspect(args: argparse.Namespace) -> int:
    from polyengine.cli._inspect import render_plan_summary, render_world
    from polyengine.translate import translate_component

    try:
        data = _read(args.component)
        plan = translate_component(data)
    except (TranslationError, _CliError) as exc:
        print(f"polyengine inspect: error: {args.component}: {exc}", file=sys.stderr)
        return 1
    try:
        text = render_world(plan)
        if args.plan:
            text += render_plan_summary(plan, len(data))
    except Exception as exc:  # a rendering bug must not end in a traceback
        print(f"polyengine inspect: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
