"""The ``polyengine`` command line: ``run``, ``invoke``, ``inspect``, ``translate``, ``bindgen``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from polyengine import __version__

#: The verbs ``_run`` registers: their command lines build only that sub-parser (start-up).
_RUN_VERBS = ("run", "invoke")


class _Version(argparse.Action):
    """``--version``: the version and which call path is active (imports the engine only here)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from polyengine.engine import call_path

        print(f"polyengine {__version__}\ncall path: {call_path()}")
        parser.exit()


def build_parser(*, run_only: bool = False) -> argparse.ArgumentParser:
    """The top-level parser; each verb adds a sub-parser.

    With ``run_only`` only ``run`` and ``invoke`` are registered, so a run
    does not import the other verbs' modules.
    """
    parser = argparse.ArgumentParser(
        prog="polyengine", description="Run and inspect WebAssembly components."
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="show the version and call path, then exit"
    )
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
