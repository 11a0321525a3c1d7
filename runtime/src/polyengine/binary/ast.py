"""The AST of a component binary (Binary.md), as produced by :mod:`polyengine.binary.reader`.

Every node is a frozen, slotted dataclass; sequences are tuples. The AST is a
faithful, *unvalidated* picture of the bytes: duplicate canon options, empty
records, out-of-range indices and the like are kept as written so that
``polyengine.validate`` can reject them with the right message. Only what is
malformed at the byte level (Binary.md grammar) is refused by the reader.

Conventions
-----------

* Indices (``typeidx``, ``funcidx``, ``core:memoryidx`` ...) are plain ``int``.
* A component ``valtype`` is ``PrimValType | int``: a primitive type, or the
  index of a defined type in the type index space (Binary.md §"Type
  Definitions", ``valtype``). :class:`PrimValType` is a plain ``Enum`` (not an
  ``IntEnum``), so ``isinstance(t, int)`` means "type index".
* Sort/index pairs (``sortidx``, ``core:sortidx``) use the single flat
  :class:`Sort` enum, whose ``CORE_*`` members are the core sorts.
* ``offset`` fields are absolute byte offsets into the top-level input given to
  ``read_component`` (also inside nested components). On nodes that are items
  of a section (definitions and declarators) and on :class:`ExternName`,
  ``offset`` is the position of the first byte, for error messages; it is
  keyword-only and excluded from equality (``compare=False``), so two nodes
  read from different places compare equal when their contents do. Nodes
  built by hand get ``offset=-1``.
* Byte ranges (core modules, nested components, custom-section payloads,
  values) are ``(offset, length)`` pairs into that same input; nothing is
  copied. ``CoreModule.data(input)`` slices the bytes back out. These
  offsets (``CoreModule.offset``, ``Component.offset``,
  ``CustomSection.data_offset``, ``Value.value_offset``) *are* compared: they
  are the node's value.

What the reader leaves to validation
------------------------------------

The reader enforces the Binary.md grammar (tags, opcodes, LEB128, UTF-8,
sizes, ``0x00``/``0x01`` immediates) plus core-module section headers. It
does not check, and the AST keeps as written: index bounds and sort/kind
agreement of indices; empty records/variants/tuples/flags/enums, more than 32
flags, fixed-length lists of length 0; duplicate or conflicting canon options;
extern-name syntax (kebab-case labels, ``[method]`` annotations, interface
names and versions), name uniqueness and repeated name attributes; which sorts
may be exported, passed to ``instantiate`` or aliased by declarators;
resource types inside component/instance types; ``borrow`` in results;
``(stream char)``; value consumption (🪙); the bodies of core modules.

The node classes live in the private modules ``_ast_types`` (sorts, core
types, value/func/component/instance types, extern names and types, aliases)
and ``_ast_canon`` (canonical definitions); import them from here.

The definitions of a component are kept in one ordered tuple
(:attr:`Component.definitions`), mirroring Binary.md's ``flatten(s*)``: index
spaces are built in that order, so validators and translators walk it once.

Changes
-------

(none yet: this is the first published shape. Later versions only add nodes,
fields with defaults, and enum members; nothing is renamed or removed.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from ._ast_canon import (
    AsyncOpt,
    CallbackOpt,
    Canon,
    CanonBackpressureDec,
    CanonBackpressureInc,
    CanonBuiltin,
    CanonContextGet,
    CanonContextSet,
    CanonErrorContextDebugMessage,
    CanonErrorContextDrop,
    CanonErrorContextNew,
    CanonFutureCancelRead,
    CanonFutureCancelWrite,
    CanonFutureDropReadable,
    CanonFutureDropWritable,
    CanonFutureNew,
    CanonFutureRead,
    CanonFutureWrite,
    CanonLift,
    CanonLower,
    CanonOpt,
    CanonResourceDrop,
    CanonResourceNew,
    CanonResourceRep,
    CanonStreamCancelRead,
    CanonStreamCancelWrite,
    CanonStreamDropReadable,
    CanonStreamDropWritable,
    CanonStreamNew,
    CanonStreamRead,
    CanonStreamWrite,
    CanonSubtaskCancel,
    CanonSubtaskDrop,
    CanonTaskCancel,
    CanonTaskReturn,
    CanonThreadAvailableParallelism,
    CanonThreadIndex,
    CanonThreadNewIndirect,
    CanonThreadResumeLater,
    CanonThreadSpawnIndirect,
    CanonThreadSpawnRef,
    CanonThreadSuspend,
    CanonThreadSuspendThenPromote,
    CanonThreadSuspendThenResume,
    CanonThreadYield,
    CanonThreadYieldThenPromote,
    CanonThreadYieldThenResume,
    CanonWaitableJoin,
    CanonWaitableSetDrop,
    CanonWaitableSetNew,
    CanonWaitableSetPoll,
    CanonWaitableSetWait,
    MemoryOpt,
    PostReturnOpt,
    ReallocOpt,
    StringEncoding,
    StringEncodingOpt,
)
from ._ast_types import (
    Alias,
    AliasCoreExport,
    AliasExport,
    AliasOuter,
    BorrowType,
    CaseType,
    ComponentDecl,
    ComponentExternType,
    ComponentType,
    CoreAbsHeapType,
    CoreArrayType,
    CoreCompType,
    CoreContType,
    CoreDefType,
    CoreExportDecl,
    CoreExternType,
    CoreFieldType,
    CoreFuncExternType,
    CoreFuncType,
    CoreGlobalType,
    CoreImport,
    CoreMemoryType,
    CoreModuleDecl,
    CoreModuleExternType,
    CoreModuleType,
    CoreNumType,
    CoreOuterAlias,
    CorePackedType,
    CoreRecType,
    CoreRefType,
    CoreStorageType,
    CoreStructType,
    CoreSubType,
    CoreTableType,
    CoreTagType,
    CoreTypeDef,
    CoreValType,
    DefType,
    DefValType,
    EnumType,
    EqBound,
    ExportDecl,
    ExternalIdAttribute,
    ExternName,
    ExternType,
    FlagsType,
    FuncExternType,
    FuncType,
    FutureType,
    ImplementsAttribute,
    ImportDecl,
    InstanceDecl,
    InstanceExternType,
    InstanceType,
    LabelValType,
    Limits,
    ListType,
    MapType,
    NameAttribute,
    OptionType,
    OwnType,
    PrimValType,
    RecordType,
    ResourceType,
    ResultType,
    Sort,
    StreamType,
    SubResourceBound,
    TupleType,
    TypeBound,
    TypeDef,
    TypeExternType,
    ValType,
    ValueBound,
    ValueEqBound,
    ValueExternType,
    VariantType,
    VersionSuffixAttribute,
)

# ---------------------------------------------------------------------------
# Core instances and component instances (Binary.md §"Instance Definitions")
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CoreInstantiateArg:
    """``core:instantiatearg``: ``(with "n" (instance i))``."""

    name: str
    instance: int


@dataclass(frozen=True, slots=True)
class CoreInstantiate:
    """Core instance ``(instantiate m arg*)``."""

    module: int
    args: tuple[CoreInstantiateArg, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CoreInlineExport:
    """``core:inlineexport``: ``(export "n" (sort idx))``; ``sort`` is a core sort."""

    name: str
    sort: Sort
    index: int


@dataclass(frozen=True, slots=True)
class CoreInstanceExports:
    """Core instance made of inline exports."""

    exports: tuple[CoreInlineExport, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


CoreInstance: TypeAlias = CoreInstantiate | CoreInstanceExports


@dataclass(frozen=True, slots=True)
class InstantiateArg:
    """``instantiatearg``: ``(with "n" (sort idx))``."""

    name: str
    sort: Sort
    index: int


@dataclass(frozen=True, slots=True)
class Instantiate:
    """Component instance ``(instantiate c arg*)``."""

    component: int
    args: tuple[InstantiateArg, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class InlineExport:
    """``inlineexport``: ``(export na (sort idx))``."""

    name: ExternName
    sort: Sort
    index: int


@dataclass(frozen=True, slots=True)
class InstanceExports:
    """Component instance made of inline exports."""

    exports: tuple[InlineExport, ...]
    offset: int = field(default=-1, kw_only=True, compare=False)


Instance: TypeAlias = Instantiate | InstanceExports


# ---------------------------------------------------------------------------
# Start, imports, exports, values (Binary.md §§"Start", "Import and Export", "Value")
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Start:
    """🪙 ``(start f (value arg)* (result (value))ʳ)``; ``results`` is ``r``."""

    func: int
    args: tuple[int, ...]
    results: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class Import:
    """``(import na et)``."""

    name: ExternName
    type: ExternType
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class Export:
    """``(export na (sort idx) et?)``; ``type`` is the optional ascribed externtype."""

    name: ExternName
    sort: Sort
    index: int
    type: ExternType | None
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class Value:
    """🪙 ``(value t v)``: the encoded ``val(t)`` is kept as the byte range
    ``(value_offset, value_length)``; decoding needs the type index space."""

    type: ValType
    value_offset: int
    value_length: int
    offset: int = field(default=-1, kw_only=True, compare=False)


# ---------------------------------------------------------------------------
# Modules, custom sections, names, components
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CoreModule:
    """A core module section: the module's bytes (from its ``\\0asm`` preamble)
    are ``input[offset : offset + length]``. The module is not decoded."""

    offset: int
    length: int

    def data(self, data: bytes | memoryview) -> memoryview:
        """The module's bytes, sliced (not copied) from the original input."""
        return memoryview(data)[self.offset : self.offset + self.length]


@dataclass(frozen=True, slots=True)
class CustomSection:
    """A custom section: its name and its payload's byte range (after the name).

    ``offset`` is the offset of the section id byte.
    """

    name: str
    data_offset: int
    data_length: int
    offset: int = field(default=-1, kw_only=True, compare=False)

    def data(self, data: bytes | memoryview) -> memoryview:
        """The payload bytes, sliced from the original input."""
        return memoryview(data)[self.data_offset : self.data_offset + self.data_length]


@dataclass(frozen=True, slots=True)
class NameAssoc:
    """A ``nameassoc``: index and name."""

    index: int
    name: str


@dataclass(frozen=True, slots=True)
class SortNames:
    """A ``sortnames`` subsection: names for one sort's index space."""

    sort: Sort
    names: tuple[NameAssoc, ...]


@dataclass(frozen=True, slots=True)
class ComponentNames:
    """The decoded ``component-name`` custom section (Binary.md §"Name Section").

    Best effort: decoding stops at the first malformed subsection, keeping what
    was read before it (``complete`` is then False).
    """

    component: str | None
    sorts: tuple[SortNames, ...]
    complete: bool = True


@dataclass(frozen=True, slots=True)
class SectionInfo:
    """Where a section sits: ``id`` (0..12), ``name`` (``"canon"``, ...), the
    offset of its id byte, its contents' ``content_offset``/``content_length``,
    and the slice ``definitions[first_definition:end_definition]`` it produced."""

    id: int
    name: str
    offset: int
    content_offset: int
    content_length: int
    first_definition: int
    end_definition: int


@dataclass(frozen=True, slots=True)
class Component:
    """A component (top-level or nested, section 4).

    ``offset``/``length`` give its byte range, preamble included. The
    top-level component has ``offset == 0`` and ``length == len(input)``.
    ``definitions`` is the flattened, ordered list of everything its sections
    define (custom sections excluded: see ``custom_sections``).
    """

    offset: int
    length: int
    definitions: tuple[Definition, ...]
    sections: tuple[SectionInfo, ...] = ()
    custom_sections: tuple[CustomSection, ...] = ()
    names: ComponentNames | None = None
    version: int = 0x0D
    layer: int = 0x01

    def data(self, data: bytes | memoryview) -> memoryview:
        """The component's bytes, sliced from the original input."""
        return memoryview(data)[self.offset : self.offset + self.length]


Definition: TypeAlias = (
    CoreModule
    | CoreInstantiate
    | CoreInstanceExports
    | CoreTypeDef
    | Component
    | Instantiate
    | InstanceExports
    | AliasExport
    | AliasCoreExport
    | AliasOuter
    | TypeDef
    | Canon
    | Start
    | Import
    | Export
    | Value
)
"""One item of a component, in section order (Binary.md §"Component Definitions")."""

__all__ = [
    "Alias",
    "AliasCoreExport",
    "AliasExport",
    "AliasOuter",
    "AsyncOpt",
    "BorrowType",
    "CallbackOpt",
    "Canon",
    "CanonBackpressureDec",
    "CanonBackpressureInc",
    "CanonBuiltin",
    "CanonContextGet",
    "CanonContextSet",
    "CanonErrorContextDebugMessage",
    "CanonErrorContextDrop",
    "CanonErrorContextNew",
    "CanonFutureCancelRead",
    "CanonFutureCancelWrite",
    "CanonFutureDropReadable",
    "CanonFutureDropWritable",
    "CanonFutureNew",
    "CanonFutureRead",
    "CanonFutureWrite",
    "CanonLift",
    "CanonLower",
    "CanonOpt",
    "CanonResourceDrop",
    "CanonResourceNew",
    "CanonResourceRep",
    "CanonStreamCancelRead",
    "CanonStreamCancelWrite",
    "CanonStreamDropReadable",
    "CanonStreamDropWritable",
    "CanonStreamNew",
    "CanonStreamRead",
    "CanonStreamWrite",
    "CanonSubtaskCancel",
    "CanonSubtaskDrop",
    "CanonTaskCancel",
    "CanonTaskReturn",
    "CanonThreadAvailableParallelism",
    "CanonThreadIndex",
    "CanonThreadNewIndirect",
    "CanonThreadResumeLater",
    "CanonThreadSpawnIndirect",
    "CanonThreadSpawnRef",
    "CanonThreadSuspend",
    "CanonThreadSuspendThenPromote",
    "CanonThreadSuspendThenResume",
    "CanonThreadYield",
    "CanonThreadYieldThenPromote",
    "CanonThreadYieldThenResume",
    "CanonWaitableJoin",
    "CanonWaitableSetDrop",
    "CanonWaitableSetNew",
    "CanonWaitableSetPoll",
    "CanonWaitableSetWait",
    "CaseType",
    "Component",
    "ComponentDecl",
    "ComponentExternType",
    "ComponentNames",
    "ComponentType",
    "CoreAbsHeapType",
    "CoreArrayType",
    "CoreCompType",
    "CoreContType",
    "CoreDefType",
    "CoreExportDecl",
    "CoreExternType",
    "CoreFieldType",
    "CoreFuncExternType",
    "CoreFuncType",
    "CoreGlobalType",
    "CoreImport",
    "CoreInlineExport",
    "CoreInstance",
    "CoreInstanceExports",
    "CoreInstantiate",
    "CoreInstantiateArg",
    "CoreMemoryType",
    "CoreModule",
    "CoreModuleDecl",
    "CoreModuleExternType",
    "CoreModuleType",
    "CoreNumType",
    "CoreOuterAlias",
    "CorePackedType",
    "CoreRecType",
    "CoreRefType",
    "CoreStorageType",
    "CoreStructType",
    "CoreSubType",
    "CoreTableType",
    "CoreTagType",
    "CoreTypeDef",
    "CoreValType",
    "CustomSection",
    "DefType",
    "DefValType",
    "Definition",
    "EnumType",
    "EqBound",
    "Export",
    "ExportDecl",
    "ExternName",
    "ExternType",
    "ExternalIdAttribute",
    "FlagsType",
    "FuncExternType",
    "FuncType",
    "FutureType",
    "ImplementsAttribute",
    "Import",
    "ImportDecl",
    "InlineExport",
    "Instance",
    "InstanceDecl",
    "InstanceExports",
    "InstanceExternType",
    "InstanceType",
    "Instantiate",
    "InstantiateArg",
    "LabelValType",
    "Limits",
    "ListType",
    "MapType",
    "MemoryOpt",
    "NameAssoc",
    "NameAttribute",
    "OptionType",
    "OwnType",
    "PostReturnOpt",
    "PrimValType",
    "ReallocOpt",
    "RecordType",
    "ResourceType",
    "ResultType",
    "SectionInfo",
    "Sort",
    "SortNames",
    "Start",
    "StreamType",
    "StringEncoding",
    "StringEncodingOpt",
    "SubResourceBound",
    "TupleType",
    "TypeBound",
    "TypeDef",
    "TypeExternType",
    "ValType",
    "Value",
    "ValueBound",
    "ValueEqBound",
    "ValueExternType",
    "VariantType",
    "VersionSuffixAttribute",
]
