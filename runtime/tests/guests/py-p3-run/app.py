"""A WASI 0.3 command: writes its greeting through ``wasi:cli/stdout@0.3.0``."""

import wit_world
from componentize_py_types import Err, Ok
from wit_world import exports
from wit_world.imports import stdout

MESSAGE = b"hello from py-p3-run\nwritten via wasi:cli/stdout@0.3.0\n"


class Run(exports.Run):
    async def run(self) -> None:
        writer, reader = wit_world.byte_stream()
        done = stdout.write_via_stream(reader)
        with writer:
            await writer.write_all(MESSAGE)
        with done:
            status = await done.read()
        if not isinstance(status, Ok):
            raise Err(None)
