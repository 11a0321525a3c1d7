"""``polyengine run`` and ``polyengine invoke`` (python-mapping.md §7).

``run`` executes a ``wasi:cli/run`` command component with the WASI
providers of ``polyengine_wasi``: arguments (``argv[0]`` is the file's
name), environment, preopened directories and the process's stdio. The
process exits with the guest's status: ``run`` returning ``err`` is 1, a
``wasi:cli/exit`` its code, a trap prints ``Error: ...`` and exits with 134
(the status of an abort on Unix, as ``wasmtime run`` does).

``run --invoke 'f(args)'`` and ``invoke app.wasm 'f(args)'`` call one export
instead, with arguments in WIT value syntax (:mod:`polyengine.cli._wave`),
and print its result in the same syntax.

Compiled core modules are cached on disk by the engine
(:func:`polyengine.engine.module_cache_dir`), and plans next to them
(:mod:`polyengine.translate`'s plan cache), so a second run of the same
component skips both. The first compile of a large component shows its
progress on a terminal's stderr.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TextIO

from polyengine.cli import _startup
from polyengine.cli._limits import WasmOptionError, add_wasm_options, limits_from
from polyengine.errors import LinkError, TranslationError
from polyengine.translate import Artifacts
from polyengine.translate import plan as pln
from polyengine.types.model import FuncType, Result, ValType

if TYPE_CHECKING:
    import argparse
    import mmap

    from polyengine.cli import _wave

__all__ = [
    "EXIT_TRAP",
    "find_export",
    "find_run_export",
    "invoke_command",
    "load_artifacts",
    "register",
    "run_command",
]

#: The exit status after a trap: what an aborted process reports on Unix (128 + SIGABRT).
EXIT_TRAP = 134
#: The exit status when the component cannot be loaded, linked or invoked.
EXIT_FAILURE = 1
#: Components at least this large (uncached core code) show compile progress on a terminal.
PROGRESS_THRESHOLD = 1 << 20

RUN_TRACKS = ("0.3", "0.2")


class CliError(Exception):
    """A failure reported as one ``Error: ...`` line with exit status ``code``."""

    def __init__(self, message: str, code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------------- argument parsing


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dir",
        action="append",
        default=[],
        metavar="HOST[::GUEST]",
        help="grant the guest a host directory, mounted at GUEST (default: the same path)",
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME[=VAL]",
        help="set an environment variable for the guest (without =VAL: inherit the host's)",
    )
    p.add_argument(
        "--inherit-env",
        action="store_true",
        help="pass the host's whole environment to the guest",
    )
    p.add_argument(
        "-S",
        dest="wasi_options",
        action="append",
        default=[],
        metavar="OPTION",
        help="a WASI option as wasmtime spells it: inherit-env, inherit-network, "
        "cli-exit-with-code, p3 (comma-separated or repeated)",
    )
    add_wasm_options(p)


def register(subparsers: Any) -> None:
    """Add the ``run`` and ``invoke`` verbs to the top-level parser."""
    import argparse

    p = subparsers.add_parser(
        "run",
        help="run a WASI command component (wasi:cli/run)",
        description="Run a wasi:cli/run command component with WASI: its arguments follow "
        "the component file (optionally after --), its exit status becomes ours.",
    )
    _add_common(p)
    p.add_argument(
        "--invoke",
        metavar="CALL",
        default=None,
        help="call this export instead of wasi:cli/run, e.g. 'add(1, 2)' or "
        "'ns:pkg/iface.f@1.0.0(\"x\")' (WIT value syntax), and print its result",
    )
    p.add_argument("component", type=Path, help="the component binary (.wasm)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the guest")
    p.set_defaults(func=run_command)

    q = subparsers.add_parser(
        "invoke",
        help="call one export of a component with WIT-syntax arguments",
        description="Instantiate a component (with WASI available) and call one export, "
        "e.g. polyengine invoke app.wasm 'add(1, 2)'; the result is printed in WIT value syntax.",
    )
    _add_common(q)
    q.add_argument("component", type=Path, help="the component binary (.wasm)")
    q.add_argument("call", help="the call in WIT value syntax, e.g. 'greet(\"world\")'")
    q.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the guest (argv)")
    q.set_defaults(func=invoke_command)


def run_command(args: argparse.Namespace) -> int:
    """``polyengine run``; returns the process exit status."""
    guest_args = list(args.args)
    if guest_args[:1] == ["--"]:
        guest_args = guest_args[1:]
    return _main(args, args.invoke, guest_args)


def invoke_command(args: argparse.Namespace) -> int:
    """``polyengine invoke``; returns the process exit status."""
    guest_args = list(args.args)
    if guest_args[:1] == ["--"]:
        guest_args = guest_args[1:]
    return _main(args, args.call, guest_args)


# --------------------------------------------------------------------------- loading


def load_artifacts(
    data: bytes | mmap.mmap, *, source: tuple[str, os.stat_result] | None = None
) -> Artifacts:
    """Translate ``data``, reusing the cached plan of the same bytes when there is one.

    Plans are kept in the translator's plan cache whatever the component's
    size (:func:`polyengine.translate.translate_for_run`): a run from the
    cache does not import the reader, validator or translator. ``source``
    (the file and its ``stat`` before it was read) spares hashing an
    unchanged file again.
    """
    from polyengine.translate import translate_for_run

    return translate_for_run(data, source=source)


class _Progress:
    """A one-line compile progress indicator on a terminal's stderr."""

    def __init__(self, stream: TextIO, label: str) -> None:
        self._stream = stream
        self._label = label
        self._status = ""
        self._start = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="polyengine-progress", daemon=True)
        self._thread.start()

    def update(self, status: str) -> None:
        self._status = status
        self._draw()

    def _draw(self) -> None:
        elapsed = time.monotonic() - self._start
        with contextlib.suppress(OSError, ValueError):
            self._stream.write(f"\r\x1b[Kcompiling {self._label}: {self._status} ({elapsed:.0f}s)")
            self._stream.flush()

    def _tick(self) -> None:
        while not self._done.wait(0.5):
            self._draw()

    def close(self) -> None:
        self._done.set()
        self._thread.join()
        with contextlib.suppress(OSError, ValueError):
            self._stream.write("\r\x1b[K")
            self._stream.flush()


def precompile(
    arts: Artifacts, label: str, *, stream: TextIO | None = None, fuel: bool = False
) -> None:
    """Compile the component's core modules into the engine's caches.

    Modules already in the on-disk cache load from it; when the uncached
    code is large and ``stream`` is a terminal, progress is shown there.
    """
    from polyengine import engine

    eng = engine.get_engine(engine.EngineConfig(consume_fuel=True) if fuel else None)
    shas = [m.sha256 for m in arts.plan.modules]  # the plan's own: no hashing again
    uncached = []
    for i, sha in enumerate(shas):
        path = engine.cached_module_path(sha, eng)
        if path is None or not path.is_file():
            uncached.append(i)
    pending = sum(arts.plan.modules[i].length for i in uncached)
    show = stream is not None and pending >= PROGRESS_THRESHOLD and _isatty(stream)
    progress = _Progress(stream, label) if show and stream is not None else None
    total = pending / (1 << 20)
    done = 0
    try:
        for n, i in enumerate(uncached, 1):
            if progress is not None:
                progress.update(
                    f"{done / (1 << 20):.1f} of {total:.1f} MiB of core code, "
                    f"module {n} of {len(uncached)}"
                )
            engine.compile_module(
                arts.module_view(i), name=f"module {i}", sha256=shas[i], engine=eng
            )
            done += arts.plan.modules[i].length
    finally:
        if progress is not None:
            progress.close()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError):
        return False


# --------------------------------------------------------------------------- exports


def find_run_export(plan: pln.Plan) -> str | None:
    """The name of the component's ``wasi:cli/run`` export (0.3 preferred over 0.2), if any."""
    found: dict[str, str] = {}
    for e in plan.exports:
        if not isinstance(e.item, pln.ExportedInstance):
            continue
        name, _, version = e.name.partition("@")
        if name != "wasi:cli/run":
            continue
        for track in RUN_TRACKS:
            if version == track or version.startswith(track + "."):
                found.setdefault(track, e.name)
    for track in RUN_TRACKS:
        if track in found:
            return found[track]
    return None


class ExportFunc(NamedTuple):
    """A function export found by name: its instance (``None`` at the root), name and type."""

    instance: str | None
    name: str
    type: FuncType

    @property
    def label(self) -> str:
        return self.name if self.instance is None else f"{self.instance}#{self.name}"


def _funcs(items: Sequence[pln.Export]) -> Iterator[tuple[str, FuncType]]:
    for e in items:
        if isinstance(e.item, pln.Lift) and not e.name.startswith("["):
            yield e.name, e.item.type


def _unversioned(name: str) -> str:
    return name.partition("@")[0]


def find_export(plan: pln.Plan, call: _wave.FuncCall) -> ExportFunc:
    """Resolve the function ``call`` names, as ``wasmtime run --invoke`` does.

    ``f`` is a root function export, else the one exported interface function
    named ``f`` (two are ambiguous); ``ns:pkg/iface.f@1.0.0`` and ``iface.f``
    name a function of that exported instance.
    """
    instance, func = call.item
    instances = [
        (e.name, e.item.items) for e in plan.exports if isinstance(e.item, pln.ExportedInstance)
    ]
    if instance is None:
        for name, ft in _funcs(plan.exports):
            if name == func:
                return ExportFunc(None, name, ft)
        hits = [
            ExportFunc(iname, name, ft)
            for iname, items in instances
            for name, ft in _funcs(items)
            if name == func
        ]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            choices = ", ".join(f"`{h.instance}#{h.name}`" for h in hits)
            raise CliError(
                f"more than one exported interface has a function named `{func}` ({choices}); "
                "qualify it, e.g. ns:pkg/iface.f@1.0.0(...)"
            )
        raise CliError(f"no exported function named `{func}` in the component{_available(plan)}")
    matches = [(n, items) for n, items in instances if n == instance]
    if not matches:
        matches = [
            (n, items) for n, items in instances if _unversioned(n) == _unversioned(instance)
        ]
    if len(matches) == 1:
        iname, items = matches[0]
        for name, ft in _funcs(items):
            if name == func:
                return ExportFunc(iname, name, ft)
    raise CliError(f"no exported function named `{call.name}` in the component{_available(plan)}")


def _available(plan: pln.Plan) -> str:
    names = [name for name, _ in _funcs(plan.exports)]
    for e in plan.exports:
        if isinstance(e.item, pln.ExportedInstance):
            names += [f"{e.name}#{name}" for name, _ in _funcs(e.item.items)]
    return f" (it exports: {', '.join(names)})" if names else " (it exports no functions)"


def _check_invocable(fn: ExportFunc) -> None:
    for pname, t in fn.type.params:
        _check_type(t, f"parameter `{pname}` of `{fn.label}`")
    if fn.type.result is not None:
        _check_type(fn.type.result, f"the result of `{fn.label}`")


def _check_type(t: ValType, what: str) -> None:
    from polyengine.types import model as m

    if isinstance(t, m.Own | m.Borrow | m.Stream | m.Future | m.ErrorContext):
        raise CliError(
            f"{what} has type {type(t).__name__.lower()}, which WIT value syntax cannot express"
        )
    children: list[ValType | None] = []
    if isinstance(t, m.List | m.Option):
        children = [t.t]
    elif isinstance(t, m.Map):
        children = [t.k, t.v]
    elif isinstance(t, m.Tuple):
        children = list(t.ts)
    elif isinstance(t, m.Record):
        children = [f.t for f in t.fields]
    elif isinstance(t, m.Variant):
        children = [c.t for c in t.cases]
    elif isinstance(t, m.Result):
        children = [t.ok, t.error]
    for c in children:
        if c is not None:
            _check_type(c, what)


# --------------------------------------------------------------------------- WASI


def _wasi_imports(
    args: argparse.Namespace, program: str, guest_args: list[str], plan: pln.Plan
) -> dict[str, object]:
    """The WASI providers of the interfaces the component imports (built for those only)."""
    try:
        import polyengine_wasi
    except ImportError:
        raise CliError(
            "the WASI providers are not installed (pip install polyengine-wasi)"
        ) from None
    inherit_env = bool(args.inherit_env)
    network = False
    for option in args.wasi_options:
        for item in option.split(","):
            key, _, value = item.strip().partition("=")
            enabled = value.lower() not in ("n", "no", "false", "0")
            if key == "inherit-env":
                inherit_env = enabled
            elif key in ("inherit-network", "network"):
                network = enabled
            elif key in ("cli-exit-with-code", "cli", "tcp", "udp", "allow-ip-name-lookup", "p3"):
                pass  # always available
            else:
                raise CliError(f"unknown WASI option -S {item!r}")
    env: dict[str, str] = dict(os.environ) if inherit_env else {}
    for item in args.env:
        name, eq, value = item.partition("=")
        if not name:
            raise CliError(f"--env {item!r}: expected NAME=VALUE or NAME")
        if eq:
            env[name] = value
        elif name in os.environ:
            env[name] = os.environ[name]
    preopens: list[tuple[str, str, bool]] = []
    for item in args.dir:
        host, sep, guest = item.partition("::")
        if not sep:
            guest = host
        if not host or not guest:
            raise CliError(f"--dir {item!r}: expected HOST or HOST::GUEST")
        if not os.path.isdir(host):
            raise CliError(f"--dir {item!r}: {host} is not a directory")
        preopens.append((host, guest, False))
    stdin = getattr(sys.stdin, "buffer", None)
    return polyengine_wasi.wasi(
        args=[program, *guest_args],
        env=list(env.items()),
        preopens=preopens,
        stdin=stdin,
        network=network,
        interfaces=[imp.name for imp in plan.imports],
    )


def _check_imports(arts: Artifacts, imports: dict[str, object]) -> bool:
    """Name the first import no provider serves (before any guest code runs).

    Returns whether the component can run on the plain synchronous path
    (:func:`polyengine.cli._startup.plain_path`).
    """
    from polyengine import MissingImportError, required_imports
    from polyengine.embed import HostLinker, Imports

    try:
        linker = HostLinker(Imports(imports), suspend=False)
    except (TypeError, ValueError):  # instantiation reports missing imports on its own
        return False
    for leaf in required_imports(arts):
        if leaf.kind in ("module", "component", "value"):
            raise CliError(
                f"the component imports a {leaf.kind} `{leaf.name}`, which cannot be provided"
            )
        if leaf.kind != "func":
            continue
        try:
            linker.resolve(leaf.path)
        except MissingImportError:
            if len(leaf.path) == 1:
                what = f"function `{leaf.path[0]}`"
            else:
                what = f"function `{'/'.join(leaf.path[1:])}` of interface `{leaf.path[0]}`"
            raise CliError(
                f"missing import: the component imports {what}, which no provider serves"
            ) from None
    return _startup.plain_path(arts, linker.is_marked)


# --------------------------------------------------------------------------- running


def _fail(message: str) -> NoReturn:
    raise CliError(message)


def _main(args: argparse.Namespace, call_text: str | None, guest_args: list[str]) -> int:
    path: Path = args.component
    program = path.name
    call: _wave.FuncCall | None = None
    if call_text is not None:
        from polyengine.cli import _wave  # WIT value syntax only for a call (start-up)

        try:
            call = _wave.parse_call(call_text)
        except _wave.WaveError as exc:
            return _error(f"cannot parse the call {call_text!r}: {exc}")
    try:
        limits = limits_from(args.wasm_options)
    except WasmOptionError as exc:
        return _error(str(exc))
    try:
        try:
            before, data = _startup.read_component(path)
        except OSError as exc:
            _fail(f"cannot read {path}: {exc.strerror or exc}")
        if data[:4] != b"\0asm":
            if data[:4096].lstrip()[:1] in (b"(", b";"):
                _fail(
                    f"{path} looks like WebAssembly text; polyengine runs binaries "
                    f"(compile it first: wasm-tools parse {path} -o app.wasm)"
                )
            _fail(f"{path} is not a WebAssembly binary")
        arts = load_artifacts(data, source=(str(path), before))
        target: ExportFunc | None = None
        params: list[Any] = []
        run_name: str | None = None
        if call is not None:
            from polyengine.cli import _wave

            target = find_export(arts.plan, call)
            _check_invocable(target)
            try:
                params = _wave.parse_args(call, target.type.params)
            except _wave.WaveError as exc:
                _fail(f"cannot use the arguments of {call.source!r}: {exc}")
        else:
            run_name = find_run_export(arts.plan)
            if run_name is None:
                _fail(
                    f"{path} exports no wasi:cli/run interface (0.2 or 0.3); "
                    "use --invoke to call one of its functions"
                )
        imports = _wasi_imports(args, program, guest_args, arts.plan)
        plain = _check_imports(arts, imports)
        fuel = limits is not None and limits.fuel is not None
        precompile(arts, program, stream=sys.stderr, fuel=fuel)
    except TranslationError as exc:
        return _error(f"{path} is not a valid component: {exc}")
    except CliError as exc:
        return _error(str(exc), exc.code)
    except LinkError as exc:
        return _error(str(exc))
    except Exception as exc:
        from polyengine import engine

        if isinstance(exc, engine.CompileError):
            return _error(f"{path}: {exc}")
        return _internal_error(exc)
    try:
        return _startup.drive(
            _execute(
                arts,
                imports=imports,
                program=str(path),
                run_name=run_name,
                target=target,
                params=params,
                limits=limits,
                plain=plain,
            ),
            plain=plain,
        )
    except KeyboardInterrupt:
        _flush()
        return 130
    except CliError as exc:
        return _error(str(exc), exc.code)
    except Exception as exc:
        return _internal_error(exc)


def _internal_error(exc: Exception) -> int:
    """An unexpected failure inside polyengine: one line, the traceback on request."""
    if os.environ.get("POLYENGINE_TRACEBACK"):
        raise exc
    return _error(
        f"internal error: {type(exc).__name__}: {exc} "
        "(set POLYENGINE_TRACEBACK=1 to see the traceback)"
    )


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _error(message: str, code: int = EXIT_FAILURE) -> int:
    _flush()
    print(f"Error: {message}", file=sys.stderr)
    return code


def _causes(exc: BaseException) -> list[str]:
    out: list[str] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        text = str(cur).strip().splitlines()[0] if str(cur).strip() else ""
        core = re.sub(r"\s*\[[\w-]+\]$", "", text)
        if core and (not out or core not in out[-1]):
            out.append(text)
        cur = cur.__cause__
    return out


def _report_trap(program: str, what: str, exc: BaseException) -> int:
    _flush()
    lines = [f"Error: failed to run main module `{program}`", "", "Caused by:", f"    0: {what}"]
    for n, text in enumerate(_causes(exc), 1):
        lines.append(f"    {n}: {text}")
    print("\n".join(lines), file=sys.stderr)
    return EXIT_TRAP


async def _execute(
    arts: Artifacts,
    *,
    imports: dict[str, object],
    program: str,
    run_name: str | None,
    target: ExportFunc | None,
    params: list[Any],
    limits: Any = None,
    plain: bool = False,
) -> int:
    from polyengine import instantiate
    from polyengine_protocol import is_component_exception, is_trap

    what = "failed to instantiate the component"
    stack = contextlib.ExitStack()
    try:
        instance = await instantiate(
            arts, imports, limits=limits, suspend=False if plain else None
        )
        try:
            if plain:
                stack.enter_context(_startup.sigint_interrupts(instance))
            _startup.guest_starts()
            if target is None:
                assert run_name is not None
                what = "failed to invoke `run` function"
                try:
                    await instance.exports[run_name].run()
                except Exception as exc:
                    if is_component_exception(exc):
                        return 1
                    raise
                return 0
            what = f"failed to invoke `{target.label}`"
            value = await _call(instance, target, params)
            from polyengine.cli import _wave

            _flush()
            print(_wave.format_results(value, target.type.result))
            return 0
        finally:
            stack.close()
            instance.close()
    except (KeyboardInterrupt, _startup.cancelled_error()) as exc:
        # SIGINT on the task model (asyncio.run cancels the main task), or
        # Python's own KeyboardInterrupt where no handler of ours is installed:
        # a guest that was running is interrupted; report its trap as wasmtime
        # does, then exit with 130 (the plain path's handler: see below)
        interrupted = exc.__context__ or exc.__cause__
        if interrupted is not None and getattr(interrupted, "code", None) == "interrupt":
            _report_trap(program, what, interrupted)
        raise
    except Exception as exc:
        exit_request = _wasi_exit_in(exc)
        if exit_request is not None:
            code = getattr(exit_request, "code", 1)
            return code if isinstance(code, int) else 1
        if is_trap(exc):
            if getattr(exc, "code", None) == "interrupt" and _startup.SIGINT_REASON in str(exc):
                _report_trap(program, what, exc)
                raise KeyboardInterrupt from None  # exit status 130, as on the task model
            return _report_trap(program, what, exc)
        if isinstance(exc, LinkError):
            raise CliError(str(exc)) from None
        if type(exc).__name__ == "SuspensionUnavailable":
            raise CliError(str(exc)) from None
        raise
    finally:
        _flush()


def _wasi_exit_in(exc: BaseException) -> BaseException | None:
    """The WASI exit request that ended the guest: ``exc`` itself or one of its causes.

    The runtime hands a ``wasi:cli/exit`` to the embedder unchanged; looking
    through the cause chain also honors an exit that reached us wrapped.
    """
    from polyengine_protocol import is_wasi_exit

    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if is_wasi_exit(cur):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or getattr(cur, "host_exception", None)
    return None


async def _call(instance: Any, target: ExportFunc, params: list[Any]) -> Any:
    """Call ``target`` through the exports facade; a ``result`` comes back as a value."""
    from polyengine.embed import snake
    from polyengine_protocol import is_component_exception

    ns = instance.exports if target.instance is None else instance.exports[target.instance]
    fn = getattr(ns, snake(target.name))
    result = target.type.result
    try:
        value = await fn(*params)
    except Exception as exc:
        if not isinstance(result, Result) or not is_component_exception(exc):
            raise
        payload = getattr(exc, "payload", None)
        return {"kind": "err"} if result.error is None else {"kind": "err", "value": payload}
    if isinstance(result, Result):
        return {"kind": "ok"} if result.ok is None else {"kind": "ok", "value": value}
    return value
