"""The ``polyengine`` command line: ``run``, ``invoke``, ``inspect``, ``translate``, ``bindgen``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from polyengine import __version__

#: The verbs ``_run`` registers: their command lines build only that sub-parser (start-up).
_RUN_VERBS = ("run", "invoke")


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, sized as ``shutil.get_terminal_size`` would size it.

    argparse makes a formatter for every argument it adds and would import
    :mod:`shutil` for the width; a run never prints help (start-up).
    """

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24) -> None:
        super().__init__(prog, indent_increment, max_help_position, width=_columns() - 2)


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` (and sub-parsers) formatting with :class:`_Formatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


def _columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def build_parser(*, run_only: bool = False) -> argparse.ArgumentParser:
    """The top-level parser; each verb adds a sub-parser.

    With ``run_only`` only ``run`` and ``invoke`` are registered, so a run
    does not import the other verbs' modules.
    """
    parser = _Parser(prog="polyengine", description="Run and inspect WebAssembly components.")
    parser.add_argument("--version", action="version", version=f"polyengine {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    from polyengine.cli import _run

    _run.register(verbs)
    if run_only:
        return parser
    from polyengine.cli import _bindgen, _serve, _translate, _wit

    _translate.register(verbs)
    _bindgen.register(verbs)
    _wit.register(verbs)
    _serve.register(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``polyengine`` script; returns the process exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(run_only=bool(words) and words[0] in _RUN_VERBS)
    args = parser.parse_args(words)
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
