"""The runtime's host handles are the protocol package's handle Protocols
(python-mapping.md §6): code typed against ``polyengine_protocol.Stream``,
``StreamWriter``, ``Future`` and ``ErrorContext`` accepts the runtime's
objects under ``mypy --strict``, and a writer takes any sequence the
Protocol admits.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import polyengine

from . import async_components as ac
from .test_async import aio

Wat = Callable[[str], bytes]

CHECK = """
from __future__ import annotations

from typing import Any

import polyengine_protocol as pp
from polyengine.embed._streams import ErrorContext, Future, Stream, StreamWriter


def as_protocols(s: Stream, w: StreamWriter, f: Future, e: ErrorContext) -> None:
    stream: pp.Stream[Any] = s
    writer: pp.StreamWriter[Any] = w
    future: pp.Future[Any] = f
    context: pp.ErrorContext = e
    print(stream, writer, future, context)
"""


def test_the_runtime_handles_satisfy_the_protocols(tmp_path: Path) -> None:
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    assert mypy is not None, "mypy is a test dependency"
    (tmp_path / "handles_check.py").write_text(CHECK)
    proc = subprocess.run(
        [mypy, "--strict", "--cache-dir", str(tmp_path / "cache"), "handles_check.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@aio
async def test_write_all_takes_any_sequence(wat: Wat) -> None:
    """A tuple of strings feeds a ``stream<string>`` (a chunk is any finite sequence)."""
    inst = await polyengine.instantiate(wat(ac.WORDS))
    with inst:
        stream, writer = polyengine.create_stream()
        call = asyncio.ensure_future(inst.exports.count_words(stream))
        async with writer:
            assert await writer.write_all(("ab", "cde")) == 2
        assert await call == 2 * 1000 + 5
