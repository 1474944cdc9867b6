"""The `pipeline` operator: stages of jobs (child operations, measures, hooks), or trials."""

from discospace.explorer.operators.pipeline.conductor import Pipeline

__all__ = ["Pipeline"]
