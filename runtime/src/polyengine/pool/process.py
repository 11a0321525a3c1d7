"""A worker process as its parent sees it: spawn, talk, watch, stop.

Shared by the export pool (:mod:`polyengine.pool._pool`) and
``polyengine serve --workers N`` (http-serve.md §7: processes on one
machine). The process is ``python -m polyengine.pool._worker FD`` with the
parent's interpreter and environment, in its own session (a ctrl-c at the
terminal reaches the parent only), talking over a socket pair in
:mod:`polyengine.pool.wire` frames. A worker whose parent is gone sees the
end of the socket and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from polyengine.pool.wire import read_frame, recv_frame_blocking, write_frame

__all__ = ["WorkerProcess", "connect_to_parent", "describe_exit"]


def describe_exit(returncode: int | None) -> str:
    """``"was killed by SIGKILL"``, ``"exited with status 3"``, ``"exited"``."""
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    if returncode == 0:
        return "exited"
    return f"exited with status {returncode}"


class WorkerProcess:
    """One worker process (``python -m module FD``) and the parent's end of the socket pair."""

    def __init__(self, serial: int, module: str = "polyengine.pool._worker") -> None:
        #: the pool-wide number of this spawn (0, 1, 2, ... in the order of spawning)
        self.serial = serial
        self.module = module
        self.proc: subprocess.Popen[bytes] | None = None
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        #: wall-clock time of the spawn and of the ready message (``time.time()``)
        self.spawned_at = 0.0
        self.ready_at = 0.0

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else 0

    async def spawn(self, pass_sockets: Sequence[socket.socket] = ()) -> None:
        """Start the process; it imports the runtime and waits for :meth:`init`.

        ``pass_sockets`` are inherited too, their descriptors the arguments after
        the socket pair's (``python -m module FD FD2 ...``)."""
        parent, child = socket.socketpair()
        fds = [child.fileno(), *(s.fileno() for s in pass_sockets)]
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.module, *map(str, fds)],
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        self.spawned_at = time.time()
        parent.setblocking(False)
        self.reader, self.writer = await asyncio.open_connection(sock=parent)

    def send(self, message: object) -> None:
        """Queue ``message`` (dropped when the worker is gone: its death is seen by the reader)."""
        writer = self.writer
        if writer is not None and not writer.is_closing():
            write_frame(writer, message)

    async def flush(self) -> None:
        writer = self.writer
        if writer is not None:
            with contextlib.suppress(ConnectionError):
                await writer.drain()

    async def receive(self) -> Any:
        """The next message, or ``None`` once the worker is gone."""
        if self.reader is None:
            return None
        return await read_frame(self.reader)

    async def wait_exit(self, timeout: float) -> int | None:
        """The exit status, waiting up to ``timeout`` seconds (``None`` if still running)."""
        proc = self.proc
        if proc is None:
            return None
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            code = proc.poll()
            if code is not None or time.monotonic() >= deadline:
                return code
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)

    def kill(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    def signal(self, signum: int) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signum)

    async def reap(self, timeout: float = 2.0) -> int | None:
        """After the socket ended: the exit status, killing a process that lingers."""
        code = await self.wait_exit(timeout)
        if code is None:
            self.kill()
            code = await self.wait_exit(5.0)
        self.close_socket()
        return code

    def close_socket(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.close()


def connect_to_parent(argv: list[str]) -> tuple[socket.socket, dict[str, Any] | None]:
    """The worker's side: its socket (``argv`` is ``[FD]``) and the parent's init message.

    The message is ``None`` when the parent stopped before it needed this
    worker. The parent's ``sys.path`` (``init["sys_path"]``) becomes this
    process's, so the imports factory's module is found as the parent finds it.
    """
    if len(argv) != 1 or not argv[0].isdigit():
        raise SystemExit("usage: python -m MODULE FD (a worker of polyengine.pool)")
    sock = socket.socket(fileno=int(argv[0]))
    sock.setblocking(True)
    init = recv_frame_blocking(sock)
    if not isinstance(init, dict):
        return sock, None
    sys_path = init.get("sys_path")
    if isinstance(sys_path, list):
        sys.path[:] = [p for p in sys_path if isinstance(p, str)]
    return sock, init
