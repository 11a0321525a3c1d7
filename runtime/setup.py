"""The build of polyengine's optional compiled call path (architecture.md §5).

Everything else is declared in ``pyproject.toml``.  The one extension,
``polyengine.engine._accel``, needs only a C compiler and Python's own
headers.  When there is no working compiler (a trivial extension source does
not compile), the build says so and goes on without it, and polyengine runs
its pure-Python call path (``polyengine --version`` tells which one is
active).  When the compiler works but the extension's own sources do not
compile, the build fails with the compiler's error: an install that silently
fell back (or kept an extension built earlier in place) would hide a broken
source.  ``POLYENGINE_ACCEL=optional`` skips the extension on any failure;
``POLYENGINE_ACCEL=required`` fails the build even without a compiler.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: "optional": skip the extension on any failure; "required": fail on any
#: failure; unset: skip it only when no working C compiler is found
MODE = os.environ.get("POLYENGINE_ACCEL", "")


class AccelBuildError(RuntimeError):
    """The extension's sources failed to compile with a working compiler."""


class OptionalBuildExt(build_ext):
    """``build_ext`` that skips the extension only when there is nothing to build it with."""

    def run(self) -> None:
        try:
            super().run()
        except AccelBuildError:
            raise
        except Exception as exc:  # e.g. no compiler could be set up at all
            self._failed(exc)

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._failed(exc)

    def _failed(self, exc: BaseException) -> None:
        if MODE == "required" or (MODE != "optional" and self._compiler_works()):
            raise AccelBuildError(
                f"polyengine: the compiled call path failed to build ({type(exc).__name__}: "
                f"{exc}) although the C compiler builds a trivial extension; the error above "
                "is in polyengine's C sources (POLYENGINE_ACCEL=optional installs the "
                "pure-Python path instead)"
            ) from exc
        self._skipped(exc)

    def _compiler_works(self) -> bool:
        """Whether this build's compiler turns a trivial source using Python.h into an object."""
        compiler = getattr(self, "compiler", None)
        if compiler is None or isinstance(compiler, str):
            return False
        try:
            with tempfile.TemporaryDirectory() as tmp:
                src = Path(tmp) / "probe.c"
                src.write_text("#include <Python.h>\nint polyengine_probe(void) { return 0; }\n")
                compiler.compile([str(src)], output_dir=tmp, include_dirs=self.include_dirs)
        except Exception:
            return False
        return True

    def _skipped(self, exc: BaseException) -> None:
        print(
            f"polyengine: the compiled call path was not built ({type(exc).__name__}: {exc}); "
            "the pure-Python path will be used",
            file=sys.stderr,
        )


setup(
    ext_modules=[
        Extension(
            "polyengine.engine._accel",
            sources=["src/polyengine/engine/_accel.c", "src/polyengine/engine/_accel_export.c",
                     "src/polyengine/engine/_accel_link.c",
                     "src/polyengine/engine/_accel_hostlower.c",
                     "src/polyengine/engine/_accel_values.c",
                     "src/polyengine/engine/_accel_guest.c",
                     "src/polyengine/engine/_accel_valuetypes.c",
                     "src/polyengine/engine/_accel_streams.c"],
            depends=["src/polyengine/engine/_accel.h"],
            extra_compile_args=["-O2"] if sys.platform != "win32" else [],
            optional=True,
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
