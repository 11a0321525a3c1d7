"""The Component Model 0.3 task model (CanonicalABI.md §Concurrency).

Sans-IO core: threads are generators that yield :class:`Block` requests
(:mod:`.thread`), tasks and subtasks (:mod:`.task`), waitables and waitable
sets (:mod:`.waitable`), stream and future rendezvous (:mod:`.streams`,
:mod:`.buffers`), the canonical built-ins (:mod:`.builtins`,
:mod:`.copy_builtins`) and ``canon lift``/``canon lower`` (:mod:`.lift`).
The scheduler state lives in :class:`Store`, its ready queue in
:mod:`.ready`; :mod:`.hostcall` drives calls from the host to completion
synchronously, :mod:`.driver` on asyncio, and :mod:`.hostfunc` makes host
functions callable by guests. The host's side of streams and futures:
host ends (:mod:`.host_ends`), direct sessions (:mod:`.direct`), the pipe of
a host-created stream (:mod:`.pipe`) and the pumps feeding host producers
into guest-visible streams and futures (:mod:`.pumps`).

Wiring a component (what the embed layer does):

* one :class:`Store` per engine store (it reads ``POLYENGINE_SCHED_SEED``),
  a :class:`Driver` on it for asyncio, and an :class:`InstanceState` per
  component instance wrapping the ABI's ``ComponentInstance``;
* each built-in of the plan becomes a core host function with
  :func:`.engine_seam.builtin_host_func`, its immediates bound with
  ``functools.partial`` (``canon_lower`` and ``canon_subtask_cancel`` with
  ``defer=True``); the ABI's codecs get :class:`TaskModelHooks`;
* each ``canon lift`` becomes a :class:`CanonLift`
  (:func:`.glue.canon_lift_from_abi`, core functions through
  :func:`.engine_seam.engine_core`) and each ``canon lower`` a
  :class:`CanonLower` (:func:`.glue.canon_lower_from_abi`) whose callee is
  :func:`lift_func` of another instance's lift or a host function
  (:meth:`Driver.host_func_inst`);
* the host calls an export with ``await driver.run(lift, args)`` (or
  :func:`run_to_completion` when nothing waits on host work); start
  functions run inside :func:`sync_scope`.
"""

from .builtins import BLOCKED as BLOCKED
from .builtins import BLOCKING_BUILTINS as BLOCKING_BUILTINS
from .builtins import ErrorContext as ErrorContext
from .copy_builtins import CopyOptions as CopyOptions
from .driver import Driver as Driver
from .host_ends import HostFutureReader as HostFutureReader
from .host_ends import HostFutureWriter as HostFutureWriter
from .host_ends import HostStreamReader as HostStreamReader
from .host_ends import HostStreamWriter as HostStreamWriter
from .hostcall import HostCall as HostCall
from .hostcall import run_to_completion as run_to_completion
from .hostcall import start_host_call as start_host_call
from .hostcall import sync_scope as sync_scope
from .lift import CallbackCode as CallbackCode
from .lift import CanonLift as CanonLift
from .lift import CanonLower as CanonLower
from .lift import CoreFunc as CoreFunc
from .lift import canon_lift as canon_lift
from .lift import canon_lower as canon_lower
from .lift import lift_func as lift_func
from .lift import start_task as start_task
from .lift import unpack_callback_result as unpack_callback_result
from .sched import SEED_ENV as SEED_ENV
from .sched import SchedulePolicy as SchedulePolicy
from .store import HandleTable as HandleTable
from .store import InstanceState as InstanceState
from .store import Store as Store
from .streams import CopyResult as CopyResult
from .streams import CopyState as CopyState
from .streams import ReadableFutureEnd as ReadableFutureEnd
from .streams import ReadableStreamEnd as ReadableStreamEnd
from .streams import SharedFutureImpl as SharedFutureImpl
from .streams import SharedStreamImpl as SharedStreamImpl
from .streams import WritableFutureEnd as WritableFutureEnd
from .streams import WritableStreamEnd as WritableStreamEnd
from .task import FuncInst as FuncInst
from .task import Subtask as Subtask
from .task import Task as Task
from .thread import Activation as Activation
from .thread import Block as Block
from .thread import Cancelled as Cancelled
from .thread import GeneratorActivation as GeneratorActivation
from .thread import Suspends as Suspends
from .thread import Thread as Thread
from .thread import run_activation as run_activation
from .traps import TrapCode as TrapCode
from .values import TaskModelHooks as TaskModelHooks
from .waitable import EventCode as EventCode
from .waitable import Waitable as Waitable
from .waitable import WaitableSet as WaitableSet
