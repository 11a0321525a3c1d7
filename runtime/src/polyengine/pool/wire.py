"""What crosses between a pool and its workers, and how (python-mapping.md §8).

Three things live here, shared by the worker pool and the Ray deployments:

* frames: a four-byte big-endian length, then a ``marshal`` dump of plain
  data (tuples, lists, dicts, str, int, float, bool, bytes, None). Both ends
  run the same interpreter, which is what ``marshal`` needs; nothing but
  plain data is ever sent, so no code crosses;
* the codec of calls: arguments and results cross as
  ``polyengine_protocol.to_cloneable`` data, errors (``ComponentException``,
  ``Trap`` and the rest of the taxonomy, with payloads and cause chains) as
  its envelopes; realm-local values are refused at the sender, naming the
  argument and the path to the leaf, with the realm-local pill's own
  message;
* references to the imports factory: a factory is named, never pickled
  (providers hold sockets, files and closures), as ``"module:qualname"``,
  ``"path/to/file.py:qualname"`` or an importable callable.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import contextlib
import importlib
import importlib.util
import inspect
import marshal
import os
import pickle
import runpy
import socket
import struct
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import polyengine_protocol as protocol
from polyengine_protocol import (
    ClonedError,
    InvalidHandleError,
    brands_of,
    from_cloneable,
    to_cloneable,
)

__all__ = [
    "FactoryRef",
    "ImportsSpec",
    "decode_error",
    "encode_args",
    "encode_error",
    "encode_result",
    "factory_ref",
    "load_factory",
    "make_imports",
    "read_frame",
    "recv_frame_blocking",
    "write_frame",
]

_HEADER: Final = struct.Struct(">I")
#: the largest frame either end accepts (a component binary is the largest thing sent)
MAX_FRAME: Final = (1 << 32) - 1

#: ``(module, qualname, file)``: where a worker finds the imports factory
FactoryRef = tuple[str, str, str | None]
#: an imports factory as the user names it
ImportsSpec = str | Callable[..., Any] | None


# -- frames -----------------------------------------------------------------------------


def dump_frame(message: object) -> bytes:
    """``message`` (plain data) as one frame."""
    payload = marshal.dumps(message)  # type: ignore[arg-type]
    return _HEADER.pack(len(payload)) + payload


def write_frame(writer: asyncio.StreamWriter, message: object) -> None:
    """Queue ``message`` on ``writer`` (the caller drains when it must)."""
    writer.write(dump_frame(message))


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """The next message, or ``None`` at the end of the stream (the peer is gone)."""
    try:
        head = await reader.readexactly(_HEADER.size)
        (size,) = _HEADER.unpack(head)
        payload = await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return marshal.loads(payload)


def _recv_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def recv_frame_blocking(sock: socket.socket) -> Any:
    """The next message from a blocking socket, or ``None`` at its end."""
    head = _recv_exactly(sock, _HEADER.size)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    payload = _recv_exactly(sock, size)
    return None if payload is None else marshal.loads(payload)


def send_frame_blocking(sock: socket.socket, message: object) -> None:
    sock.sendall(dump_frame(message))


# -- values -----------------------------------------------------------------------------

_REALM_LOCAL_KINDS: Final = (
    (protocol.STREAM, "stream"),
    (protocol.STREAM_WRITER, "stream writer"),
    (protocol.FUTURE, "future"),
    (protocol.POLLABLE, "pollable"),
    (protocol.RESOURCE_STATE, "resource"),
)


def _kind_of(leaf: object) -> str:
    brands = brands_of(leaf)
    for brand, kind in _REALM_LOCAL_KINDS:
        if brand in brands:
            return kind
    return "realm-local value"


def _pill_message(leaf: object) -> str:
    """What the realm-local pill says when ``leaf`` is pickled (its refusal, verbatim)."""
    try:
        pickle.dumps(leaf)
    except TypeError as exc:
        return str(exc)
    except Exception:  # a leaf whose pickling fails otherwise: say what it is
        pass
    name = type(leaf).__qualname__
    return f"{name} is realm-local (its state lives in this process)"


def _where(path: str) -> str:
    return f" at {path}" if path else ""


def encode_args(label: str, args: tuple[object, ...]) -> list[object]:
    """``args`` as cloneable data, or the refusal naming the argument and the path.

    A realm-local leaf (a stream, stream writer, future, resource wrapper or
    anything pilled) raises ``InvalidHandleError`` with the pill's message;
    anything else that is not WIT-shaped data raises the ``TypeError`` or
    ``ValueError`` of ``to_cloneable``, prefixed with the call and the
    argument.
    """
    out: list[object] = []
    for index, arg in enumerate(args):

        def refuse(leaf: object, path: str, index: int = index) -> object:
            raise InvalidHandleError(
                f"{label}: argument {index}{_where(path)} is a {_kind_of(leaf)}, which "
                f"cannot cross to a worker process: {_pill_message(leaf)}"
            )

        try:
            out.append(to_cloneable(arg, replace=refuse))
        except InvalidHandleError:
            raise
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{label}: argument {index}: {exc}") from None
    return out


def encode_result(label: str, value: object) -> object:
    """A result as cloneable data; realm-local leaves are dropped here and refused.

    The refusal names the path inside the result. Each refused handle is
    dropped in this process (a guest resource's destructor runs, a stream's
    reader end closes), so nothing leaks because it could not leave.
    """
    found: list[tuple[object, str]] = []

    def collect(leaf: object, path: str) -> object:
        found.append((leaf, path))
        return 0  # a placeholder: the whole result is refused below

    data = to_cloneable(value, replace=collect)
    if not found:
        return data
    for leaf, _ in found:
        drop = getattr(leaf, "drop", None)
        if callable(drop):
            with contextlib.suppress(Exception):  # best effort: the refusal is what matters
                drop()
    leaf, path = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise InvalidHandleError(
        f"{label}: the result holds a {_kind_of(leaf)}{_where(path)}{more}, which stays in "
        f"the worker process that made it (it was dropped there): {_pill_message(leaf)}; "
        "export a function that returns plain data instead"
    )


def encode_error(error: BaseException) -> object:
    """An exception as a cloneable envelope (its cause chain included)."""
    try:
        return to_cloneable(error)
    except (TypeError, ValueError) as exc:  # a payload that is not plain data
        fallback = RuntimeError(f"{type(error).__qualname__}: {error}")
        fallback.add_note(f"the original error could not cross the process boundary: {exc}")
        return to_cloneable(fallback)


def decode_error(data: object, where: str) -> BaseException:
    """An envelope as an exception of this process, with a note saying ``where`` it was raised.

    An unbranded exception of a builtin class (``TypeError``,
    ``OverflowError``, ...) or of this project's packages comes back as that
    class, its cause chain and notes kept; other unbranded exceptions are
    ``ClonedError`` naming their class.
    """
    error = from_cloneable(data)
    if not isinstance(error, BaseException):
        return TypeError(f"a worker answered an error that is not an exception: {error!r}")
    error = _as_builtin(error)
    error.add_note(f"raised in {where}")
    return error


def _as_builtin(error: BaseException) -> BaseException:
    """``error`` with every unbranded builtin link of its chain rebuilt as that builtin."""
    top = _rebuilt(error)
    link = top
    for _ in range(1000):  # chains are short; a bound keeps a malformed one finite
        cause = link.__cause__
        if cause is None:
            break
        rebuilt = _rebuilt(cause)
        if rebuilt is not cause:
            link.__cause__ = rebuilt
        link = rebuilt
    return top


#: packages whose exception classes a crossing rebuilds by name (the same code runs on both sides)
_OWN_PACKAGES: Final = ("polyengine", "polyengine_protocol", "polyengine_wasi")


def _named_class(name: str) -> type[Exception] | None:
    """The exception class ``name`` names: a builtin, or one of this project's packages."""
    module, _, qualname = name.rpartition(".")
    if not module:
        found: object = getattr(builtins, name, None)
    elif module.split(".")[0] in _OWN_PACKAGES:
        try:
            found = importlib.import_module(module)
        except ImportError:
            return None
        for part in qualname.split("."):
            found = getattr(found, part, None)
    else:
        return None
    if isinstance(found, type) and issubclass(found, Exception) and found is not Exception:
        return found
    return None


def _rebuilt(error: BaseException) -> BaseException:
    """An unbranded exception of a builtin class (or one of ours) as that class again.

    A class whose constructor does not take the message alone becomes its
    nearest builtin base class (``LowerOverflowError`` → ``OverflowError``).
    """
    if not isinstance(error, ClonedError):
        return error
    cls = _named_class(error.name)
    if cls is None:
        return error
    rebuilt: BaseException | None = None
    for candidate in cls.__mro__:
        if not (isinstance(candidate, type) and issubclass(candidate, Exception)):
            continue
        if candidate is not cls and candidate.__module__ != "builtins":
            continue
        if candidate is Exception:
            break
        try:
            rebuilt = candidate(error.message)
        except Exception:
            continue
        if str(rebuilt) != error.message:  # KeyError shows its argument's repr
            with contextlib.suppress(Exception):
                again = candidate(ast.literal_eval(error.message))
                if str(again) == error.message:
                    rebuilt = again
        break
    if rebuilt is None:
        return error
    rebuilt.__cause__ = error.__cause__
    for note in getattr(error, "__notes__", ()):
        rebuilt.add_note(note)
    return rebuilt


# -- the imports factory ----------------------------------------------------------------


def factory_ref(spec: ImportsSpec) -> FactoryRef | None:
    """Where a worker finds the imports factory ``spec``; refuses what it could not find.

    ``spec`` is ``None`` (the component imports nothing), a string
    ``"package.module:qualname"`` or ``"path/to/file.py:qualname"``, or an
    importable callable (a module-level function or class, a static method
    reached through its class). Lambdas, local functions, bound methods and
    callable instances are refused: providers do not pickle, so the worker
    makes its imports itself by calling the factory it imports.
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        module, sep, qualname = spec.partition(":")
        if not sep or not module or not qualname:
            raise ValueError(
                f"imports factory {spec!r}: expected 'package.module:function' or "
                "'path/to/file.py:function'"
            )
        if module.endswith(".py") or os.sep in module or "/" in module:
            path = os.path.abspath(module)
            if not os.path.isfile(path):
                raise ValueError(f"imports factory {spec!r}: {path} is not a file")
            return ("", qualname, path)
        return (module, qualname, None)
    if not callable(spec):
        raise TypeError(
            "imports must be None, a 'module:function' string or an importable callable, "
            f"not {type(spec).__qualname__}"
        )
    module_name: object = getattr(spec, "__module__", None)
    qual: object = getattr(spec, "__qualname__", None)
    what = f"imports factory {spec!r}"
    if not isinstance(module_name, str) or not isinstance(qual, str):
        raise TypeError(
            f"{what} has no module and qualified name; name it as 'module:function' instead"
        )
    if "<lambda>" in qual or "<locals>" in qual:
        raise TypeError(
            f"{what} is a lambda or a local function, which a worker process cannot import; "
            "define it at the top level of a module and pass it (or 'module:function')"
        )
    if inspect.ismethod(spec):
        raise TypeError(
            f"{what} is a bound method, whose object would have to cross to the worker; "
            "pass a module-level function (or 'module:function')"
        )
    owner = sys.modules.get(module_name)
    found: object = owner
    for part in qual.split("."):
        found = getattr(found, part, None)
    if found is not spec:
        raise TypeError(
            f"{what} is not reachable as {module_name}:{qual}; pass a module-level "
            "function (or 'module:function')"
        )
    file = getattr(owner, "__file__", None)
    return (module_name, qual, os.path.abspath(file) if isinstance(file, str) else None)


#: the run name of a ``__main__`` script re-run in a worker (its main guard stays shut)
WORKER_MAIN: Final = "__polyengine_worker_main__"


def _load_module(module: str, file: str | None) -> Any:
    if module == "__main__" or not module:
        if file is None:
            raise ImportError(f"the imports factory's module {module!r} has no file to load")
        if module == "__main__":
            loaded = sys.modules.get(WORKER_MAIN)
            if loaded is None:
                namespace = runpy.run_path(file, run_name=WORKER_MAIN)
                loaded = type(sys)(WORKER_MAIN)
                loaded.__dict__.update(namespace)
                sys.modules[WORKER_MAIN] = loaded
            return loaded
        name = "polyengine_imports_" + os.path.splitext(os.path.basename(file))[0]
        return _load_file(name, file)
    try:
        return importlib.import_module(module)
    except ImportError:
        if file is None:
            raise
        return _load_file(module, file)


def _load_file(name: str, file: str) -> Any:
    found = sys.modules.get(name)
    if found is not None and getattr(found, "__file__", None) == file:
        return found
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file} as a module")
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded
    try:
        spec.loader.exec_module(loaded)
    except BaseException:
        del sys.modules[name]
        raise
    return loaded


def load_factory(ref: FactoryRef) -> Callable[..., Any]:
    """The factory ``ref`` names, imported in this (worker) process."""
    module_name, qualname, file = ref
    found: Any = _load_module(module_name, file)
    for part in qualname.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            where = module_name or file
            raise ImportError(f"the imports factory {where}:{qualname} does not exist") from None
    if not callable(found):
        raise TypeError(f"the imports factory {module_name or file}:{qualname} is not callable")
    result: Callable[..., Any] = found
    return result


async def make_imports(
    factory: Callable[..., Any] | None, instance_id: int
) -> Mapping[str, object]:
    """Call ``factory`` for one instance: with ``instance_id`` if it takes an argument.

    The factory may return the mapping or an awaitable of it (an ``async def``).
    """
    if factory is None:
        return {}
    try:
        inspect.signature(factory).bind(instance_id)
        takes_id = True
    except TypeError:
        takes_id = False
    except ValueError:  # no signature (a builtin): it gets the id
        takes_id = True
    made = factory(instance_id) if takes_id else factory()
    if inspect.isawaitable(made):
        made = await _awaited(made)
    if not isinstance(made, Mapping):
        raise TypeError(
            f"the imports factory returned {type(made).__qualname__}, not a mapping of "
            "interface ids to providers"
        )
    return made


async def _awaited(made: Awaitable[Any]) -> Any:
    return await made
