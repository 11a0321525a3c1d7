"""AST nodes for sorts, core types, component types, extern names and aliases.

Part of :mod:`polyengine.binary.ast`, which is the public namespace; see its
docstring for the conventions (Binary.md §"Type Definitions", §"Alias Definitions").
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TypeAlias

# ---------------------------------------------------------------------------
# Sorts (Binary.md §"Instance Definitions": sort, core:sort)
# ---------------------------------------------------------------------------


class Sort(enum.Enum):
    """A ``sort`` or ``core:sort``. Values are ``(is_core, byte)``."""

    CORE_FUNC = (True, 0x00)
    CORE_TABLE = (True, 0x01)
    CORE_MEMORY = (True, 0x02)
    CORE_GLOBAL = (True, 0x03)
    CORE_TAG = (True, 0x04)
    CORE_TYPE = (True, 0x10)
    CORE_MODULE = (True, 0x11)
    CORE_INSTANCE = (True, 0x12)
    FUNC = (False, 0x01)
    VALUE = (False, 0x02)
    TYPE = (False, 0x03)
    COMPONENT = (False, 0x04)
    INSTANCE = (False, 0x05)

    # Members are singletons compared by identity; hashing them by identity too
    # keeps the many index-space lookups keyed by sort out of Python code.
    __hash__ = object.__hash__

    @property
    def is_core(self) -> bool:
        """True for the ``core:sort`` members."""
        return bool(self.value[0])

    @property
    def byte(self) -> int:
        """The sort's discriminant byte (the ``core:sort`` byte for core sorts)."""
        return int(self.value[1])

    @property
    def text(self) -> str:
        """The text-format spelling, e.g. ``"core func"`` or ``"instance"``."""
        return self.name.lower().replace("_", " ")


# ---------------------------------------------------------------------------
# Core types (core spec §Types, as embedded by Binary.md §"Type Definitions")
# ---------------------------------------------------------------------------


class CoreNumType(enum.Enum):
    """Core number and vector types; values are the type bytes."""

    I32 = 0x7F
    I64 = 0x7E
    F32 = 0x7D
    F64 = 0x7C
    V128 = 0x7B


class CoreAbsHeapType(enum.Enum):
    """Abstract core heap types (function references, GC, exceptions, stack switching)."""

    NOEXN = 0x74
    NOFUNC = 0x73
    NOEXTERN = 0x72
    NONE = 0x71
    FUNC = 0x70
    EXTERN = 0x6F
    ANY = 0x6E
    EQ = 0x6D
    I31 = 0x6C
    STRUCT = 0x6B
    ARRAY = 0x6A
    EXN = 0x69
    CONT = 0x68
    NOCONT = 0x75


@dataclass(frozen=True, slots=True)
class CoreRefType:
    """A core reference type ``(ref null? ht)``.

    ``heap`` is an abstract heap type or a core type index. The short forms
    (``funcref`` = ``0x70``) are read as ``nullable=True``.
    """

    nullable: bool
    heap: CoreAbsHeapType | int
    shared: bool = False


CoreValType: TypeAlias = CoreNumType | CoreRefType
"""A core ``valtype``."""


class CorePackedType(enum.Enum):
    """Packed storage types of GC struct/array fields."""

    I8 = 0x78
    I16 = 0x77


CoreStorageType: TypeAlias = CoreValType | CorePackedType


@dataclass(frozen=True, slots=True)
class CoreFieldType:
    """A GC ``fieldtype``: storage type and mutability."""

    storage: CoreStorageType
    mutable: bool


@dataclass(frozen=True, slots=True)
class CoreFuncType:
    """A core ``functype`` (``0x60``)."""

    params: tuple[CoreValType, ...]
    results: tuple[CoreValType, ...]
    shared: bool = False


@dataclass(frozen=True, slots=True)
class CoreStructType:
    """A GC ``structtype`` (``0x5f``)."""

    fields: tuple[CoreFieldType, ...]
    shared: bool = False


@dataclass(frozen=True, slots=True)
class CoreArrayType:
    """A GC ``arraytype`` (``0x5e``)."""

    element: CoreFieldType
    shared: bool = False


@dataclass(frozen=True, slots=True)
class CoreContType:
    """A stack-switching ``conttype`` (``0x5d``) over a function type index."""

    type_index: int
    shared: bool = False


CoreCompType: TypeAlias = CoreFuncType | CoreStructType | CoreArrayType | CoreContType


@dataclass(frozen=True, slots=True)
class CoreSubType:
    """A core ``subtype``. A bare ``comptype`` reads as ``final=True, supertypes=()``.

    ``prefixed`` records the component-level ``0x00 0x50`` spelling of a
    non-final subtype (Binary.md §"Type Definitions", the 0x50 ambiguity).
    """

    final: bool
    supertypes: tuple[int, ...]
    comptype: CoreCompType
    prefixed: bool = False


@dataclass(frozen=True, slots=True)
class CoreRecType:
    """An explicit recursion group ``rec`` (``0x4e``)."""

    subtypes: tuple[CoreSubType, ...]


@dataclass(frozen=True, slots=True)
class Limits:
    """Core table/memory limits.

    ``is64`` is the memory64/table64 index type, ``shared`` the threads flag,
    ``page_size_log2`` the custom-page-sizes immediate (``None`` when absent).
    """

    min: int
    max: int | None
    shared: bool = False
    is64: bool = False
    page_size_log2: int | None = None


@dataclass(frozen=True, slots=True)
class CoreFuncExternType:
    """``func`` import/export descriptor: a core type index."""

    type_index: int


@dataclass(frozen=True, slots=True)
class CoreTableType:
    """``table`` descriptor: element reference type and limits."""

    element: CoreRefType
    limits: Limits


@dataclass(frozen=True, slots=True)
class CoreMemoryType:
    """``memory`` descriptor."""

    limits: Limits


@dataclass(frozen=True, slots=True)
class CoreGlobalType:
    """``global`` descriptor."""

    valtype: CoreValType
    mutable: bool
    shared: bool = False


@dataclass(frozen=True, slots=True)
class CoreTagType:
    """``tag`` descriptor (exception handling): attribute byte 0 and a type index."""

    type_index: int


CoreExternType: TypeAlias = (
    CoreFuncExternType | CoreTableType | CoreMemoryType | CoreGlobalType | CoreTagType
)


@dataclass(frozen=True, slots=True)
class CoreImport:
    """``core:import`` inside a core module type: ``(import "module" "name" desc)``."""

    module: str
    name: str
    type: CoreExternType
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CoreExportDecl:
    """``core:exportdecl`` inside a core module type."""

    name: str
    type: CoreExternType
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CoreOuterAlias:
    """``core:alias`` inside a core module type: ``(alias outer ct idx (type))``."""

    count: int
    index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class CoreModuleType:
    """``core:moduletype`` (``0x50``) with its declarations, in order."""

    declarations: tuple[CoreModuleDecl, ...]


CoreDefType: TypeAlias = CoreRecType | CoreSubType | CoreModuleType
"""A ``core:deftype``."""


@dataclass(frozen=True, slots=True)
class CoreTypeDef:
    """A ``core:type``: an item of the core type section, or a declarator
    (``0x01`` in a module type, ``0x00`` in a component/instance type)."""

    type: CoreDefType
    offset: int = field(default=-1, kw_only=True, compare=False)


CoreModuleDecl: TypeAlias = CoreImport | CoreTypeDef | CoreOuterAlias | CoreExportDecl


# ---------------------------------------------------------------------------
# Component value types (Binary.md §"Type Definitions")
# ---------------------------------------------------------------------------


class PrimValType(enum.Enum):
    """``primvaltype``; values are the type bytes."""

    BOOL = 0x7F
    S8 = 0x7E
    U8 = 0x7D
    S16 = 0x7C
    U16 = 0x7B
    S32 = 0x7A
    U32 = 0x79
    S64 = 0x78
    U64 = 0x77
    F32 = 0x76
    F64 = 0x75
    CHAR = 0x74
    STRING = 0x73
    ERROR_CONTEXT = 0x64


ValType: TypeAlias = PrimValType | int
"""A ``valtype``: a primitive, or (``int``) an index into the type index space."""


@dataclass(frozen=True, slots=True)
class LabelValType:
    """``labelvaltype``: a record field or function parameter."""

    label: str
    type: ValType


@dataclass(frozen=True, slots=True)
class RecordType:
    """``(record (field l t)*)``, ``0x72``. May be empty here (validation rejects it)."""

    fields: tuple[LabelValType, ...]


@dataclass(frozen=True, slots=True)
class CaseType:
    """A variant ``case``: label and optional payload."""

    label: str
    type: ValType | None


@dataclass(frozen=True, slots=True)
class VariantType:
    """``(variant case*)``, ``0x71``."""

    cases: tuple[CaseType, ...]


@dataclass(frozen=True, slots=True)
class ListType:
    """``(list t)`` (``0x70``), or 🔧 the fixed-length ``(list t len)`` (``0x67``)."""

    element: ValType
    length: int | None = None


@dataclass(frozen=True, slots=True)
class TupleType:
    """``(tuple t*)``, ``0x6f``."""

    types: tuple[ValType, ...]


@dataclass(frozen=True, slots=True)
class FlagsType:
    """``(flags l*)``, ``0x6e``."""

    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EnumType:
    """``(enum l*)``, ``0x6d``."""

    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OptionType:
    """``(option t)``, ``0x6b``."""

    type: ValType


@dataclass(frozen=True, slots=True)
class ResultType:
    """``(result t? (error u)?)``, ``0x6a``."""

    ok: ValType | None
    error: ValType | None


@dataclass(frozen=True, slots=True)
class OwnType:
    """``(own i)``, ``0x69``: ``type_index`` should name a resource type."""

    type_index: int


@dataclass(frozen=True, slots=True)
class BorrowType:
    """``(borrow i)``, ``0x68``."""

    type_index: int


@dataclass(frozen=True, slots=True)
class StreamType:
    """🔀 ``(stream t?)``, ``0x66``."""

    element: ValType | None


@dataclass(frozen=True, slots=True)
class FutureType:
    """🔀 ``(future t?)``, ``0x65``."""

    element: ValType | None


@dataclass(frozen=True, slots=True)
class MapType:
    """🗺️ ``(map k v)``, ``0x63``."""

    key: ValType
    value: ValType


DefValType: TypeAlias = (
    PrimValType
    | RecordType
    | VariantType
    | ListType
    | TupleType
    | FlagsType
    | EnumType
    | OptionType
    | ResultType
    | OwnType
    | BorrowType
    | StreamType
    | FutureType
    | MapType
)
"""A ``defvaltype``."""


@dataclass(frozen=True, slots=True)
class FuncType:
    """``functype``: ``0x40`` (sync) or ``0x43`` (``func async``).

    ``result`` is ``None`` for the empty ``resultlist`` (``0x01 0x00``).
    """

    params: tuple[LabelValType, ...]
    result: ValType | None
    is_async: bool = False


@dataclass(frozen=True, slots=True)
class ResourceType:
    """``(resource (rep t) (dtor f)?)``, ``0x3f``; ``dtor`` is a core func index."""

    rep: CoreValType
    dtor: int | None


@dataclass(frozen=True, slots=True)
class ComponentType:
    """``componenttype`` (``0x41``) with its declarators, in order."""

    declarations: tuple[ComponentDecl, ...]


@dataclass(frozen=True, slots=True)
class InstanceType:
    """``instancetype`` (``0x42``) with its declarators, in order."""

    declarations: tuple[InstanceDecl, ...]


DefType: TypeAlias = DefValType | FuncType | ComponentType | InstanceType | ResourceType
"""A ``deftype``."""


@dataclass(frozen=True, slots=True)
class TypeDef:
    """A ``type``: an item of the type section or a ``0x01`` declarator."""

    type: DefType
    offset: int = field(default=-1, kw_only=True, compare=False)


# ---------------------------------------------------------------------------
# Extern names and types (Binary.md §"Import and Export Definitions")
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImplementsAttribute:
    """🏷️ ``(implements "interfacename")``, attribute ``0x00``."""

    interface: str


@dataclass(frozen=True, slots=True)
class VersionSuffixAttribute:
    """🔗 ``(versionsuffix "vs")``, attribute ``0x01``."""

    suffix: str


@dataclass(frozen=True, slots=True)
class ExternalIdAttribute:
    """🏷️ ``(external-id n)``, attribute ``0x02``."""

    id: str


NameAttribute: TypeAlias = ImplementsAttribute | VersionSuffixAttribute | ExternalIdAttribute


@dataclass(frozen=True, slots=True)
class ExternName:
    """``nameattributes``: an ``externname`` and its attributes.

    ``name`` is the UTF-8-decoded name exactly as written (its syntax, kebab
    case, ``[method]`` annotations, ``@version`` and so on, is checked by
    validation). ``form`` is the leading byte (``0x00``/``0x01`` plain,
    ``0x02`` with attributes). ``attributes`` keeps duplicates as written.
    ``offset`` is the offset of the leading byte.
    """

    name: str
    form: int = 0
    attributes: tuple[NameAttribute, ...] = ()
    offset: int = field(default=-1, kw_only=True, compare=False)

    @property
    def implements(self) -> str | None:
        """The first ``implements`` attribute, if any."""
        for a in self.attributes:
            if isinstance(a, ImplementsAttribute):
                return a.interface
        return None

    @property
    def version_suffix(self) -> str | None:
        """The first ``versionsuffix`` attribute, if any."""
        for a in self.attributes:
            if isinstance(a, VersionSuffixAttribute):
                return a.suffix
        return None

    @property
    def external_id(self) -> str | None:
        """The first ``external-id`` attribute, if any."""
        for a in self.attributes:
            if isinstance(a, ExternalIdAttribute):
                return a.id
        return None


@dataclass(frozen=True, slots=True)
class EqBound:
    """``typebound`` ``(eq i)``."""

    type_index: int


@dataclass(frozen=True, slots=True)
class SubResourceBound:
    """``typebound`` ``(sub resource)``."""


TypeBound: TypeAlias = EqBound | SubResourceBound


@dataclass(frozen=True, slots=True)
class ValueEqBound:
    """🪙 ``valuebound`` ``(eq i)``: a value index."""

    value_index: int


ValueBound: TypeAlias = ValueEqBound | PrimValType | int
"""🪙 ``valuebound``: ``(eq i)`` or a ``valtype``."""


@dataclass(frozen=True, slots=True)
class CoreModuleExternType:
    """``externtype`` ``(core module (type i))``: a core type index."""

    type_index: int


@dataclass(frozen=True, slots=True)
class FuncExternType:
    """``externtype`` ``(func (type i))``."""

    type_index: int


@dataclass(frozen=True, slots=True)
class ValueExternType:
    """🪙 ``externtype`` ``(value b)``."""

    bound: ValueBound


@dataclass(frozen=True, slots=True)
class TypeExternType:
    """``externtype`` ``(type b)``."""

    bound: TypeBound


@dataclass(frozen=True, slots=True)
class ComponentExternType:
    """``externtype`` ``(component (type i))``."""

    type_index: int


@dataclass(frozen=True, slots=True)
class InstanceExternType:
    """``externtype`` ``(instance (type i))``."""

    type_index: int


ExternType: TypeAlias = (
    CoreModuleExternType
    | FuncExternType
    | ValueExternType
    | TypeExternType
    | ComponentExternType
    | InstanceExternType
)


@dataclass(frozen=True, slots=True)
class ImportDecl:
    """``importdecl``: a ``0x03`` component-type declarator."""

    name: ExternName
    type: ExternType
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class ExportDecl:
    """``exportdecl``: a ``0x04`` component/instance-type declarator."""

    name: ExternName
    type: ExternType
    offset: int = field(default=-1, kw_only=True, compare=False)


# ---------------------------------------------------------------------------
# Aliases (Binary.md §"Alias Definitions")
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AliasExport:
    """``(alias export i "n" (sort))``: export ``name`` of component instance ``instance``."""

    sort: Sort
    instance: int
    name: str
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class AliasCoreExport:
    """``(alias core export i "n" (core sort))``: ``sort`` is always a core sort."""

    sort: Sort
    instance: int
    name: str
    offset: int = field(default=-1, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True)
class AliasOuter:
    """``(alias outer ct idx (sort))``; ``sort`` is core type/module, type or component."""

    sort: Sort
    count: int
    index: int
    offset: int = field(default=-1, kw_only=True, compare=False)


Alias: TypeAlias = AliasExport | AliasCoreExport | AliasOuter


InstanceDecl: TypeAlias = (
    CoreTypeDef | TypeDef | AliasExport | AliasCoreExport | AliasOuter | ExportDecl
)
"""An ``instancedecl``."""

ComponentDecl: TypeAlias = InstanceDecl | ImportDecl
"""A ``componentdecl``."""
