"""wasi:http 0.2 ``proxy`` test guests in the component text format.

Each guest imports the few functions of ``wasi:http/types``,
``wasi:io/streams``, ``wasi:io/poll`` and ``wasi:clocks/monotonic-clock``
(0.2.12) it needs, typed as those interfaces define them, and exports
``wasi:http/incoming-handler@0.2.12``'s ``handle``. They compile with
``wasm-tools parse`` in milliseconds, so the serve tests need no toolchain.

* ``HELLO``: 200, ``content-type: text/plain``, body ``hello from wasm\\n``.
* ``ECHO``: 200, ``x-echo: 1``; each chunk the guest reads from the request
  body is written back as it comes; then trailers ``x-trailer: done``.
* ``NOREPLY``: returns without setting a response.
* ``TRAP``: traps before responding.
* ``PARTIAL``: responds, writes one chunk, then traps.
* ``HANG``: blocks on a one-hour monotonic-clock pollable.
"""

from __future__ import annotations

V = "0.2.12"

_ERROR_CODE = """
      (type $dns (record (field "rcode" (option string)) (field "info-code" (option u16))))
      (export "DNS-error-payload" (type $dns-t (eq $dns)))
      (type $tls (record (field "alert-id" (option u8)) (field "alert-message" (option string))))
      (export "TLS-alert-received-payload" (type $tls-t (eq $tls)))
      (type $fsp (record (field "field-name" (option string)) (field "field-size" (option u32))))
      (export "field-size-payload" (type $fsp-t (eq $fsp)))
      (type $ec (variant
        (case "DNS-timeout") (case "DNS-error" $dns-t) (case "destination-not-found")
        (case "destination-unavailable") (case "destination-IP-prohibited")
        (case "destination-IP-unroutable") (case "connection-refused")
        (case "connection-terminated") (case "connection-timeout")
        (case "connection-read-timeout") (case "connection-write-timeout")
        (case "connection-limit-reached") (case "TLS-protocol-error")
        (case "TLS-certificate-error") (case "TLS-alert-received" $tls-t)
        (case "HTTP-request-denied") (case "HTTP-request-length-required")
        (case "HTTP-request-body-size" (option u64)) (case "HTTP-request-method-invalid")
        (case "HTTP-request-URI-invalid") (case "HTTP-request-URI-too-long")
        (case "HTTP-request-header-section-size" (option u32))
        (case "HTTP-request-header-size" (option $fsp-t))
        (case "HTTP-request-trailer-section-size" (option u32))
        (case "HTTP-request-trailer-size" $fsp-t) (case "HTTP-response-incomplete")
        (case "HTTP-response-header-section-size" (option u32))
        (case "HTTP-response-header-size" $fsp-t)
        (case "HTTP-response-body-size" (option u64))
        (case "HTTP-response-trailer-section-size" (option u32))
        (case "HTTP-response-trailer-size" $fsp-t)
        (case "HTTP-response-transfer-coding" (option string))
        (case "HTTP-response-content-coding" (option string))
        (case "HTTP-response-timeout") (case "HTTP-upgrade-failed") (case "HTTP-protocol-error")
        (case "loop-detected") (case "configuration-error")
        (case "internal-error" (option string))))
      (export "error-code" (type $error-code (eq $ec)))
"""

_IMPORTS = f"""
  (import "wasi:io/error@{V}" (instance $io-error (export "error" (type (sub resource)))))
  (alias export $io-error "error" (type $error))
  (import "wasi:io/poll@{V}" (instance $poll
    (export "pollable" (type $p (sub resource)))
    (export "[method]pollable.block" (func (param "self" (borrow $p))))))
  (alias export $poll "pollable" (type $pollable))
  (import "wasi:clocks/monotonic-clock@{V}" (instance $clock
    (alias outer $C $pollable (type $p)) (export "pollable" (type $pt (eq $p)))
    (type $d u64) (export "duration" (type $duration (eq $d)))
    (export "subscribe-duration" (func (param "when" $duration) (result (own $pt))))))
  (import "wasi:io/streams@{V}" (instance $streams
    (alias outer $C $error (type $e)) (export "error" (type $err (eq $e)))
    (export "input-stream" (type $is (sub resource)))
    (export "output-stream" (type $os (sub resource)))
    (type $se (variant (case "last-operation-failed" (own $err)) (case "closed")))
    (export "stream-error" (type $stream-error (eq $se)))
    (export "[method]input-stream.blocking-read"
      (func (param "self" (borrow $is)) (param "len" u64)
        (result (result (list u8) (error $stream-error)))))
    (export "[method]output-stream.blocking-write-and-flush"
      (func (param "self" (borrow $os)) (param "contents" (list u8))
        (result (result (error $stream-error)))))))
  (alias export $streams "input-stream" (type $input-stream))
  (alias export $streams "output-stream" (type $output-stream))
  (import "wasi:http/types@{V}" (instance $types
    (alias outer $C $input-stream (type $is0)) (export "input-stream" (type $is (eq $is0)))
    (alias outer $C $output-stream (type $os0)) (export "output-stream" (type $os (eq $os0)))
    {_ERROR_CODE}
    (type $he (variant (case "invalid-syntax") (case "forbidden") (case "immutable")))
    (export "header-error" (type $header-error (eq $he)))
    (export "fields" (type $fields (sub resource)))
    (export "incoming-request" (type $incoming-request (sub resource)))
    (export "response-outparam" (type $response-outparam (sub resource)))
    (export "incoming-body" (type $incoming-body (sub resource)))
    (export "outgoing-response" (type $outgoing-response (sub resource)))
    (export "outgoing-body" (type $outgoing-body (sub resource)))
    (export "[constructor]fields" (func (result (own $fields))))
    (export "[method]fields.append"
      (func (param "self" (borrow $fields)) (param "name" string) (param "value" (list u8))
        (result (result (error $header-error)))))
    (export "[method]incoming-request.consume"
      (func (param "self" (borrow $incoming-request)) (result (result (own $incoming-body)))))
    (export "[method]incoming-body.stream"
      (func (param "self" (borrow $incoming-body)) (result (result (own $is)))))
    (export "[constructor]outgoing-response"
      (func (param "headers" (own $fields)) (result (own $outgoing-response))))
    (export "[method]outgoing-response.body"
      (func (param "self" (borrow $outgoing-response)) (result (result (own $outgoing-body)))))
    (export "[method]outgoing-body.write"
      (func (param "self" (borrow $outgoing-body)) (result (result (own $os)))))
    (export "[static]outgoing-body.finish"
      (func (param "this" (own $outgoing-body)) (param "trailers" (option (own $fields)))
        (result (result (error $error-code)))))
    (export "[static]response-outparam.set"
      (func (param "param" (own $response-outparam))
        (param "response" (result (own $outgoing-response) (error $error-code)))))))
  (alias export $types "fields" (type $fields))
  (alias export $types "incoming-request" (type $incoming-request))
  (alias export $types "response-outparam" (type $response-outparam))
  (alias export $types "incoming-body" (type $incoming-body))
  (alias export $types "outgoing-response" (type $outgoing-response))
  (alias export $types "outgoing-body" (type $outgoing-body))
"""

_LOWERED = """
  (core module $libc
    (memory (export "mem") 2)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 65536)))
  (core instance $libc (instantiate $libc))
  (core func $block (canon lower (func $poll "[method]pollable.block")))
  (core func $subscribe (canon lower (func $clock "subscribe-duration")))
  (core func $read (canon lower (func $streams "[method]input-stream.blocking-read")
    (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
  (core func $write (canon lower (func $streams "[method]output-stream.blocking-write-and-flush")
    (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
  (core func $fields-new (canon lower (func $types "[constructor]fields")))
  (core func $append (canon lower (func $types "[method]fields.append")
    (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
  (core func $consume (canon lower (func $types "[method]incoming-request.consume")
    (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
  (core func $stream (canon lower (func $types "[method]incoming-body.stream")
    (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
  (core func $resp-new (canon lower (func $types "[constructor]outgoing-response")))
  (core func $resp-body (canon lower (func $types "[method]outgoing-response.body")
    (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
  (core func $body-write (canon lower (func $types "[method]outgoing-body.write")
    (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
  (core func $finish (canon lower (func $types "[static]outgoing-body.finish")
    (memory (core memory $libc "mem")) (realloc (core func $libc "realloc"))))
  (core func $set (canon lower (func $types "[static]response-outparam.set")
    (memory (core memory $libc "mem"))))
  (core func $drop-is (canon resource.drop $input-stream))
  (core func $drop-os (canon resource.drop $output-stream))
  (core func $drop-ib (canon resource.drop $incoming-body))
  (core func $drop-req (canon resource.drop $incoming-request))
  (core func $drop-out (canon resource.drop $response-outparam))
  (core func $drop-pollable (canon resource.drop $pollable))
"""

_CORE_IMPORTS = """
    (import "libc" "mem" (memory 2))
    (import "h" "block" (func $block (param i32)))
    (import "h" "subscribe" (func $subscribe (param i64) (result i32)))
    (import "h" "read" (func $read (param i32 i64 i32)))
    (import "h" "write" (func $write (param i32 i32 i32 i32)))
    (import "h" "fields-new" (func $fields-new (result i32)))
    (import "h" "append" (func $append (param i32 i32 i32 i32 i32 i32)))
    (import "h" "consume" (func $consume (param i32 i32)))
    (import "h" "stream" (func $stream (param i32 i32)))
    (import "h" "resp-new" (func $resp-new (param i32) (result i32)))
    (import "h" "resp-body" (func $resp-body (param i32 i32)))
    (import "h" "body-write" (func $body-write (param i32 i32)))
    (import "h" "finish" (func $finish (param i32 i32 i32 i32)))
    (import "h" "set" (func $set (param i32 i32 i32 i32 i64 i32 i32 i32 i32)))
    (import "h" "drop-is" (func $drop-is (param i32)))
    (import "h" "drop-os" (func $drop-os (param i32)))
    (import "h" "drop-ib" (func $drop-ib (param i32)))
    (import "h" "drop-req" (func $drop-req (param i32)))
    (import "h" "drop-out" (func $drop-out (param i32)))
    (import "h" "drop-pollable" (func $drop-pollable (param i32)))
    ;; the i32 payload of a result at the scratch area (256), trapping on err
    (func $ok (result i32)
      (if (i32.load8_u (i32.const 256)) (then unreachable))
      (i32.load (i32.const 260)))
    (func $check
      (if (i32.load8_u (i32.const 256)) (then unreachable)))
    ;; a response with the fields $h; returns its output stream, keeps the body in global 0
    (global $body (mut i32) (i32.const 0))
    (func $respond (param $out i32) (param $h i32) (result i32) (local $resp i32)
      (local.set $resp (call $resp-new (local.get $h)))
      (call $resp-body (local.get $resp) (i32.const 256))
      (global.set $body (call $ok))
      (call $body-write (global.get $body) (i32.const 256))
      (call $set (local.get $out) (i32.const 0) (local.get $resp)
        (i32.const 0) (i64.const 0) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0))
      (call $ok))
    ;; write [ptr, ptr+len) in pieces of at most 4096; 0 when the stream failed
    (func $write-all (param $os i32) (param $ptr i32) (param $len i32) (result i32) (local $n i32)
      (block $done
        (loop $next
          (br_if $done (i32.eqz (local.get $len)))
          (local.set $n (select (i32.const 4096) (local.get $len)
            (i32.gt_u (local.get $len) (i32.const 4096))))
          (call $write (local.get $os) (local.get $ptr) (local.get $n) (i32.const 256))
          (if (i32.load8_u (i32.const 256)) (then (return (i32.const 0))))
          (local.set $ptr (i32.add (local.get $ptr) (local.get $n)))
          (local.set $len (i32.sub (local.get $len) (local.get $n)))
          (br $next)))
      (i32.const 1))
"""

_DATA = """
    (data (i32.const 0) "content-type")
    (data (i32.const 16) "text/plain")
    (data (i32.const 32) "hello from wasm\\0a")
    (data (i32.const 64) "x-echo")
    (data (i32.const 72) "1")
    (data (i32.const 80) "x-trailer")
    (data (i32.const 96) "done")
"""

_INSTANTIATE = """
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "h" (instance
      (export "block" (func $block)) (export "subscribe" (func $subscribe))
      (export "read" (func $read)) (export "write" (func $write))
      (export "fields-new" (func $fields-new)) (export "append" (func $append))
      (export "consume" (func $consume)) (export "stream" (func $stream))
      (export "resp-new" (func $resp-new)) (export "resp-body" (func $resp-body))
      (export "body-write" (func $body-write)) (export "finish" (func $finish))
      (export "set" (func $set)) (export "drop-is" (func $drop-is))
      (export "drop-os" (func $drop-os)) (export "drop-ib" (func $drop-ib))
      (export "drop-req" (func $drop-req)) (export "drop-out" (func $drop-out))
      (export "drop-pollable" (func $drop-pollable))))))
  (func $handle (param "request" (own $incoming-request))
    (param "response-out" (own $response-outparam))
    (canon lift (core func $i "handle")))
  (instance $handler (export "handle" (func $handle)))
  (export "wasi:http/incoming-handler@0.2.12" (instance $handler))
"""


def proxy_guest(handle: str) -> str:
    """A proxy component whose core ``handle(request, out)`` body is ``handle``."""
    return (
        f"(component $C {_IMPORTS} {_LOWERED}\n  (core module $m {_CORE_IMPORTS} {_DATA}\n"
        f"    (func (export \"handle\") (param $req i32) (param $out i32)\n"
        f"      (local $h i32) (local $os i32) (local $body i32) (local $in i32) (local $t i32)\n"
        f"{handle}))\n{_INSTANTIATE})"
    )


HELLO = proxy_guest(
    """
      (local.set $h (call $fields-new))
      (call $append (local.get $h) (i32.const 0) (i32.const 12) (i32.const 16) (i32.const 10)
        (i32.const 256))
      (call $check)
      (local.set $os (call $respond (local.get $out) (local.get $h)))
      (drop (call $write-all (local.get $os) (i32.const 32) (i32.const 16)))
      (call $drop-os (local.get $os))
      (call $finish (global.get $body) (i32.const 0) (i32.const 0) (i32.const 256))
      (call $drop-req (local.get $req))
"""
)

ECHO = proxy_guest(
    """
      (call $consume (local.get $req) (i32.const 256))
      (local.set $body (call $ok))
      (call $stream (local.get $body) (i32.const 256))
      (local.set $in (call $ok))
      (local.set $h (call $fields-new))
      (call $append (local.get $h) (i32.const 64) (i32.const 6) (i32.const 72) (i32.const 1)
        (i32.const 256))
      (call $check)
      (local.set $os (call $respond (local.get $out) (local.get $h)))
      (block $done
        (loop $next
          (call $read (local.get $in) (i64.const 65536) (i32.const 256))
          (br_if $done (i32.load8_u (i32.const 256)))
          (br_if $done (i32.eqz (call $write-all (local.get $os)
            (i32.load (i32.const 260)) (i32.load (i32.const 264)))))
          (br $next)))
      (call $drop-is (local.get $in))
      (call $drop-ib (local.get $body))
      (call $drop-os (local.get $os))
      (local.set $t (call $fields-new))
      (call $append (local.get $t) (i32.const 80) (i32.const 9) (i32.const 96) (i32.const 4)
        (i32.const 256))
      (call $check)
      (call $finish (global.get $body) (i32.const 1) (local.get $t) (i32.const 256))
      (call $drop-req (local.get $req))
"""
)

NOREPLY = proxy_guest(
    """
      (call $drop-out (local.get $out))
      (call $drop-req (local.get $req))
"""
)

TRAP = proxy_guest("      unreachable\n")

PARTIAL = proxy_guest(
    """
      (local.set $os (call $respond (local.get $out) (call $fields-new)))
      (drop (call $write-all (local.get $os) (i32.const 32) (i32.const 16)))
      unreachable
"""
)

HANG = proxy_guest(
    """
      (local.set $t (call $subscribe (i64.const 3600000000000)))
      (call $block (local.get $t))
      (call $drop-pollable (local.get $t))
      (call $drop-out (local.get $out))
"""
)

GUESTS = {
    "hello": HELLO,
    "echo": ECHO,
    "noreply": NOREPLY,
    "trap": TRAP,
    "partial": PARTIAL,
    "hang": HANG,
}
