#!/usr/bin/env python3
"""Build the real guest components of the test suite into the guest cache.

Usage: ``scripts/build_guests.py [--only NAME]... [-j N] [--force] [--prune] [--list]``

Each guest is built only when the cache (``$POLYENGINE_GUEST_CACHE`` or
``~/.cache/polyengine/guests``) has no artifact for its current inputs. A guest
whose toolchain is missing is reported as skipped; the exit status is non-zero
only when a build fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

BUILD_MODULE = Path(__file__).resolve().parents[1] / "runtime" / "tests" / "guests" / "_build.py"


def load_build_module() -> ModuleType:
    """Import ``runtime/tests/guests/_build.py`` by path (the test folders are not packages)."""
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BUILD_MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _build_one(guests: ModuleType, name: str, force: bool) -> bool:
    """Build one guest and print its line; ``False`` when the build failed."""
    start = time.monotonic()
    try:
        path = guests.build(name, force=force, log=lambda msg: print("  " + msg, flush=True))
    except guests.ToolchainMissing as exc:
        print(f"{name:22} skipped: {exc.reason}", flush=True)
        return True
    except guests.GuestBuildError as exc:
        print(f"{name:22} FAILED: {exc}", flush=True)
        return False
    size = path.stat().st_size / 1e6
    elapsed = time.monotonic() - start
    print(f"{name:22} ok  {size:6.1f} MB  {elapsed:5.1f}s  {path}", flush=True)
    return True


def main(argv: list[str] | None = None) -> int:
    guests = load_build_module()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        choices=sorted(guests.GUESTS),
        help="build only this guest (repeatable)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even on a cache hit")
    parser.add_argument("--prune", action="store_true", help="then delete stale cached artifacts")
    parser.add_argument(
        "-j", "--jobs", type=int, default=1, metavar="N", help="build N guests at a time"
    )
    parser.add_argument("--list", action="store_true", help="list the guests and exit")
    args = parser.parse_args(argv)

    if args.list:
        for name, spec in guests.GUESTS.items():
            print(f"{name:22} {spec.toolchain:17} {spec.description}")
        return 0

    names = args.only or list(guests.GUESTS)
    print(f"cache: {guests.cache_dir()}")
    # Composed guests build their parts themselves: build everything else
    # first (in parallel with --jobs), then the compositions.
    composed = [n for n in names if guests.GUESTS[n].toolchain == "compose"]
    plain = [n for n in names if n not in composed]
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for ok in pool.map(lambda n: _build_one(guests, n, args.force), plain):
            failed += not ok
    for name in composed:
        failed += not _build_one(guests, name, args.force)
    if args.prune:
        for path in guests.prune(names):
            print(f"pruned {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
