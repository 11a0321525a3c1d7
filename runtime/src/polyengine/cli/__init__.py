"""The ``polyengine`` command line: ``run``, ``invoke``, ``inspect``, ``translate``, ``bindgen``."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from polyengine import __version__

if TYPE_CHECKING:
    import argparse

#: The verbs ``_run`` registers: their command lines build only that sub-parser (start-up).
_RUN_VERBS = ("run", "invoke")


def _parser_class() -> type[argparse.ArgumentParser]:
    """An ``ArgumentParser`` (and sub-parsers) whose help is sized without :mod:`shutil`.

    argparse makes a formatter for every argument it adds and would import
    :mod:`shutil` for the width: the formatter here sizes it as
    ``shutil.get_terminal_size`` does.
    """
    import argparse

    class Formatter(argparse.HelpFormatter):
        def __init__(
            self, prog: str, indent_increment: int = 2, max_help_position: int = 24
        ) -> None:
            super().__init__(prog, indent_increment, max_help_position, width=_columns() - 2)

    class Parser(argparse.ArgumentParser):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("formatter_class", Formatter)
            super().__init__(*args, **kwargs)

    return Parser


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


def _version_action() -> type[argparse.Action]:
    """``--version``: the version and which call path is active (imports the engine only then)."""
    import argparse

    class Version(argparse.Action):
        def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
            kwargs.update(nargs=0, default=argparse.SUPPRESS)  # no attribute when not given
            super().__init__(option_strings, dest, **kwargs)

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

    return Version


def build_parser(*, run_only: bool = False) -> argparse.ArgumentParser:
    """The top-level parser; each verb adds a sub-parser.

    With ``run_only`` only ``run`` and ``invoke`` are registered, so a run
    does not import the other verbs' modules.
    """
    parser = _parser_class()(
        prog="polyengine", description="Run and inspect WebAssembly components."
    )
    parser.add_argument(
        "--version",
        action=_version_action(),
        help="show the version and call path, then exit",
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


#: ``run``'s options that take a value, by flag: the attribute they append to.
_RUN_VALUES = {"--dir": "dir", "--env": "env", "-S": "wasi_options", "-W": "wasm_options"}


def _plain_run(words: list[str]) -> Any:
    """The arguments of a plain ``run`` command line, parsed without argparse (start-up).

    ``run [--dir D] [--env E] [--inherit-env] [-S O] [-W O] [--invoke CALL]
    component [args...]`` with every option spelled out and its value
    separate (``--dir x``) or attached (``--dir=x``), as argparse would
    parse it. Anything else (help, an abbreviated or unknown option, a
    missing component, a ``--`` among the guest's arguments) returns
    ``None``: argparse parses it, and reports what is wrong.
    """
    if not words or words[0] != "run":
        return None
    from pathlib import Path
    from types import SimpleNamespace

    from polyengine.cli._run import run_command

    lists: dict[str, list[str]] = {name: [] for name in _RUN_VALUES.values()}
    inherit_env = False
    invoke: str | None = None
    i = 1
    while i < len(words):
        word = words[i]
        if not word.startswith("-") or word == "-":
            break
        flag, eq, value = word.partition("=")
        if word == "--inherit-env":
            inherit_env = True
            i += 1
            continue
        if flag not in _RUN_VALUES and flag != "--invoke":
            return None
        if not eq:
            if i + 1 >= len(words):
                return None
            value = words[i + 1]
            if value.startswith("-"):
                return None
            i += 1
        elif flag in ("-S", "-W"):  # argparse reads -S=x as the value "=x"
            return None
        if flag == "--invoke":
            invoke = value
        else:
            lists[_RUN_VALUES[flag]].append(value)
        i += 1
    if i >= len(words) or "--" in words[i + 1 :]:  # argparse's "--" rules vary by version
        return None
    return SimpleNamespace(
        verb="run",
        func=run_command,
        component=Path(words[i]),
        args=words[i + 1 :],
        invoke=invoke,
        inherit_env=inherit_env,
        **lists,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``polyengine`` script; returns the process exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    if words and words[0] in _RUN_VERBS:
        from polyengine.cli._startup import start_up_gc

        with start_up_gc():
            return _main(words)
    return _main(words)


def _main(words: list[str]) -> int:
    plain = _plain_run(words)
    if plain is not None:
        result = plain.func(plain)
        assert isinstance(result, int)
        return result
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
