"""``wasi:sockets/udp`` and ``udp-create-socket`` (WASI 0.2).

A UDP socket is bound (``start-bind`` / ``finish-bind``), then ``stream``
hands out one incoming and one outgoing datagram stream, optionally
connected to a fixed remote address. Datagrams are records:
``{"data": bytes, "remote_address": ip-socket-address}``.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from polyengine_protocol import define_realm_local

from ._kernel import Pollable, fd_pollable, fd_ready, ready_pollable
from ._net import (
    Network,
    SocketAddress,
    family_of,
    from_host_address,
    from_os,
    is_unspecified,
    require,
    socket_error,
    to_host_address,
)

__all__ = ["UdpSocket", "IncomingDatagramStream", "OutgoingDatagramStream", "udp_providers"]

#: The largest payload one datagram may carry.
MAX_DATAGRAM = 65507
#: How many datagrams ``check-send`` admits at once.
SEND_PERMITS = 64


def _same_peer(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return bool(
        ipaddress.ip_address(str(a[0]).split("%", 1)[0])
        == ipaddress.ip_address(str(b[0]).split("%", 1)[0])
        and a[1] == b[1]
    )


@define_realm_local
class UdpSocket:
    """``wasi:sockets/udp.udp-socket``."""

    def __init__(self, family: str) -> None:
        self._family = family
        sock = socket.socket(family_of(family), socket.SOCK_DGRAM)
        if family == "ipv6":
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.setblocking(False)
        self._sock = sock
        self._state = "unbound"
        self._remote: tuple[Any, ...] | None = None
        self._generation = 0

    def start_bind(self, network: Network, local_address: SocketAddress) -> None:
        require(network, "start-bind")
        if self._state != "unbound":
            raise socket_error("invalid-state", "start-bind: the socket is already bound")
        family, _, sockaddr = to_host_address(local_address)
        if family != self._family:
            raise socket_error("invalid-argument", "start-bind: address family mismatch")
        try:
            self._sock.bind(sockaddr)
        except OSError as exc:
            raise from_os("start-bind", exc) from exc
        self._state = "bind-started"

    def finish_bind(self) -> None:
        if self._state != "bind-started":
            raise socket_error("not-in-progress", "finish-bind: no bind in progress")
        self._state = "bound"

    def stream(
        self, remote_address: SocketAddress | None
    ) -> tuple[IncomingDatagramStream, OutgoingDatagramStream]:
        """WIT ``%stream``: set (or clear) the remote address, hand out new streams.

        The remote address is applied by these streams (incoming datagrams
        from elsewhere are dropped, outgoing ones default to it) rather than
        by connecting the host socket, so that clearing it is exact.
        """
        if self._state != "bound":
            raise socket_error("invalid-state", "stream: the socket is not bound")
        if remote_address is None:
            self._remote = None
        else:
            family, _, sockaddr = to_host_address(remote_address)
            if family != self._family:
                raise socket_error("invalid-argument", "stream: address family mismatch")
            if sockaddr[1] == 0 or is_unspecified(sockaddr[0]):
                raise socket_error("invalid-argument", "stream: not a remote address")
            self._remote = sockaddr
        self._generation += 1
        return (IncomingDatagramStream(self, self._generation),
                OutgoingDatagramStream(self, self._generation))

    def local_address(self) -> SocketAddress:
        if self._state == "unbound":
            raise socket_error("invalid-state", "local-address: the socket is not bound")
        return from_host_address(self._sock.getsockname())

    def remote_address(self) -> SocketAddress:
        if self._remote is None:
            raise socket_error("invalid-state", "remote-address: the socket is not connected")
        return from_host_address(self._remote)

    def address_family(self) -> str:
        return self._family

    def _get(self, level: int, option: int) -> int:
        try:
            return int(self._sock.getsockopt(level, option))
        except OSError as exc:
            raise from_os("getsockopt", exc) from exc

    def _set(self, level: int, option: int, value: int, what: str) -> None:
        if value == 0:
            raise socket_error("invalid-argument", f"{what}: zero")
        try:
            self._sock.setsockopt(level, option, value)
        except OSError as exc:
            raise from_os(what, exc) from exc

    def _hop(self) -> tuple[int, int]:
        if self._family == "ipv4":
            return socket.IPPROTO_IP, socket.IP_TTL
        return socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS

    def unicast_hop_limit(self) -> int:
        return self._get(*self._hop())

    def set_unicast_hop_limit(self, value: int) -> None:
        self._set(*self._hop(), value, "set-unicast-hop-limit")

    def receive_buffer_size(self) -> int:
        return self._get(socket.SOL_SOCKET, socket.SO_RCVBUF)

    def set_receive_buffer_size(self, value: int) -> None:
        self._set(socket.SOL_SOCKET, socket.SO_RCVBUF, min(value, 1 << 30),
                  "set-receive-buffer-size")

    def send_buffer_size(self) -> int:
        return self._get(socket.SOL_SOCKET, socket.SO_SNDBUF)

    def set_send_buffer_size(self, value: int) -> None:
        self._set(socket.SOL_SOCKET, socket.SO_SNDBUF, min(value, 1 << 30),
                  "set-send-buffer-size")

    def subscribe(self) -> Pollable:
        return ready_pollable()

    def close(self) -> None:
        self._state = "closed"
        self._sock.close()


@define_realm_local
class IncomingDatagramStream:
    """``wasi:sockets/udp.incoming-datagram-stream``."""

    def __init__(self, owner: UdpSocket, generation: int) -> None:
        self._owner = owner
        self._generation = generation

    def _sock(self) -> socket.socket:
        if self._generation != self._owner._generation or self._owner._state == "closed":
            raise socket_error("invalid-state", "the datagram stream was superseded")
        return self._owner._sock

    def receive(self, max_results: int) -> list[dict[str, Any]]:
        sock = self._sock()
        out: list[dict[str, Any]] = []
        while len(out) < max_results:
            try:
                data, sender = sock.recvfrom(MAX_DATAGRAM + 1)
            except BlockingIOError:
                break
            except OSError as exc:
                if out:
                    break
                raise from_os("receive", exc) from exc
            remote = self._owner._remote
            if remote is not None and not _same_peer(sender, remote):
                continue  # not from the connected peer
            out.append({"data": data, "remote_address": from_host_address(sender)})
        return out

    def _readable(self) -> bool:
        return fd_ready(self._owner._sock.fileno(), write=False)

    def subscribe(self) -> Pollable:
        return fd_pollable(self._owner._sock.fileno(), write=False, ready=self._readable)

    def close(self) -> None:
        return None


@define_realm_local
class OutgoingDatagramStream:
    """``wasi:sockets/udp.outgoing-datagram-stream``."""

    def __init__(self, owner: UdpSocket, generation: int) -> None:
        self._owner = owner
        self._generation = generation
        self._permits = 0

    def _sock(self) -> socket.socket:
        if self._generation != self._owner._generation or self._owner._state == "closed":
            raise socket_error("invalid-state", "the datagram stream was superseded")
        return self._owner._sock

    def check_send(self) -> int:
        self._sock()
        self._permits = SEND_PERMITS
        return self._permits

    def send(self, datagrams: Sequence[Mapping[str, Any]]) -> int:
        sock = self._sock()
        if len(datagrams) > self._permits:
            raise socket_error("invalid-argument", "send: more datagrams than check-send allowed")
        sent = 0
        for dg in datagrams:
            data = bytes(dg["data"])
            target = dg.get("remote_address")
            try:
                if target is None:
                    if self._owner._remote is None:
                        raise socket_error("invalid-argument", "send: no remote address")
                    sock.sendto(data, self._owner._remote)
                else:
                    family, _, sockaddr = to_host_address(target)
                    if family != self._owner._family:
                        raise socket_error("invalid-argument", "send: address family mismatch")
                    remote = self._owner._remote
                    if remote is not None and not _same_peer(sockaddr, remote):
                        raise socket_error("invalid-argument", "send: not the connected address")
                    if sockaddr[1] == 0 or is_unspecified(sockaddr[0]):
                        raise socket_error("invalid-argument", "send: not a remote address")
                    sock.sendto(data, sockaddr)
            except BlockingIOError:
                break
            except OSError as exc:
                if sent:
                    break
                raise from_os("send", exc) from exc
            except Exception:
                if sent:
                    break
                raise
            sent += 1
        self._permits -= sent
        return sent

    def subscribe(self) -> Pollable:
        return ready_pollable()

    def close(self) -> None:
        return None


def udp_providers(granted: bool) -> dict[str, SimpleNamespace]:
    """``udp`` and ``udp-create-socket``."""

    def create_udp_socket(address_family: str) -> UdpSocket:
        if not granted:
            raise socket_error("access-denied", "create-udp-socket: no network access")
        family_of(address_family)
        try:
            return UdpSocket(address_family)
        except OSError as exc:
            raise from_os("create-udp-socket", exc) from exc

    return {
        "udp": SimpleNamespace(UdpSocket=UdpSocket,
                               IncomingDatagramStream=IncomingDatagramStream,
                               OutgoingDatagramStream=OutgoingDatagramStream),
        "udp-create-socket": SimpleNamespace(create_udp_socket=create_udp_socket),
    }
