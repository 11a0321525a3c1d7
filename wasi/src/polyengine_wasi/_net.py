"""``wasi:sockets/network`` and ``instance-network``, and what TCP and UDP share.

The network capability: every socket operation that reaches out (socket
creation, bind, connect, name lookup) is refused with ``access-denied``
unless the instance was granted the network. Addresses are the interface's
variants, e.g. ``{"kind": "ipv4", "value": {"port": 80, "address": (127, 0,
0, 1)}}`` (python-mapping.md §2: records as dicts, tuples as tuples).
"""

from __future__ import annotations

import errno as _errno
import ipaddress
import socket
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from polyengine_protocol import ComponentException, define_realm_local

from ._streams import IoError

__all__ = ["Network", "SocketAddress", "NETWORK_ERRNO", "socket_error", "from_os", "require",
           "family_of", "to_host_address", "from_host_address", "ip_address_value",
           "is_unspecified", "network_error_code", "network_provider"]

SocketAddress = dict[str, Any]

NETWORK_ERRNO: dict[int, str] = {
    _errno.EACCES: "access-denied",
    _errno.EPERM: "access-denied",
    _errno.EOPNOTSUPP: "not-supported",
    _errno.EAFNOSUPPORT: "not-supported",
    _errno.EPROTONOSUPPORT: "not-supported",
    _errno.EINVAL: "invalid-argument",
    _errno.ENOMEM: "out-of-memory",
    _errno.ENOBUFS: "out-of-memory",
    _errno.ETIMEDOUT: "timeout",
    _errno.EALREADY: "concurrency-conflict",
    _errno.EWOULDBLOCK: "would-block",
    _errno.EINPROGRESS: "would-block",
    _errno.EISCONN: "invalid-state",
    _errno.ENOTCONN: "invalid-state",
    _errno.EMFILE: "new-socket-limit",
    _errno.ENFILE: "new-socket-limit",
    _errno.EADDRNOTAVAIL: "address-not-bindable",
    _errno.EADDRINUSE: "address-in-use",
    _errno.EHOSTUNREACH: "remote-unreachable",
    _errno.ENETUNREACH: "remote-unreachable",
    _errno.ENETDOWN: "remote-unreachable",
    _errno.ECONNREFUSED: "connection-refused",
    _errno.ECONNRESET: "connection-reset",
    _errno.EPIPE: "connection-reset",
    _errno.ECONNABORTED: "connection-aborted",
    _errno.EMSGSIZE: "datagram-too-large",
}


def socket_error(code: str, message: str) -> ComponentException[str]:
    return ComponentException(code, message)


def from_os(op: str, exc: OSError) -> ComponentException[str]:
    return socket_error(NETWORK_ERRNO.get(exc.errno or 0, "unknown"),
                        f"{op}: {exc.strerror or exc}")


@define_realm_local
class Network:
    """``wasi:sockets/network.network``: the capability to use the network."""

    def __init__(self, granted: bool) -> None:
        self.granted = granted

    def close(self) -> None:
        return None


def require(network: object, op: str) -> None:
    """Refuse ``op`` unless ``network`` is a granted ``Network``."""
    if not isinstance(network, Network):
        raise TypeError(f"{op}: expected a Network, got {type(network).__name__}")
    if not network.granted:
        raise socket_error("access-denied", f"{op}: this instance has no network access")


def family_of(af: str) -> socket.AddressFamily:
    if af == "ipv4":
        return socket.AF_INET
    if af == "ipv6":
        return socket.AF_INET6
    raise TypeError(f"ip-address-family must be 'ipv4' or 'ipv6', got {af!r}")


def _u(name: str, value: object, bits: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < (1 << bits):
        raise TypeError(f"{name}: expected a u{bits}, got {value!r}")
    return value


def to_host_address(addr: Mapping[str, Any]) -> tuple[str, socket.AddressFamily, tuple[Any, ...]]:
    """An ``ip-socket-address`` value as (family name, family, sockaddr)."""
    kind = addr.get("kind") if isinstance(addr, Mapping) else None
    value = addr.get("value") if isinstance(addr, Mapping) else None
    if kind == "ipv4" and isinstance(value, Mapping):
        octets = tuple(_u("ipv4 address", o, 8) for o in value.get("address", ()))
        if len(octets) != 4:
            raise TypeError(f"an ipv4 address has 4 parts, got {value.get('address')!r}")
        host = str(ipaddress.IPv4Address(bytes(octets)))
        return "ipv4", socket.AF_INET, (host, _u("port", value.get("port"), 16))
    if kind == "ipv6" and isinstance(value, Mapping):
        groups = tuple(_u("ipv6 address", g, 16) for g in value.get("address", ()))
        if len(groups) != 8:
            raise TypeError(f"an ipv6 address has 8 parts, got {value.get('address')!r}")
        packed = b"".join(g.to_bytes(2, "big") for g in groups)
        host = str(ipaddress.IPv6Address(packed))
        return "ipv6", socket.AF_INET6, (
            host, _u("port", value.get("port"), 16),
            _u("flow-info", value.get("flow_info", 0), 32),
            _u("scope-id", value.get("scope_id", 0), 32),
        )
    raise TypeError(f"expected an ip-socket-address variant, got {addr!r}")


def ip_address_value(host: str) -> dict[str, Any]:
    """An ``ip-address`` variant for a textual host address."""
    ip = ipaddress.ip_address(host.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv4Address):
        return {"kind": "ipv4", "value": tuple(ip.packed)}
    groups = tuple(int.from_bytes(ip.packed[i:i + 2], "big") for i in range(0, 16, 2))
    return {"kind": "ipv6", "value": groups}


def from_host_address(sockaddr: tuple[Any, ...]) -> SocketAddress:
    """The ``ip-socket-address`` variant of a host sockaddr tuple."""
    ip = ip_address_value(sockaddr[0])
    if ip["kind"] == "ipv4":
        return {"kind": "ipv4", "value": {"port": sockaddr[1], "address": ip["value"]}}
    return {"kind": "ipv6", "value": {
        "port": sockaddr[1], "flow_info": sockaddr[2], "address": ip["value"],
        "scope_id": sockaddr[3]}}


def is_unspecified(host: str) -> bool:
    return ipaddress.ip_address(host.split("%", 1)[0]).is_unspecified


def network_error_code(err: IoError) -> str | None:
    """``network-error-code``: the code behind a stream error, if any."""
    errno = getattr(err, "errno", None)
    if isinstance(errno, int):
        return NETWORK_ERRNO.get(errno, "unknown")
    return None


def network_provider(granted: bool) -> dict[str, SimpleNamespace]:
    """``network`` and ``instance-network``."""

    def instance_network() -> Network:
        return Network(granted)

    return {
        "network": SimpleNamespace(Network=Network, network_error_code=network_error_code),
        "instance-network": SimpleNamespace(instance_network=instance_network),
    }
