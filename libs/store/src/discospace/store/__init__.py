"""discospace.store."""
