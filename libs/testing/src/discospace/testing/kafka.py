"""pytest plugin: the Kafka broker for integration tests (placeholder, filled in by the platform work)."""
