"""polyengine.embed."""
