"""polyengine.abi."""
