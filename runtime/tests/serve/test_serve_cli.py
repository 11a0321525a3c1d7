"""``polyengine serve`` over a real socket on 127.0.0.1, and against ``wasmtime serve``."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from live import POLYENGINE, Request, differential, fetch, server

from polyengine.asgi import ERROR_PAGE
from polyengine.cli import main
from polyengine.cli._serve import parse_duration

Guest = Callable[[str], bytes]


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


@pytest.mark.parametrize("name", ["hello", "echo", "noreply", "trap"])
def test_same_answers_as_wasmtime_serve(tmp_path: Path, guest: Guest, name: str) -> None:
    wasm = _wasm(tmp_path, guest, name)
    requests: list[Request] = [
        ("GET", "/", None), ("POST", "/p?x=1&y=%20", b"body " * 5000), ("PUT", "/", b"")
    ]
    ours, theirs = differential(wasm, requests)
    assert ours == theirs


def test_log_lines_are_prefixed_per_instance() -> None:
    import io

    from polyengine.asgi._io import _PrefixedLog

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
