"""``polyengine serve --workers N``: one listener, N serving processes (http-serve.md §7).

The parent (:class:`Supervisor`) listens and accepts; each connection it
accepts goes to one worker, in turn, over a Unix socket pair of its own
(one byte carrying the descriptor, ``SCM_RIGHTS``), and the worker serves it
as if it had accepted it. So keep-alive connections are split evenly
between the workers whatever their ports: with a listener per worker in one
``SO_REUSEPORT`` group the kernel spreads them by a hash of the addresses,
and 8 connections to 2 workers often split 2/6 or 1/7, one worker saturated
while the other idles. A worker that is being replaced gets none;
connections wait in the listener's backlog until the workers are ready.
Worker ``k`` of ``N`` numbers its instances ``k``, ``k + N``, ...
(``INSTANCE_ID``, the ``stdout [N] ::`` log prefixes), so no two instances
of the server share a number, and takes its part of
``--max-concurrent-requests`` and ``--max-concurrent-connections``, which
bound the whole server as under ``wasmtime serve``.

Workers are :class:`polyengine.pool.process.WorkerProcess` processes
running :func:`polyengine.cli._serve.serve_worker`: the first starts alone
and compiles the component into the shared on-disk cache, the others then
only load from it; a worker that dies is reported and replaced; ctrl-c (or
SIGTERM, or a connection to ``--shutdown-addr``) reaches the parent, which
stops accepting and has every worker drain, and a second ctrl-c kills them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import socket
import sys
from typing import Any

__all__ = ["Supervisor", "controlled", "share", "shutdown_listener"]

#: the program of a serving worker, run as ``python -m ... FD HANDOFF_FD``
_WORKER_MODULE = "polyengine.cli._serve"
#: the byte each handed-off connection travels with
_CONNECTION = b"c"
#: how long the parent stops accepting when it ran out of descriptors, or every
#: worker's queue of connections was full
_RETRY_SECONDS = 0.05


class Supervisor:
    """The parent of ``--workers N``: accepts connections, hands each to a worker in
    turn, and starts, watches, replaces and stops the workers. ``Serving HTTP on`` is
    printed when all are ready."""

    def __init__(
        self, options: dict[str, Any], workers: int, shown: str, listener: socket.socket
    ) -> None:
        sendable = dict(options, shutdown_addr=None)
        limits = options.get("limits")
        sendable["limits"] = None if limits is None else dataclasses.asdict(limits)
        self._init = {"role": "http", "options": sendable, "sys_path": list(sys.path)}
        self._count = workers
        self._shown = shown
        self._listener = listener
        self._shutdown_addr = options["shutdown_addr"]
        self._serials = iter(range(1 << 62))
        self._stop = asyncio.Event()
        self._force = asyncio.Event()
        self._workers: dict[int, Any] = {}
        #: each ready worker's end of the socket pair its connections travel over
        self._handoffs: dict[int, socket.socket] = {}
        #: the worker the next connection goes to first (by index)
        self._turn = 0
        #: a connection accepted that no worker could take yet
        self._held: socket.socket | None = None
        #: accepting stopped until a worker can take ``_held``
        self._paused = False

    def _signal(self) -> None:
        if self._stop.is_set():
            self._force.set()
        else:
            self._stop.set()

    async def _spawn(self) -> tuple[Any, socket.socket]:
        """A new worker process and the parent's end of its hand-off socket pair."""
        from polyengine.pool.process import WorkerProcess

        # a stream pair (SOCK_SEQPACKET is Linux's, not macOS's): each connection is
        # one byte carrying its descriptor, read a byte at a time
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        worker = WorkerProcess(next(self._serials), _WORKER_MODULE)
        try:
            await worker.spawn(pass_sockets=(child,))
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        parent.setblocking(False)
        return worker, parent

    async def _start(self, index: int, booted: tuple[Any, socket.socket] | None = None) -> Any:
        from polyengine.pool.process import describe_exit

        worker, handoff = booted if booted is not None else await self._spawn()
        self._workers[index] = worker
        worker.send(dict(self._init, numbering=(index, self._count)))
        await worker.flush()
        message = await worker.receive()
        if message is None or message[0] != "ready":
            handoff.close()
            code = await worker.reap()
            raise RuntimeError(f"worker {index} (pid {worker.pid}) {describe_exit(code)} "
                               "before it was serving")
        self._handoffs[index] = handoff
        self._resume()
        return worker

    async def _watch(self, index: int) -> None:
        from polyengine.pool.process import describe_exit

        while not self._stop.is_set():
            worker = self._workers[index]
            while await worker.receive() is not None:
                pass
            handoff = self._handoffs.pop(index, None)
            if handoff is not None:
                handoff.close()
            code = await worker.reap()
            if self._stop.is_set():
                return
            print(f"error: worker {index} (pid {worker.pid}) {describe_exit(code)}; "
                  "starting another", file=sys.stderr, flush=True)
            try:
                await self._start(index)
            except (RuntimeError, OSError) as exc:
                print(f"error: {exc}", file=sys.stderr, flush=True)
                await asyncio.sleep(1.0)

    # -- connections -------------------------------------------------------------------

    def _accept(self) -> None:
        """The listener is readable: hand every pending connection to a worker.

        A connection no worker can take now (none is ready, or every one's queue
        is full) is held, and the parent stops accepting: the rest wait in the
        listener's backlog until a worker is ready (:meth:`_start`) or a moment
        has passed."""
        while True:
            if self._held is None:
                try:
                    conn, _ = self._listener.accept()
                except (BlockingIOError, InterruptedError):
                    return
                except OSError as exc:  # out of descriptors: the backlog waits a moment
                    print(f"error: accepting a connection: {exc}", file=sys.stderr,
                          flush=True)
                    self._pause(_RETRY_SECONDS)
                    return
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._held = conn
            if not self._hand_off(self._held):
                self._pause(_RETRY_SECONDS if self._handoffs else None)
                return
            self._held.close()
            self._held = None

    def _hand_off(self, conn: socket.socket) -> bool:
        """Send ``conn`` to the next ready worker in turn, skipping one that cannot
        take it now; ``False`` when none could."""
        ready = sorted(self._handoffs)
        count = len(ready)
        first = next((k for k, index in enumerate(ready) if index >= self._turn), 0)
        for k in range(count):
            index = ready[(first + k) % count]
            try:
                socket.send_fds(self._handoffs[index], [_CONNECTION], [conn.fileno()])
            except OSError:  # its queue is full, or it is gone (its watcher replaces it)
                continue
            self._turn = index + 1
            return True
        return False

    def _pause(self, retry: float | None) -> None:
        """Stop accepting; start again after ``retry`` seconds (``None``: when a worker
        is ready)."""
        loop = asyncio.get_running_loop()
        loop.remove_reader(self._listener)
        self._paused = True
        if retry is not None:
            loop.call_later(retry, self._resume)

    def _resume(self) -> None:
        if self._paused and not self._stop.is_set():
            self._paused = False
            asyncio.get_running_loop().add_reader(self._listener, self._accept)
            self._accept()  # the held connection first, even with an empty backlog

    # -- the run ----------------------------------------------------------------------

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._signal)
        try:
            booting = [await self._spawn() for _ in range(self._count)]
            await self._start(0, booting[0])
            await asyncio.gather(*(self._start(i, b) for i, b in enumerate(booting) if i))
        except (RuntimeError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            await self._stop_all(force=True)
            return 1
        print(f"Serving HTTP on http://{self._shown}/", file=sys.stderr, flush=True)
        self._listener.setblocking(False)
        loop.add_reader(self._listener, self._accept)
        watchers = [asyncio.ensure_future(self._watch(i)) for i in range(self._count)]
        shutdown = None
        if self._shutdown_addr is not None:
            shutdown = asyncio.ensure_future(shutdown_listener(self._shutdown_addr, self._stop))
        await self._stop.wait()
        loop.remove_reader(self._listener)
        self._listener.close()
        if self._held is not None:
            self._held.close()
        print("Waiting for child tasks to exit, ctrl-c again to quit sooner...",
              file=sys.stderr, flush=True)
        await self._stop_all(force=False)
        for task in [*watchers, shutdown]:
            if task is not None:
                task.cancel()
        return 0

    async def _stop_all(self, *, force: bool) -> None:
        workers = list(self._workers.values())
        for worker in workers:
            worker.send(("stop",))
            await worker.flush()
        forced = asyncio.ensure_future(self._force.wait())
        for worker in workers:
            while not force and not forced.done():
                if await worker.wait_exit(0.1) is not None:
                    break
            await worker.reap(timeout=0.0 if force or forced.done() else 2.0)
        forced.cancel()
        for handoff in self._handoffs.values():
            handoff.close()
        self._handoffs.clear()


async def shutdown_listener(addr: tuple[str, int], stop: asyncio.Event) -> None:
    """``--shutdown-addr``: listen on ``addr`` until ``stop`` is set; a connection sets it."""

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()
        stop.set()

    listening = await asyncio.start_server(on_connect, addr[0], addr[1])
    bound = listening.sockets[0].getsockname()
    print(f"Listening for shutdown on tcp://{bound[0]}:{bound[1]}/", file=sys.stderr, flush=True)
    async with listening:
        await stop.wait()


# -- the worker's side ------------------------------------------------------------------


def share(limit: int, index: int, count: int) -> int:
    """Worker ``index``'s part of a server-wide ``limit`` (``--max-concurrent-requests``,
    ``--max-concurrent-connections``) split over ``count`` workers: the parts add up to
    ``limit`` (each at least 1), as the connections come to the workers in turn. No
    limit (0) stays none."""
    if limit <= 0:
        return limit
    part, rest = divmod(limit, count)
    return max(1, part + (index < rest))


async def controlled(server: Any, control: socket.socket, handoff: socket.socket) -> None:
    """Take the parent's connections once the server runs, tell the parent it is
    ready; drain when it says stop (or is gone)."""
    from polyengine.pool.wire import read_frame, write_frame

    loop = asyncio.get_running_loop()
    control.setblocking(False)
    handoff.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=control)
    while not server.started:
        await asyncio.sleep(0.01)
    config = server.config
    adopting: set[asyncio.Task[Any]] = set()

    def protocol() -> asyncio.Protocol:  # the one uvicorn's own listeners make
        made: asyncio.Protocol = config.http_protocol_class(
            config=config, server_state=server.server_state, app_state=server.lifespan.state
        )
        return made

    def receive() -> None:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(handoff, 1, 8)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data, fds = b"", []
            if not data and not fds:  # the parent is gone
                loop.remove_reader(handoff)
                return
            for fd in fds:
                conn = socket.socket(fileno=fd)
                if server.should_exit:
                    conn.close()
                    continue
                conn.setblocking(False)
                task = loop.create_task(adopt(conn))
                adopting.add(task)
                task.add_done_callback(adopting.discard)

    async def adopt(conn: socket.socket) -> None:
        try:
            await loop.connect_accepted_socket(protocol, conn)
        except OSError:
            conn.close()

    loop.add_reader(handoff, receive)
    try:
        write_frame(writer, ("ready", {"pid": os.getpid()}))
        await writer.drain()
        await read_frame(reader)  # ("stop",), or the end: the parent is gone
    finally:
        loop.remove_reader(handoff)
        handoff.close()
        server.should_exit = True
        writer.close()
