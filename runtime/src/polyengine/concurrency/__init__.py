"""polyengine.concurrency."""
