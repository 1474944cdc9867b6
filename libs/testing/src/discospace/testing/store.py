"""pytest plugin: ClickHouse stores for tests (placeholder, filled in by the platform work)."""
