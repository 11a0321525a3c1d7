"""polyengine.types."""
