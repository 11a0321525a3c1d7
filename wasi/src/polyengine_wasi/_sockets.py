"""``wasi:sockets/tcp``, ``tcp-create-socket`` and ``ip-name-lookup`` (WASI 0.2).

TCP sockets are real non-blocking host sockets. The two-phase ``start-*`` /
``finish-*`` protocol of the interface maps onto non-blocking calls:
``start-connect`` issues the connect and ``finish-connect`` answers
``would-block`` until the socket's pollable is ready; ``accept`` answers
``would-block`` until a connection is pending. Without the network grant,
creation, bind, connect and lookup are refused with ``access-denied``
(``_net``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno as _errno
import socket
import threading
from types import SimpleNamespace
from typing import Any

from polyengine_protocol import define_realm_local

from ._bytes import SocketSink, SocketSource
from ._kernel import Pollable, fd_pollable, fd_ready, ready_pollable
from ._net import (
    Network,
    SocketAddress,
    family_of,
    from_host_address,
    from_os,
    ip_address_value,
    is_unspecified,
    require,
    socket_error,
    to_host_address,
)
from ._streams import InputStream, OutputStream

__all__ = ["TcpSocket", "ResolveAddressStream", "tcp_providers", "ip_name_lookup_provider"]


@define_realm_local
class TcpSocket:
    """``wasi:sockets/tcp.tcp-socket`` over a non-blocking host socket.

    States: ``unbound`` → ``bind-started`` → ``bound`` → ``listen-started``
    → ``listening``, or (``unbound``/``bound``) → ``connect-started`` →
    ``connected``; ``closed`` after a failed connect.
    """

    def __init__(self, family: str, sock: socket.socket | None = None,
                 state: str = "unbound") -> None:
        self._family = family
        if sock is None:
            sock = socket.socket(family_of(family), socket.SOCK_STREAM)
            if family == "ipv6":
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.setblocking(False)
        self._sock = sock
        self._state = state
        self._backlog = 128
        self._pending_error: OSError | None = None

    def _expect(self, op: str, *states: str) -> None:
        if self._state not in states:
            raise socket_error("invalid-state", f"{op}: the socket is {self._state}")

    def _check_family(self, op: str, family: str) -> None:
        if family != self._family:
            raise socket_error("invalid-argument",
                               f"{op}: an {family} address on an {self._family} socket")

    def start_bind(self, network: Network, local_address: SocketAddress) -> None:
        require(network, "start-bind")
        self._expect("start-bind", "unbound")
        family, _, sockaddr = to_host_address(local_address)
        self._check_family("start-bind", family)
        try:
            self._sock.bind(sockaddr)
        except OSError as exc:
            raise from_os("start-bind", exc) from exc
        self._state = "bind-started"

    def finish_bind(self) -> None:
        if self._state != "bind-started":
            raise socket_error("not-in-progress", "finish-bind: no bind in progress")
        self._state = "bound"

    def start_connect(self, network: Network, remote_address: SocketAddress) -> None:
        require(network, "start-connect")
        self._expect("start-connect", "unbound", "bound")
        family, _, sockaddr = to_host_address(remote_address)
        self._check_family("start-connect", family)
        if sockaddr[1] == 0 or is_unspecified(sockaddr[0]):
            raise socket_error("invalid-argument", "start-connect: not a connectable address")
        code = self._sock.connect_ex(sockaddr)
        if code not in (0, _errno.EINPROGRESS, _errno.EWOULDBLOCK):
            raise from_os("start-connect", OSError(code, _errno.errorcode.get(code, str(code))))
        self._state = "connect-started"

    def _writable_now(self) -> bool:
        return fd_ready(self._sock.fileno(), write=True)

    def _readable_now(self) -> bool:
        return fd_ready(self._sock.fileno(), write=False)

    def finish_connect(self) -> tuple[InputStream, OutputStream]:
        if self._state != "connect-started":
            raise socket_error("not-in-progress", "finish-connect: no connect in progress")
        if not self._writable_now():
            raise socket_error("would-block", "finish-connect: the connection is not ready")
        code = self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code != 0:
            self._state = "closed"
            raise from_os("finish-connect", OSError(code, _errno.errorcode.get(code, str(code))))
        self._state = "connected"
        return self._streams()

    def _streams(self) -> tuple[InputStream, OutputStream]:
        return InputStream(SocketSource(self._sock)), OutputStream(SocketSink(self._sock))

    def start_listen(self) -> None:
        self._expect("start-listen", "bound")
        try:
            self._sock.listen(self._backlog)
        except OSError as exc:
            raise from_os("start-listen", exc) from exc
        self._state = "listen-started"

    def finish_listen(self) -> None:
        if self._state != "listen-started":
            raise socket_error("not-in-progress", "finish-listen: no listen in progress")
        self._state = "listening"

    def accept(self) -> tuple[TcpSocket, InputStream, OutputStream]:
        self._expect("accept", "listening")
        try:
            conn, _ = self._sock.accept()
        except BlockingIOError as exc:
            raise socket_error("would-block", "accept: no pending connection") from exc
        except OSError as exc:
            raise from_os("accept", exc) from exc
        client = TcpSocket(self._family, conn, "connected")
        inp, out = client._streams()
        return client, inp, out

    def local_address(self) -> SocketAddress:
        if self._state in ("unbound", "closed"):
            raise socket_error("invalid-state", "local-address: the socket is not bound")
        return from_host_address(self._sock.getsockname())

    def remote_address(self) -> SocketAddress:
        if self._state != "connected":
            raise socket_error("invalid-state", "remote-address: the socket is not connected")
        try:
            return from_host_address(self._sock.getpeername())
        except OSError as exc:
            raise from_os("remote-address", exc) from exc

    def is_listening(self) -> bool:
        return self._state == "listening"

    def address_family(self) -> str:
        return self._family

    def set_listen_backlog_size(self, value: int) -> None:
        if value == 0:
            raise socket_error("invalid-argument", "set-listen-backlog-size: zero")
        self._backlog = min(int(value), 4096)
        if self._state == "listening":
            self._sock.listen(self._backlog)

    def _get(self, level: int, option: int) -> int:
        try:
            return int(self._sock.getsockopt(level, option))
        except OSError as exc:
            raise from_os("getsockopt", exc) from exc

    def _set(self, level: int, option: int, value: int) -> None:
        try:
            self._sock.setsockopt(level, option, value)
        except OSError as exc:
            raise from_os("setsockopt", exc) from exc

    def keep_alive_enabled(self) -> bool:
        return self._get(socket.SOL_SOCKET, socket.SO_KEEPALIVE) != 0

    def set_keep_alive_enabled(self, value: bool) -> None:
        self._set(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1 if value else 0)

    def keep_alive_idle_time(self) -> int:
        return self._get(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) * 1_000_000_000

    def set_keep_alive_idle_time(self, value: int) -> None:
        if value == 0:
            raise socket_error("invalid-argument", "set-keep-alive-idle-time: zero")
        self._set(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE,
                  max(1, min(32767, -(-value // 1_000_000_000))))

    def keep_alive_interval(self) -> int:
        return self._get(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) * 1_000_000_000

    def set_keep_alive_interval(self, value: int) -> None:
        if value == 0:
            raise socket_error("invalid-argument", "set-keep-alive-interval: zero")
        self._set(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL,
                  max(1, min(32767, -(-value // 1_000_000_000))))

    def keep_alive_count(self) -> int:
        return self._get(socket.IPPROTO_TCP, socket.TCP_KEEPCNT)

    def set_keep_alive_count(self, value: int) -> None:
        if value == 0:
            raise socket_error("invalid-argument", "set-keep-alive-count: zero")
        self._set(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, min(int(value), 127))

    def _hop_option(self) -> tuple[int, int]:
        if self._family == "ipv4":
            return socket.IPPROTO_IP, socket.IP_TTL
        return socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS

    def hop_limit(self) -> int:
        return self._get(*self._hop_option())

    def set_hop_limit(self, value: int) -> None:
        if value == 0:
            raise socket_error("invalid-argument", "set-hop-limit: zero")
        self._set(*self._hop_option(), value)

    def receive_buffer_size(self) -> int:
        return self._get(socket.SOL_SOCKET, socket.SO_RCVBUF)

    def set_receive_buffer_size(self, value: int) -> None:
        if value == 0:
            raise socket_error("invalid-argument", "set-receive-buffer-size: zero")
        self._set(socket.SOL_SOCKET, socket.SO_RCVBUF, min(int(value), 1 << 30))

    def send_buffer_size(self) -> int:
        return self._get(socket.SOL_SOCKET, socket.SO_SNDBUF)

    def set_send_buffer_size(self, value: int) -> None:
        if value == 0:
            raise socket_error("invalid-argument", "set-send-buffer-size: zero")
        self._set(socket.SOL_SOCKET, socket.SO_SNDBUF, min(int(value), 1 << 30))

    def subscribe(self) -> Pollable:
        """Ready when a pending ``finish-connect`` or ``accept`` would not block."""
        if self._state == "connect-started":
            return fd_pollable(self._sock.fileno(), write=True, ready=self._writable_now)
        if self._state == "listening":
            return fd_pollable(self._sock.fileno(), write=False, ready=self._readable_now)
        return ready_pollable()

    def shutdown(self, shutdown_type: str) -> None:
        if self._state != "connected":
            raise socket_error("invalid-state", "shutdown: the socket is not connected")
        how = {"receive": socket.SHUT_RD, "send": socket.SHUT_WR, "both": socket.SHUT_RDWR}
        if shutdown_type not in how:
            raise TypeError(f"shutdown-type must be receive, send or both, got {shutdown_type!r}")
        try:
            self._sock.shutdown(how[shutdown_type])
        except OSError as exc:
            raise from_os("shutdown", exc) from exc

    def close(self) -> None:
        self._state = "closed"
        self._sock.close()


@define_realm_local
class ResolveAddressStream:
    """``wasi:sockets/ip-name-lookup.resolve-address-stream``.

    The lookup runs on a thread: ``resolve-next-address`` answers
    ``would-block`` until it is done, and ``subscribe`` waits for it.
    """

    def __init__(self, name: str, known: list[dict[str, Any]] | None = None) -> None:
        self._future: concurrent.futures.Future[list[dict[str, Any]]] = (
            concurrent.futures.Future()
        )
        if known is not None:
            self._future.set_result(list(known))
        else:
            threading.Thread(
                target=self._lookup, args=(name,), name="polyengine-wasi-lookup", daemon=True
            ).start()
        self._addresses: list[dict[str, Any]] | None = None

    def _lookup(self, name: str) -> None:
        try:
            infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
        except socket.gaierror as exc:
            code = "temporary-resolver-failure" if exc.errno == socket.EAI_AGAIN else \
                "name-unresolvable"
            self._future.set_exception(socket_error(code, f"resolve-addresses {name!r}: {exc}"))
            return
        except (OSError, UnicodeError) as exc:
            self._future.set_exception(
                socket_error("name-unresolvable", f"resolve-addresses {name!r}: {exc}"))
            return
        found: list[dict[str, Any]] = []
        for _, _, _, _, sockaddr in infos:
            value = ip_address_value(str(sockaddr[0]))
            if value not in found:
                found.append(value)
        self._future.set_result(found)

    def resolve_next_address(self) -> dict[str, Any] | None:
        if self._addresses is None:
            if not self._future.done():
                raise socket_error("would-block", "resolve-next-address: still resolving")
            self._addresses = self._future.result()  # raises the lookup's error
        return self._addresses.pop(0) if self._addresses else None

    def subscribe(self) -> Pollable:
        async def wait() -> None:
            loop = asyncio.get_running_loop()
            woken: asyncio.Future[None] = loop.create_future()

            def settle() -> None:
                if not woken.done():
                    woken.set_result(None)

            def wake(_: object) -> None:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(settle)

            self._future.add_done_callback(wake)
            await woken

        return Pollable(self._future.done, wait)

    def close(self) -> None:
        self._addresses = []


def tcp_providers(granted: bool) -> dict[str, SimpleNamespace]:
    """``tcp`` and ``tcp-create-socket``."""

    def create_tcp_socket(address_family: str) -> TcpSocket:
        if not granted:
            raise socket_error("access-denied", "create-tcp-socket: no network access")
        family_of(address_family)
        try:
            return TcpSocket(address_family)
        except OSError as exc:
            raise from_os("create-tcp-socket", exc) from exc

    return {
        "tcp": SimpleNamespace(TcpSocket=TcpSocket),
        "tcp-create-socket": SimpleNamespace(create_tcp_socket=create_tcp_socket),
    }


def ip_name_lookup_provider() -> SimpleNamespace:
    """``wasi:sockets/ip-name-lookup``."""

    def resolve_addresses(network: Network, name: str) -> ResolveAddressStream:
        require(network, "resolve-addresses")
        if not isinstance(name, str) or not name or "\0" in name:
            raise socket_error("invalid-argument", f"resolve-addresses: bad name {name!r}")
        try:
            return ResolveAddressStream(name, [ip_address_value(name)])
        except ValueError:
            return ResolveAddressStream(name)

    return SimpleNamespace(ResolveAddressStream=ResolveAddressStream,
                           resolve_addresses=resolve_addresses)
