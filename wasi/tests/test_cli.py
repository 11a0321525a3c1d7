"""wasi:cli: environment, exit, stdio (0.2 streams and 0.3 stream-shaped)."""

from __future__ import annotations

import asyncio
import io
import os
import pickle
from collections.abc import AsyncIterator
from typing import Any

import pytest

from polyengine_protocol import ComponentException
from polyengine_wasi import WASI_EXIT_BRAND, ExitError, InputStream, OutputStream, wasi


@pytest.mark.parametrize("track", ["@0.2", "@0.3"])
def test_environment(track: str) -> None:
    imports = wasi(args=["prog", "-v", "ünï"], env={"A": "1", "B": "two"}, cwd="/work")
    env = imports["wasi:cli/environment" + track]
    assert env.get_arguments() == ["prog", "-v", "ünï"]
    assert env.get_environment() == [("A", "1"), ("B", "two")]
    if track == "@0.2":
        assert env.initial_cwd() == "/work"
    else:
        assert env.get_initial_cwd() == "/work"


def test_environment_defaults_are_empty() -> None:
    env = wasi()["wasi:cli/environment@0.2"]
    assert env.get_arguments() == []
    assert env.get_environment() == []
    assert env.initial_cwd() is None


def test_environment_refuses_non_strings() -> None:
    with pytest.raises(TypeError, match="args"):
        wasi(args=[b"x"])  # type: ignore[list-item]


@pytest.mark.parametrize("track", ["@0.2", "@0.3"])
def test_exit(track: str) -> None:
    exit_ = wasi()["wasi:cli/exit" + track]
    with pytest.raises(ExitError) as ok:
        exit_.exit({"kind": "ok"})
    assert ok.value.code == 0 and ok.value.ok
    with pytest.raises(ExitError) as err:
        exit_.exit({"kind": "err"})
    assert err.value.code == 1 and not err.value.ok
    with pytest.raises(ExitError) as coded:
        exit_.exit_with_code(42)
    assert coded.value.code == 42
    assert type(coded.value).__polyengine_brand__ == WASI_EXIT_BRAND == "polyengine.wasiExit/1"


def test_exit_error_pickles() -> None:
    back = pickle.loads(pickle.dumps(ExitError(3)))
    assert isinstance(back, ExitError) and back.code == 3


def test_exit_refuses_a_non_result() -> None:
    with pytest.raises(TypeError, match="result"):
        wasi()["wasi:cli/exit@0.2"].exit("ok")


def test_stdout_capture_p2() -> None:
    out, err = bytearray(), bytearray()
    imports = wasi(stdout=out, stderr=err)
    stdout = imports["wasi:cli/stdout@0.2"].get_stdout()
    assert isinstance(stdout, OutputStream)
    assert stdout.check_write() > 0
    stdout.write(b"hello ")
    assert stdout.blocking_write_and_flush(b"world\n") is None  # sync fast path
    stdout.close()
    imports["wasi:cli/stderr@0.2"].get_stderr().blocking_write_and_flush(b"oops")
    assert bytes(out) == b"hello world\n"
    assert bytes(err) == b"oops"
    # the shared sink survives a dropped stream
    again = imports["wasi:cli/stdout@0.2"].get_stdout()
    again.blocking_write_and_flush(b"!")
    assert bytes(out).endswith(b"!")


def test_stdout_to_a_binary_file() -> None:
    sink = io.BytesIO()
    stdout = wasi(stdout=sink)["wasi:cli/stdout@0.2"].get_stdout()
    stdout.blocking_write_and_flush(b"file")
    assert sink.getvalue() == b"file"


def test_default_stdout_is_the_process_stdout(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    stdout = wasi()["wasi:cli/stdout@0.2"].get_stdout()
    stdout.blocking_write_and_flush(b"to the process\n")
    assert capfdbinary.readouterr().out == b"to the process\n"


def test_stdin_p2_from_bytes(settle: Any) -> None:
    stdin = wasi(stdin=b"abcdef")["wasi:cli/stdin@0.2"].get_stdin()
    assert isinstance(stdin, InputStream)
    assert stdin.read(2) == b"ab"
    assert settle(stdin.blocking_read(10)) == b"cdef"
    with pytest.raises(ComponentException) as end:
        stdin.read(1)
    assert end.value.payload == {"kind": "closed"}


def test_stdin_p2_from_a_pipe_parks(settle: Any) -> None:
    r, w = os.pipe()
    with os.fdopen(r, "rb", buffering=0) as reader:
        stdin = wasi(stdin=reader)["wasi:cli/stdin@0.2"].get_stdin()
        assert stdin.read(4) == b""  # nothing yet: a non-blocking read returns empty

        async def main() -> bytes:
            pending = stdin.blocking_read(4)
            assert not isinstance(pending, bytes)
            asyncio.get_running_loop().call_later(0.02, os.write, w, b"ping")
            return await pending

        assert asyncio.run(main()) == b"ping"
        os.close(w)
        with pytest.raises(ComponentException) as end:
            settle(stdin.blocking_read(4))
        assert end.value.payload == {"kind": "closed"}
        stdin.close()


def test_stdout_p3_write_via_stream() -> None:
    out = bytearray()
    stdout = wasi(stdout=out)["wasi:cli/stdout@0.3"]

    async def chunks() -> AsyncIterator[bytes]:
        for part in (b"one ", b"two ", b"three"):
            await asyncio.sleep(0)
            yield part

    async def main() -> object:
        return await stdout.write_via_stream(chunks())

    assert asyncio.run(main()) == {"kind": "ok"}
    assert bytes(out) == b"one two three"


def test_stderr_p3_reports_a_broken_sink() -> None:
    class Broken(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: object) -> int:
            raise BrokenPipeError("gone")

    stderr = wasi(stderr=Broken())["wasi:cli/stderr@0.3"]

    async def chunks() -> AsyncIterator[bytes]:
        yield b"x"

    async def main() -> object:
        return await stderr.write_via_stream(chunks())

    assert asyncio.run(main()) == {"kind": "err", "value": "pipe"}


def test_stdin_p3_read_via_stream() -> None:
    stdin = wasi(stdin=b"streamed input")["wasi:cli/stdin@0.3"]

    async def main() -> tuple[bytes, object]:
        stream, done = stdin.read_via_stream()
        data = b"".join([chunk async for chunk in stream])
        return data, await done

    assert asyncio.run(main()) == (b"streamed input", {"kind": "ok"})


def test_stdin_p3_from_an_async_iterable() -> None:
    async def source() -> AsyncIterator[bytes]:
        yield b"a"
        await asyncio.sleep(0.01)
        yield b"b"

    stdin = wasi(stdin=source())["wasi:cli/stdin@0.3"]

    async def main() -> bytes:
        stream, done = stdin.read_via_stream()
        data = b"".join([chunk async for chunk in stream])
        assert await done == {"kind": "ok"}
        return data

    assert asyncio.run(main()) == b"ab"


def test_terminals_are_absent_for_captured_streams() -> None:
    imports = wasi(stdin=b"", stdout=bytearray(), stderr=bytearray())
    assert imports["wasi:cli/terminal-stdin@0.2"].get_terminal_stdin() is None
    assert imports["wasi:cli/terminal-stdout@0.2"].get_terminal_stdout() is None
    assert imports["wasi:cli/terminal-stderr@0.3"].get_terminal_stderr() is None


def test_bad_stdio_values_are_refused() -> None:
    with pytest.raises(TypeError, match="cannot read bytes"):
        wasi(stdin=3.5)
    with pytest.raises(TypeError, match="cannot write bytes"):
        wasi(stdout="text")


def test_exit_error_is_recognized_by_brand_and_crosses_processes() -> None:
    from polyengine_protocol import from_cloneable, is_wasi_exit, to_cloneable

    error = ExitError(7)
    assert is_wasi_exit(error)
    back = from_cloneable(pickle.loads(pickle.dumps(to_cloneable(error))))
    assert is_wasi_exit(back)
    assert back.code == 7 and back.ok is False


def test_stdout_p3_abandons_the_producer_on_failure() -> None:
    closed: list[bool] = []

    class Broken(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: object) -> int:
            raise OSError(5, "Input/output error")

    async def chunks() -> AsyncIterator[bytes]:
        try:
            while True:
                yield b"x"
        finally:
            closed.append(True)

    stdout = wasi(stdout=Broken())["wasi:cli/stdout@0.3"]

    async def main() -> object:
        return await stdout.write_via_stream(chunks())

    assert asyncio.run(main()) == {"kind": "err", "value": "io"}
    assert closed == [True]


def test_stdin_from_a_regular_file(tmp_path: Any, settle: Any) -> None:
    path = tmp_path / "input.bin"
    path.write_bytes(b"file input")
    with path.open("rb") as f:
        stdin = wasi(stdin=f)["wasi:cli/stdin@0.2"].get_stdin()
        assert settle(stdin.blocking_read(100)) == b"file input"


def test_text_streams_are_written_through_their_buffer() -> None:
    raw = io.BytesIO()
    text = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    stdout = wasi(stdout=text)["wasi:cli/stdout@0.2"].get_stdout()
    stdout.blocking_write_and_flush(b"via buffer")
    assert raw.getvalue() == b"via buffer"
    with pytest.raises(TypeError, match="text stream"):
        wasi(stdout=io.StringIO())
