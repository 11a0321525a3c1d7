"""polyengine.binary."""
