"""wasi:http host providers: ``http(transport=...)`` builds the imports.

``http()`` returns the ``wasi:http/types`` and ``wasi:http/outgoing-handler``
providers of the 0.2 track, to merge with ``wasi()``::

    imports = {**wasi(), **http(transport=my_transport)}

Without a transport every outgoing request fails with
``HTTP-request-denied``. The classes here are also the host side of an
incoming request (``IncomingRequest``, ``ResponseOutparam``, the
``BodyChannel`` of an ``OutgoingBody``).
"""

from __future__ import annotations

from ._fields import Fields as Fields
from ._p2 import BodyInputStream as BodyInputStream
from ._p2 import FutureIncomingResponse as FutureIncomingResponse
from ._p2 import FutureTrailers as FutureTrailers
from ._p2 import HttpIoError as HttpIoError
from ._p2 import IncomingBody as IncomingBody
from ._p2 import IncomingRequest as IncomingRequest
from ._p2 import IncomingResponse as IncomingResponse
from ._p2 import OutgoingBody as OutgoingBody
from ._p2 import OutgoingRequest as OutgoingRequest
from ._p2 import OutgoingResponse as OutgoingResponse
from ._p2 import RequestOptions as RequestOptions
from ._p2 import ResponseOutparam as ResponseOutparam
from ._p2 import http_error_code as http_error_code
from ._p2 import method_value as method_value
from ._p2 import outgoing_handler_provider, types_provider
from ._p3 import Request as Request
from ._p3 import Response as Response
from ._p3 import client_provider, types_provider_p3
from ._transport import BodyChannel as BodyChannel
from ._transport import BodyError as BodyError
from ._transport import DeniedTransport as DeniedTransport
from ._transport import HttpError as HttpError
from ._transport import IncomingMessage as IncomingMessage
from ._transport import OutgoingMessage as OutgoingMessage
from ._transport import Transport as Transport

__all__ = [
    "BodyChannel",
    "BodyError",
    "BodyInputStream",
    "DeniedTransport",
    "Fields",
    "FutureIncomingResponse",
    "FutureTrailers",
    "HttpError",
    "HttpIoError",
    "IncomingBody",
    "IncomingMessage",
    "IncomingRequest",
    "IncomingResponse",
    "OutgoingBody",
    "OutgoingMessage",
    "OutgoingRequest",
    "OutgoingResponse",
    "Request",
    "RequestOptions",
    "Response",
    "ResponseOutparam",
    "Transport",
    "http",
    "http_error_code",
    "method_value",
]


def http(*, transport: Transport | None = None) -> dict[str, object]:
    """The wasi:http imports of one instance (0.2 and 0.3 tracks).

    ``transport`` sends the guest's outgoing requests; ``None`` denies them
    (``HTTP-request-denied``).
    """
    return {
        "wasi:http/types@0.2": types_provider(),
        "wasi:http/outgoing-handler@0.2": outgoing_handler_provider(transport),
        "wasi:http/types@0.3": types_provider_p3(),
        "wasi:http/client@0.3": client_provider(transport),
    }
