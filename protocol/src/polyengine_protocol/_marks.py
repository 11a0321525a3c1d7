"""Per-declaration marks on host imports: ``suspending``, ``defer_cancel``, ``abortable``.

embedder-api.md §"Functions and async" (A1, A2, A23, A24) and
python-mapping.md §4. A mark is a brand carried by the callable itself, as
the attribute ``__polyengine_brand__`` (one key or a frozenset of keys), so
several marks sit on one callable and a hand-rolled function carrying the
key is marked exactly like a decorated one.

- ``suspending``: a sync-typed import may return an awaitable and park the
  calling wasm frame until it settles (A1).
- ``defer_cancel``: a guest cancellation of the in-flight import is accepted
  and ignored; the call runs to completion (A23).
- ``abortable``: on a guest cancellation that discards the call, the
  runtime cancels the asyncio task running the host coroutine (A24 in
  Python's own cancellation vocabulary).

Two spellings, one brand: the direct call (``{"now": suspending(clock.now)}``)
and the decorator on methods, staticmethods and classmethods (in either
order with ``@staticmethod``/``@classmethod``). The class is the authority
for methods (A2): the bound method ``obj.m`` is marked exactly when the class
attribute ``m`` is, and an instance attribute overriding ``m`` changes the
body that runs, never the mark, so a runtime reads the mark from
``inspect.getattr_static(type(obj), name)``. Constructors are never
markable (they are synchronous by contract), nor are non-method class
members such as properties; both are refused while the class body runs.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

from ._brands import ABORTABLE, BRAND_ATTRIBUTE, DEFER_CANCEL, SUSPENDING

__all__ = [
    "abortable",
    "defer_cancel",
    "is_abortable",
    "is_defer_cancel",
    "is_suspending",
    "marks_of",
    "suspending",
]

_F = TypeVar("_F")

_MARK_NAMES: Final[dict[str, str]] = {
    SUSPENDING: "suspending",
    DEFER_CANCEL: "defer_cancel",
    ABORTABLE: "abortable",
}
_CONSTRUCTORS: Final = frozenset({"__init__", "__new__"})
#: the mark keys (what :func:`marks_of` keeps of a callable's brand)
_MARK_KEYS: Final = frozenset(_MARK_NAMES)


def _carried(obj: object) -> frozenset[str]:
    try:
        carried = getattr(obj, BRAND_ATTRIBUTE, None)
    except Exception:  # a hostile __getattr__: an unreadable mark is no mark
        return frozenset()
    if isinstance(carried, str):
        return frozenset((carried,))
    if type(carried) is frozenset and all(type(k) is str for k in carried):
        return carried  # what the mark decorators carry, as it is
    if isinstance(carried, tuple | frozenset | set):
        return frozenset(k for k in carried if isinstance(k, str))
    return frozenset()


def _names(marks: frozenset[str]) -> str:
    return ", ".join(sorted(_MARK_NAMES.get(m, m) for m in marks))


class _Marked:
    """A callable carrying marks, binding like the callable it wraps.

    ``kind`` says how it binds as a class attribute: ``"function"`` binds to
    the instance (a method), ``"static"`` never binds, ``"class"`` binds to
    the class, ``"callable"`` (any other callable object) never binds.
    """

    __wrapped__: Callable[..., Any]
    __polyengine_brand__: frozenset[str]

    def __init__(self, target: Callable[..., Any], kind: str, marks: frozenset[str]) -> None:
        functools.update_wrapper(self, target)
        self._kind = kind
        self.__polyengine_brand__ = marks

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if self._kind == "function" and obj is not None:
            return types.MethodType(self, obj)
        if self._kind == "class":
            return types.MethodType(self, owner if owner is not None else type(obj))
        return self

    def __set_name__(self, owner: type, name: str) -> None:
        if name in _CONSTRUCTORS:
            raise TypeError(
                f"{_names(self.__polyengine_brand__)} cannot mark "
                f"{owner.__qualname__}.{name}: constructors are never markable "
                "(a constructor is synchronous by contract)"
            )

    # Function-like attributes, so inspect.iscoroutinefunction and
    # inspect.signature see the wrapped function through the mark.
    @property
    def __code__(self) -> types.CodeType:
        return self.__wrapped__.__code__

    @property
    def __defaults__(self) -> tuple[Any, ...] | None:
        return self.__wrapped__.__defaults__

    @property
    def __kwdefaults__(self) -> dict[str, Any] | None:
        return self.__wrapped__.__kwdefaults__

    def __reduce__(self) -> str | tuple[Any, ...]:
        # A decorated module-level function or method pickles by reference,
        # like the function it replaces; anything else by value.
        qualname = self.__dict__.get("__qualname__")
        if isinstance(qualname, str):
            found: object = sys.modules.get(self.__dict__.get("__module__", ""))
            for part in qualname.split("."):
                found = getattr(found, part, None)
            if found is self:
                return qualname
        return (_Marked, (self.__wrapped__, self._kind, self.__polyengine_brand__))

    def __repr__(self) -> str:
        return f"<{_names(self.__polyengine_brand__)} {self.__wrapped__!r}>"


def _in_class_body(func: Callable[..., Any]) -> bool:
    """Whether a function's qualified name places it directly in a class body."""
    parts = func.__qualname__.split(".")
    return len(parts) >= 2 and parts[-2] != "<locals>"


def _mark(target: object, key: str) -> Any:
    name = _MARK_NAMES[key]
    if isinstance(target, property | functools.cached_property):
        raise TypeError(
            f"{name} cannot mark a {type(target).__name__}: only functions, methods, "
            "staticmethods and classmethods are markable"
        )
    kind = "function"
    inner: object = target
    if isinstance(target, staticmethod):
        kind, inner = "static", target.__func__
    elif isinstance(target, classmethod):
        kind, inner = "class", target.__func__
    if isinstance(inner, type):
        raise TypeError(
            f"{name} cannot mark the class {inner.__qualname__}: constructors are never "
            "markable; mark its methods instead"
        )
    if not callable(inner):
        raise TypeError(f"{name} marks callables, not {type(inner).__name__} objects")
    func: Callable[..., Any] = inner
    marks = frozenset({key})
    if isinstance(func, _Marked):
        marks |= func.__polyengine_brand__
        if kind == "function":
            kind = func._kind
        func = func.__wrapped__
    else:
        marks |= _carried(func) & frozenset(_MARK_NAMES)
        if kind == "function" and not inspect.isfunction(func):
            kind = "callable"
    if inspect.isfunction(func) and func.__name__ in _CONSTRUCTORS and _in_class_body(func):
        raise TypeError(
            f"{name} cannot mark {func.__qualname__}: constructors are never markable "
            "(a constructor is synchronous by contract)"
        )
    return _Marked(func, kind, marks)


def suspending(f: _F) -> _F:
    """Mark a sync-typed host import as allowed to park its caller (A1, A2).

    The marked import may return an awaitable; the calling wasm frame parks
    until it settles. Returns a new callable; ``f`` itself is untouched.
    """
    return cast(_F, _mark(f, SUSPENDING))


def defer_cancel(f: _F) -> _F:
    """Mark an async host import as running to completion when the guest cancels (A23)."""
    return cast(_F, _mark(f, DEFER_CANCEL))


def abortable(f: _F) -> _F:
    """Mark an async host import as cancellable: a discarded call's task is cancelled (A24)."""
    return cast(_F, _mark(f, ABORTABLE))


def marks_of(f: object) -> frozenset[str]:
    """The mark keys a callable carries.

    Accepts functions, marked callables, bound methods (read from the
    function the class provides), and ``staticmethod``/``classmethod``
    objects (read from the function they wrap).
    """
    if isinstance(f, staticmethod | classmethod):
        outer = _carried(f)
        f = f.__func__
        return outer | marks_of(f)
    if type(f) is types.MethodType:  # inspect.ismethod (the type has no subclasses)
        f = f.__func__
    return _carried(f) & _MARK_KEYS


def is_suspending(f: object) -> bool:
    """Whether ``f`` carries the ``polyengine.suspending/1`` mark."""
    return SUSPENDING in marks_of(f)


def is_defer_cancel(f: object) -> bool:
    """Whether ``f`` carries the ``polyengine.deferCancel/1`` mark."""
    return DEFER_CANCEL in marks_of(f)


def is_abortable(f: object) -> bool:
    """Whether ``f`` carries the ``polyengine.abortable/1`` mark."""
    return ABORTABLE in marks_of(f)
