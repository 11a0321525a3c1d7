"""polyengine.embed: the embedder API's facade, import resolution and host handles.

Its public face: the name mapping of python-mapping.md §1 (WIT names to
Python identifiers), shared with the bindings generator and the CLI; the
embedder API (:func:`instantiate`, :class:`Instance`, :func:`required_imports`,
:class:`ImportLeaf`, :class:`MissingImportError`, :func:`create_stream`); and
import resolution (:class:`Imports`, :class:`HostLinker`), which the command
line uses to name a missing import before any guest code runs.

Importing the face is cheap: everything but the name mapping is imported on
first use (PEP 562 module ``__getattr__``), so ``import polyengine`` stays free
of the engine and asyncio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from polyengine.embed._names import (
    FuncName,
    check_collisions,
    field_key,
    parse_func_name,
    pascal,
    snake,
)
from polyengine.faces import lazy_face

if TYPE_CHECKING:
    from polyengine.embed._host import HostLinker as HostLinker
    from polyengine.embed._instantiate import ImportLeaf as ImportLeaf
    from polyengine.embed._instantiate import Instance as Instance
    from polyengine.embed._instantiate import instantiate as instantiate
    from polyengine.embed._instantiate import required_imports as required_imports
    from polyengine.embed._providers import Imports as Imports
    from polyengine.embed._providers import MissingImportError as MissingImportError
    from polyengine.embed._streams import create_stream as create_stream

__all__ = [
    "FuncName",
    "HostLinker",
    "ImportLeaf",
    "Imports",
    "Instance",
    "MissingImportError",
    "check_collisions",
    "create_stream",
    "field_key",
    "instantiate",
    "parse_func_name",
    "pascal",
    "required_imports",
    "snake",
]

#: the module of each name imported on first use
_LAZY = {
    "HostLinker": "._host",
    "ImportLeaf": "._instantiate",
    "Instance": "._instantiate",
    "instantiate": "._instantiate",
    "required_imports": "._instantiate",
    "Imports": "._providers",
    "MissingImportError": "._providers",
    "create_stream": "._streams",
}


__getattr__, __dir__ = lazy_face(globals(), _LAZY)
