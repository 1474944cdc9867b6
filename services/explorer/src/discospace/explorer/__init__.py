"""discospace.explorer."""
