"""polyengine.bindgen: typed Python bindings for a component's world (bindgen.md, seed A17).

:func:`generate` writes the bindings module of a Plan's world;
:func:`generate_stubs` a provider skeleton for its imports; :func:`render_wit` the
world as WIT text.
"""

from polyengine.bindgen._emit import Options as Options
from polyengine.bindgen._emit import generate as generate
from polyengine.bindgen._emit import generate_stubs as generate_stubs
from polyengine.bindgen._wit import render_wit as render_wit
from polyengine.errors import NameCollisionError as NameCollisionError

__all__ = ["NameCollisionError", "Options", "generate", "generate_stubs", "render_wit"]
