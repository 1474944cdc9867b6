"""Ids and seeds a pipeline derives, never draws: the same log gives the same ones.

- A child operation's id is the pipeline's id and the job's name (`op-1-probe`); a trial's
  child pipeline is `op-1-trial-3`, whose jobs are `op-1-trial-3-probe` (job names cannot be
  `trial` or `trial-<n>`: they are reserved, so no job's child collides with a trial's).
- A submission's id derives from the pipeline, the job and the space's id.
- Every event a pipeline decides has an id derived from its `OperationStarted`, its type and
  what it is about (the job, the child, the space), so deciding it again after a restart gives
  the same id, and every consumer drops the copy (`discospace.explorer.domain.conducting.derived`).
- A child's seed derives from the pipeline's seed and the job's name: the same seed gives the
  same pipeline.
"""

from __future__ import annotations

from discospace.events.envelope import content_id
from discospace.explorer.domain.starting import SEED_RANGE

TRIALS_STAGE = "trials"
"""The stage a trial's job (`trial-<i>`) is recorded under."""


def child_operation_id(pipeline_id: str, job: str) -> str:
    """The id of the child operation a job of pipeline `pipeline_id` asks for."""
    return f"{pipeline_id}-{job}"


def trial_job(trial: int) -> str:
    """The job name of trial `trial` (0, 1, ...): `trial-<i>`."""
    return f"trial-{trial}"


def submission_id(pipeline_id: str, job: str, space_id: str) -> str:
    """The id of the submission of `space_id` a job of the pipeline makes."""
    return f"sub-{content_id('pipeline', pipeline_id, job, space_id)}"


def child_seed(seed: int, job: str) -> int:
    """The seed of a job's child (or hook) in a pipeline seeded `seed`."""
    return int(content_id("pipeline-seed", str(seed), job), 16) % SEED_RANGE
