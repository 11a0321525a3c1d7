"""polyengine: a WebAssembly Component Model host for Python."""

__version__ = "0.1.0"
