"""``polyengine translate`` and ``polyengine inspect``."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from polyengine.cli import main
from polyengine.translate import artifacts_from_envelope, translate

Wat = Callable[[str], bytes]

WORLD = """
(component
  (import "wasi:io/streams@0.2.0" (instance $io
    (export "output-stream" (type $os (sub resource)))
    (type $e (enum "closed" "failed"))
    (export "stream-error" (type $se (eq $e)))
    (type $r (record (field "a" u32) (field "b" string)))
    (export "pt" (type $pt (eq $r)))
    (export "[method]output-stream.write"
      (func (param "self" (borrow $os)) (param "contents" (list u8)) (result (result (error $se)))))
    (export "[static]output-stream.open" (func (result (own $os))))
    (export "make" (func (param "p" $pt) (result (own $os))))
  ))
  (import "wasi:clocks/monotonic-clock@0.2.1" (instance
    (export "now" (func (result u64)))
  ))
  (import "log" (func (param "msg" string)))
  (core module $m
    (memory (export "mem") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) unreachable)
    (func (export "run") (param i32 i32) (result i32) unreachable)
    (func (export "type") (result i32) unreachable)
  )
  (core instance $i (instantiate $m))
  (func $run (param "x" string) (result u32)
    (canon lift (core func $i "run") (memory (core memory $i "mem"))
      (realloc (core func $i "realloc"))))
  (func $type (result u32) (canon lift (core func $i "type")))
  (instance $api (export "run" (func $run)) (export "type" (func $type)))
  (export "my:app/api@1.0.0" (instance $api))
  (export "run" (func $run))
)
"""


def _parse_wit(text: str) -> tuple[set[str], set[tuple[str, str]], set[tuple[str, str]]]:
    """Interfaces, (interface, function) pairs and world items of WIT text."""
    interfaces: set[str] = set()
    funcs: set[tuple[str, str]] = set()
    world: set[tuple[str, str]] = set()
    package = iface = ""
    for line in text.splitlines():
        s = line.strip()
        if m := re.match(r"package ([^ ;{]+) \{", s):
            package = m[1]
        elif m := re.match(r"interface ([\w-]+) \{", s):
            iface = f"{package}/{m[1]}"
            interfaces.add(iface)
        elif (m := re.match(r"(import|export) (.+?)(?:;$|: )", s)) and line.startswith("  "):
            if not line.startswith("    "):
                world.add((m[1], m[2]))
        elif m := re.match(r"%?([\w-]+): (static )?(async )?func", s):
            funcs.add((iface, m[1]))
        elif s.startswith("constructor("):
            funcs.add((iface, "constructor"))
    return interfaces, funcs, world


def test_inspect_matches_wasm_tools(
    wat2wasm: Wat, wasm_tools: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "app.wasm"
    path.write_bytes(wat2wasm(WORLD))
    assert main(["inspect", str(path)]) == 0
    ours = capsys.readouterr().out
    theirs = subprocess.run(
        [wasm_tools, "component", "wit", str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert _parse_wit(ours) == _parse_wit(theirs)
    interfaces, funcs, world = _parse_wit(ours)
    assert "wasi:io@0.2.0/streams" in interfaces
    assert ("wasi:io@0.2.0/streams", "write") in funcs
    assert ("import", "log") in world and ("export", "my:app/api@1.0.0") in world
    assert "%type: func() -> u32;" in ours  # keywords are escaped
    assert "enum stream-error {" in ours


def test_inspect_plan_summary(
    wat2wasm: Wat, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "app.wasm"
    path.write_bytes(wat2wasm(WORLD))
    assert main(["inspect", "--plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "core modules: 1 " in out
    assert "// core instances: 1" in out
    assert "// resources: 1" in out


def test_translate_writes_envelope(
    wat2wasm: Wat, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = wat2wasm(WORLD)
    path = tmp_path / "app.wasm"
    path.write_bytes(data)
    out = tmp_path / "app.plan.json"
    assert main(["translate", str(path), "-o", str(out)]) == 0
    env = json.loads(out.read_text())
    assert env == json.loads(json.dumps(translate(data).to_envelope()))
    assert artifacts_from_envelope(env, data).plan == translate(data).plan
    assert main(["translate", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == env


@pytest.mark.parametrize("verb", ["translate", "inspect"])
def test_errors_exit_1_without_traceback(
    verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.wasm"
    bad.write_bytes(b"\0asm\x0d\0\x01\0\x07\x05")
    assert main([verb, str(bad)]) == 1
    err = capsys.readouterr().err
    assert "error" in err and "Traceback" not in err
    assert main([verb, str(tmp_path / "missing.wasm")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_module_entry_point(tmp_path: Path) -> None:
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "polyengine", "inspect", str(tmp_path / "nope.wasm")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr


def _cached_guests() -> list[Path]:
    root = os.environ.get("POLYENGINE_GUEST_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "polyengine" / "guests"
    return sorted(base.glob("*.wasm")) if base.is_dir() else []


@pytest.mark.slow
@pytest.mark.toolchain
@pytest.mark.parametrize(
    "guest",
    _cached_guests()
    or [pytest.param(None, marks=pytest.mark.skip(reason="no real guests built yet"))],
    ids=lambda p: p.name.rsplit("-", 1)[0] if isinstance(p, Path) else "none",
)
def test_inspect_real_guests_match_wasm_tools(
    guest: Path, wasm_tools: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(guest)]) == 0
    ours = capsys.readouterr().out
    theirs = subprocess.run(
        [wasm_tools, "component", "wit", str(guest)], capture_output=True, text=True, check=True
    ).stdout
    assert _parse_wit(ours) == _parse_wit(theirs)
