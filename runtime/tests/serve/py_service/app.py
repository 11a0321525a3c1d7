import componentize_py_async_support as rt
from componentize_py_types import Err, Ok
from wit_world import byte_stream, exports
from wit_world import (
    result_option_wasi_http_types_fields_wasi_http_types_error_code_future as trailers_future,
)
from wit_world import result_unit_wasi_http_types_error_code_future as unit_future
from wit_world.imports import client
from wit_world.imports.wasi_http_types import Fields, Request, Response, Scheme_Http

CHUNK = 16384


def _kind(code: object) -> str:
    return type(code).__name__.removeprefix("ErrorCode_")


class Handler(exports.Handler):
    """hello at the path; ``/echo`` streams the body back and reports its trailers;
    ``/fetch/PORT/PATH`` sends GET http://127.0.0.1:PORT/PATH with ``client.send``
    and streams the answer back (502 with the error-code when it fails)."""

    async def handle(self, request: Request) -> Response:
        path = request.get_path_with_query() or "/"
        if path.startswith("/echo"):
            return self.echo(request)
        if path.startswith("/fetch/"):
            return await self.fetch(path)
        if path.startswith("/stream/"):
            return self.stream(int(path.removeprefix("/stream/")))
        return self.text(b"hello from python p3 at " + path.encode() + b"\n")

    def text(self, body: bytes, status: int = 200) -> Response:
        headers = Fields.from_list([("content-type", b"text/plain")])
        tx, rx = byte_stream()
        ttx, trx = trailers_future(lambda: Ok(None))

        async def send() -> None:
            with tx:
                await tx.write_all(body)
            await ttx.write(Ok(None))

        rt.spawn(send())
        response = Response.new(headers, rx, trx)[0]
        response.set_status_code(status)
        return response

    def stream(self, count: int) -> Response:
        """``count`` chunks of 1000 bytes, then the response's transmission result."""
        tx, rx = byte_stream()
        ttx, trx = trailers_future(lambda: Ok(None))
        response, sent = Response.new(Fields(), rx, trx)

        async def send() -> None:
            written = 0
            with tx:
                for i in range(count):
                    await tx.write(bytes([97 + i % 26]) * 1000)
                    if tx.reader_dropped:
                        break
                    written += 1
            if not tx.reader_dropped:
                await ttx.write(Ok(None))
            result = await sent.read()
            outcome = "err " + _kind(result.value) if isinstance(result, Err) else "ok"
            print(f"stream: {written} of {count} chunks, transmission {outcome}")

        rt.spawn(send())
        return response

    def echo(self, request: Request) -> Response:
        done_tx, done_rx = unit_future(lambda: Ok(None))
        body, trailers = Request.consume_body(request, done_rx)
        tx, rx = byte_stream()
        ttx, trx = trailers_future(lambda: Ok(None))

        async def pump() -> None:
            total = 0
            with tx, body:
                while not body.writer_dropped:
                    chunk = await body.read(CHUNK)
                    total += len(chunk)
                    if chunk:
                        await tx.write_all(chunk)
            result = await trailers.read()
            outcome = "err " + _kind(result.value) if isinstance(result, Err) else "ok"
            print(f"echo: {total} bytes, trailers {outcome}")
            await ttx.write(Ok(Fields.from_list([("x-request-trailers", outcome.encode())])))
            await done_tx.write(Ok(None))

        rt.spawn(pump())
        headers = Fields.from_list([("content-type", b"application/octet-stream")])
        return Response.new(headers, rx, trx)[0]

    async def fetch(self, path: str) -> Response:
        port, _, rest = path.removeprefix("/fetch/").partition("/")
        ttx, trx = trailers_future(lambda: Ok(None))
        outgoing = Request.new(Fields(), None, trx, None)[0]
        outgoing.set_scheme(Scheme_Http())
        outgoing.set_authority("127.0.0.1:" + port)
        outgoing.set_path_with_query("/" + rest)
        rt.spawn(ttx.write(Ok(None)))
        try:
            answer = await client.send(outgoing)
        except Err as err:
            return self.text(("error-code " + _kind(err.value) + "\n").encode(), 502)
        status = answer.get_status_code()
        kind = answer.get_headers().get("content-type") or [b"application/octet-stream"]
        done_tx, done_rx = unit_future(lambda: Ok(None))
        body, _trailers = Response.consume_body(answer, done_rx)
        tx, rx = byte_stream()
        otx, orx = trailers_future(lambda: Ok(None))

        async def pump() -> None:
            with tx, body:
                while not body.writer_dropped:
                    chunk = await body.read(CHUNK)
                    if chunk:
                        await tx.write_all(chunk)
            await otx.write(Ok(None))
            await done_tx.write(Ok(None))

        rt.spawn(pump())
        upstream = str(status).encode()
        headers = Fields.from_list([("content-type", kind[0]), ("x-upstream", upstream)])
        response = Response.new(headers, rx, orx)[0]
        response.set_status_code(status)
        return response
