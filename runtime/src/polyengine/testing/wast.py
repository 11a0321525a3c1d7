"""``python -m polyengine.testing.wast PATH...``: the conformance runner's command line.

Each PATH is a ``json-from-wast`` JSON file or a directory searched for them
(``<dir>/<file>/<file>.json`` with the ``.wasm``/``.wat`` files next to it).
One row is printed per converted file with its counts of commands, passed,
failed, xfail and skipped (and the skip reasons), then failures in detail,
then the closing line ``N passed, N failed, N xfail, N skipped``.

Commands that need an instance go to the executor: ``--executor embed`` (the
default) runs them on ``polyengine.instantiate``, ``--executor none`` skips
them with the reason "execution not implemented yet", and
``--executor package.module:factory`` plugs in any other
:class:`~polyengine.testing.executor.Executor`. The embed executor runs the
translator's Plans, so without polyengine's own translator the default is
``none``. ``--timeout`` bounds each
command (it interrupts Python code only, not a guest spinning in native code).

The exit status is 1 when a command failed unexpectedly or an xfail entry
passed (stale), 2 for bad usage, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from polyengine.testing import _runner
from polyengine.testing._model import FileResult, Status, Totals
from polyengine.testing._runner import Translator, WastRunner
from polyengine.testing._xfail import DEFAULT_XFAIL_FILE, XfailList, prune_xfail_file
from polyengine.testing.executor import load_executor_factory


def format_report(files: list[FileResult], *, verbose: bool = False) -> str:
    """The human-readable report: one row per file, failures, the closing line."""
    width = max([len(f.id) for f in files] + [4])
    header = f"{'file':<{width}}  commands  passed  failed  xfail  skipped"
    lines = [header, "-" * len(header)]
    for f in files:
        lines.append(
            f"{f.id:<{width}}  {f.commands:>8}  {f.count(Status.PASSED):>6}  "
            f"{f.count(Status.FAILED):>6}  {f.count(Status.XFAIL):>5}  {f.count(Status.SKIPPED):>7}"
        )
        for reason, count in f.skip_reasons().items():
            lines.append(f"    skipped {count}: {reason}")
    failures = [(f, r) for f in files for r in f.results if r.status is Status.FAILED]
    if failures:
        lines.append("")
        lines.append("failures:")
        for f, r in failures:
            lines.append(f"  {f.id}:{r.line} {r.type}: {r.message}")
    if verbose:
        xfails = [(f, r) for f in files for r in f.results if r.status is Status.XFAIL]
        if xfails:
            lines.append("")
            lines.append("expected failures:")
            for f, r in xfails:
                lines.append(f"  {f.id}:{r.line} {r.type}: {r.message}")
    lines.append("")
    lines.append(Totals.of(files).line())
    return "\n".join(lines)


def format_json(files: list[FileResult]) -> str:
    """The machine-readable report (``--json``)."""
    return json.dumps(
        {"files": [f.to_json() for f in files], "totals": Totals.of(files).to_json()}, indent=2
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m polyengine.testing.wast",
        description="Run component-model wast suites converted with `wasm-tools json-from-wast`.",
    )
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="JSON file or directory"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--xfail",
        type=Path,
        default=DEFAULT_XFAIL_FILE,
        metavar="FILE",
        help=f"expected-failure list (default: {DEFAULT_XFAIL_FILE.name} of this package)",
    )
    parser.add_argument("--no-xfail", action="store_true", help="ignore the expected-failure list")
    parser.add_argument(
        "--prune-xfail",
        action="store_true",
        help="remove stale entries (their command passed) from the xfail file",
    )
    parser.add_argument(
        "--executor",
        metavar="MODULE:FACTORY",
        help="executor for commands that need an instance: 'embed' (polyengine.instantiate,"
        " the default), 'none' (skip them) or MODULE:FACTORY",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per command (0: no limit)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="also list expected failures")
    return parser


def default_executor(translate: Translator | None) -> str:
    """``embed`` when binaries go through polyengine's own translator, else ``none``.

    The embed executor instantiates the translator's Plans; any other
    translator (or none) leaves nothing it could run.
    """
    try:
        from polyengine.translate import translate_component
    except ImportError:
        return "none"
    return "embed" if translate is translate_component else "none"


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; return the exit status."""
    stream = out if out is not None else sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        xfails = XfailList() if args.no_xfail else XfailList.load(args.xfail)
        translate, _what = _runner.find_translator()
        factory = load_executor_factory(args.executor or default_executor(translate))
        runner = WastRunner(executor_factory=factory, xfails=xfails, timeout=args.timeout or None)
        files = runner.run_paths(args.paths)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(format_json(files), file=stream)
    else:
        print(format_report(files, verbose=args.verbose), file=stream)
    if args.prune_xfail and not args.no_xfail:
        stale = {(f.id, r.line) for f in files for r in f.results if r.stale_xfail}
        for line in prune_xfail_file(args.xfail, stale):
            print(f"pruned from {args.xfail}: {line}", file=sys.stderr)
        unexpected = sum(
            1 for f in files for r in f.results if r.status is Status.FAILED and not r.stale_xfail
        )
        return 1 if unexpected else 0
    return 1 if Totals.of(files).failed else 0


if __name__ == "__main__":
    sys.exit(main())
