"""polyengine.engine."""
