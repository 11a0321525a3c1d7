"""The runtime's package faces import their names on first use (PEP 562, ``polyengine.faces``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: each lazy face and one name it imports on first use
FACES = [
    ("polyengine", "instantiate"),
    ("polyengine.translate", "Plan"),
    ("polyengine.instance", "HostValues"),
    ("polyengine.embed", "create_stream"),
]


@pytest.mark.parametrize(("face", "name"), FACES)
def test_a_lazy_name_is_listed_before_use_and_bound_after(face: str, name: str) -> None:
    probe = (
        "import importlib, sys\n"
        f"face = importlib.import_module({face!r})\n"
        f"assert {name!r} in dir(face) and {name!r} not in vars(face)\n"
        f"value = getattr(face, {name!r})\n"
        f"assert vars(face)[{name!r}] is value\n"
        "try:\n"
        "    face.no_such_name\n"
        "except AttributeError as exc:\n"
        f"    assert str(exc) == \"module {face!r} has no attribute 'no_such_name'\", exc\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


def test_a_face_made_by_lazy_face_imports_nothing_before_use() -> None:
    probe = (
        "import sys\n"
        "import polyengine.instance\n"
        "assert 'polyengine.instance._hostvalues' not in sys.modules\n"
        "assert 'asyncio' not in sys.modules\n"
        "polyengine.instance.HostValues\n"
        "assert 'polyengine.instance._hostvalues' in sys.modules\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
