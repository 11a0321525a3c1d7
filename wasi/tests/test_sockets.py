"""wasi:sockets: refused without the network grant; loopback TCP/UDP with it."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from polyengine_protocol import ComponentException
from polyengine_wasi import Network, TcpSocket, poll, wasi

LOOPBACK = (127, 0, 0, 1)


async def done(value: Any) -> Any:
    """Await a ``suspending`` method's result when it parked."""
    return await value if inspect.isawaitable(value) else value


def v4(port: int, address: tuple[int, int, int, int] = LOOPBACK) -> dict[str, Any]:
    return {"kind": "ipv4", "value": {"port": port, "address": address}}


def test_network_refused_when_not_granted() -> None:
    imports = wasi()
    network = imports["wasi:sockets/instance-network@0.2"].instance_network()
    assert isinstance(network, Network)
    for create in (
        lambda: imports["wasi:sockets/tcp-create-socket@0.2"].create_tcp_socket("ipv4"),
        lambda: imports["wasi:sockets/udp-create-socket@0.2"].create_udp_socket("ipv6"),
        lambda: imports["wasi:sockets/ip-name-lookup@0.2"].resolve_addresses(network, "localhost"),
    ):
        with pytest.raises(ComponentException) as refused:
            create()
        assert refused.value.payload == "access-denied"


def test_a_granted_socket_refuses_an_ungranted_network() -> None:
    sock = wasi(network=True)["wasi:sockets/tcp-create-socket@0.2"].create_tcp_socket("ipv4")
    try:
        with pytest.raises(ComponentException) as refused:
            sock.start_bind(Network(False), v4(0))
        assert refused.value.payload == "access-denied"
    finally:
        sock.close()


def test_tcp_loopback_connect_accept_send() -> None:
    imports = wasi(network=True)
    network = imports["wasi:sockets/instance-network@0.2"].instance_network()
    create = imports["wasi:sockets/tcp-create-socket@0.2"].create_tcp_socket

    async def main() -> tuple[bytes, bytes]:
        server: TcpSocket = create("ipv4")
        server.start_bind(network, v4(0))
        server.finish_bind()
        server.start_listen()
        server.finish_listen()
        assert server.is_listening()
        address = server.local_address()
        assert address["kind"] == "ipv4" and address["value"]["address"] == LOOPBACK
        port = address["value"]["port"]
        assert port > 0

        with pytest.raises(ComponentException) as idle:
            server.accept()
        assert idle.value.payload == "would-block"

        client: TcpSocket = create("ipv4")
        client.start_connect(network, v4(port))
        await done(client.subscribe().block())
        c_in, c_out = client.finish_connect()
        assert client.remote_address() == v4(port)

        await done(server.subscribe().block())
        conn, s_in, s_out = server.accept()
        assert conn.remote_address() == client.local_address()

        await done(c_out.blocking_write_and_flush(b"ping from client"))
        await done(s_out.blocking_write_and_flush(b"pong"))
        got_server = b""
        while len(got_server) < 16:
            got_server += await done(s_in.blocking_read(64))
        got_client = await done(c_in.blocking_read(64))

        client.shutdown("send")
        with pytest.raises(ComponentException) as eof:
            await done(s_in.blocking_read(1))
        assert eof.value.payload == {"kind": "closed"}
        for resource in (c_in, c_out, s_in, s_out, conn, client, server):
            resource.close()
        return got_server, got_client

    assert asyncio.run(main()) == (b"ping from client", b"pong")


def test_tcp_state_machine_errors() -> None:
    imports = wasi(network=True)
    network = imports["wasi:sockets/instance-network@0.2"].instance_network()
    sock = imports["wasi:sockets/tcp-create-socket@0.2"].create_tcp_socket("ipv4")
    try:
        with pytest.raises(ComponentException) as state:
            sock.finish_bind()
        assert state.value.payload == "not-in-progress"
        with pytest.raises(ComponentException) as state:
            sock.start_listen()
        assert state.value.payload == "invalid-state"
        with pytest.raises(ComponentException) as bad:
            sock.start_connect(network, v4(0))
        assert bad.value.payload == "invalid-argument"
        with pytest.raises(ComponentException) as family:
            sock.start_bind(network, {"kind": "ipv6", "value": {
                "port": 0, "flow_info": 0, "address": (0,) * 8, "scope_id": 0}})
        assert family.value.payload == "invalid-argument"
        assert sock.address_family() == "ipv4"
        sock.set_keep_alive_enabled(True)
        assert sock.keep_alive_enabled() is True
    finally:
        sock.close()


def test_tcp_connection_refused() -> None:
    imports = wasi(network=True)
    network = imports["wasi:sockets/instance-network@0.2"].instance_network()
    create = imports["wasi:sockets/tcp-create-socket@0.2"].create_tcp_socket
    # find a port with nothing listening: bind, read the port, close
    probe = create("ipv4")
    probe.start_bind(network, v4(0))
    probe.finish_bind()
    port = probe.local_address()["value"]["port"]
    probe.close()

    async def main() -> object:
        sock = create("ipv4")
        sock.start_connect(network, v4(port))
        assert await done(poll([sock.subscribe()])) == [0]
        try:
            sock.finish_connect()
        except ComponentException as exc:
            return exc.payload
        finally:
            sock.close()
        return None

    assert asyncio.run(main()) == "connection-refused"


def test_udp_loopback() -> None:
    imports = wasi(network=True)
    network = imports["wasi:sockets/instance-network@0.2"].instance_network()
    create = imports["wasi:sockets/udp-create-socket@0.2"].create_udp_socket

    async def main() -> list[dict[str, Any]]:
        a, b = create("ipv4"), create("ipv4")
        for s in (a, b):
            s.start_bind(network, v4(0))
            s.finish_bind()
        b_addr = b.local_address()
        _, a_out = a.stream(None)
        b_in, _ = b.stream(None)
        assert a_out.check_send() > 0
        assert a_out.send([{"data": b"datagram", "remote_address": b_addr}]) == 1
        pollable = b_in.subscribe()
        await done(pollable.block())
        received = b_in.receive(10)
        a.close()
        b.close()
        return received

    received = asyncio.run(main())
    assert len(received) == 1
    assert received[0]["data"] == b"datagram"
    assert received[0]["remote_address"]["value"]["address"] == LOOPBACK


def test_name_lookup_localhost() -> None:
    imports = wasi(network=True)
    network = imports["wasi:sockets/instance-network@0.2"].instance_network()
    lookup = imports["wasi:sockets/ip-name-lookup@0.2"]
    stream = lookup.resolve_addresses(network, "127.0.0.1")
    assert stream.resolve_next_address() == {"kind": "ipv4", "value": LOOPBACK}
    assert stream.resolve_next_address() is None

    async def resolve(name: str) -> list[Any]:
        stream = lookup.resolve_addresses(network, name)
        found = []
        while True:
            try:
                address = stream.resolve_next_address()
            except ComponentException as exc:
                if exc.payload != "would-block":
                    raise
                await done(stream.subscribe().block())
                continue
            if address is None:
                return found
            found.append(address)

    assert {"kind": "ipv4", "value": LOOPBACK} in asyncio.run(resolve("localhost"))
    assert asyncio.run(resolve("::1")) == [{"kind": "ipv6", "value": (0,) * 7 + (1,)}]
    with pytest.raises(ComponentException) as bad:
        lookup.resolve_addresses(network, "")
    assert bad.value.payload == "invalid-argument"


def test_network_error_code() -> None:
    imports = wasi()
    err = imports["wasi:io/error@0.2"].Error("refused", 111)
    assert imports["wasi:sockets/network@0.2"].network_error_code(err) == "connection-refused"


def test_udp_connected_stream_filters_and_defaults() -> None:
    imports = wasi(network=True)
    network = imports["wasi:sockets/instance-network@0.2"].instance_network()
    create = imports["wasi:sockets/udp-create-socket@0.2"].create_udp_socket

    async def main() -> list[bytes]:
        a, b, c = create("ipv4"), create("ipv4"), create("ipv4")
        try:
            for s in (a, b, c):
                s.start_bind(network, v4(0))
                s.finish_bind()
            b_in, _ = b.stream(a.local_address())  # b only listens to a
            assert b.remote_address() == a.local_address()
            _, a_out = a.stream(b.local_address())
            _, c_out = c.stream(None)
            c_out.check_send()
            assert c_out.send([{"data": b"from c", "remote_address": b.local_address()}]) == 1
            a_out.check_send()
            assert a_out.send([{"data": b"from a", "remote_address": None}]) == 1
            got: list[bytes] = []
            while not got:
                await done(b_in.subscribe().block())
                got += [d["data"] for d in b_in.receive(10)]
            with pytest.raises(ComponentException) as stale:
                a_out2 = a_out
                a.stream(None)
                a_out2.check_send()
            assert stale.value.payload == "invalid-state"
            return got
        finally:
            for s in (a, b, c):
                s.close()

    assert asyncio.run(main()) == [b"from a"]
