"""discospace.runtime."""
