"""The canonical ABI (CanonicalABI.md), compiled per type at instantiation.

Modules, in the spec's order:

* :mod:`~polyengine.abi.trap` - :class:`Trap`, ``trap_if`` and trap codes;
* :mod:`~polyengine.abi.memory` - the engine's memory interface
  (:class:`Memory`, :data:`Realloc`) and :class:`BytearrayMemory`;
* :mod:`~polyengine.abi.options` - :class:`CanonicalOptions` and
  :class:`LiftLowerContext` (§"Canonical ABI Options", §"Lifting and
  Lowering Context");
* :mod:`~polyengine.abi.resources` - :class:`ComponentInstance`,
  :class:`Table`, resource handles and the ``resource.*`` built-ins;
* :mod:`~polyengine.abi.strings` - string load/store and transcoding;
* :mod:`~polyengine.abi.compile` (+ ``lists``, ``variants``, ``handles``,
  ``bulk``, ``fused``, ``codegen``) - :class:`Compiler` turning a value type
  into a :class:`Codec` of ``load``/``store``/``lift_flat``/``lower_flat``
  closures;
* :mod:`~polyengine.abi.functions` - :class:`LiftedFunc`/:class:`LoweredFunc`
  for whole parameter and result lists;
* :mod:`~polyengine.abi.errors` - the path-carrying lowering errors.

Typical use by the embed layer, once per ``canon lift`` at instantiation::

    comp = Compiler(opts.string_encoding, opts.addrtype,
                    resource_type=rt_of_index, host_resources=host_map,
                    async_values=concurrency_hooks)
    f = LiftedFunc.compile(comp, ft, is_async=opts.is_async,
                           callback=opts.callback is not None)

and per call::

    cx = LiftLowerContext(opts, inst, borrow_scope=CallBorrows())
    flat_results = core_func(*f.lower_params(cx, args))
    value = f.lift_results(cx, flat_results)   # then post-return

A host import reached through ``canon lower`` uses :class:`LoweredFunc`
the other way round (``lift_params`` with a :class:`CallLenders` scope,
then ``lower_results`` with the core arguments, for the out-pointer).
"""

from polyengine.abi.compile import AsyncValueHooks as AsyncValueHooks
from polyengine.abi.compile import Codec as Codec
from polyengine.abi.compile import Compiler as Compiler
from polyengine.abi.errors import LowerError as LowerError
from polyengine.abi.errors import LowerOverflowError as LowerOverflowError
from polyengine.abi.errors import LowerTypeError as LowerTypeError
from polyengine.abi.errors import LowerValueError as LowerValueError
from polyengine.abi.functions import LiftedFunc as LiftedFunc
from polyengine.abi.functions import LoweredFunc as LoweredFunc
from polyengine.abi.functions import ValuesCodec as ValuesCodec
from polyengine.abi.memory import BytearrayMemory as BytearrayMemory
from polyengine.abi.memory import Memory as Memory
from polyengine.abi.memory import Realloc as Realloc
from polyengine.abi.options import CanonicalOptions as CanonicalOptions
from polyengine.abi.options import LiftLowerContext as LiftLowerContext
from polyengine.abi.resources import CallBorrows as CallBorrows
from polyengine.abi.resources import CallLenders as CallLenders
from polyengine.abi.resources import ComponentInstance as ComponentInstance
from polyengine.abi.resources import HostResources as HostResources
from polyengine.abi.resources import ResourceHandle as ResourceHandle
from polyengine.abi.resources import ResourceType as ResourceType
from polyengine.abi.resources import Table as Table
from polyengine.abi.strings import StringValue as StringValue
from polyengine.abi.strings import transcode_string as transcode_string
from polyengine.abi.trap import HostImportError as HostImportError
from polyengine.abi.trap import HostResultError as HostResultError
from polyengine.abi.trap import Trap as Trap
from polyengine.abi.trap import TrapCode as TrapCode
from polyengine.abi.trap import fault as fault
from polyengine.abi.trap import host_import_trap as host_import_trap
from polyengine.abi.trap import host_result_error as host_result_error
from polyengine.abi.trap import host_trap as host_trap
from polyengine.abi.trap import internal_trap as internal_trap
from polyengine.abi.trap import poisons as poisons
from polyengine.abi.trap import trap_if as trap_if
