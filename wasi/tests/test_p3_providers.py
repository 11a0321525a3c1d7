"""The 0.3 filesystem and sockets providers called directly, as a runtime would."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from polyengine_protocol import ComponentException
from polyengine_wasi import wasi

LOOP4 = (127, 0, 0, 1)
TIMEOUT = 10


def addr(port: int) -> dict[str, Any]:
    return {"kind": "ipv4", "value": {"port": port, "address": LOOP4}}


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT))


async def one_chunk(data: bytes) -> Any:
    yield data


def test_read_via_stream_reads_only_as_pulled(tmp_path: Path) -> None:
    from polyengine_wasi import _p3_filesystem

    (tmp_path / "big.bin").write_bytes(b"x" * (3 * _p3_filesystem.READ_CHUNK + 5))
    [(root, _)] = wasi(preopens=[(tmp_path, "/d")])["wasi:filesystem/preopens@0.3"] \
        .get_directories()

    async def go() -> tuple[int, dict[str, Any], int]:
        f = await root.open_at({}, "big.bin", {}, {"read": True})
        data, done = f.read_via_stream(0)
        first = await data.__anext__()
        assert not isinstance(done, asyncio.Future) or not done.done()
        rest = [chunk async for chunk in data]
        return len(first), await done, sum(map(len, rest))

    first, outcome, rest = run(go())
    assert first == _p3_filesystem.READ_CHUNK  # one pull, one bounded read
    assert outcome == {"kind": "ok"}
    assert first + rest == 3 * _p3_filesystem.READ_CHUNK + 5


def test_errors_are_0_3_variants(tmp_path: Path) -> None:
    [(root, _)] = wasi(preopens=[(tmp_path, "/d")])["wasi:filesystem/preopens@0.3"] \
        .get_directories()
    with pytest.raises(ComponentException) as missing:
        run(root.stat_at({}, "nope"))
    assert missing.value.payload == {"kind": "no-entry"}
    assert run(root.get_type()) == {"kind": "directory"}
    assert run(root.stat())["type"] == {"kind": "directory"}
    data, done = root.read_via_stream(0)

    async def drain() -> Any:
        return [c async for c in data], await done

    assert run(drain()) == ([], {"kind": "err", "value": {"kind": "is-directory"}})


def test_write_append_and_read_directory(tmp_path: Path) -> None:
    [(root, _)] = wasi(preopens=[(tmp_path, "/d")])["wasi:filesystem/preopens@0.3"] \
        .get_directories()

    async def go() -> Any:
        f = await root.open_at({}, "a.txt", {"create": True}, {"write": True})
        assert await f.write_via_stream(one_chunk(b"hello"), 0) == {"kind": "ok"}
        assert await f.append_via_stream(one_chunk(b" world")) == {"kind": "ok"}
        await root.create_directory_at("sub")
        entries, done = root.read_directory()
        return [e async for e in entries], await done

    listed, outcome = run(go())
    assert (tmp_path / "a.txt").read_bytes() == b"hello world"
    assert listed == [{"type": {"kind": "regular-file"}, "name": "a.txt"},
                      {"type": {"kind": "directory"}, "name": "sub"}]
    assert outcome == {"kind": "ok"}


def test_sockets_are_denied_without_the_grant() -> None:
    imports = wasi()
    types = imports["wasi:sockets/types@0.3"]
    for cls in (types.TcpSocket, types.UdpSocket):
        with pytest.raises(ComponentException) as denied:
            cls.create("ipv4")
        assert denied.value.payload == {"kind": "access-denied"}
    lookup = imports["wasi:sockets/ip-name-lookup@0.3"]
    with pytest.raises(ComponentException) as denied:
        run(lookup.resolve_addresses("127.0.0.1"))
    assert denied.value.payload == {"kind": "access-denied"}


def test_tcp_listen_connect_send_receive() -> None:
    types = wasi(network=True)["wasi:sockets/types@0.3"]

    async def go() -> Any:
        server = types.TcpSocket.create("ipv4")
        server.bind(addr(0))
        accepted = server.listen()
        assert server.get_is_listening()
        port = server.get_local_address()["value"]["port"]
        client = types.TcpSocket.create("ipv4")
        connecting = asyncio.ensure_future(client.connect(addr(port)))
        conn = await accepted.__anext__()
        await connecting
        sent = client.send(one_chunk(b"ping" * 1000))
        data, received = conn.receive()
        got = b"".join([c async for c in data])
        assert await sent == {"kind": "ok"} and await received == {"kind": "ok"}
        assert conn.get_remote_address()["value"]["address"] == LOOP4
        again = client.send(one_chunk(b"x"))
        for s in (client, conn, server):
            s.close()
        await accepted.aclose()
        return got, await again

    got, again = run(go())
    assert got == b"ping" * 1000
    assert again == {"kind": "err", "value": {"kind": "invalid-state"}}


def test_tcp_connect_refused_is_a_variant() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    types = wasi(network=True)["wasi:sockets/types@0.3"]
    sock = types.TcpSocket.create("ipv4")
    with pytest.raises(ComponentException) as refused:
        run(sock.connect(addr(port)))
    sock.close()
    assert refused.value.payload == {"kind": "connection-refused"}


def test_udp_round_trip_and_lookup() -> None:
    imports = wasi(network=True)
    types = imports["wasi:sockets/types@0.3"]

    async def go() -> Any:
        a = types.UdpSocket.create("ipv4")
        b = types.UdpSocket.create("ipv4")
        a.bind(addr(0))
        b.bind(addr(0))
        b_port = b.get_local_address()["value"]["port"]
        await a.send(b"datagram", addr(b_port))
        data, sender = await b.receive()
        b.connect(sender)
        await b.send(b"reply", None)
        reply, _ = await a.receive()
        names = await imports["wasi:sockets/ip-name-lookup@0.3"].resolve_addresses("127.0.0.1")
        a.close()
        b.close()
        return data, sender["value"]["address"], reply, names

    assert run(go()) == (b"datagram", LOOP4, b"reply", [{"kind": "ipv4", "value": LOOP4}])
