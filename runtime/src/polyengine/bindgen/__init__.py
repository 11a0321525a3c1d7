"""polyengine.bindgen: typed Python bindings for a component's world (bindgen.md, seed A17).

:func:`generate` writes the bindings module of a Plan's world;
:func:`generate_stubs` a provider skeleton for its imports; :func:`render_wit` the
world as WIT text; :func:`load_wit` reads a world from WIT text instead of a
component (a parser and resolver of our own, WIT.md), as the Plan of the
component built from it.
"""

from polyengine.bindgen._emit import Options as Options
from polyengine.bindgen._emit import generate as generate
from polyengine.bindgen._emit import generate_stubs as generate_stubs
from polyengine.bindgen._wit import render_wit as render_wit
from polyengine.bindgen._witsyntax import WitError as WitError
from polyengine.bindgen._witworld import WitWorld as WitWorld
from polyengine.bindgen._witworld import load_world as load_wit
from polyengine.errors import NameCollisionError as NameCollisionError

__all__ = [
    "NameCollisionError",
    "Options",
    "WitError",
    "WitWorld",
    "generate",
    "generate_stubs",
    "load_wit",
    "render_wit",
]
