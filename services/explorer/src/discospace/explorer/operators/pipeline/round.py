"""One round of a pipeline: what every round does, whether it runs jobs or trials.

A round reads the pipeline's view (`ConductorView`), decides events in order (`out`) and
notes when to decide again. Shared here: a job's start and end events, asking for a child and
following it to its end, registering a space and waiting for the registry's answer,
cancelling, and the pipeline's own end (counts, a summary of its jobs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from pydantic import JsonValue, ValidationError

from discospace.core.errors import PipelineError
from discospace.core.pipelines import PipelineSpec
from discospace.core.spec import SpaceSpec
from discospace.events import (
    EventTooLargeError,
    OperationCancelRequested,
    OperationCompleted,
    OperationCounts,
    OperationFailed,
    OperationParameters,
    OperationRequested,
    PipelineJobCompleted,
    PipelineJobFailed,
    PipelineJobStarted,
    SpaceSubmitted,
    encode_within,
)
from discospace.events.envelope import MAX_OPERATION_REASON_CHARS, shortened
from discospace.explorer.domain.conducting import (
    ChildView,
    Conduct,
    Conducted,
    ConductorView,
    derived,
)
from discospace.explorer.domain.operation import JobEnd, JobFacts
from discospace.explorer.domain.spaces import KnownSpace
from discospace.explorer.operators.pipeline.naming import submission_id
from discospace.explorer.operators.pipeline.results import total_counts

Result = dict[str, JsonValue]


@dataclass(frozen=True)
class Failure:
    """A job failed, with why."""

    reason: str


Outcome = Result | Failure | None
"""What a job came to this round: its result, a failure, or nothing yet (it waits)."""
ResultOf = Callable[[ChildView, OperationCompleted], Result | Failure | None]


def _unfinished(child: ChildView) -> bool:
    """Whether the child was requested and has not ended."""
    return child.requested is not None and child.finished is None


"""A job's result from its child's end (None while the child's results are still coming)."""


class Round:
    """One round of a pipeline; `walk` is what the kind of pipeline does."""

    def __init__(self, view: ConductorView, spec: PipelineSpec) -> None:
        self.view, self.spec = view, spec
        self.id, self.started, self.now = view.operation_id, view.started, view.now
        self.out = Conduct()

    def run(self) -> Conduct:
        if self.view.cancel is not None:
            self.cancel()
        else:
            self.walk()
        return self.out

    def walk(self) -> None:
        raise NotImplementedError

    def emit(self, event: Conducted) -> None:
        self.out.events.append(event)

    def end(
        self, stage: str, job: str, trial: int | None, outcome: Outcome, optional: bool
    ) -> JobEnd | None:
        """The job's end event for `outcome` (emitted), or None while it waits."""
        if outcome is None:
            return None
        fields: dict[str, Any] = {"operation_id": self.id, "job": job, "stage": stage}
        about = f"{trial}/{job}"
        event: JobEnd
        try:
            if isinstance(outcome, Failure):
                reason = shortened(outcome.reason, MAX_OPERATION_REASON_CHARS)
                event = derived(
                    PipelineJobFailed, self.started, self.now, about, **fields, trial=trial,
                    reason=reason, optional=optional,
                )  # fmt: skip
            else:
                event = derived(
                    PipelineJobCompleted, self.started, self.now, about, **fields, trial=trial,
                    result=outcome,
                )  # fmt: skip
                encode_within(event, self.view.max_message_bytes)
        except ValidationError:
            reason = "its result is not JSON (a hook must return JSON values)"
            return self.end(stage, job, trial, Failure(reason), optional)
        except EventTooLargeError as error:  # published, it would be refused again and again
            reason = (
                f"its result is {error.size} bytes as a message, over the {error.limit}-byte "
                "limit of a message: give the job fewer entities, or split it into several jobs"
            )
            return self.end(stage, job, trial, Failure(reason), optional)
        self.emit(event)
        return event

    def too_large(self, event: Conducted, what: str) -> Failure | None:
        """A failure of the job when `event` would not fit a message: decided with the round's
        other events, it failed the whole pipeline, an optional job's too."""
        try:
            encode_within(event, self.view.max_message_bytes)
        except EventTooLargeError as error:
            return Failure(
                f"{what} is {error.size} bytes as a message, over the {error.limit}-byte limit "
                "of a message: give the job fewer entities or values, or split it"
            )
        return None

    def job_started(
        self, stage: str, job: str, trial: int | None, child: str | None, space_id: str | None
    ) -> None:
        self.emit(
            derived(
                PipelineJobStarted,
                self.started,
                self.now,
                f"{trial}/{job}",
                operation_id=self.id,
                job=job,
                stage=stage,
                trial=trial,
                child_operation_id=child,
                space_id=space_id,
            )
        )

    def known(self, space_id: str) -> KnownSpace:
        space = self.view.known_space(space_id)
        if space is None:
            entry = self.view.spaces.get(space_id)
            raise PipelineError(
                entry if isinstance(entry, str) else f"space '{space_id}' is not registered"
            )
        return space

    def request(
        self, child_id: str, space_id: str, operator: str, parameters: OperationParameters
    ) -> OperationRequested:
        return derived(
            OperationRequested,
            self.started,
            self.now,
            child_id,
            operation_id=child_id,
            space_id=space_id,
            operator=operator,
            parameters=parameters,
            requested_by=f"pipeline {self.id}",
            parent_operation_id=self.id,
        )

    def follow(
        self,
        request: OperationRequested,
        result_of: ResultOf,
    ) -> Outcome:
        """Ask for the child if it was not asked for; its job's outcome once it ended."""
        child = self.view.child(request.operation_id)
        if child.requested is None:
            too_large = self.too_large(request, "its child operation's request")
            if too_large is not None:
                return too_large
            self.emit(request)
            return None
        finished = child.finished
        if finished is None:
            return None
        if isinstance(finished, OperationFailed):
            return Failure(f"its child operation '{child.operation_id}' failed: {finished.reason}")
        if finished.stop_reason == "cancelled":
            return Failure(
                f"its child operation '{child.operation_id}' was cancelled: {finished.stop_detail}"
            )
        return result_of(child, finished)

    def register(
        self, about: str, spec: SpaceSpec, space_id: str
    ) -> Literal[True] | Failure | None:
        """True once `space_id` is registered; submits it, and waits for the registry's
        answer `space_wait_s` from when it was sent (None), or fails."""
        entry = self.view.spaces.get(space_id)
        if isinstance(entry, KnownSpace):
            return True
        if isinstance(entry, str):
            return Failure(entry)
        submission = submission_id(self.id, about, space_id)
        refused = self.view.rejected.get(submission)
        if refused is not None:
            return Failure(f"the registry refused space '{space_id}': {refused}")
        sent = self.view.submitted.get(submission)
        if sent is None:
            submitted = derived(
                SpaceSubmitted,
                self.started,
                self.now,
                f"{about}/{space_id}",
                submission_id=submission,
                spec=spec,
                submitted_by=f"pipeline {self.id}",
            )
            too_large = self.too_large(submitted, f"the submission of space '{space_id}'")
            if too_large is not None:
                return too_large
            self.emit(submitted)
            sent = self.now
        wait = self.view.space_wait_s
        deadline = sent + timedelta(seconds=wait)
        if self.now >= deadline:
            return Failure(
                f"space '{space_id}' was not registered within {wait:g} s of its submission: "
                "is the registry running?"
            )
        self.out.wake(deadline)
        return None

    def cancel(self) -> None:
        """Cancel every running child, then, once they have all ended (a child ends at once when
        its cancel is read), end cancelled with their counts: ended in the round of the cancel,
        before its children, the pipeline left out what they had measured (a probe's spent
        measurements counted 0)."""
        cancel = self.view.cancel
        assert cancel is not None
        for child_id in self.running_children():
            self.emit(
                derived(
                    OperationCancelRequested,
                    self.started,
                    self.now,
                    child_id,
                    operation_id=child_id,
                    requested_by=f"pipeline {self.id}",
                    reason=f"its pipeline '{self.id}' was cancelled by {cancel.requested_by}",
                )
            )
        if self.unfinished_children():
            return
        detail = f"cancelled by {cancel.requested_by}" + (
            f": {cancel.reason}" if cancel.reason else ""
        )
        self.emit(
            OperationCompleted.caused_by(
                self.started,
                self.now,
                operation_id=self.id,
                space_id=self.started.space_id,
                stop_reason="cancelled",
                stop_detail=f"{detail}; {self.summary()}",
                counts=self.counts(),
            )
        )

    def running_children(self) -> list[str]:
        """The children of jobs still going on that run and are not being cancelled."""
        return [
            child.operation_id
            for facts, child in self._children()
            if facts.ended is None and _unfinished(child) and child.cancel is None
        ]

    def unfinished_children(self) -> list[str]:
        """The children requested and not ended yet, cancelled or not."""
        return [child.operation_id for _, child in self._children() if _unfinished(child)]

    def _children(self) -> Iterator[tuple[JobFacts, ChildView]]:
        """Each job that asked for a child operation, with that child as it stands."""
        for facts in self.view.jobs.values():
            child_id = facts.started.child_operation_id if facts.started else None
            if child_id is not None:
                yield facts, self.view.child(child_id)

    def fail(self, reason: str) -> None:
        reason = shortened(reason, MAX_OPERATION_REASON_CHARS)
        self.emit(
            OperationFailed.caused_by(
                self.started, self.now, operation_id=self.id, reason=reason, counts=self.counts()
            )
        )

    def counts(self) -> OperationCounts:
        """Every child's counts added up (those that ended)."""
        return total_counts(
            [child.finished.counts for _, child in self._children() if child.finished is not None]
        )

    def summary(self) -> str:
        """How many jobs completed and which failed, in a sentence."""
        ends = {key: facts.ended for key, facts in self.view.jobs.items() if facts.ended}
        for event in self.out.events:
            if isinstance(event, PipelineJobCompleted | PipelineJobFailed):
                ends[(event.trial, event.job)] = event
        done = sum(isinstance(end, PipelineJobCompleted) for end in ends.values())
        failed = sorted(end.job for end in ends.values() if isinstance(end, PipelineJobFailed))
        text = f"{done} jobs completed"
        return text + (f", {len(failed)} failed ({', '.join(failed)})" if failed else "")
