"""``wasi:cli`` providers: environment, exit, stdio and terminal, 0.2 and 0.3.

0.2 stdio hands out ``input-stream`` / ``output-stream`` resources over the
instance's shared stdin source and stdout/stderr sinks (a stream dropped by
the guest never closes the host's file). 0.3 stdio is stream-shaped:

* ``stdin.read-via-stream() -> tuple<stream<u8>, future<result<_, error-code>>>``
  returns an async iterable of ``bytes`` chunks and an awaitable settling
  when the stream ends;
* ``stdout/stderr.write-via-stream(data: stream<u8>) -> future<result<_,
  error-code>>`` consumes an async iterable of chunks on a task and returns
  the awaitable of its outcome (amendment A12: a result-position future is
  a future source; the import itself completes at once).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Coroutine, Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ._bytes import ByteSink, ByteSource
from ._exit import ExitError
from ._streams import InputStream, OutputStream

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "Environment",
    "environment_provider",
    "exit_provider",
    "stdio_p2",
    "stdio_p3",
    "terminal_providers",
    "TerminalInput",
    "TerminalOutput",
]

Result = dict[str, Any]


class Environment:
    """Arguments, environment variables and the initial working directory."""

    def __init__(
        self,
        args: Sequence[str],
        env: Mapping[str, str] | Sequence[tuple[str, str]],
        cwd: str | None,
    ) -> None:
        self.args = [_text("args", a) for a in args]
        pairs = env.items() if isinstance(env, Mapping) else env
        self.env = [(_text("env", k), _text("env", v)) for k, v in pairs]
        self.cwd = None if cwd is None else _text("cwd", cwd)


def _text(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what}: expected str, got {type(value).__name__}")
    return value


def environment_provider(environment: Environment) -> SimpleNamespace:
    """``wasi:cli/environment`` (0.2 ``initial-cwd``, 0.3 ``get-initial-cwd``)."""

    def get_environment() -> list[tuple[str, str]]:
        return list(environment.env)

    def get_arguments() -> list[str]:
        return list(environment.args)

    def initial_cwd() -> str | None:
        return environment.cwd

    return SimpleNamespace(
        get_environment=get_environment,
        get_arguments=get_arguments,
        initial_cwd=initial_cwd,
        get_initial_cwd=initial_cwd,
    )


def exit_provider() -> SimpleNamespace:
    """``wasi:cli/exit``: both functions raise ``ExitError``."""

    def exit(status: Mapping[str, object]) -> None:
        kind = status.get("kind") if isinstance(status, Mapping) else None
        if kind not in ("ok", "err"):
            raise TypeError(f"exit: status must be a result value, got {status!r}")
        raise ExitError(0 if kind == "ok" else 1)

    def exit_with_code(status_code: int) -> None:
        raise ExitError(status_code)

    return SimpleNamespace(exit=exit, exit_with_code=exit_with_code)


def stdio_p2(
    stdin: ByteSource, stdout: ByteSink, stderr: ByteSink
) -> tuple[SimpleNamespace, SimpleNamespace, SimpleNamespace]:
    """``wasi:cli/stdin@0.2``, ``stdout@0.2``, ``stderr@0.2``."""

    def get_stdin() -> InputStream:
        return InputStream(stdin, owned=False)

    def get_stdout() -> OutputStream:
        return OutputStream(stdout, owned=False)

    def get_stderr() -> OutputStream:
        return OutputStream(stderr, owned=False)

    return (
        SimpleNamespace(get_stdin=get_stdin),
        SimpleNamespace(get_stdout=get_stdout),
        SimpleNamespace(get_stderr=get_stderr),
    )


def _error_code(exc: OSError) -> str:
    return "pipe" if isinstance(exc, BrokenPipeError) else "io"


async def _drain_into(sink: ByteSink, data: AsyncIterable[bytes]) -> Result:
    try:
        async for chunk in data:
            if not isinstance(chunk, bytes | bytearray | memoryview):
                raise TypeError(f"stream chunk is {type(chunk).__name__}, not bytes")
            view = memoryview(bytes(chunk))
            while view:
                room = sink.capacity()
                if room == 0:
                    await sink.wait()
                    continue
                sink.write(bytes(view[:room]))
                view = view[room:]
        sink.flush()
        while not sink.flushed():
            await sink.wait()
            sink.flush()
    except OSError as exc:
        await _abandon(data)
        return {"kind": "err", "value": _error_code(exc)}
    return {"kind": "ok"}


async def _abandon(data: object) -> None:
    """Tell a producer we stopped reading (A13: async generators, handles)."""
    for name in ("aclose", "drop", "close"):
        method = getattr(data, name, None)
        if callable(method):
            result = method()
            if inspect.isawaitable(result):
                await result
            return


def _start(coro: Coroutine[Any, Any, Result]) -> Awaitable[Result]:
    """Run ``coro`` as a task when a loop is running, so it progresses even if
    nobody awaits its outcome; otherwise hand back the coroutine itself."""
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return coro
    return loop.create_task(coro)


class _StdinReader:
    """One ``read-via-stream`` call: its chunk stream and completion future.

    The completion is an ``asyncio.Future`` when a loop is running (so that a
    guest that never reads it leaves nothing un-awaited), otherwise a
    coroutine awaiting the end of the stream.
    """

    def __init__(self, source: ByteSource) -> None:
        import asyncio

        self._source = source
        self._outcome: Result | None = None
        self._ended: asyncio.Event | None = None
        self._future: asyncio.Future[Result] | None = None
        with contextlib.suppress(RuntimeError):
            self._future = asyncio.get_running_loop().create_future()

    def _event(self) -> asyncio.Event:
        import asyncio

        if self._ended is None:
            self._ended = asyncio.Event()
        return self._ended

    async def chunks(self) -> AsyncIterator[bytes]:
        outcome: Result = {"kind": "ok"}
        try:
            while True:
                while not self._source.readable():
                    await self._source.wait()
                chunk = self._source.read_now(65536)
                if chunk is None:
                    break
                if chunk:
                    yield chunk
                else:
                    await self._source.wait()
        except OSError as exc:
            outcome = {"kind": "err", "value": _error_code(exc)}
        finally:
            self._outcome = outcome
            if self._future is not None and not self._future.done():
                self._future.set_result(outcome)
            with contextlib.suppress(RuntimeError):
                self._event().set()

    async def _wait_done(self) -> Result:
        if self._outcome is None:
            await self._event().wait()
        assert self._outcome is not None
        return self._outcome

    def done(self) -> Awaitable[Result]:
        return self._future if self._future is not None else self._wait_done()


def stdio_p3(
    stdin: ByteSource, stdout: ByteSink, stderr: ByteSink
) -> tuple[SimpleNamespace, SimpleNamespace, SimpleNamespace]:
    """``wasi:cli/stdin@0.3``, ``stdout@0.3``, ``stderr@0.3``."""

    def read_via_stream() -> tuple[AsyncIterator[bytes], Awaitable[Result]]:
        reader = _StdinReader(stdin)
        return reader.chunks(), reader.done()

    def stdout_write_via_stream(data: AsyncIterable[bytes]) -> Awaitable[Result]:
        return _start(_drain_into(stdout, data))

    def stderr_write_via_stream(data: AsyncIterable[bytes]) -> Awaitable[Result]:
        return _start(_drain_into(stderr, data))

    return (
        SimpleNamespace(read_via_stream=read_via_stream),
        SimpleNamespace(write_via_stream=stdout_write_via_stream),
        SimpleNamespace(write_via_stream=stderr_write_via_stream),
    )


class TerminalInput:
    """``wasi:cli/terminal-input.terminal-input`` (no members)."""

    def close(self) -> None:
        return None


class TerminalOutput:
    """``wasi:cli/terminal-output.terminal-output`` (no members)."""

    def close(self) -> None:
        return None


def terminal_providers(
    stdin_tty: bool, stdout_tty: bool, stderr_tty: bool
) -> dict[str, SimpleNamespace]:
    """The five terminal interfaces, keyed by their short names."""

    def get_terminal_stdin() -> TerminalInput | None:
        return TerminalInput() if stdin_tty else None

    def get_terminal_stdout() -> TerminalOutput | None:
        return TerminalOutput() if stdout_tty else None

    def get_terminal_stderr() -> TerminalOutput | None:
        return TerminalOutput() if stderr_tty else None

    return {
        "terminal-input": SimpleNamespace(TerminalInput=TerminalInput),
        "terminal-output": SimpleNamespace(TerminalOutput=TerminalOutput),
        "terminal-stdin": SimpleNamespace(get_terminal_stdin=get_terminal_stdin),
        "terminal-stdout": SimpleNamespace(get_terminal_stdout=get_terminal_stdout),
        "terminal-stderr": SimpleNamespace(get_terminal_stderr=get_terminal_stderr),
    }
