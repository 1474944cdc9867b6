"""discospace.projector: every topic into the ClickHouse sample store, which serves the views."""
