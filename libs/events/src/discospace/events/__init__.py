"""discospace.events."""
