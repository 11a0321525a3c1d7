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
"""

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
