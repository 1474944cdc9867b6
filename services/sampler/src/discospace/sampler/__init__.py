"""discospace.sampler: turns sample requests into entities and routes their measurements."""
