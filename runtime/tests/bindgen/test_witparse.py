"""``bindgen --wit``: our WIT parser gives the world the component built from the WIT has.

For every golden world the module written from the WIT text equals the
golden written from the component (all but the header naming the source)
and has its ``WORLD_DIGEST``; for further worlds exercising the rest of
WIT (``include``, nested packages, top-level ``use``, gates, ``deps/``, ...)
the Plan read from WIT has the same imports, exports and resources as the
one ``polyengine.translate`` reads from the component ``wasm-tools`` builds.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import polyengine
from polyengine.bindgen import Options, WitError, generate, load_wit, render_wit
from polyengine.bindings import world_digest
from polyengine.cli import main
from polyengine.translate import Plan

from .support import EXPECTED, GOLDEN, GOLDEN_NAMES, build_component, load_module

_HEADER = 4  # the lines naming the source: the generator comment, Source, sha256, docstring


def _shape(plan: Plan) -> tuple[object, ...]:
    return (
        [(i.name, i.desc, i.implements) for i in plan.imports],
        [(e.name, e.desc, e.implements) for e in plan.exports],
        [(r.name, r.imported, r.import_path) for r in plan.resources],
    )


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_wit_bindings_equal_the_golden(name: str, golden_components: dict[str, bytes]) -> None:
    wit = load_wit(GOLDEN / f"{name}.wit")
    text = generate(wit.plan, Options(wit.source, wit.sha256))
    golden = (EXPECTED / f"{name}_bindings.py").read_text()
    assert text.splitlines(keepends=True)[_HEADER:] == golden.splitlines(keepends=True)[_HEADER:]
    plan = polyengine.translate(golden_components[name]).plan
    assert world_digest(wit.plan) == world_digest(plan)
    assert _shape(wit.plan) == _shape(plan)


def test_cli_bindgen_wit_header_names_the_wit(tmp_path: Path) -> None:
    out = tmp_path / "shop_bindings.py"
    src = GOLDEN / "shop.wit"
    assert main(["bindgen", "--wit", str(src), "--world", "shop", "-o", str(out)]) == 0
    text = out.read_text()
    head = text.splitlines()[:_HEADER]
    assert head[1] == "# Source: shop.wit (world demo:shop/shop@0.1.0)"
    files = f"shop.wit\0{hashlib.sha256(src.read_bytes()).hexdigest()}\n"
    assert head[2] == f"# sha256:{hashlib.sha256(files.encode()).hexdigest()}"
    golden = (EXPECTED / "shop_bindings.py").read_text()
    assert text.splitlines()[_HEADER:] == golden.splitlines()[_HEADER:]
    assert main(["bindgen", "--wit", str(src), "-o", str(out), "--check"]) == 0
    module = load_module(out, "shop_wit_bindings")
    golden_module = load_module(EXPECTED / "shop_bindings.py", "shop_bindings")
    assert module.WORLD_DIGEST == golden_module.WORLD_DIGEST


def test_cli_bindgen_wit_stubs_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bindgen", "--wit", str(GOLDEN / "shop.wit"), "--stubs"]) == 0
    assert "import shop_bindings as _b" in capsys.readouterr().out
    bad = tmp_path / "bad.wit"
    bad.write_text("package a:b;\ninterface i {\n  f: func() -> nope;\n}\n")
    assert main(["bindgen", "--wit", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"polyengine bindgen: error: {bad}:3:16: unknown type 'nope'" in err
    assert main(["bindgen"]) == 1
    assert "needs a component (.wasm) or --wit PATH" in capsys.readouterr().err
    assert main(["bindgen", str(bad), "--wit", str(bad)]) == 1
    assert "not both" in capsys.readouterr().err
    assert main(["bindgen", str(bad), "--world", "w"]) == 1
    assert "--world selects a world of --wit" in capsys.readouterr().err
    assert main(["bindgen", "--wit", str(GOLDEN / "shop.wit"), "--world", "nope"]) == 1
    assert "world 'nope' is not defined in package demo:shop@0.1.0" in capsys.readouterr().err


def test_cli_wit_normalizes_a_world(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], wasm_tools: str
) -> None:
    src = GOLDEN / "shop.wit"
    assert main(["wit", "--wit", str(src)]) == 0
    text = capsys.readouterr().out
    # The import the export implies is explicit, and the text parses back to the same world.
    assert "  import demo:shop/types@0.1.0;\n" in text
    again = tmp_path / "again.wit"
    again.write_text(text)
    assert world_digest(load_wit(again, "root").plan) == world_digest(load_wit(src).plan)
    component = polyengine.translate(build_component(wasm_tools, again, "root")).plan
    assert world_digest(component) == world_digest(load_wit(src).plan)
    assert main(["wit"]) == 1
    assert "give a component (.wasm) or --wit PATH" in capsys.readouterr().err


# -- the rest of WIT, against the components wasm-tools builds -----------------------------

CASES: dict[str, tuple[str, str | None]] = {
    "include-nested-toplevel-use": (
        """
package t:b;

package t:other@0.2.0 {
  interface util {
    record meta { k: string, v: option<list<u8>> }
    resource handle {
      constructor(m: meta) -> result<handle, string>;
      get: async func() -> meta;
      mk: static async func() -> handle;
    }
    type pair = tuple<meta, u32>;
  }
  world base { import util; export ping: func(); }
}

use t:other/util@0.2.0 as u;

/// Docs are ignored.
interface x1 {
  use u.{meta, handle as h};
  enum e { a, b }
  record later { m: meta, e: e, f: fl }  // used before it is defined
  flags fl { one, two }
  get: func(p: borrow<h>) -> later;
}
interface x2 {
  use x1.{later, e};
  resource own-res;
  put: func(l: later) -> own-res;
  take: func(r: own-res, ee: e) -> result<_, e>;
}
world w {
  include t:other/base@0.2.0;
  import inl: interface { use x1.{e}; hi: func(a: e) -> string; }
  export x2;
  export run: async func(s: stream<u8>) -> future<result<string>>;
}
world w2 {
  include w with { ping as pong, inl as inl2 }
  import ping: func();
}
""",
        "w2",
    ),
    "world-types-and-resources": (
        """
package t:a@1.0.0;
interface base {
  resource r0;
  type sz = u32;
  type al = list<sz>;
  record unused { a: u8 }
  record used { b: sz }
}
interface i1 { use base.{r0, sz, used}; f: func(x: sz, y: used) -> r0; }
interface e1 {
  use base.{r0};
  a: func();
  resource ra;
  resource rb { constructor(); m: func(x: list<ra, 2>); }
  g: func(a: r0) -> ra;
}
interface e2 { resource rc; h: func() -> rc; }
world w {
  import i1;
  use base.{al};
  type wt = u8;
  record wr { x: wt }
  resource wres;
  import top: func(a: al, b: wr) -> wres;
  export e2;
  export e1;
  export z: func();
}
""",
        None,
    ),
    "gates-and-keywords": (
        """
package t:u@1.0.0;
@since(version = 1.0.0)
interface i {
  @since(version = 1.0.0)
  a: func();
  @unstable(feature = fancy)
  b: func();
  @unstable(feature = fancy)
  record r { x: u8 }
  resource res { @unstable(feature = fancy) m: func(); n: func(); }
  @since(version = 1.0.0)
  @deprecated(version = 1.0.0)
  c: func();
  /* block /* nested */ comment */
  %use: func(%func: %flags) -> %map;
  flags %flags { %list }
  type %map = map<string, list<tuple<u8, char>>>;
}
@unstable(feature = fancy)
interface gone { x: func(); }
world w {
  import i;
  @unstable(feature = fancy)
  import j: func();
  export k: func() -> result;
}
""",
        None,
    ),
    "implements-and-inline": (
        """
package t:im@0.1.0;
interface store { get: func(k: string) -> option<string>; }
world w {
  import primary: store;
  import secondary: store;
  export my-store: store;
  export store;
  export direct: interface { f: func() -> error-context; }
}
""",
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_wit_plan_equals_the_component(case: str, tmp_path: Path, wasm_tools: str) -> None:
    text, world = CASES[case]
    src = tmp_path / "world.wit"
    src.write_text(text)
    wit = load_wit(src, world)
    plan = polyengine.translate(build_component(wasm_tools, src, world)).plan
    assert _shape(wit.plan) == _shape(plan)
    assert world_digest(wit.plan) == world_digest(plan)
    opts = Options("x", "0")
    assert generate(wit.plan, opts) == generate(plan, opts)


def test_export_using_another_export(tmp_path: Path, wasm_tools: str) -> None:
    src = tmp_path / "world.wit"
    src.write_text(
        "package t:f;\n"
        "interface x1 { enum e { a, b } record later { e: e } get: func() -> later; }\n"
        "interface x2 { use x1.{later, e}; put: func(l: later) -> e; }\n"
        "world w { export x2; export x1; }\n"
    )
    wit = load_wit(src)
    plan = polyengine.translate(build_component(wasm_tools, src)).plan
    assert _shape(wit.plan) == _shape(plan)


def test_deps_folder(tmp_path: Path, wasm_tools: str) -> None:
    root = tmp_path / "wit"
    (root / "deps" / "clocks").mkdir(parents=True)
    (root / "world.wit").write_text(
        "package app:main;\n"
        "world app {\n  import dep:logging/log@1.0.0;\n  export run: func();\n}\n"
    )
    (root / "types.wit").write_text(
        "interface extra { use dep:clocks/types.{instant}; now: func() -> instant; }\n"
        "world app2 { include app; import extra; }\n"
    )
    (root / "deps" / "logging.wit").write_text(
        "package dep:logging@1.0.0;\n"
        "interface log { use dep:clocks/types.{instant}; log: func(at: instant, m: string); }\n"
    )
    (root / "deps" / "clocks" / "a.wit").write_text(
        "package dep:clocks;\ninterface types { use more.{secs}; record instant { s: secs } }\n"
    )
    (root / "deps" / "clocks" / "b.wit").write_text("interface more { type secs = u64; }\n")
    for world in ("app", "app2"):
        wit = load_wit(root, world)
        plan = polyengine.translate(build_component(wasm_tools, root, world)).plan
        assert _shape(wit.plan) == _shape(plan)
        assert world_digest(wit.plan) == world_digest(plan)
    names = [i.name for i in load_wit(root, "app2").plan.imports]
    assert names == [
        "dep:clocks/more",
        "dep:clocks/types",
        "app:main/extra",
        "dep:logging/log@1.0.0",
    ]
    assert load_wit(root, "app:main/app").plan == load_wit(root, "app").plan


# -- errors name file:line:col ---------------------------------------------------------------

BAD: list[tuple[str, str, str]] = [
    ("interface i {}\n", "1:1", "no 'package ns:name;' declaration"),
    ("package a:b;\ninterface i {\n  f: func() -> nope;\n}\n", "3:16", "unknown type 'nope'"),
    (
        "package a:b;\ninterface i { record r { a: u8, } record r { b: u8 } }\n",
        "2:42",
        "defined more than once",
    ),
    (
        "package a:b;\nworld w { import nope; }\n",
        "2:18",
        "interface 'nope' is not defined in package a:b",
    ),
    ("package a:b;\nworld w { import x:y/z; }\n", "2:18", "package x:y is not defined"),
    (
        "package a:b;\ninterface i { use j.{t}; }\ninterface j { use i.{u}; type t = u8; }\n",
        "3:19",
        "cyclic use",
    ),
    ("package a:b;\ninterface i { type a = b; type b = a; }\n", "2:24", "depends on itself"),
    (
        "package a:b;\ninterface i { use j.{missing}; }\ninterface j {}\n",
        "2:22",
        "type 'missing' is not defined in interface a:b/j",
    ),
    (
        "package a:b;\ninterface i {\n  record r { x: u8 }\n  f: func(b: borrow<r>);\n}\n",
        "4:21",
        "'r' is not a resource",
    ),
    (
        "package a:b;\ninterface i { f: func(a: u8, a: u8); }\n",
        "2:30",
        "parameter 'a' is defined more than once",
    ),
    ("package a:b;\ninterface i { record: func(); }\n", "2:15", "write %record"),
    ("package a:b;\ninterface i { f: func() -> list<u8, 0>; }\n", "2:37", "fixed-size list"),
    ("package a:b;\ninterface i { f: func() }\n", "2:25", "expected ';'"),
    ("package a:b;\ninterface i { f: func(x: u8 }\n", "2:29", "expected ',' or ')'"),
    ("package a:b@1.0;\n", "1:13", "not a semantic version"),
    ("package a:b;\ninterface Bad-name {}\n", "2:11", "not a valid identifier"),
    (
        "package a:b;\ninterface i { @sinse(version = 1.0.0) f: func(); }\n",
        "2:15",
        "unknown attribute @sinse",
    ),
    (
        "package a:b;\nworld w { import f: func(); import f: func(); }\n",
        "2:36",
        "import 'f' is defined more than once",
    ),
    (
        "package a:b;\nworld v { import f: func(); }\nworld w { import f: func(); include v; }\n",
        "3:29",
        "conflicts",
    ),
    ("package a:b;\nworld w { include w; }\n", "2:19", "cyclic include"),
    ("package a:b;\ninterface i { /* open\n", "2:15", "unterminated block comment"),
    ("package a:b;\ninterface i { enum e {} }\n", "2:23", "needs at least one case"),
    (
        "package a:b;\ninterface i { f: func(x: result<_>); }\n",
        "2:34",
        "expected ',' and the error type",
    ),
    ("package a:b;\ninterface i { f: func() -> map<u8>; }\n", "2:28", "map takes 2 type arguments"),
    ("package a:b;\ninterface i {} $\n", "2:16", "unexpected character '$'"),
]


@pytest.mark.parametrize(("text", "where", "message"), BAD, ids=[m for _, _, m in BAD])
def test_errors_name_file_line_col(text: str, where: str, message: str, tmp_path: Path) -> None:
    src = tmp_path / "bad.wit"
    src.write_text(text)
    with pytest.raises(WitError) as info:
        load_wit(src)
    assert str(info.value).startswith(f"{src}:{where}: "), str(info.value)
    assert message in str(info.value)


def test_world_selection_errors(tmp_path: Path) -> None:
    src = tmp_path / "two.wit"
    src.write_text("package a:b;\nworld v {}\nworld w {}\n")
    with pytest.raises(WitError, match=r"has 2 worlds \(v, w\); choose one with --world"):
        load_wit(src)
    assert load_wit(src, "w").world.name == "w"
    with pytest.raises(WitError, match="no such file or directory"):
        load_wit(tmp_path / "missing")


# -- real guests: polyengine wit and wasm-tools component wit, parsed back -----------------


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "py-stub-values",
        "py-async",
        "js-qjs",
        "js-sm",
        "c-abi",
        "c-hello",
        "py-p3-run",
        "py-values-composed",
    ],
)
def test_real_guest_wit_parses_to_its_digest(name: str, wasm_tools: str, tmp_path: Path) -> None:
    import subprocess

    from .test_real_guests import guest

    data = guest(name)
    plan = polyengine.translate(data).plan
    ours = tmp_path / "ours.wit"
    ours.write_text(render_wit(plan))
    wasm = tmp_path / "guest.wasm"
    wasm.write_bytes(data)
    theirs = tmp_path / "theirs.wit"
    theirs.write_text(
        subprocess.run(
            [wasm_tools, "component", "wit", str(wasm)], capture_output=True, text=True, check=True
        ).stdout
    )
    for src in (ours, theirs):
        assert world_digest(load_wit(src, "root").plan) == world_digest(plan), src.name
    # wasm-tools' text, built into a component again, is the world we read from it.
    dummy = polyengine.translate(build_component(wasm_tools, theirs, "root")).plan
    assert _shape(load_wit(theirs, "root").plan) == _shape(dummy)


REPO = Path(__file__).resolve().parents[3]
# Guests whose WASI packages are copied into wit/deps/ only when they are built
# (GuestSpec.wasi_wit in runtime/tests/guests/_build.py): their directory in the
# repository is not a complete WIT package on its own.
def _deps_at_build() -> set[str]:
    from .test_real_guests import _builder

    return {name for name, spec in _builder().GUESTS.items() if spec.wasi_wit is not None}


DEPS_AT_BUILD = _deps_at_build()
WIT_DIRS = sorted(
    p.relative_to(REPO).as_posix()
    for p in [*REPO.glob("runtime/tests/guests/*/wit"), *REPO.glob("examples/*/wit")]
    if p.parent.name not in DEPS_AT_BUILD
)


@pytest.mark.slow
@pytest.mark.parametrize("path", WIT_DIRS)
def test_guest_wit_directories(path: str, wasm_tools: str) -> None:
    """The guests' own WIT (WASI packages in deps/, docs, gates) reads as wasm-tools reads it."""
    wit = load_wit(REPO / path)
    plan = polyengine.translate(build_component(wasm_tools, REPO / path)).plan
    assert _shape(wit.plan) == _shape(plan)
    opts = Options("x", "0")
    assert generate(wit.plan, opts) == generate(plan, opts)


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("name", ["c-abi", "py-stub-values"])
def test_wit_bindings_verify_the_real_guest(name: str, tmp_path: Path) -> None:
    """Bindings from a guest's WIT accept the guest its toolchain built from that WIT."""
    from .test_real_guests import guest

    out = tmp_path / "from_wit.py"
    assert (
        main(
            ["bindgen", "--wit", str(REPO / "runtime/tests/guests" / name / "wit"), "-o", str(out)]
        )
        == 0
    )
    module = load_module(out, f"{name.replace('-', '_')}_wit_bindings")
    module.verify(polyengine.translate(guest(name)).plan)
