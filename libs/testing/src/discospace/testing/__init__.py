"""discospace.testing."""
