"""The host side of wasi:http: what a server or an outgoing transport works with.

``polyengine_wasi.http()`` builds the imports a guest links against; this module
names the classes a host uses around it: the incoming request and the response
outparam handed to a 0.2 ``incoming-handler``, the 0.3 ``Request``/``Response``,
the transport protocol's messages and errors, and the field-name and
field-value rules of ``wasi:http/types`` (RFC 9110 §5.1, §5.5).
"""

from __future__ import annotations

from ._http import (
    BodyChannel,
    BodyError,
    DeniedTransport,
    Fields,
    HttpError,
    IncomingMessage,
    IncomingRequest,
    OutgoingMessage,
    OutgoingRequest,
    Request,
    RequestOptions,
    Response,
    ResponseOutparam,
    http_error_code,
)
from ._http._fields import FORBIDDEN_HEADERS as FORBIDDEN_FIELDS
from ._http._fields import valid_name as valid_field_name
from ._http._fields import valid_value as valid_field_value

__all__ = [
    "BodyChannel",
    "BodyError",
    "DeniedTransport",
    "FORBIDDEN_FIELDS",
    "Fields",
    "HttpError",
    "IncomingMessage",
    "IncomingRequest",
    "OutgoingMessage",
    "OutgoingRequest",
    "Request",
    "RequestOptions",
    "Response",
    "ResponseOutparam",
    "http_error_code",
    "valid_field_name",
    "valid_field_value",
]
