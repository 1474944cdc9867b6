"""discospace.actuator."""
