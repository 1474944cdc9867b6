"""discospace.actuator: a worker of one GPU pool; measures entities with its actuator plugin."""
