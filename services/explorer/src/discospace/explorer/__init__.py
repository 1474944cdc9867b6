"""discospace.explorer: owns operations; runs operators over each operation's event history."""
