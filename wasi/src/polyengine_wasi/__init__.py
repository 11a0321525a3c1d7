"""WASI providers for polyengine; imports ``polyengine_protocol`` only."""

__version__ = "0.1.0"
