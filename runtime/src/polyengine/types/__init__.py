"""The component type model, despecialization, layout and subtyping."""
