"""WASI 0.2 and 0.3 host providers for polyengine.

``wasi(...)`` builds an imports mapping keyed by track ids
(``"wasi:cli/environment@0.2"``, ``"wasi:cli/stdout@0.3"``, ...)::

    out = bytearray()
    imports = wasi(args=["app", "-v"], env={"HOME": "/"}, stdout=out,
                   preopens=[("/srv/data", "/data", True)])  # read-only

Values follow python-mapping.md §2 and resources §5: each provider's
snake_case attributes are the interface's functions and its PascalCase
attributes the resource classes (``Pollable``, ``InputStream``,
``Descriptor``, ``TcpSocket``, ...). ``Pollable(ready, wait)`` is the
public seam for readiness from elsewhere (the parking kernel, A6).

This package imports ``polyengine_protocol`` only (python-mapping.md §0,
A22).

Importing the package is cheap: each name loads its module on first use
(PEP 562 module ``__getattr__``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._bytes import ByteSink as ByteSink
    from ._bytes import ByteSource as ByteSource
    from ._cli import TerminalInput as TerminalInput
    from ._cli import TerminalOutput as TerminalOutput
    from ._exit import WASI_EXIT_BRAND as WASI_EXIT_BRAND
    from ._exit import ExitError as ExitError
    from ._exit import is_exit_error as is_exit_error
    from ._filesystem import Descriptor as Descriptor
    from ._filesystem import DirectoryEntryStream as DirectoryEntryStream
    from ._http import http as http
    from ._kernel import Pollable as Pollable
    from ._kernel import poll as poll
    from ._net import Network as Network
    from ._sockets import ResolveAddressStream as ResolveAddressStream
    from ._sockets import TcpSocket as TcpSocket
    from ._streams import InputStream as InputStream
    from ._streams import IoError as IoError
    from ._streams import OutputStream as OutputStream
    from ._udp import IncomingDatagramStream as IncomingDatagramStream
    from ._udp import OutgoingDatagramStream as OutgoingDatagramStream
    from ._udp import UdpSocket as UdpSocket
    from ._wasi import PreopenSpec as PreopenSpec
    from ._wasi import wasi as wasi

__version__ = "0.1.0"

__all__ = [
    "ByteSink",
    "ByteSource",
    "Descriptor",
    "DirectoryEntryStream",
    "ExitError",
    "IncomingDatagramStream",
    "InputStream",
    "IoError",
    "Network",
    "OutgoingDatagramStream",
    "OutputStream",
    "Pollable",
    "ResolveAddressStream",
    "TcpSocket",
    "TerminalInput",
    "TerminalOutput",
    "UdpSocket",
    "WASI_EXIT_BRAND",
    "is_exit_error",
    "poll",
    "wasi",
    "http",
]

#: the module of each name, imported on first use
_LAZY = {
    "ByteSink": "._bytes",
    "ByteSource": "._bytes",
    "TerminalInput": "._cli",
    "TerminalOutput": "._cli",
    "WASI_EXIT_BRAND": "._exit",
    "ExitError": "._exit",
    "is_exit_error": "._exit",
    "Descriptor": "._filesystem",
    "DirectoryEntryStream": "._filesystem",
    "http": "._http",
    "Pollable": "._kernel",
    "poll": "._kernel",
    "Network": "._net",
    "ResolveAddressStream": "._sockets",
    "TcpSocket": "._sockets",
    "InputStream": "._streams",
    "IoError": "._streams",
    "OutputStream": "._streams",
    "IncomingDatagramStream": "._udp",
    "OutgoingDatagramStream": "._udp",
    "UdpSocket": "._udp",
    "PreopenSpec": "._wasi",
    "wasi": "._wasi",
}


# The runtime's faces share ``polyengine.faces.lazy_face``; this package may
# import polyengine_protocol only, which imports nothing dynamically, so the
# face keeps its own two functions.
def __getattr__(name: str) -> object:
    """Import a name on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'polyengine_wasi' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
