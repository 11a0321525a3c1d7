"""Probe components of the 0.3 task model: streams, futures, error-contexts.

All exports are stackful async lifts that return through ``task.return``;
the components and their pieces come from the shared probe library
(``runtime/tests/wat_probes.py``), which the embed tests use too.
"""

from __future__ import annotations

from ..wat_probes import (
    CANCEL,
    CONSUME_BYTES,
    KEEP_FUT,
    LIBC,
    MAKE_FUT,
    MEM,
    PRODUCE,
    PRODUCE_ALL,
    PRODUCE_THEN_TRAP,
    READ_ALL,
    READ_FUT,
    READ_FUT_EXPORT,
    STREAM_BUILTINS,
    STREAM_IMPORTS,
    STREAM_WITH,
    WORDS,
    error_probe,
    stream_probe,
)

__all__ = ["CANCEL", "ERRORS", "PRODUCERS", "STREAMS", "WORDS"]

# ``produce(n)``, ``produce-all(n)``, ``produce-then-trap``, ``consume(s)`` (the
# bytes read, as list<u8>), ``make-fut``, ``read-fut(f)`` and ``keep-fut(f)``.
STREAMS = stream_probe(
    PRODUCE, PRODUCE_ALL, PRODUCE_THEN_TRAP, CONSUME_BYTES, MAKE_FUT, READ_FUT_EXPORT, KEEP_FUT
)

# Imports producing a stream and a future (the host's natural producers);
# ``read-bytes-source`` and ``read-future-source`` read what they return.
PRODUCERS = f"""(component
  {LIBC}
  (import "probe:conv/producers@0.1.0" (instance $p
    (export "bytes-source" (func (result (stream u8))))
    (export "future-source" (func (result (future string))))))
  (alias export $p "bytes-source" (func $bytes-source))
  (alias export $p "future-source" (func $future-source))
  {STREAM_BUILTINS}
  (core func $bytes-source (canon lower (func $bytes-source)))
  (core func $future-source (canon lower (func $future-source)))
  (core module $m
    {STREAM_IMPORTS}
    (import "" "bytes-source" (func $bytes-source (result i32)))
    (import "" "future-source" (func $future-source (result i32)))
    (func (export "read-bytes-source")
      (local $s i32) (local $ret i32) (local $n i32)
      (local.set $s (call $bytes-source))
      {READ_ALL})
    (func (export "read-future-source")
      (local $f i32)
      (local.set $f (call $future-source))
      {READ_FUT}))
  (core instance $i (instantiate $m
    (with "libc" (instance $libc))
    (with "" (instance {STREAM_WITH}
      (export "bytes-source" (func $bytes-source))
      (export "future-source" (func $future-source))))))
  (func (export "read-bytes-source") async (result (list u8))
    (canon lift (core func $i "read-bytes-source") async {MEM}))
  (func (export "read-future-source") async (result string)
    (canon lift (core func $i "read-future-source") async {MEM}))
)"""

# error-context both ways, and through host imports: ``report(e)`` receives a
# guest-made context; ``make()`` returns one the host made.
ERRORS = error_probe(host=True)
