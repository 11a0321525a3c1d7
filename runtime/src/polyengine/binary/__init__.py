"""polyengine.binary: the sans-IO reader of the component binary format.

``read_component(data) -> ast.Component`` is the entry point; the node types
live in :mod:`polyengine.binary.ast`.
"""

from .reader import read_component

__all__ = ["read_component"]
