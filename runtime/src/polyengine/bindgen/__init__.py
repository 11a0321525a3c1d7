"""polyengine.bindgen: typed Python bindings for a component's world (bindgen.md, seed A17).

:func:`generate` writes the bindings module of a Plan's world;
:func:`generate_stubs` a provider skeleton for its imports.
"""

from polyengine.bindgen._emit import Options as Options
from polyengine.bindgen._emit import generate as generate
from polyengine.errors import NameCollisionError as NameCollisionError

__all__ = ["NameCollisionError", "Options", "generate"]
