"""polyengine.validate."""
