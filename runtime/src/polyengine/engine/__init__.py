"""polyengine.engine: the one seam to wasmtime (architecture.md §4, §5).

Compile core modules, instantiate them in a store in plan order, define host
functions, call exports with flat core values, reach memories, tables and
globals, and park calls on wasmtime fibers (the suspension seam).
"""

from ._async import CallCancelled as CallCancelled
from ._async import ParkableCall as ParkableCall
from ._async import start as start
from ._async import wait as wait
from ._config import Engine as Engine
from ._config import EngineConfig as EngineConfig
from ._config import get_engine as get_engine
from ._core import CoreFunc as CoreFunc
from ._core import CoreInstance as CoreInstance
from ._core import CoreValue as CoreValue
from ._core import Extern as Extern
from ._core import HostFunction as HostFunction
from ._core import define_host_func as define_host_func
from ._core import instantiate as instantiate
from ._errors import CompileError as CompileError
from ._errors import CoreTrap as CoreTrap
from ._errors import EngineError as EngineError
from ._errors import StoreClosedError as StoreClosedError
from ._hostasync import AsyncHostFunction as AsyncHostFunction
from ._hostasync import HostPending as HostPending
from ._hostasync import define_async_host_func as define_async_host_func
from ._memory import CoreGlobal as CoreGlobal
from ._memory import CoreTable as CoreTable
from ._memory import GuestMemory as GuestMemory
from ._memory import new_global as new_global
from ._memory import new_memory as new_memory
from ._memory import new_table as new_table
from ._module import CoreModule as CoreModule
from ._module import ImportDesc as ImportDesc
from ._module import compile_module as compile_module
from ._module import module_cache_dir as module_cache_dir
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
    "Engine",
    "EngineConfig",
    "EngineError",
    "EngineStore",
    "Extern",
    "GuestMemory",
    "HostFunction",
    "ImportDesc",
    "StoreClosedError",
    "compile_module",
    "define_host_func",
    "get_engine",
    "instantiate",
    "module_cache_dir",
    "new_global",
    "new_memory",
    "new_table",
    "validate_core_module",
]
