"""polyengine.binary: the sans-IO reader of the component binary format.

``read_component(data) -> ast.Component`` is the entry point; the node types
live in :mod:`polyengine.binary.ast`. :class:`Cursor` is the bounded reader of
bytes, LEB128 integers and names that every binary decoder here shares.
"""

from ._cursor import Cursor
from .reader import read_component

__all__ = ["Cursor", "read_component"]
