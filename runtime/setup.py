"""The build of polyengine's optional compiled call path (architecture.md §5).

Everything else is declared in ``pyproject.toml``.  The one extension,
``polyengine.engine._accel``, needs only a C compiler and Python's own
headers; when either is missing, or the compilation fails for any other
reason, the build says so and goes on without it, and polyengine runs its
pure-Python call path (``polyengine --version`` tells which one is active).
"""

from __future__ import annotations

import sys
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """``build_ext`` that never fails the installation."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # any failure means: no extension
            self._skipped(exc)

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._skipped(exc)

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
