"""discospace.cli."""
