"""polyengine.testing."""
