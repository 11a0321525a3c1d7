"""polyengine.translate."""
