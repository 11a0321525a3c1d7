"""The host-ABI vocabulary of polyengine (standard library only).

What host modules import, and all they import (python-mapping.md §0 and §9,
the seed's A22): the brand keys and recognition predicates, the canonical
error classes, the ``suspending``/``defer_cancel``/``abortable`` marks, the
handle protocols, the realm-local pill and the process-boundary forms
``to_cloneable``/``from_cloneable``, and the process-global registry of
runtime copies. Recognition is by brand everywhere, never by ``isinstance``:
values minted by another copy of this package, or by hand-rolled classes
carrying ``__polyengine_brand__``, are honored alike.
"""

from ._brands import ABORTABLE as ABORTABLE
from ._brands import BRAND_ATTRIBUTE as BRAND_ATTRIBUTE
from ._brands import BRAND_KEYS as BRAND_KEYS
from ._brands import CLONEABLE_TAG as CLONEABLE_TAG
from ._brands import COMPONENT_EXCEPTION as COMPONENT_EXCEPTION
from ._brands import DEFER_CANCEL as DEFER_CANCEL
from ._brands import DROPPED as DROPPED
from ._brands import ERROR_CONTEXT as ERROR_CONTEXT
from ._brands import FUTURE as FUTURE
from ._brands import INVALID_HANDLE as INVALID_HANDLE
from ._brands import PEER_TRAPPED as PEER_TRAPPED
from ._brands import POLLABLE as POLLABLE
from ._brands import REALM_LOCAL as REALM_LOCAL
from ._brands import RESOURCE_STATE as RESOURCE_STATE
from ._brands import RUNTIME_COPIES as RUNTIME_COPIES
from ._brands import STREAM as STREAM
from ._brands import STREAM_PRODUCER as STREAM_PRODUCER
from ._brands import STREAM_WRITER as STREAM_WRITER
from ._brands import SUSPENDING as SUSPENDING
from ._brands import TRAP as TRAP
from ._brands import WASI_EXIT as WASI_EXIT
from ._brands import brands_of as brands_of
from ._brands import has_brand as has_brand
from ._cloneable import ClonedError as ClonedError
from ._cloneable import Replace as Replace
from ._cloneable import from_cloneable as from_cloneable
from ._cloneable import to_cloneable as to_cloneable
from ._errors import UNSPECIFIED_TRAP_CODE as UNSPECIFIED_TRAP_CODE
from ._errors import ComponentException as ComponentException
from ._errors import DroppedError as DroppedError
from ._errors import InvalidHandleError as InvalidHandleError
from ._errors import PeerTrappedError as PeerTrappedError
from ._errors import StreamProducerError as StreamProducerError
from ._errors import SuspensionUnavailable as SuspensionUnavailable
from ._errors import Trap as Trap
from ._errors import is_component_exception as is_component_exception
from ._errors import is_dropped_error as is_dropped_error
from ._errors import is_invalid_handle_error as is_invalid_handle_error
from ._errors import is_peer_trapped_error as is_peer_trapped_error
from ._errors import is_stream_producer_error as is_stream_producer_error
from ._errors import is_trap as is_trap
from ._errors import is_wasi_exit as is_wasi_exit
from ._handles import REALM_LOCAL_ATTRIBUTE as REALM_LOCAL_ATTRIBUTE
from ._handles import ByteStreamSource as ByteStreamSource
from ._handles import Chunk as Chunk
from ._handles import DirectDestination as DirectDestination
from ._handles import DirectSource as DirectSource
from ._handles import DirectVerdict as DirectVerdict
from ._handles import ErrorContext as ErrorContext
from ._handles import Future as Future
from ._handles import FutureSource as FutureSource
from ._handles import RealmLocal as RealmLocal
from ._handles import Stream as Stream
from ._handles import StreamSource as StreamSource
from ._handles import StreamWriter as StreamWriter
from ._handles import define_realm_local as define_realm_local
from ._handles import is_error_context as is_error_context
from ._handles import is_future as is_future
from ._handles import is_pollable as is_pollable
from ._handles import is_realm_local as is_realm_local
from ._handles import is_resource_wrapper as is_resource_wrapper
from ._handles import is_stream as is_stream
from ._handles import is_stream_writer as is_stream_writer
from ._marks import abortable as abortable
from ._marks import defer_cancel as defer_cancel
from ._marks import is_abortable as is_abortable
from ._marks import is_defer_cancel as is_defer_cancel
from ._marks import is_suspending as is_suspending
from ._marks import marks_of as marks_of
from ._marks import suspending as suspending
from ._registry import PROTOCOL_GENERATION as PROTOCOL_GENERATION
from ._registry import RuntimeCopy as RuntimeCopy
from ._registry import copy_census as copy_census
from ._registry import register_runtime_copy as register_runtime_copy
from ._registry import runtime_copies as runtime_copies

__version__ = "0.4.0"

__all__ = [
    # brand keys
    "ABORTABLE",
    "BRAND_ATTRIBUTE",
    "BRAND_KEYS",
    "CLONEABLE_TAG",
    "COMPONENT_EXCEPTION",
    "DEFER_CANCEL",
    "DROPPED",
    "ERROR_CONTEXT",
    "FUTURE",
    "INVALID_HANDLE",
    "PEER_TRAPPED",
    "POLLABLE",
    "REALM_LOCAL",
    "RESOURCE_STATE",
    "RUNTIME_COPIES",
    "STREAM",
    "STREAM_PRODUCER",
    "STREAM_WRITER",
    "SUSPENDING",
    "TRAP",
    "WASI_EXIT",
    "brands_of",
    "has_brand",
    # errors
    "ComponentException",
    "DroppedError",
    "InvalidHandleError",
    "PeerTrappedError",
    "StreamProducerError",
    "SuspensionUnavailable",
    "Trap",
    "UNSPECIFIED_TRAP_CODE",
    "is_component_exception",
    "is_dropped_error",
    "is_invalid_handle_error",
    "is_peer_trapped_error",
    "is_stream_producer_error",
    "is_trap",
    "is_wasi_exit",
    # marks
    "abortable",
    "defer_cancel",
    "is_abortable",
    "is_defer_cancel",
    "is_suspending",
    "marks_of",
    "suspending",
    # handles and the realm-local pill
    "ByteStreamSource",
    "Chunk",
    "DirectDestination",
    "DirectSource",
    "DirectVerdict",
    "ErrorContext",
    "Future",
    "FutureSource",
    "REALM_LOCAL_ATTRIBUTE",
    "RealmLocal",
    "Stream",
    "StreamSource",
    "StreamWriter",
    "define_realm_local",
    "is_error_context",
    "is_future",
    "is_pollable",
    "is_realm_local",
    "is_resource_wrapper",
    "is_stream",
    "is_stream_writer",
    # process-boundary forms
    "ClonedError",
    "Replace",
    "from_cloneable",
    "to_cloneable",
    # the copy registry
    "PROTOCOL_GENERATION",
    "RuntimeCopy",
    "copy_census",
    "register_runtime_copy",
    "runtime_copies",
]
