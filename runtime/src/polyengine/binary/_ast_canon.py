"""AST nodes for canonical definitions (Binary.md §"Canonical Definitions").

Part of :mod:`polyengine.binary.ast`, which is the public namespace.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import ClassVar, TypeAlias

from ._ast_types import CoreValType, ValType

# ---------------------------------------------------------------------------
# Canonical definitions (Binary.md §"Canonical Definitions")
# ---------------------------------------------------------------------------


class StringEncoding(enum.Enum):
    """``string-encoding=...`` canon option; values are the option bytes."""

    UTF8 = 0x00
    UTF16 = 0x01
    LATIN1_UTF16 = 0x02


@dataclass(frozen=True, slots=True)
class StringEncodingOpt:
    """``string-encoding=...`` (``0x00``..``0x02``)."""

    encoding: StringEncoding


@dataclass(frozen=True, slots=True)
class MemoryOpt:
    """``(memory m)`` (``0x03``): a core memory index."""

    memory: int


@dataclass(frozen=True, slots=True)
class ReallocOpt:
    """``(realloc f)`` (``0x04``): a core func index."""

    func: int


@dataclass(frozen=True, slots=True)
class PostReturnOpt:
    """``(post-return f)`` (``0x05``): a core func index."""

    func: int


@dataclass(frozen=True, slots=True)
class AsyncOpt:
    """🔀 ``async`` (``0x06``)."""


@dataclass(frozen=True, slots=True)
class CallbackOpt:
    """🔀 ``(callback f)`` (``0x07``): a core func index."""

    func: int


CanonOpt: TypeAlias = (
    StringEncodingOpt | MemoryOpt | ReallocOpt | PostReturnOpt | AsyncOpt | CallbackOpt
)
"""A ``canonopt``. Option lists are kept in order, duplicates included."""


@dataclass(frozen=True, slots=True)
class CanonLift:
    """``(canon lift f opts type-index-space[ft])``: defines a component func."""

    builtin: ClassVar[str] = "lift"
    core_func: int
    opts: tuple[CanonOpt, ...]
    type_index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonLower:
    """``(canon lower f opts (core func))``."""

    builtin: ClassVar[str] = "lower"
    func: int
    opts: tuple[CanonOpt, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonResourceNew:
    """``(canon resource.new rt)``, ``0x02``."""

    builtin: ClassVar[str] = "resource.new"
    type_index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonResourceDrop:
    """``(canon resource.drop rt)``, ``0x03``."""

    builtin: ClassVar[str] = "resource.drop"
    type_index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonResourceRep:
    """``(canon resource.rep rt)``, ``0x04``."""

    builtin: ClassVar[str] = "resource.rep"
    type_index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonBackpressureInc:
    """🔀 ``(canon backpressure.inc)``, ``0x24``."""

    builtin: ClassVar[str] = "backpressure.inc"
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonBackpressureDec:
    """🔀 ``(canon backpressure.dec)``, ``0x25``."""

    builtin: ClassVar[str] = "backpressure.dec"
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonTaskReturn:
    """🔀 ``(canon task.return (result t)? opts)``, ``0x09``."""

    builtin: ClassVar[str] = "task.return"
    result: ValType | None
    opts: tuple[CanonOpt, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonTaskCancel:
    """🔀 ``(canon task.cancel)``, ``0x05``."""

    builtin: ClassVar[str] = "task.cancel"
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonContextGet:
    """🔀 ``(canon context.get t i)``, ``0x0a``."""

    builtin: ClassVar[str] = "context.get"
    type: CoreValType
    index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonContextSet:
    """🔀 ``(canon context.set t i)``, ``0x0b``."""

    builtin: ClassVar[str] = "context.set"
    type: CoreValType
    index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonSubtaskCancel:
    """🔀 ``(canon subtask.cancel async?)``, ``0x06``."""

    builtin: ClassVar[str] = "subtask.cancel"
    is_async: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonSubtaskDrop:
    """🔀 ``(canon subtask.drop)``, ``0x0d``."""

    builtin: ClassVar[str] = "subtask.drop"
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonStreamNew:
    """🔀 ``(canon stream.new t)``, ``0x0e``."""

    builtin: ClassVar[str] = "stream.new"
    type_index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonStreamRead:
    """🔀 ``(canon stream.read t opts)``, ``0x0f``."""

    builtin: ClassVar[str] = "stream.read"
    type_index: int
    opts: tuple[CanonOpt, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonStreamWrite:
    """🔀 ``(canon stream.write t opts)``, ``0x10``."""

    builtin: ClassVar[str] = "stream.write"
    type_index: int
    opts: tuple[CanonOpt, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonStreamCancelRead:
    """🔀 ``(canon stream.cancel-read t async?)``, ``0x11``."""

    builtin: ClassVar[str] = "stream.cancel-read"
    type_index: int
    is_async: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonStreamCancelWrite:
    """🔀 ``(canon stream.cancel-write t async?)``, ``0x12``."""

    builtin: ClassVar[str] = "stream.cancel-write"
    type_index: int
    is_async: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonStreamDropReadable:
    """🔀 ``(canon stream.drop-readable t)``, ``0x13``."""

    builtin: ClassVar[str] = "stream.drop-readable"
    type_index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonStreamDropWritable:
    """🔀 ``(canon stream.drop-writable t)``, ``0x14``."""

    builtin: ClassVar[str] = "stream.drop-writable"
    type_index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonFutureNew:
    """🔀 ``(canon future.new t)``, ``0x15``."""

    builtin: ClassVar[str] = "future.new"
    type_index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonFutureRead:
    """🔀 ``(canon future.read t opts)``, ``0x16``."""

    builtin: ClassVar[str] = "future.read"
    type_index: int
    opts: tuple[CanonOpt, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonFutureWrite:
    """🔀 ``(canon future.write t opts)``, ``0x17``."""

    builtin: ClassVar[str] = "future.write"
    type_index: int
    opts: tuple[CanonOpt, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonFutureCancelRead:
    """🔀 ``(canon future.cancel-read t async?)``, ``0x18``."""

    builtin: ClassVar[str] = "future.cancel-read"
    type_index: int
    is_async: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonFutureCancelWrite:
    """🔀 ``(canon future.cancel-write t async?)``, ``0x19``."""

    builtin: ClassVar[str] = "future.cancel-write"
    type_index: int
    is_async: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonFutureDropReadable:
    """🔀 ``(canon future.drop-readable t)``, ``0x1a``."""

    builtin: ClassVar[str] = "future.drop-readable"
    type_index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonFutureDropWritable:
    """🔀 ``(canon future.drop-writable t)``, ``0x1b``."""

    builtin: ClassVar[str] = "future.drop-writable"
    type_index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonErrorContextNew:
    """📝 ``(canon error-context.new opts)``, ``0x1c``."""

    builtin: ClassVar[str] = "error-context.new"
    opts: tuple[CanonOpt, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonErrorContextDebugMessage:
    """📝 ``(canon error-context.debug-message opts)``, ``0x1d``."""

    builtin: ClassVar[str] = "error-context.debug-message"
    opts: tuple[CanonOpt, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonErrorContextDrop:
    """📝 ``(canon error-context.drop)``, ``0x1e``."""

    builtin: ClassVar[str] = "error-context.drop"
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonWaitableSetNew:
    """🔀 ``(canon waitable-set.new)``, ``0x1f``."""

    builtin: ClassVar[str] = "waitable-set.new"
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonWaitableSetWait:
    """🔀 ``(canon waitable-set.wait cancellable? (memory m))``, ``0x20``."""

    builtin: ClassVar[str] = "waitable-set.wait"
    cancellable: bool
    memory: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonWaitableSetPoll:
    """🔀 ``(canon waitable-set.poll cancellable? (memory m))``, ``0x21``."""

    builtin: ClassVar[str] = "waitable-set.poll"
    cancellable: bool
    memory: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonWaitableSetDrop:
    """🔀 ``(canon waitable-set.drop)``, ``0x22``."""

    builtin: ClassVar[str] = "waitable-set.drop"
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonWaitableJoin:
    """🔀 ``(canon waitable.join)``, ``0x23``."""

    builtin: ClassVar[str] = "waitable.join"
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadIndex:
    """🧵 ``(canon thread.index)``, ``0x26``."""

    builtin: ClassVar[str] = "thread.index"
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadNewIndirect:
    """🧵 ``(canon thread.new-indirect ft tbl)``, ``0x27``: core type and core table indices."""

    builtin: ClassVar[str] = "thread.new-indirect"
    type_index: int
    table: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadResumeLater:
    """🧵 ``(canon thread.resume-later)``, ``0x28``."""

    builtin: ClassVar[str] = "thread.resume-later"
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadSuspend:
    """🧵 ``(canon thread.suspend cancellable?)``, ``0x29``."""

    builtin: ClassVar[str] = "thread.suspend"
    cancellable: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadYield:
    """🔀 ``(canon thread.yield cancellable?)``, ``0x0c``."""

    builtin: ClassVar[str] = "thread.yield"
    cancellable: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadSuspendThenResume:
    """🧵 ``(canon thread.suspend-then-resume cancellable?)``, ``0x2a``."""

    builtin: ClassVar[str] = "thread.suspend-then-resume"
    cancellable: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadYieldThenResume:
    """🧵 ``(canon thread.yield-then-resume cancellable?)``, ``0x2b``."""

    builtin: ClassVar[str] = "thread.yield-then-resume"
    cancellable: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadSuspendThenPromote:
    """🧵 ``(canon thread.suspend-then-promote cancellable?)``, ``0x2c``."""

    builtin: ClassVar[str] = "thread.suspend-then-promote"
    cancellable: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadYieldThenPromote:
    """🧵 ``(canon thread.yield-then-promote cancellable?)``, ``0x2d``."""

    builtin: ClassVar[str] = "thread.yield-then-promote"
    cancellable: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadSpawnRef:
    """🧵② ``(canon thread.spawn-ref shared? ft)``, ``0x40``: a core type index."""

    builtin: ClassVar[str] = "thread.spawn-ref"
    shared: bool
    type_index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadSpawnIndirect:
    """🧵② ``(canon thread.spawn-indirect shared? ft tbl)``, ``0x41``."""

    builtin: ClassVar[str] = "thread.spawn-indirect"
    shared: bool
    type_index: int
    table: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CanonThreadAvailableParallelism:
    """🧵② ``(canon thread.available-parallelism shared?)``, ``0x42``."""

    builtin: ClassVar[str] = "thread.available-parallelism"
    shared: bool
    offset: int = field(default=-1, kw_only=True, compare=False)


CanonBuiltin: TypeAlias = (
    CanonResourceNew
    | CanonResourceDrop
    | CanonResourceRep
    | CanonBackpressureInc
    | CanonBackpressureDec
    | CanonTaskReturn
    | CanonTaskCancel
    | CanonContextGet
    | CanonContextSet
    | CanonSubtaskCancel
    | CanonSubtaskDrop
    | CanonStreamNew
    | CanonStreamRead
    | CanonStreamWrite
    | CanonStreamCancelRead
    | CanonStreamCancelWrite
    | CanonStreamDropReadable
    | CanonStreamDropWritable
    | CanonFutureNew
    | CanonFutureRead
    | CanonFutureWrite
    | CanonFutureCancelRead
    | CanonFutureCancelWrite
    | CanonFutureDropReadable
    | CanonFutureDropWritable
    | CanonErrorContextNew
    | CanonErrorContextDebugMessage
    | CanonErrorContextDrop
    | CanonWaitableSetNew
    | CanonWaitableSetWait
    | CanonWaitableSetPoll
    | CanonWaitableSetDrop
    | CanonWaitableJoin
    | CanonThreadIndex
    | CanonThreadNewIndirect
    | CanonThreadResumeLater
    | CanonThreadSuspend
    | CanonThreadYield
    | CanonThreadSuspendThenResume
    | CanonThreadYieldThenResume
    | CanonThreadSuspendThenPromote
    | CanonThreadYieldThenPromote
    | CanonThreadSpawnRef
    | CanonThreadSpawnIndirect
    | CanonThreadAvailableParallelism
)
"""Every canon built-in that defines a core function (all but lift and lower)."""

Canon: TypeAlias = CanonLift | CanonLower | CanonBuiltin
"""A ``canon`` item. ``CanonLift`` defines a component func; all others a core func."""
