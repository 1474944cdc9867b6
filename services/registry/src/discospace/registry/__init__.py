"""discospace.registry."""
