import componentize_py_async_support as rt
from componentize_py_types import Ok
from wit_world import byte_stream, exports
from wit_world import (
    result_option_wasi_http_types_fields_wasi_http_types_error_code_future as trailers_future,
)
from wit_world.imports.wasi_http_types import Fields, Request, Response


class Handler(exports.Handler):
    async def handle(self, request: Request) -> Response:
        path = request.get_path_with_query() or "/"
        headers = Fields.from_list([("content-type", b"text/plain")])
        tx, rx = byte_stream()
        ttx, trx = trailers_future(lambda: Ok(None))

        async def body() -> None:
            with tx:
                await tx.write_all(b"hello from python p3 at " + path.encode() + b"\n")
            await ttx.write(Ok(None))

        rt.spawn(body())
        return Response.new(headers, rx, trx)[0]
