"""polyengine.bindgen."""
