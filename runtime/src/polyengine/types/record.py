"""Frozen, slotted dataclasses made without generated source: the type model's and plan's classes.

``@dataclass(frozen=True, slots=True)`` writes each method (``__init__``,
``__eq__``, ``__hash__``, ``__repr__``, ``__setattr__``, ``__delattr__``,
``__getstate__``, ``__setstate__``) as source and compiles it, about a
millisecond a class; the type model and the plan define some sixty of them,
and every process that runs a component imports both. :func:`frozen_dataclass`
makes the same classes from shared closures instead, with the metadata of a
dataclass (``__dataclass_fields__``, ``__dataclass_params__``,
``__match_args__``), so :func:`dataclasses.fields`, :func:`dataclasses.replace`,
:func:`dataclasses.is_dataclass`, pattern matching and pickling behave as they
do for the standard decorator. Modules use it under the standard decorator's
name at run time only (type checkers see :func:`dataclasses.dataclass`)::

    if TYPE_CHECKING:
        from dataclasses import dataclass
    else:
        from polyengine.types.record import frozen_dataclass as dataclass

Supported: ``frozen=True, slots=True``, fields with plain defaults, single
inheritance from classes made the same way. Anything else is refused.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["frozen_dataclass"]

T = TypeVar("T", bound=type)

_setattr = object.__setattr__
_MISSING = dataclasses.MISSING


@dataclasses.dataclass(frozen=True, slots=True)
class _Probe:
    """A standard frozen slotted dataclass: its parameters and field marker are copied."""

    x: int = 0


_PARAMS = _Probe.__dataclass_params__  # type: ignore[attr-defined]
_FIELD_TYPE = dataclasses.fields(_Probe)[0]._field_type  # type: ignore[attr-defined]


def frozen_dataclass(
    cls: type | None = None, /, *, frozen: bool = False, slots: bool = False
) -> Any:
    """``@dataclass(frozen=True, slots=True)`` without compiling generated methods."""
    if not (frozen and slots):
        raise TypeError("frozen_dataclass supports frozen=True, slots=True only")
    if cls is None:
        return _make
    return _make(cls)


def _make(cls: T) -> T:
    own = inspect.get_annotations(cls)
    inherited: dict[str, dataclasses.Field[Any]] = {}
    for base in reversed(cls.__mro__[1:]):
        base_fields = base.__dict__.get("__dataclass_fields__")
        if base_fields is not None:
            inherited.update(base_fields)
    if len(cls.__bases__) != 1 or any(
        "__dataclass_fields__" not in b.__dict__ and b is not object for b in cls.__mro__[1:]
    ):
        raise TypeError(f"{cls.__qualname__}: frozen_dataclass needs its bases made the same way")
    fields = dict(inherited)
    namespace = {
        k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__", *own)
    }
    for name, annotation in own.items():
        if "ClassVar" in str(annotation) or "InitVar" in str(annotation):
            raise TypeError(f"{cls.__qualname__}.{name}: ClassVar and InitVar are not supported")
        default = cls.__dict__.get(name, _MISSING)
        if isinstance(default, dataclasses.Field):
            raise TypeError(f"{cls.__qualname__}.{name}: field() is not supported")
        f: dataclasses.Field[Any] = dataclasses.field(default=default)
        f.name = name
        f.type = annotation
        f._field_type = _FIELD_TYPE  # type: ignore[attr-defined]
        fields.pop(name, None)
        fields[name] = f
    names = tuple(fields)
    defaults = {n: f.default for n, f in fields.items() if f.default is not _MISSING}
    seen_default = False
    for n in names:
        if n in defaults:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {n!r} follows default argument")
    root = not inherited
    # a root class also holds its hash once computed (the fields never change)
    namespace["__slots__"] = (*own, _HASH_SLOT) if root else tuple(own)
    namespace["__dataclass_fields__"] = fields
    namespace["__dataclass_params__"] = _PARAMS
    namespace["__match_args__"] = names
    methods: dict[str, Any] = {
        "__init__": _init(cls.__qualname__, names, defaults),
        "__repr__": _repr(names),
        "__eq__": _eq(names, cls.__module__ in _REMEMBERED),
        "__hash__": _hash(names),
        "__setattr__": _frozen_setattr,
        "__delattr__": _frozen_delattr,
        "__getstate__": _getstate(names),
    }
    for name, method in methods.items():
        if name not in cls.__dict__:  # as the standard decorator: the class's own wins
            namespace[name] = method
    made = type(cls)(cls.__name__, cls.__bases__, namespace)
    made.__qualname__ = cls.__qualname__
    if "__setstate__" not in cls.__dict__:
        # the slots' own setters: unpickling a plan sets each field past __setattr__
        made.__setstate__ = _setstate(  # type: ignore[attr-defined]
            cls.__qualname__, tuple(getattr(made, n).__set__ for n in names)
        )
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__getstate__", "__setstate__"):
        if name not in cls.__dict__:
            getattr(made, name).__qualname__ = f"{cls.__qualname__}.{name}"
    return made


def _init(qualname: str, names: tuple[str, ...], defaults: dict[str, Any]) -> Callable[..., None]:
    n = len(names)

    def init_method(self: Any, *args: Any, **kwargs: Any) -> None:
        given = len(args)
        if given > n:
            raise TypeError(
                f"{qualname}.__init__() takes {n + 1} positional arguments "
                f"but {given + 1} were given"
            )
        for name, value in zip(names, args, strict=False):
            _setattr(self, name, value)
        if given == n and not kwargs:
            return
        for name in names[given:]:
            if name in kwargs:
                _setattr(self, name, kwargs.pop(name))
            elif name in defaults:
                _setattr(self, name, defaults[name])
            else:
                raise TypeError(f"{qualname}.__init__() missing required argument: {name!r}")
        if kwargs:
            bad = next(iter(kwargs))
            if bad in names:
                raise TypeError(f"{qualname}.__init__() got multiple values for argument {bad!r}")
            raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {bad!r}")

    init_method.__name__ = "__init__"
    return init_method


def _values(self: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple([getattr(self, name) for name in names])


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    def repr_method(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({inner})"

    repr_method.__name__ = "__repr__"
    return repr_method


def _eq(names: tuple[str, ...], remember: bool) -> Callable[[Any, object], Any]:
    """``__eq__``; with ``remember`` (the type model's small records) equal pairs
    are remembered by identity."""

    def plain_eq(self: Any, other: object) -> Any:
        if other is self:
            return True
        if other.__class__ is self.__class__:
            return _values(self, names) == _values(other, names)
        return NotImplemented

    def eq_method(self: Any, other: object) -> Any:
        if other is self:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        # Two types of one tree compared at call time (a stream's element type
        # against the one a built-in names) are compared again on every call: the
        # field walk runs once per pair, the answer is remembered by identity.
        key = (id(self), id(other))
        if key in _EQUAL:
            return True
        try:
            if hash(self) != hash(other):
                return False  # equal records hash alike (both are of their fields)
        except TypeError:  # a field that cannot be hashed may change: never remembered
            return _values(self, names) == _values(other, names)
        if not _values(self, names) == _values(other, names):  # noqa: SIM201 (as ==)
            return False
        if len(_EQUAL) >= _EQUAL_MAX:
            _EQUAL.clear()
        _EQUAL[key] = (self, other)  # held, so neither id is reused while remembered
        return True

    chosen = eq_method if remember else plain_eq
    chosen.__name__ = "__eq__"
    return chosen


#: the modules whose records' equal pairs are remembered (the type model: small
#: trees compared at call time; a plan's records may be large, and are not)
_REMEMBERED = frozenset({"polyengine.types.model"})
#: pairs of distinct records found equal, by their ids (hashable fields only: a
#: record's fields never change, nor do those of the hashable values they hold)
_EQUAL: dict[tuple[int, int], tuple[object, object]] = {}
#: how many pairs :data:`_EQUAL` remembers before it starts over
_EQUAL_MAX = 4096

#: the slot a root class keeps its instances' hash in (not a field)
_HASH_SLOT = "_record_hash"


def _hash(names: tuple[str, ...]) -> Callable[[Any], int]:
    def hash_method(self: Any) -> int:
        # computed once: a type or plan value is hashed on every cache look-up keyed by
        # it (layout, flattening), and its hash is that of its whole nested tree
        try:
            cached: int = self._record_hash
        except AttributeError:
            cached = hash(_values(self, names))
            _setattr(self, _HASH_SLOT, cached)
        return cached

    hash_method.__name__ = "__hash__"
    return hash_method


def _frozen_setattr(self: Any, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(names: tuple[str, ...]) -> Callable[[Any], list[Any]]:
    def getstate_method(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]

    getstate_method.__name__ = "__getstate__"
    return getstate_method


def _setstate(
    qualname: str, setters: tuple[Callable[[Any, Any], None], ...]
) -> Callable[[Any, list[Any]], None]:
    n = len(setters)

    def setstate_method(self: Any, state: list[Any]) -> None:
        if len(state) != n:
            raise TypeError(f"{qualname}: a state of {len(state)} fields, expected {n}")
        for setter, value in zip(setters, state, strict=False):  # length checked above
            setter(self, value)

    setstate_method.__name__ = "__setstate__"
    return setstate_method
