"""polyengine: a WebAssembly Component Model host for Python.

The application surface (python-mapping.md §7): :func:`translate`,
:func:`instantiate`, :func:`required_imports`, :func:`artifacts_from_envelope`,
the named errors, :class:`Limits` (bounds for an untrusted guest), and the
submodules :mod:`polyengine.sync` (the blocking
facade) and :mod:`polyengine.testing` (the conformance runner). Host modules
import :mod:`polyengine_protocol`, never this package.

Importing the package is cheap: the names that need the embedder and the
engine (and through them wasmtime and asyncio) are imported on first use
(PEP 562 module ``__getattr__``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyengine.errors import LinkError as LinkError
from polyengine.errors import NameCollisionError as NameCollisionError
from polyengine.errors import TranslationError as TranslationError
from polyengine.faces import lazy_face
from polyengine.limits import LimitCode as LimitCode
from polyengine.limits import Limits as Limits

# ``translate`` the function shadows the subpackage of the same name: bind it
# here, before anything else imports the subpackage and sets the attribute to
# the module. The face of polyengine.translate imports nothing until used.
from polyengine.translate import translate as translate
from polyengine_protocol import register_runtime_copy as _register_runtime_copy

if TYPE_CHECKING:
    from polyengine.embed import ImportLeaf as ImportLeaf
    from polyengine.embed import Instance as Instance
    from polyengine.embed import MissingImportError as MissingImportError
    from polyengine.embed import create_stream as create_stream
    from polyengine.embed import instantiate as instantiate
    from polyengine.embed import required_imports as required_imports
    from polyengine.translate import Artifacts as Artifacts
    from polyengine.translate import artifacts_from_envelope as artifacts_from_envelope

__version__ = "0.1.0"

# embedder-api A9: this copy of the runtime is in the process-global registry,
# so the diagnostics of every copy can name all of them.
_register_runtime_copy(__version__, module=__file__)

__all__ = [
    "Artifacts",
    "ImportLeaf",
    "Instance",
    "LimitCode",
    "Limits",
    "LinkError",
    "MissingImportError",
    "NameCollisionError",
    "TranslationError",
    "__version__",
    "artifacts_from_envelope",
    "create_stream",
    "instantiate",
    "required_imports",
    "translate",
]

#: the module of each name imported on first use
_LAZY = {
    **dict.fromkeys(
        (
            "ImportLeaf",
            "Instance",
            "MissingImportError",
            "create_stream",
            "instantiate",
            "required_imports",
        ),
        "polyengine.embed",
    ),
    "Artifacts": "polyengine.translate.artifacts",
    "artifacts_from_envelope": "polyengine.translate.artifacts",
}

__getattr__, __dir__ = lazy_face(globals(), _LAZY)
