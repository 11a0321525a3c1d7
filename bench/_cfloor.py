"""The C-extension floor of ``bench/boundary.py``: ``bench/c_floor.c``, built on first use.

Compiled with the C compiler and Python headers of this interpreter
(``sysconfig``) into ``~/.cache/polyengine/bench`` (``POLYENGINE_CACHE_DIR``
if set); :func:`load` returns ``None`` when that is impossible (no compiler),
and the benchmarks then print the floor as unavailable.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shlex
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

_SOURCE = Path(__file__).resolve().parent / "c_floor.c"


def _cache_dir() -> Path:
    base = os.environ.get("POLYENGINE_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "polyengine"
    return root / "bench"


def load() -> ModuleType | None:
    """The built ``c_floor`` module, or ``None`` if it cannot be built here."""
    src = _SOURCE.read_bytes()
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    tag = hashlib.sha256(src + sys.version.encode()).hexdigest()[:16]
    out = _cache_dir() / f"c_floor-{tag}{suffix}"
    if not out.exists():
        cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
        include = sysconfig.get_paths()["include"]
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(out.suffix + f".{os.getpid()}")
        cmd = [*cc, "-O2", "-shared", "-fPIC", f"-I{include}", str(_SOURCE), "-o", str(tmp)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        except OSError:
            return None
        if proc.returncode != 0:
            return None
        os.replace(tmp, out)
    spec = importlib.util.spec_from_file_location("c_floor", out)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ADD = """(module (func (export "add") (param i32 i32) (result i32)
  (i32.add (local.get 0) (local.get 1))))"""


def add_floor() -> Callable[[int, int], int] | None:
    """``add(a, b)`` of a core module of its own through the C floor (``None``: not built).

    The module runs in a wasmtime-py store kept for the life of the process.
    One floor at a time: the C side holds a single (store, function) pair.
    """
    import ctypes

    import wasmtime
    from wasmtime import _ffi as wffi

    module = load()
    if module is None:
        return None
    store = wasmtime.Store(wasmtime.Engine())
    inst = wasmtime.Instance(store, wasmtime.Module(store.engine, _ADD), [])
    func = inst.exports(store)["add"]
    assert isinstance(func, wasmtime.Func)
    call = ctypes.cast(wffi.dll.wasmtime_func_call_unchecked, ctypes.c_void_p).value
    module.setup(call, ctypes.addressof(store._context().contents), ctypes.addressof(func._func))
    _keep.append((store, inst, func))
    c_add: Callable[[int, int], int] = module.add
    return c_add


#: the stores of the floors handed out (the C side holds raw pointers into them)
_keep: list[object] = []
