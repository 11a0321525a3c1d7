from componentize_py_types import Ok
from wit_world import exports
from wit_world.imports.types import (
    Fields,
    IncomingRequest,
    Method_Post,
    OutgoingBody,
    OutgoingResponse,
    ResponseOutparam,
)


class IncomingHandler(exports.IncomingHandler):
    def handle(self, request: IncomingRequest, response_out: ResponseOutparam) -> None:
        path = request.path_with_query() or "/"
        body = b"hello from python at " + path.encode() + b"\n"
        if isinstance(request.method(), Method_Post):
            # The stream is a child of the incoming-body: drop it first.
            incoming = request.consume()
            stream = incoming.stream()
            data = b""
            while True:
                try:
                    data += stream.blocking_read(65536)
                except Exception:
                    break
            stream.__exit__(None, None, None)
            incoming.__exit__(None, None, None)
            body = data
        headers = Fields.from_list([("content-type", b"text/plain")])
        response = OutgoingResponse(headers)
        out_body = response.body()
        ResponseOutparam.set(response_out, Ok(response))
        out = out_body.write()
        for i in range(0, len(body), 4096):
            out.blocking_write_and_flush(body[i:i + 4096])
        out.__exit__(None, None, None)
        OutgoingBody.finish(out_body, None)
