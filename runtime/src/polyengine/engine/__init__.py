"""polyengine.engine: the one seam to wasmtime (architecture.md §4, §5).

Compile core modules, instantiate them in a store in plan order, define host
functions, call exports with flat core values, reach memories, tables and
globals, and park calls on wasmtime fibers (the suspension seam).

Instantiation (architecture.md §5): :class:`InstancePre` takes a
component's core instances once per (engine, plan), as module indices and
import sources (:class:`ExportSource`, :class:`HostSource`), and checks the
wiring; ``pre.link(store, host)`` returns a :class:`Linking` whose
``instantiate(i)`` fills core instance ``i``'s imports straight into a raw
extern array and instantiates it. ``host(index)`` supplies each host
function once: a :class:`CoreFunc` of the store, or a :class:`DeferredHost`
``(params, results, build)`` whose body ``build()`` makes on its first call.

The call-path interface is the one thing code above the engine (the scalar
fast path, generated export and import functions) touches to run core code,
and the seam a compiled accelerator replaces, alone (issue: the compiled
accelerator). No ctypes object or wasmtime structure crosses it:

* ``CoreFunc.specialize(formats, rformats) -> call`` — the call of one core
  export for one flat signature: ``call(*args)`` writes argument ``k`` into
  its slot in the ``struct`` format ``formats[k]`` (``I``/``i`` for an
  ``i32`` slot read as unsigned or signed, ``Q``/``q`` for ``i64``, ``f``,
  ``d``) and returns the result in ``rformats`` (one value, ``None``, or a
  tuple). A value out of its format's range raises ``ValueError`` before
  anything runs (and a ``ValueError`` is raised for nothing else); a trap
  raises :class:`CoreTrap`; a closed store ``StoreClosedError``.
* ``CoreFunc.flat_call() -> call`` — the general call: ``call(flat_args)``
  returns the tuple of flat results (values ``call_raw`` converts, such as
  negative ints, are accepted).
* ``HostFunction`` — ``fn(flat_args: tuple) -> Sequence`` of flat results, the
  body of a host function (:func:`define_host_func`, :class:`DeferredHost`).
  The engine calls it from one C callback per core signature, which finds
  the body and its store from the function's ``env``; an exception from the
  body becomes a trap that the entering call raises again.

Two implementations provide them with identical behaviour: pure Python
over ctypes (``_callpath.py``: typed views of a per-function slot buffer and
wasmtime's unchecked entry point through a prototype without argument types
over prebuilt arguments), and the compiled extension ``_accel.c``, built at
install time when a C compiler is present and used unless
``POLYENGINE_PURE=1`` is set; :func:`call_path` says which one is active.
"""

from ._accelerator import call_path as call_path
from ._accelerator import memory_parts as memory_parts
from ._accelerator import value_kernels as value_kernels
from ._async import CallCancelled as CallCancelled
from ._async import ParkableCall as ParkableCall
from ._async import start as start
from ._async import wait as wait
from ._callpath import blocking_driver as blocking_driver
from ._callpath import compiled_path as compiled_path
from ._callpath import export_kernel as export_kernel
from ._callpath import int_result_store as int_result_store
from ._config import Engine as Engine
from ._config import EngineConfig as EngineConfig
from ._config import get_engine as get_engine
from ._core import CoreFunc as CoreFunc
from ._core import CoreValue as CoreValue
from ._core import HostFunction as HostFunction
from ._core import define_host_func as define_host_func
from ._errors import CompileError as CompileError
from ._errors import CoreTrap as CoreTrap
from ._errors import EngineError as EngineError
from ._errors import StoreClosedError as StoreClosedError
from ._hostasync import AsyncHostFunction as AsyncHostFunction
from ._hostasync import HostPending as HostPending
from ._hostasync import define_async_host_func as define_async_host_func
from ._instance import CoreInstance as CoreInstance
from ._instance import Extern as Extern
from ._instance import instantiate as instantiate
from ._memory import CoreGlobal as CoreGlobal
from ._memory import CoreTable as CoreTable
from ._memory import GuestMemory as GuestMemory
from ._memory import new_global as new_global
from ._memory import new_memory as new_memory
from ._memory import new_table as new_table
from ._module import CoreModule as CoreModule
from ._module import ImportDesc as ImportDesc
from ._module import cached_module_path as cached_module_path
from ._module import compile_module as compile_module
from ._module import has_start_section as has_start_section
from ._module import module_cache_dir as module_cache_dir
from ._pooling import ComponentNeeds as ComponentNeeds
from ._pooling import PoolingConfig as PoolingConfig
from ._pooling import PoolLimitError as PoolLimitError
from ._pooling import component_needs as component_needs
from ._pooling import pool_limit as pool_limit
from ._pre import DeferredHost as DeferredHost
from ._pre import ExportSource as ExportSource
from ._pre import HostSource as HostSource
from ._pre import InstancePre as InstancePre
from ._pre import Linking as Linking
from ._pre import PlainHosts as PlainHosts
from ._store import EngineStore as EngineStore
from ._validate import validate_core_module as validate_core_module

__all__ = [
    "AsyncHostFunction",
    "CallCancelled",
    "HostPending",
    "ParkableCall",
    "define_async_host_func",
    "start",
    "wait",
    "CompileError",
    "CoreFunc",
    "CoreGlobal",
    "CoreInstance",
    "CoreModule",
    "CoreTable",
    "CoreTrap",
    "CoreValue",
    "DeferredHost",
    "Engine",
    "EngineConfig",
    "PoolLimitError",
    "PoolingConfig",
    "ComponentNeeds",
    "component_needs",
    "pool_limit",
    "EngineError",
    "EngineStore",
    "ExportSource",
    "Extern",
    "GuestMemory",
    "HostFunction",
    "HostSource",
    "ImportDesc",
    "InstancePre",
    "Linking",
    "PlainHosts",
    "StoreClosedError",
    "blocking_driver",
    "cached_module_path",
    "call_path",
    "compiled_path",
    "compile_module",
    "define_host_func",
    "export_kernel",
    "int_result_store",
    "get_engine",
    "has_start_section",
    "instantiate",
    "memory_parts",
    "module_cache_dir",
    "new_global",
    "new_memory",
    "new_table",
    "validate_core_module",
    "value_kernels",
]
