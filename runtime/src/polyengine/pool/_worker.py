"""A pool worker process: ``python -m polyengine.pool._worker FD``.

``FD`` is this process's end of a socket pair with its parent. The worker
imports the runtime while the parent decides when it may start (a pool
starts its first worker alone, so that it alone compiles into the shared
on-disk cache), then reads one init message saying its role:

* ``exports``: hold one instance (:class:`~polyengine.pool._host.InstanceHost`)
  and answer ``("call", id, interface, name, args)`` with
  ``("ok"|"err", id, data)`` until ``("exit",)`` or the parent is gone;
* ``http``: serve a wasi:http component on a ``SO_REUSEPORT`` listener
  for ``polyengine serve --workers N`` (:func:`polyengine.cli._serve.serve_worker`).

The first message back is ``("ready", info)`` or ``("fatal", error)``.
The worker runs in its own session: a ctrl-c at the terminal reaches the
parent, which decides what the workers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from typing import Any

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print("usage: python -m polyengine.pool._worker FD", file=sys.stderr)
        return 2
    sock = socket.socket(fileno=int(args[0]))
    sock.setblocking(True)
    # Import the runtime while the parent may still be holding this worker back.
    import polyengine

    polyengine.instantiate  # noqa: B018 (the attribute imports the embedder)
    from polyengine.pool._wire import recv_frame_blocking

    init = recv_frame_blocking(sock)
    if not isinstance(init, dict):  # the parent stopped before it needed this worker
        return 0
    sys_path = init.get("sys_path")
    if isinstance(sys_path, list):
        sys.path[:] = [p for p in sys_path if isinstance(p, str)]
    role = init.get("role")
    if role == "exports":
        return asyncio.run(_exports(sock, init))
    if role == "http":
        from polyengine.cli._serve import serve_worker

        return serve_worker(sock, init)
    print(f"polyengine pool worker: unknown role {role!r}", file=sys.stderr)
    return 2


async def _exports(sock: socket.socket, init: dict[str, Any]) -> int:
    from polyengine import translate
    from polyengine.limits import Limits
    from polyengine.pool._host import InstanceHost
    from polyengine.pool._wire import encode_error, load_factory, read_frame, write_frame

    sock.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=sock)
    broken: list[BaseException] = []
    stop = asyncio.Event()

    def on_broken(error: BaseException) -> None:
        broken.append(error)
        stop.set()

    try:
        artifacts = translate(init["component"])
        ref = init.get("factory")
        factory = load_factory((ref[0], ref[1], ref[2])) if ref is not None else None
        limits = Limits(**init["limits"]) if init.get("limits") is not None else None
        host = InstanceHost(
            artifacts, factory, limits=limits, suspend=init.get("suspend"), on_broken=on_broken
        )
        catalog = await host.start()
    except Exception as exc:
        write_frame(writer, ("fatal", encode_error(exc)))
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        return 1
    write_frame(writer, ("ready", {"pid": os.getpid(), "catalog": catalog}))
    await writer.drain()

    tasks: dict[int, asyncio.Task[None]] = {}

    async def serve(call_id: int, interface: str | None, name: str, args: object) -> None:
        try:
            ok, data = await host.call(interface, name, args)
            write_frame(writer, ("ok" if ok else "err", call_id, data))
        except asyncio.CancelledError:
            write_frame(writer, ("cancelled", call_id))
        finally:
            tasks.pop(call_id, None)
        with contextlib.suppress(ConnectionError):
            await writer.drain()

    reading = asyncio.ensure_future(read_frame(reader))
    stopping = asyncio.ensure_future(stop.wait())
    try:
        while True:
            await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if stopping.done():
                write_frame(writer, ("fatal", encode_error(broken[0])))
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
                return 1
            message = reading.result()
            if message is None or message[0] == "exit":
                return 0
            if message[0] == "call":
                _, call_id, interface, name, args = message
                tasks[call_id] = asyncio.ensure_future(serve(call_id, interface, name, args))
            elif message[0] == "cancel":
                task = tasks.get(message[1])
                if task is not None:
                    task.cancel()
            reading = asyncio.ensure_future(read_frame(reader))
    finally:
        reading.cancel()
        stopping.cancel()
        for task in list(tasks.values()):
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks.values(), return_exceptions=True)
        host.close()
        writer.close()


if __name__ == "__main__":
    raise SystemExit(main())
