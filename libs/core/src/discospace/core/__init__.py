"""discospace.core."""
