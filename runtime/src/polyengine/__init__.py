"""polyengine: a WebAssembly Component Model host for Python.

The application surface (python-mapping.md §7): :func:`translate`,
:func:`instantiate`, :func:`required_imports`, :func:`artifacts_from_envelope`,
the named errors, and the submodules :mod:`polyengine.sync` (the blocking
facade) and :mod:`polyengine.testing` (the conformance runner). Host modules
import :mod:`polyengine_protocol`, never this package.
"""

from polyengine.embed._instantiate import ImportLeaf as ImportLeaf
from polyengine.embed._instantiate import Instance as Instance
from polyengine.embed._instantiate import instantiate as instantiate
from polyengine.embed._instantiate import required_imports as required_imports
from polyengine.embed._providers import MissingImportError as MissingImportError
from polyengine.embed._streams import create_stream as create_stream
from polyengine.errors import LinkError as LinkError
from polyengine.errors import NameCollisionError as NameCollisionError
from polyengine.errors import TranslationError as TranslationError
from polyengine.translate import Artifacts as Artifacts
from polyengine.translate import artifacts_from_envelope as artifacts_from_envelope
from polyengine.translate import translate as translate

__version__ = "0.1.0"

__all__ = [
    "Artifacts",
    "ImportLeaf",
    "Instance",
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
