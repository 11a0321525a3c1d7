"""``wasi:sockets/types`` (TCP) and ``ip-name-lookup`` on the 0.3 track.

The socket, its state machine, address conversion, options and the grant
are the 0.2 provider's (``_sockets``, ``_net``): without the network grant
``create`` answers ``access-denied``. What 0.3 changes is the shape, served
here on asyncio: ``connect`` is an ``async func``; ``listen`` returns a
stream of accepted sockets, ``receive`` a byte stream plus a completion
future, and ``send`` consumes a byte stream (its end is ``shutdown(SHUT_WR)``).
Each stream is an async generator that calls ``accept`` / ``recv`` only
when the guest pulls, so a slow reader leaves the data in the kernel's
buffers and TCP flow control pushes back on the peer.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from types import SimpleNamespace
from typing import Any, TypeVar

from polyengine_protocol import ComponentException, define_realm_local

from . import _sockets as p2
from . import _udp as p2_udp
from ._net import (
    NETWORK_ERRNO,
    Network,
    from_host_address,
    ip_address_value,
    is_unspecified,
    to_host_address,
)

__all__ = ["TcpSocket3", "UdpSocket3", "sockets_providers_p3"]

T = TypeVar("T")
Result = dict[str, Any]
RECEIVE_CHUNK = 65536

#: 0.3's error-code cases; a 0.2 code outside them becomes ``other``.
_CODES = frozenset({
    "access-denied", "not-supported", "invalid-argument", "out-of-memory", "timeout",
    "invalid-state", "address-not-bindable", "address-in-use", "remote-unreachable",
    "connection-refused", "connection-broken", "connection-reset", "connection-aborted",
    "datagram-too-large",
})
_RENAMED = {"not-in-progress": "invalid-state", "concurrency-conflict": "invalid-state"}


def _variant(code: object) -> dict[str, Any]:
    code = _RENAMED.get(str(code), code)
    if code in _CODES:
        return {"kind": code}
    return {"kind": "other", "value": str(code)}


def _errno_variant(exc: OSError) -> dict[str, Any]:
    if isinstance(exc, BrokenPipeError):
        return {"kind": "connection-broken"}
    return _variant(NETWORK_ERRNO.get(exc.errno or 0, "unknown"))


def _lifted(fn: Callable[..., T], *args: Any) -> T:
    try:
        return fn(*args)
    except ComponentException as exc:
        raise ComponentException(_variant(exc.payload), str(exc)) from exc


class _Outcome:
    def __init__(self) -> None:
        self._result: Result | None = None
        self._event: asyncio.Event | None = None

    def settle(self, result: Result) -> None:
        if self._result is None:
            self._result = result
            if self._event is not None:
                self._event.set()

    async def wait(self) -> Result:
        if self._result is None:
            self._event = asyncio.Event()
            await self._event.wait()
        assert self._result is not None
        return self._result


@define_realm_local
class TcpSocket3:
    """``wasi:sockets/types.tcp-socket`` (0.3) over the shared 0.2 socket."""

    _granted = False

    def __init__(self, inner: p2.TcpSocket) -> None:
        self._inner = inner
        self._sending = False
        self._receiving = False

    @classmethod
    def _create(cls, address_family: str, granted: bool) -> TcpSocket3:
        if not granted:
            raise ComponentException({"kind": "access-denied"},
                                      "create: this instance has no network access")
        try:
            return cls(p2.TcpSocket(address_family))
        except OSError as exc:
            raise ComponentException(_errno_variant(exc), f"create: {exc}") from exc

    @property
    def _sock(self) -> socket.socket:
        return self._inner._sock

    def bind(self, local_address: Mapping[str, Any]) -> None:
        _lifted(self._inner.start_bind, Network(True), local_address)
        self._inner.finish_bind()

    async def connect(self, remote_address: Mapping[str, Any]) -> None:
        inner = self._inner
        _lifted(inner._expect, "connect", "unbound", "bound")
        family, _, sockaddr = to_host_address(remote_address)
        _lifted(inner._check_family, "connect", family)
        if sockaddr[1] == 0 or is_unspecified(sockaddr[0]):
            raise ComponentException({"kind": "invalid-argument"},
                                     "connect: not a connectable address")
        inner._state = "connect-started"
        try:
            await asyncio.get_running_loop().sock_connect(self._sock, sockaddr)
        except OSError as exc:
            inner._state = "closed"
            raise ComponentException(_errno_variant(exc), f"connect: {exc}") from exc
        inner._state = "connected"

    def listen(self) -> AsyncIterator[TcpSocket3]:
        inner = self._inner
        if inner._state == "unbound":
            raise ComponentException({"kind": "invalid-state"}, "listen: the socket is not bound")
        _lifted(inner.start_listen)
        inner.finish_listen()

        async def accepted() -> AsyncIterator[TcpSocket3]:
            loop = asyncio.get_running_loop()
            while True:
                try:
                    conn, _ = await loop.sock_accept(self._sock)
                except OSError:
                    return
                yield type(self)(p2.TcpSocket(inner._family, conn, "connected"))

        return accepted()

    def send(self, data: AsyncIterable[bytes]) -> Awaitable[Result]:
        async def transmit() -> Result:
            if self._inner._state != "connected" or self._sending:
                return {"kind": "err", "value": {"kind": "invalid-state"}}
            self._sending = True
            loop = asyncio.get_running_loop()
            try:
                async for chunk in data:
                    await loop.sock_sendall(self._sock, bytes(chunk))
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_WR)
            except OSError as exc:
                return {"kind": "err", "value": _errno_variant(exc)}
            return {"kind": "ok"}

        return asyncio.get_running_loop().create_task(transmit())

    def receive(self) -> tuple[AsyncIterator[bytes], Awaitable[Result]]:
        outcome = _Outcome()
        if self._inner._state != "connected" or self._receiving:
            outcome.settle({"kind": "err", "value": {"kind": "invalid-state"}})
        self._receiving = True

        async def chunks() -> AsyncIterator[bytes]:
            result: Result = {"kind": "ok"}
            loop = asyncio.get_running_loop()
            try:
                while outcome._result is None:
                    data = await loop.sock_recv(self._sock, RECEIVE_CHUNK)
                    if not data:
                        break
                    yield data
            except OSError as exc:
                result = {"kind": "err", "value": _errno_variant(exc)}
            finally:
                outcome.settle(result)

        return chunks(), outcome.wait()

    def get_local_address(self) -> dict[str, Any]:
        return _lifted(self._inner.local_address)

    def get_remote_address(self) -> dict[str, Any]:
        return _lifted(self._inner.remote_address)

    def get_is_listening(self) -> bool:
        return self._inner.is_listening()

    def get_address_family(self) -> str:
        return self._inner.address_family()

    def set_listen_backlog_size(self, value: int) -> None:
        _lifted(self._inner.set_listen_backlog_size, value)

    def get_keep_alive_enabled(self) -> bool:
        return _lifted(self._inner.keep_alive_enabled)

    def set_keep_alive_enabled(self, value: bool) -> None:
        _lifted(self._inner.set_keep_alive_enabled, value)

    def get_keep_alive_idle_time(self) -> int:
        return _lifted(self._inner.keep_alive_idle_time)

    def set_keep_alive_idle_time(self, value: int) -> None:
        _lifted(self._inner.set_keep_alive_idle_time, value)

    def get_keep_alive_interval(self) -> int:
        return _lifted(self._inner.keep_alive_interval)

    def set_keep_alive_interval(self, value: int) -> None:
        _lifted(self._inner.set_keep_alive_interval, value)

    def get_keep_alive_count(self) -> int:
        return _lifted(self._inner.keep_alive_count)

    def set_keep_alive_count(self, value: int) -> None:
        _lifted(self._inner.set_keep_alive_count, value)

    def get_hop_limit(self) -> int:
        return _lifted(self._inner.hop_limit)

    def set_hop_limit(self, value: int) -> None:
        _lifted(self._inner.set_hop_limit, value)

    def get_receive_buffer_size(self) -> int:
        return _lifted(self._inner.receive_buffer_size)

    def set_receive_buffer_size(self, value: int) -> None:
        _lifted(self._inner.set_receive_buffer_size, value)

    def get_send_buffer_size(self) -> int:
        return _lifted(self._inner.send_buffer_size)

    def set_send_buffer_size(self, value: int) -> None:
        _lifted(self._inner.set_send_buffer_size, value)

    def close(self) -> None:
        self._inner.close()


#: The largest datagram ``receive`` takes (the IPv4/IPv6 payload limit).
MAX_DATAGRAM = 65535


@define_realm_local
class UdpSocket3:
    """``wasi:sockets/types.udp-socket`` (0.3) over the shared 0.2 socket.

    ``connect`` fixes the peer the 0.2 way (the socket filters and defaults
    to it); ``send`` and ``receive`` are ``async func``s on asyncio.
    """

    def __init__(self, inner: p2_udp.UdpSocket) -> None:
        self._inner = inner

    @classmethod
    def _create(cls, address_family: str, granted: bool) -> UdpSocket3:
        if not granted:
            raise ComponentException({"kind": "access-denied"},
                                     "create: this instance has no network access")
        try:
            return cls(p2_udp.UdpSocket(address_family))
        except OSError as exc:
            raise ComponentException(_errno_variant(exc), f"create: {exc}") from exc

    def _bound(self) -> None:
        """Bind to the unspecified address first if the guest did not (POSIX does this)."""
        if self._inner._state == "unbound":
            host = "0.0.0.0" if self._inner._family == "ipv4" else "::"
            self._inner._sock.bind((host, 0))
            self._inner._state = "bound"

    def bind(self, local_address: Mapping[str, Any]) -> None:
        _lifted(self._inner.start_bind, Network(True), local_address)
        self._inner.finish_bind()

    def connect(self, remote_address: Mapping[str, Any]) -> None:
        self._bound()
        _lifted(self._inner.stream, remote_address)

    def disconnect(self) -> None:
        if self._inner._remote is None:
            raise ComponentException({"kind": "invalid-state"}, "disconnect: not connected")
        _lifted(self._inner.stream, None)

    async def send(self, data: bytes, remote_address: Mapping[str, Any] | None) -> None:
        inner = self._inner
        if remote_address is None:
            if inner._remote is None:
                raise ComponentException({"kind": "invalid-argument"}, "send: no remote address")
            target = inner._remote
        else:
            family, _, target = to_host_address(remote_address)
            if family != inner._family:
                raise ComponentException({"kind": "invalid-argument"},
                                         "send: address family mismatch")
            if inner._remote is not None and target != inner._remote:
                raise ComponentException({"kind": "invalid-argument"},
                                         "send: the socket is connected elsewhere")
        if len(data) > MAX_DATAGRAM:
            raise ComponentException({"kind": "datagram-too-large"}, "send: datagram too large")
        self._bound()
        try:
            await asyncio.get_running_loop().sock_sendto(inner._sock, bytes(data), target)
        except OSError as exc:
            raise ComponentException(_errno_variant(exc), f"send: {exc}") from exc

    async def receive(self) -> tuple[bytes, dict[str, Any]]:
        inner = self._inner
        if inner._state == "unbound":
            raise ComponentException({"kind": "invalid-state"}, "receive: the socket is not bound")
        loop = asyncio.get_running_loop()
        while True:
            try:
                data, sender = await loop.sock_recvfrom(inner._sock, MAX_DATAGRAM)
            except OSError as exc:
                raise ComponentException(_errno_variant(exc), f"receive: {exc}") from exc
            if inner._remote is None or p2_udp._same_peer(sender, inner._remote):
                return data, from_host_address(sender)

    def get_local_address(self) -> dict[str, Any]:
        return _lifted(self._inner.local_address)

    def get_remote_address(self) -> dict[str, Any]:
        return _lifted(self._inner.remote_address)

    def get_address_family(self) -> str:
        return self._inner.address_family()

    def get_unicast_hop_limit(self) -> int:
        return _lifted(self._inner.unicast_hop_limit)

    def set_unicast_hop_limit(self, value: int) -> None:
        _lifted(self._inner.set_unicast_hop_limit, value)

    def get_receive_buffer_size(self) -> int:
        return _lifted(self._inner.receive_buffer_size)

    def set_receive_buffer_size(self, value: int) -> None:
        _lifted(self._inner.set_receive_buffer_size, value)

    def get_send_buffer_size(self) -> int:
        return _lifted(self._inner.send_buffer_size)

    def set_send_buffer_size(self, value: int) -> None:
        _lifted(self._inner.set_send_buffer_size, value)

    def close(self) -> None:
        self._inner.close()


def sockets_providers_p3(granted: bool) -> dict[str, SimpleNamespace]:
    """``types`` (TCP) and ``ip-name-lookup``, keyed by their short names."""

    class TcpSocket(TcpSocket3):
        """The class the guest sees, bound to this instance's grant."""

        @staticmethod
        def create(address_family: str) -> TcpSocket3:
            return TcpSocket._create(address_family, granted)

    class UdpSocket(UdpSocket3):
        """The class the guest sees, bound to this instance's grant."""

        @staticmethod
        def create(address_family: str) -> UdpSocket3:
            return UdpSocket._create(address_family, granted)

    async def resolve_addresses(name: str) -> list[dict[str, Any]]:
        if not granted:
            raise ComponentException({"kind": "access-denied"},
                                     "resolve-addresses: this instance has no network access")
        if not isinstance(name, str) or not name or "\0" in name:
            raise ComponentException({"kind": "invalid-argument"},
                                     f"resolve-addresses: bad name {name!r}")
        with contextlib.suppress(ValueError):
            return [ip_address_value(name)]
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                name, None, proto=socket.IPPROTO_TCP)
        except socket.gaierror as exc:
            kind = ("temporary-resolver-failure" if exc.errno == socket.EAI_AGAIN
                    else "name-unresolvable")
            raise ComponentException({"kind": kind}, f"resolve-addresses {name!r}: {exc}") from exc
        except (OSError, UnicodeError) as exc:
            raise ComponentException({"kind": "name-unresolvable"},
                                     f"resolve-addresses {name!r}: {exc}") from exc
        found: list[dict[str, Any]] = []
        for *_, sockaddr in infos:
            value = ip_address_value(str(sockaddr[0]))
            if value not in found:
                found.append(value)
        return found

    return {
        "types": SimpleNamespace(TcpSocket=TcpSocket, UdpSocket=UdpSocket),
        "ip-name-lookup": SimpleNamespace(resolve_addresses=resolve_addresses),
    }
