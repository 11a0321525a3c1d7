"""The host-ABI vocabulary of polyengine (standard library only)."""

__version__ = "0.1.0"
