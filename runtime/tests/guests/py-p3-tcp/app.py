"""A WASI 0.3 command: TCP echo over 127.0.0.1 through wasi:sockets@0.3.0.

``app server PORT N`` listens on 127.0.0.1:PORT, echoes N connections one
after the other and exits. ``app client PORT TEXT REPEAT`` connects
(retrying while the server is not up yet), sends TEXT REPEAT times while
receiving the echo, and prints what came back. ``app denied`` shows what a
socket answers without the network grant; ``app lookup NAME`` resolves.
"""

import asyncio

import wit_world
from componentize_py_types import Err, Ok
from wit_world import exports
from wit_world.imports import environment, ip_name_lookup, monotonic_clock, stderr, stdout
from wit_world.imports import wasi_sockets_types as net

LOOPBACK = (127, 0, 0, 1)
CHUNK = 65536


def kind(value: object) -> str:
    """``ErrorCode_ConnectionRefused`` -> ``connection-refused``."""
    name = type(value).__name__.split("_", 1)[1]
    return "".join("-" + c.lower() if c.isupper() else c for c in name).lstrip("-")


def loopback(port: int) -> net.IpSocketAddress:
    return net.IpSocketAddress_Ipv4(net.Ipv4SocketAddress(port=port, address=LOOPBACK))


async def emit(target: object, text: str) -> None:
    writer, reader = wit_world.byte_stream()
    done = target.write_via_stream(reader)  # type: ignore[attr-defined]
    with writer:
        await writer.write_all(text.encode())
    with done:
        status = await done.read()
    if not isinstance(status, Ok):
        raise Err(None)


async def finish(done: object, what: str) -> None:
    with done:  # type: ignore[attr-defined]
        status = await done.read()  # type: ignore[attr-defined]
    if not isinstance(status, Ok):
        raise RuntimeError(f"{what}: {kind(status.value)}")


async def echo(conn: net.TcpSocket) -> int:
    data, received = conn.receive()
    writer, reader = wit_world.byte_stream()
    sent = conn.send(reader)
    total = 0
    with data, writer:
        while not data.writer_dropped:
            chunk = await data.read(CHUNK)
            if chunk:
                await writer.write_all(chunk)
                total += len(chunk)
    await finish(received, "receive")
    await finish(sent, "send")
    return total


async def server(port: int, count: int) -> None:
    sock = net.TcpSocket.create(net.IpAddressFamily.IPV4)
    sock.bind(loopback(port))
    accepted = sock.listen()
    await emit(stdout, f"listening: {sock.get_is_listening()}\n")
    served = 0
    with accepted:
        while served < count:
            for conn in await accepted.read(1):
                with conn:
                    remote = conn.get_remote_address()
                    assert isinstance(remote, net.IpSocketAddress_Ipv4)
                    total = await echo(conn)
                served += 1
                await emit(stdout, f"connection {served} from {remote.value.address}: "
                           f"echoed {total} bytes\n")


async def connect(port: int) -> net.TcpSocket:
    for _ in range(100):
        sock = net.TcpSocket.create(net.IpAddressFamily.IPV4)
        try:
            await sock.connect(loopback(port))
            return sock
        except Err as err:
            if not isinstance(err.value, net.ErrorCode_ConnectionRefused):
                raise
        sock.__exit__(None, None, None)
        await monotonic_clock.wait_for(50_000_000)
    raise RuntimeError("the server never came up")


async def client(port: int, text: str, repeat: int) -> None:
    sock = await connect(port)
    remote = sock.get_remote_address()
    assert isinstance(remote, net.IpSocketAddress_Ipv4)
    payload = text.encode() * repeat
    writer, reader = wit_world.byte_stream()
    sent = sock.send(reader)
    data, received = sock.receive()

    async def push() -> None:
        with writer:
            for start in range(0, len(payload), CHUNK):
                await writer.write_all(payload[start:start + CHUNK])

    async def pull() -> bytes:
        chunks = []
        with data:
            while not data.writer_dropped:
                chunks.append(await data.read(CHUNK))
        return b"".join(chunks)

    _, back = await asyncio.gather(push(), pull())
    await finish(sent, "send")
    await finish(received, "receive")
    await emit(stdout, f"connected to {remote.value.address}\n"
               f"echo: {back[:len(text)].decode()} ({len(back)} bytes, "
               f"match: {back == payload})\n")


async def denied() -> None:
    lines = []
    try:
        sock = net.TcpSocket.create(net.IpAddressFamily.IPV4)
        try:
            sock.bind(loopback(0))
            lines.append("bind: ok")
        except Err as err:
            lines.append(f"bind: {kind(err.value)}")
        try:
            await sock.connect(loopback(9))
            lines.append("connect: ok")
        except Err as err:
            lines.append(f"connect: {kind(err.value)}")
    except Err as err:
        lines.append(f"create: {kind(err.value)}")
    await emit(stdout, "\n".join(lines) + "\n")


async def lookup(name: str) -> None:
    try:
        found = await ip_name_lookup.resolve_addresses(name)
        text = " ".join(str(a.value) for a in found)
    except Err as err:
        text = kind(err.value)
    await emit(stdout, f"lookup {name}: {text}\n")


class Run(exports.Run):
    async def run(self) -> None:
        args = environment.get_arguments()[1:]
        try:
            if args[:1] == ["server"]:
                await server(int(args[1]), int(args[2]))
            elif args[:1] == ["client"]:
                await client(int(args[1]), args[2], int(args[3]))
            elif args[:1] == ["denied"]:
                await denied()
            elif args[:1] == ["lookup"]:
                await lookup(args[1])
            else:
                raise RuntimeError(f"unknown mode {args!r}")
        except Err as err:
            await emit(stderr, f"py-p3-tcp: {kind(err.value)}\n")
            raise Err(None) from None
