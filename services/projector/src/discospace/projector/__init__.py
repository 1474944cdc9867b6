"""discospace.projector."""
