"""Smoke-test a non-editable install of the three distributions.

Run with the interpreter of the venv the wheels went into, from outside the
repository (so nothing imports from the source tree), with the built examples'
folder as the argument: ``python smoke_install.py EXAMPLES_BUILD_DIR``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import subprocess
import sys
from pathlib import Path


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke test failed: {what}")
    print(f"ok  {what}")


def run(*cmd: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"smoke test failed: {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def main() -> None:
    build = Path(sys.argv[1])
    bindir = Path(sys.executable).parent
    venv = bindir.parent

    import polyengine
    import polyengine_protocol
    import polyengine_wasi

    for module in (polyengine, polyengine_protocol, polyengine_wasi):
        where = Path(module.__file__ or "")
        check(venv in where.parents, f"{module.__name__} imports from the venv ({where.parent})")
        check((where.parent / "py.typed").is_file(), f"{module.__name__} ships py.typed")
    testing = importlib.resources.files("polyengine.testing")
    for name in ("xfail.txt", "trap_equivalents.txt"):
        check(testing.joinpath(name).is_file(), f"polyengine.testing ships {name}")
    for dist in ("polyengine", "polyengine-protocol", "polyengine-wasi"):
        importlib.metadata.version(dist)
        check(True, f"distribution {dist} {importlib.metadata.version(dist)} is installed")
    scripts = [ep.name for ep in importlib.metadata.entry_points(group="console_scripts")]
    check("polyengine" in scripts, "the polyengine console script is registered")

    version, path = run(sys.executable, "-m", "polyengine", "--version").strip().splitlines()
    check(version == f"polyengine {importlib.metadata.version('polyengine')}", version)
    check(path.startswith("call path: "), path)
    cli = str(bindir / "polyengine")
    out = run(cli, "run", str(build / "hello.wasm"))
    check(out == "Hello, world!\n", "polyengine run hello.wasm prints Hello, world!")
    out = run(cli, "run", str(build / "py-app.wasm"), "the", "fox", "The")
    check(out.split() == ["2", "the", "1", "fox"], "polyengine run py-app.wasm counts words")
    out = run(cli, "invoke", str(build / "calc.wasm"), "add(2, 40)")
    check(out.strip() == "42", "polyengine invoke calc.wasm 'add(2, 40)' prints 42")

    import asyncio

    import polyengine.sync

    data = (build / "calc.wasm").read_bytes()
    with polyengine.sync.instantiate_sync(data, {}) as instance:
        check(instance.exports.fib(10) == 55, "the blocking facade calls fib(10) == 55")

    async def native() -> int:
        with await polyengine.instantiate(data, {}) as instance:
            result: int = await instance.exports.add(1, 2)
            return result

    check(asyncio.run(native()) == 3, "await polyengine.instantiate(...) calls add(1, 2) == 3")
    stdout = bytearray()
    hello = (build / "hello.wasm").read_bytes()
    with polyengine.sync.instantiate_sync(hello, polyengine_wasi.wasi(stdout=stdout)) as instance:
        instance.exports["wasi:cli/run@0.2.0"].run()
    check(bytes(stdout) == b"Hello, world!\n", "polyengine_wasi.wasi() captures stdout")


if __name__ == "__main__":
    main()
