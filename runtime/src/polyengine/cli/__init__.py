"""The ``polyengine`` command line: ``run``, ``invoke``, ``inspect``, ``translate``, ``bindgen``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from polyengine import __version__


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser; each verb adds a sub-parser."""
    parser = argparse.ArgumentParser(
        prog="polyengine", description="Run and inspect WebAssembly components."
    )
    parser.add_argument("--version", action="version", version=f"polyengine {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    from polyengine.cli import _bindgen, _run, _serve, _translate, _wit

    _run.register(verbs)
    _translate.register(verbs)
    _bindgen.register(verbs)
    _wit.register(verbs)
    _serve.register(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``polyengine`` script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help()
        return 2
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    result = func(args)
    assert isinstance(result, int)
    return result
