"""discospace.sampler."""
