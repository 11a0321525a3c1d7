"""A pool worker process: ``python -m polyengine.pool._worker FD``.

``FD`` is this process's end of a socket pair with its parent
(:mod:`polyengine.pool.process`). The worker imports the runtime while the
parent decides when it may start (a pool starts its first worker alone, so
that it alone compiles into the shared on-disk cache), then reads its init
message, makes its instance (:class:`~polyengine.pool.host.InstanceHost`),
answers ``("ready", info)`` (or ``("fatal", error)``), and then answers
each ``("call", id, interface, name, args)`` with ``("ok"|"err", id, data)``
until ``("exit",)`` or the parent is gone.
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
    # Import the runtime while the parent may still be holding this worker back.
    import polyengine
    from polyengine.pool.process import connect_to_parent

    polyengine.instantiate  # noqa: B018 (the attribute imports the embedder)
    sock, init = connect_to_parent(sys.argv[1:] if argv is None else argv)
    if init is None:
        return 0
    return asyncio.run(_exports(sock, init))


async def _exports(sock: socket.socket, init: dict[str, Any]) -> int:
    from polyengine import translate
    from polyengine.limits import Limits
    from polyengine.pool.host import InstanceHost
    from polyengine.pool.wire import encode_error, load_factory, read_frame, write_frame

    sock.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=sock)
    broken: list[BaseException] = []
    main_task = asyncio.current_task()

    def on_broken(error: BaseException) -> None:
        # A replacement instance could not be made: stop reading, report, exit.
        broken.append(error)
        if main_task is not None:
            main_task.cancel()

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

    try:
        while True:
            message = await read_frame(reader)
            if message is None or message[0] == "exit":
                return 0
            if message[0] == "call":
                _, call_id, interface, name, args = message
                tasks[call_id] = asyncio.ensure_future(serve(call_id, interface, name, args))
            elif message[0] == "cancel":
                task = tasks.get(message[1])
                if task is not None:
                    task.cancel()
    except asyncio.CancelledError:
        if not broken:
            raise
        write_frame(writer, ("fatal", encode_error(broken[0])))
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        return 1
    finally:
        for task in list(tasks.values()):
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks.values(), return_exceptions=True)
        host.close()
        writer.close()


if __name__ == "__main__":
    raise SystemExit(main())
